"""sysbench fileio: command lines, output parser, and the :class:`Sysbench` adapter a probe
cell runs profiles tagged ``sysbench`` with (seed 001's sysbench-fileio-rndrw).

Metric names follow fsadvisor.tools.fio (iops, mean_latency_us, p99_latency_us, ops, mb_s ...);
what the tool did not print is absent, never estimated.
"""

from __future__ import annotations

import functools
import math
import os
import re
import shutil

from fsadvisor.errors import FsAdvisorError, NotSupported
from fsadvisor.tools import KIND_SYSBENCH
from fsadvisor.tools.benchmark import (
    MIB_TO_MB,
    AppBenchParseError,
    AppBenchRunError,
    Benchmark,
    BenchJob,
    Invocation,
    Invocations,
    Measurement,
    app_measurement,
    finite_float,
    run_checked,
)
from fsadvisor.host import run as hostrun
from fsadvisor.host.run import CommandResult

SYSBENCH = KIND_SYSBENCH
# fio's rw modes -> sysbench --file-test-mode
MODE_OF_RW = {
    "randrw": "rndrw",
    "randread": "rndrd",
    "randwrite": "rndwr",
    "read": "seqrd",
    "write": "seqwr",
    "rw": "seqrewr",
}


SYSBENCH_MODES = ("seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw")


def sysbench_fileio_argv(
    phase: str,
    mode: str = "rndrw",
    total_size_bytes: int = 1 << 30,
    time_s: int = 10,
    direct: bool = True,
    fsync_freq: int = 100,
    threads: int = 1,
    block_size_bytes: int = 16384,
    file_num: int = 128,
    percentile: int = 99,
    rw_ratio: float | None = None,
) -> list[str]:
    """``sysbench fileio`` for ``phase`` in prepare | run | cleanup.

    sysbench creates test_file.N in its working directory: run every phase with
    cwd = a directory on the filesystem under test. prepare and cleanup need the same
    --file-num/--file-total-size as run, so all phases get them."""
    if phase not in ("prepare", "run", "cleanup"):
        raise FsAdvisorError(
            f"sysbench fileio phase must be prepare, run or cleanup, not {phase!r}"
        )
    if mode not in SYSBENCH_MODES:
        raise FsAdvisorError(
            f"unknown sysbench --file-test-mode {mode!r}; choose one of {', '.join(SYSBENCH_MODES)}"
        )
    argv = [
        SYSBENCH,
        "fileio",
        f"--file-total-size={total_size_bytes}",
        f"--file-num={file_num}",
        f"--file-test-mode={mode}",
        f"--file-block-size={block_size_bytes}",
    ]
    if phase == "run":
        argv += [
            f"--time={int(time_s)}",
            f"--threads={threads}",
            # 0 disables periodic fsync; sysbench's default is every 100 requests.
            f"--file-fsync-freq={fsync_freq}",
            # Percentile to report (default 95); 99 matches p99_latency_us.
            f"--percentile={percentile}",
            "--histogram=off",
        ]
        if direct:
            argv.append("--file-extra-flags=direct")
        if rw_ratio is not None and mode in ("rndrw", "seqrewr"):
            # reads per write in the combined modes (sysbench's default 1.5 is 60% reads)
            argv.append(f"--file-rw-ratio={rw_ratio:g}")
    argv.append(phase)
    return argv


_SB = {
    "reads/s": "reads_s",
    "writes/s": "writes_s",
    "fsyncs/s": "fsyncs_s",
    "read, MiB/s": "read_mib_s",
    "written, MiB/s": "written_mib_s",
    "total time": "total_s",
    "total number of events": "events",
}
_SB_LINE = re.compile(r"^\s*([A-Za-z][\w ,/]*?):\s*([0-9]+(?:\.[0-9]+)?)s?\s*$")
_SB_PCT = re.compile(
    r"^\s*([0-9]+(?:\.[0-9]+)?)(?:st|nd|rd|th) percentile:\s*([0-9]+(?:\.[0-9]+)?)\s*$"
)


def _percentiles_plausible(
    pcts: list[tuple[float, float]], lo: float | None, hi: float | None
) -> bool:
    """Percentiles (sorted by p) that never decrease, lie within 0..100 and between the
    printed min and max (sysbench rounds all of them to 0.01 ms alike). Anything else is
    not sysbench's own figure and is left out rather than stored."""
    values = [v for _, v in pcts]
    if any(not 0 < p <= 100 for p, _ in pcts) or any(b < a for a, b in zip(values, values[1:])):
        return False
    return not values or ((lo is None or lo <= values[0]) and (hi is None or values[-1] <= hi))


def parse_sysbench_fileio(text: str | bytes) -> dict[str, float]:
    """Metrics from ``sysbench fileio ... run`` output (sysbench 1.0).

    read_iops/write_iops/fsyncs_per_s are sysbench's per-second rates; iops counts reads
    and writes (fsyncs are not data operations, as in fio); ops is that rate times the
    total time, since sysbench prints only rates. Latency is per sysbench event (an event
    is one read, write or fsync), printed in ms with two decimals."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise AppBenchParseError(f"sysbench output must be text, got {type(text).__name__}")
    raw: dict[str, float] = {}
    lat: dict[str, float] = {}
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.endswith(":") and not line.startswith(" "):
            section = stripped[:-1]
            continue
        try:
            if section.startswith("Latency") and (mp := _SB_PCT.match(line)):
                lat[f"p{mp.group(1)}"] = finite_float(mp.group(2))
                continue
            ml = _SB_LINE.match(line)
            if not ml:
                continue
            key, value = ml.group(1).strip(), finite_float(ml.group(2))
        except (ValueError, OverflowError):
            continue
        if section.startswith("Latency") and key in ("min", "avg", "max", "sum"):
            lat[key] = value
        elif key in _SB:
            raw[_SB[key]] = value
    if "reads_s" not in raw or "writes_s" not in raw:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise AppBenchParseError(
            "sysbench output has no 'File operations' results"
            + (f"; first line: {first[:120]!r}" if first else "")
        )
    m: dict[str, float] = {
        "read_iops": raw["reads_s"],
        "write_iops": raw["writes_s"],
        "iops": raw["reads_s"] + raw["writes_s"],
    }
    if "fsyncs_s" in raw:
        m["fsyncs_per_s"] = raw["fsyncs_s"]
    if "read_mib_s" in raw:
        m["read_mb_s"] = raw["read_mib_s"] * MIB_TO_MB
    if "written_mib_s" in raw:
        m["write_mb_s"] = raw["written_mib_s"] * MIB_TO_MB
    if "read_mb_s" in m and "write_mb_s" in m:
        m["mb_s"] = m["read_mb_s"] + m["write_mb_s"]
    if "total_s" in raw:
        m["runtime_s"] = raw["total_s"]
        m["ops"] = float(round(m["iops"] * raw["total_s"]))
    if "events" in raw:
        m["events"] = raw["events"]
    if "avg" in lat:
        m["mean_latency_us"] = lat["avg"] * 1000.0
    if "max" in lat:
        m["max_latency_us"] = lat["max"] * 1000.0
    pcts = sorted((float(k[1:]), v) for k, v in lat.items() if k.startswith("p"))
    if _percentiles_plausible(pcts, lat.get("min"), lat.get("max")):
        for p, value in pcts:
            name = f"{p:g}".replace(".", "")
            m[f"p{name}_latency_us"] = value * 1000.0
    return {k: v for k, v in m.items() if math.isfinite(v)}


def run_sysbench_fileio(
    directory: str, timeout_s: float | None = None, **kw
) -> tuple[dict[str, float], str, list[list[str]]]:
    """prepare, run, cleanup in ``directory``; cleanup runs even when run fails."""
    if not os.path.isdir(directory):
        raise AppBenchRunError(f"sysbench directory {directory} does not exist")
    if not shutil.which(SYSBENCH):
        raise NotSupported("sysbench is not installed (Debian package 'sysbench')")
    prep_kw = {
        k: v
        for k, v in kw.items()
        if k in ("mode", "total_size_bytes", "block_size_bytes", "file_num")
    }
    commands = [sysbench_fileio_argv("prepare", **prep_kw)]
    try:
        run_checked(commands[0], directory, timeout_s, SYSBENCH)
        commands.append(sysbench_fileio_argv("run", **kw))
        proc = run_checked(commands[-1], directory, timeout_s, SYSBENCH)
    finally:
        commands.append(sysbench_fileio_argv("cleanup", **prep_kw))
        hostrun.run(commands[-1], cwd=directory, timeout_s=timeout_s)
    return parse_sysbench_fileio(proc.stdout), proc.stdout, commands


# ---------------------------------------------------------------- the probe's adapter


class Sysbench(Benchmark):
    """Profiles tagged ``sysbench`` (seed 001's sysbench-fileio-rndrw): prepare lays out the
    files (not measured), run is measured; both run in the mounted filesystem."""

    tool = SYSBENCH

    def invocations(self, job: BenchJob) -> Invocations:
        if job.target_dir is None:
            raise FsAdvisorError(
                f"{job.name}: sysbench fileio needs a filesystem, not a raw device"
            )
        w = job.workload
        files = max(1, min(w.nrfiles, 1024)) if w.nrfiles > 1 else 128
        fileio = functools.partial(
            sysbench_fileio_argv,
            mode=MODE_OF_RW.get(w.rw, "rndrw"),
            total_size_bytes=max(files * w.bs_bytes, min(w.working_set_bytes, job.budget_bytes)),
            block_size_bytes=w.bs_bytes,
            file_num=files,
        )
        ratio = w.read_pct / (100 - w.read_pct) if 0 < w.read_pct < 100 else None
        runtime = max(1, int(round(job.runtime_s)))
        cwd = job.target_dir
        return Invocations(
            prepare=(Invocation(tuple(fileio("prepare")), cwd=cwd, note="load (not measured)"),),
            measure=Invocation(
                tuple(
                    fileio(
                        "run",
                        time_s=runtime,
                        direct=w.direct,
                        fsync_freq=w.fsync_every,
                        threads=max(1, w.numjobs),
                        rw_ratio=ratio,
                    )
                ),
                cwd=cwd,
                note="measured",
            ),
        )

    def parse(self, result: CommandResult) -> Measurement:
        return app_measurement(self.tool, result, lambda r: parse_sysbench_fileio(r.stdout))
