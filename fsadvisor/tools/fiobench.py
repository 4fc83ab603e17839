"""fio as a probe :class:`~fsadvisor.tools.benchmark.Benchmark`: the commands of a fio job
(lay out, fill or create first, then the measured run) and what its output means.

fio.py builds single command lines and parses fio's JSON; this module decides which of them
a job needs. A read job first writes its whole data set: reads of never-written blocks never
reach the flash and come back impossibly fast (285k vs 59k IOPS on a loop device, domain
notes §5). A runner/*.fio job file (the Filebench emulations) gets its target and sizes
from the environment, as the job files' headers describe.
"""

from __future__ import annotations

import os
from dataclasses import replace

from fsadvisor.domain import FLAG_POOLED_PERCENTILES, METADATA_MODES, Workload
from fsadvisor.errors import FsAdvisorError
from fsadvisor.host.run import CommandResult
from fsadvisor.infra.resources import data_dir
from fsadvisor.tools import KIND_JOBFILE, fio
from fsadvisor.tools.benchmark import Benchmark, BenchJob, Invocation, Invocations, Measurement

MIB = 1 << 20
# A filecreate preparation runs until its nrfiles creates are done; its runtime is only a
# cap, which must not cut it short (a 1 s cap left files missing on a slow device).
CREATE_CAP_S = 3600.0


def job_name(workload_name: str) -> str:
    # fio job names end up in file names: keep them to a safe alphabet.
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in workload_name)[:60] or "job"


def measure_argv(job: BenchJob) -> list[str]:
    """fio argv of the measured run; on the raw device when ``job.target_dir`` is None."""
    w, name = job.workload, job_name(job.name)
    if job.target_dir is None:
        return fio.workload_argv(w, job.device, job.runtime_s, name=name, size_bytes=job.size_bytes)
    if w.rw in METADATA_MODES or w.nrfiles > 1:
        return fio.workload_argv(
            w,
            job.target_dir,
            job.runtime_s,
            name=name,
            size_bytes=None if w.rw in METADATA_MODES else job.size_bytes,
        )
    # One data file: name it here, so the argv is the same whether or not the mount point
    # exists yet (a dry run never creates it).
    return fio.workload_argv(
        w,
        os.path.join(job.target_dir, f"{name}.dat"),
        job.runtime_s,
        name=name,
        size_bytes=job.size_bytes,
    )


def fill_argv(base: list[str], w: Workload, size_bytes: int) -> list[str]:
    """The measured argv turned into one sequential pass that writes the whole data set.
    Later fio options override earlier ones (verified: fio 3.33)."""
    bs = MIB if w.nrfiles <= 1 and size_bytes % MIB == 0 else w.bs_bytes
    extra = ["--rw=write", f"--bs={bs}", "--time_based=0", "--runtime=0", "--fsync=0"]
    if w.nrfiles > 1:
        extra.append("--file_service_type=roundrobin")  # every file written once, in turn
    return base + extra


def jobfile_env(
    w: Workload, target: str, jobfile_text: str, budget_bytes: int, runtime_s: float
) -> dict[str, str]:
    """TARGET/RUNTIME/NUMJOBS/NRFILES/SIZE for a runner/*.fio job file (their convention:
    runner/*.fio headers). Job files with ${NRFILES} read SIZE as bytes per thread and need
    it to cover NRFILES files of up to twice the mean size (filesize=lo-hi ranges there reach
    1.5-2x the profile's mean); the others read SIZE as all data files together. Everything
    is scaled to the plan's data-set budget (``--size``) so a profile of 50,000 files fits
    the device."""
    jobs = max(1, w.numjobs)
    env = {"TARGET": target, "RUNTIME": str(max(1, int(round(runtime_s)))), "NUMJOBS": str(jobs)}
    if "${NRFILES}" in jobfile_text:
        per_file = 2 * max(w.file_size_bytes, w.bs_bytes)
        files = max(1, w.nrfiles // jobs)
        files = max(1, min(files, budget_bytes // (jobs * per_file)))
        env["NRFILES"] = str(files)
        env["SIZE"] = str(files * per_file)
    else:
        env["NRFILES"] = str(max(1, w.nrfiles))
        env["SIZE"] = str(max(MIB, min(w.working_set_bytes, budget_bytes)) // MIB * MIB)
    return env


class FioBenchmark(Benchmark):
    """fio, from a Workload (kind "fio") or from a runner/ job file (kind "jobfile")."""

    tool = "fio"

    def invocations(self, job: BenchJob) -> Invocations:
        if job.kind == KIND_JOBFILE:
            return self._jobfile(job)
        w = job.workload
        base = measure_argv(job)
        prep: list[Invocation] = []
        if w.rw in METADATA_MODES:
            if w.rw != "filecreate":
                if job.target_dir is None:
                    raise FsAdvisorError(f"{job.name}: {w.rw} needs a filesystem")
                # filestat/filedelete need the files filecreate makes (shared filename_format).
                creator = replace(w, rw="filecreate", ioengine="filecreate")
                prep.append(
                    Invocation(
                        tuple(
                            fio.workload_argv(
                                creator, job.target_dir, CREATE_CAP_S, name=job_name(job.name)
                            )
                        ),
                        note="create the files (not measured)",
                    )
                )
        elif w.read_pct > 0:
            prep.append(
                Invocation(
                    tuple(fill_argv(base, w, job.size_bytes)),
                    note="fill: reads of unwritten blocks never reach the flash",
                )
            )
        elif job.target_dir is not None:
            prep.append(
                Invocation(
                    tuple(base + ["--create_only=1"]), note="lay out the file (not measured)"
                )
            )
        return Invocations(tuple(prep), Invocation(tuple(base), note="measured"))

    def _jobfile(self, job: BenchJob) -> Invocations:
        path = data_dir("runner") / str(job.jobfile)
        env = tuple(
            sorted(
                jobfile_env(
                    job.workload,
                    job.target_dir or job.device,
                    path.read_text(),
                    job.budget_bytes,
                    job.runtime_s,
                ).items()
            )
        )
        return Invocations(
            (
                Invocation(
                    tuple(fio.jobfile_argv(path, ["--create_only=1"])),
                    env=env,
                    note="lay out the files (not measured)",
                ),
            ),
            Invocation(tuple(fio.jobfile_argv(path)), env=env, note="measured"),
        )

    def parse(self, result: CommandResult) -> Measurement:
        try:
            res = fio.parse(result.stdout, command=result.argv)
            if not res.error and result.ok:
                res.require_complete()  # an old fio's layout is read whole or refused
        except fio.FioParseError as e:
            return Measurement.failed(result.one_line_error() if not result.ok else str(e))
        if res.error:
            return Measurement.failed(res.error)
        if not result.ok:
            return Measurement.failed(result.one_line_error())
        metrics = res.metrics()
        if not metrics.get("ops"):
            return Measurement.failed("fio completed no I/O")
        # p99_latency_us keeps its name (model and store read it) even when it is an
        # estimate; the flag says so, and read_/write_ percentiles hold fio's own figures.
        pooled = fio.POOLED_ESTIMATE in res.percentile_provenance().values()
        return Measurement(metrics, None, (FLAG_POOLED_PERCENTILES,) if pooled else ())
