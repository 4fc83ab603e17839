"""Real fio on a real ext4 on a loop device: workload_argv command lines and every
runner/*.fio job file run by plain fio and parse. Root; one loop device for the module
(plus one more for the raw-device test); about a minute in all."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fsadvisor.tools import fio

from fsadvisor.host import loopdev
from fsadvisor.domain import Workload

pytestmark = pytest.mark.device

RUNNER = Path(__file__).resolve().parents[2] / "runner"
JOB_FILES = sorted(p.name for p in RUNNER.glob("*.fio"))
# Job files whose TARGET is a file or block device; the rest take a directory.
FILE_TARGET = {"micro.fio", "precondition-fill.fio"}
GROUPS = {"micro.fio": 10, "metadata.fio": 3, "fs-overhead.fio": 3, "precondition-fill.fio": 1}


def _need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} missing")


@pytest.fixture(scope="module")
def ext4(tmp_path_factory):
    """A freshly made ext4 on a loop device, mounted; unmounted and detached afterwards."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    for tool in ("fio", "mkfs.ext4", "losetup", "mount"):
        _need(tool)
    base = tmp_path_factory.mktemp("fio-ext4")
    mnt = base / "mnt"
    mnt.mkdir()
    try:
        ctx = loopdev.scratch_loop(768 << 20, directory=base)
        dev = ctx.__enter__()
    except loopdev.LoopError as e:
        pytest.skip(f"no free loop device: {e}")
    mounted = False
    try:
        # lazy init off: otherwise a kernel thread zeroes inode tables after mount and
        # adds writes to every measurement (domain notes §4).
        subprocess.run(
            ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev],
            check=True,
            capture_output=True,
        )
        subprocess.run(["mount", dev, str(mnt)], check=True, capture_output=True)
        mounted = True
        yield dev, mnt
    finally:
        if mounted:
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        ctx.__exit__(None, None, None)


def fresh_dir(mnt: Path, name: str) -> Path:
    d = mnt / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir()
    return d


def test_direct_random_reads_reach_the_device(ext4):
    dev, mnt = ext4
    w = Workload(
        rw="randread", bs_bytes=4096, iodepth=16, numjobs=2, direct=True, working_set_bytes=64 << 20
    )
    res = fio.run(
        fio.workload_argv(w, str(mnt / "rr.dat"), 1, ioengine=fio.best_ioengine()), timeout_s=120
    )
    assert res.exit_code == 0 and res.error is None, res.notes
    m = res.metrics()
    assert m["read_iops"] > 0 and m["ops"] > 1000
    assert m["p50_latency_us"] <= m["p99_latency_us"] <= m["p999_latency_us"]
    # fio saw the I/O arrive at the loop device: direct I/O was honoured, not page cache
    # (which would leave the device nearly idle). fio samples disk stats periodically, so
    # a 1 s run under-counts the tail (observed: 28,632 device reads for 38,791 app reads).
    util = {d["name"]: d for d in res.disk_util}
    loop = util.get(Path(dev).name)
    assert loop is not None, util.keys()
    assert loop["read_ios"] + loop["read_merges"] >= 0.5 * m["ops"]


def test_fsync_per_write_on_ext4(ext4):
    _, mnt = ext4
    w = Workload(
        rw="randwrite",
        bs_bytes=4096,
        fsync_every=1,
        ioengine="psync",
        direct=False,
        working_set_bytes=16 << 20,
    )
    res = fio.run(fio.workload_argv(w, str(mnt / "fs.dat"), 1), timeout_s=120)
    m = res.metrics()
    assert res.error is None
    assert m["fsync_ops"] == pytest.approx(m["ops"], abs=1)
    assert m["fsync_p99_latency_us"] > 0 and m["app_write_bytes"] == m["ops"] * 4096


def test_create_stat_delete_chain_shares_files(ext4):
    _, mnt = ext4
    d = fresh_dir(mnt, "chain")
    counts = {}
    for op in ("filecreate", "filestat", "filedelete"):
        res = fio.run(
            fio.workload_argv(Workload(rw=op, nrfiles=400), str(d), 30, name=op), timeout_s=120
        )
        assert res.error is None, (op, res.notes)
        assert res.metrics()["ops"] == 400
        counts[op] = len(list(d.iterdir()))
    # stat found create's files (it laid out none of its own); delete removed them all.
    assert counts == {"filecreate": 400, "filestat": 400, "filedelete": 0}


@pytest.mark.parametrize("job", JOB_FILES)
def test_every_runner_job_file_runs_and_parses(ext4, job):
    _, mnt = ext4
    target = mnt / f"{job}.dat" if job in FILE_TARGET else fresh_dir(mnt, job.removesuffix(".fio"))
    env = {
        "TARGET": str(target),
        "RUNTIME": "1",
        "SIZE": "16m",
        "NUMJOBS": "2",
        "NRFILES": "20",
        "IOENGINE": fio.best_ioengine(),
    }
    res = fio.run(fio.jobfile_argv(RUNNER / job), env=env, timeout_s=180)
    assert res.exit_code == 0 and res.error is None, res.notes
    assert res.version == fio.fio_version()
    m = res.metrics()
    assert m["ops"] > 0 and m["iops"] > 0
    if job in GROUPS:
        assert len(res.groups()) == GROUPS[job]
    for g in res.groups():
        assert res.metrics(groupid=g)["ops"] > 0, (job, g)
    # every job section documents itself
    assert all(j.get("desc") for j in res.jobs), [j["jobname"] for j in res.jobs]


def test_job_files_on_a_raw_block_device(loop_device):
    """micro.fio's own hazard case: fill the device, then read it directly."""
    _need("fio")
    try:
        dev = loop_device(64 << 20)
    except loopdev.LoopError as e:
        pytest.skip(f"no free loop device: {e}")
    fill = fio.run(
        fio.jobfile_argv(RUNNER / "precondition-fill.fio"),
        env={"TARGET": dev, "SIZE": "64m", "IOENGINE": fio.best_ioengine()},
        timeout_s=120,
    )
    assert fill.error is None and fill.metrics()["app_write_bytes"] == 64 << 20
    env = {
        "TARGET": dev,
        "RUNTIME": "1",
        "SIZE": "64m",
        "NUMJOBS": "1",
        "IOENGINE": fio.best_ioengine(),
    }
    res = fio.run(
        fio.jobfile_argv(RUNNER / "micro.fio", ["--section=randread-4k"]), env=env, timeout_s=120
    )
    assert res.error is None and res.metrics()["read_iops"] > 0
    assert {d["name"] for d in res.disk_util} >= {Path(dev).name}
