"""The installed fio on tiny files in tmp_path (no root, about a second each): the command
lines fsadvisor builds and the runner/ job files run with plain fio, and its output parses."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import pytest

from fsadvisor.domain import Workload
from fsadvisor.tools import fio

pytestmark = pytest.mark.device
RUNNER = Path(__file__).resolve().parents[2] / "runner"
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")


def check_ordered(m: dict) -> None:
    """What holds for fio's real output: finite non-negative floats, monotone percentiles
    (as tests/unit/test_fio.py checks on the captured fixtures)."""
    for k, v in m.items():
        assert isinstance(v, float), k
        assert math.isfinite(v) and v >= 0, (k, v)
    if {"p50_latency_us", "p99_latency_us"} <= m.keys():
        assert m["p50_latency_us"] <= m["p99_latency_us"] + 1e-9
    if {"p99_latency_us", "p999_latency_us"} <= m.keys():
        assert m["p99_latency_us"] <= m["p999_latency_us"] + 1e-9


@needs_fio
@pytest.mark.parametrize(
    "w",
    [
        Workload(rw="randrw", bs_bytes=4096, iodepth=64, numjobs=8, fsync_every=1),
        Workload(
            rw="read",
            bs_bytes=16384,
            nrfiles=100,
            file_size_bytes=4096,
            file_size_max_bytes=1 << 20,
            ioengine="psync",
            direct=False,
        ),
        Workload(rw="filecreate", nrfiles=1000),
        Workload(rw="filedelete", nrfiles=1000),
    ],
)
def test_fio_accepts_the_command_line(tmp_path, w):
    argv = fio.workload_argv(w, str(tmp_path), 2)
    proc = subprocess.run([argv[0], "--parse-only", *argv[1:]], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout


@needs_fio
def test_real_run_through_workload_argv(tmp_path):
    w = Workload(
        rw="randrw", bs_bytes=4096, iodepth=4, numjobs=2, direct=True, working_set_bytes=8 << 20
    )
    res = fio.run(fio.workload_argv(w, str(tmp_path / "r.dat"), 1, ioengine=fio.best_ioengine()))
    assert res.exit_code == 0 and res.error is None
    assert len(res.jobs) == 1  # group_reporting folds the two clones
    m = res.metrics()
    check_ordered(m)
    assert m["read_iops"] > 0 and m["write_iops"] > 0
    assert m["bytes"] == m["app_read_bytes"] + m["app_write_bytes"] == m["ops"] * 4096
    assert 0.9 <= m["runtime_s"] <= 1.5


@needs_fio
def test_real_metadata_run(tmp_path):
    res = fio.run(fio.workload_argv(Workload(rw="filecreate", nrfiles=300), str(tmp_path), 10))
    m = res.metrics()
    assert m["ops"] == 300 and m["metadata_iops"] > 0 and "mb_s" not in m
    assert len(list(tmp_path.iterdir())) == 300


@needs_fio
def test_run_reports_fio_failure_in_one_line(tmp_path):
    with pytest.raises(fio.FioRunError) as e:
        fio.run(["fio", "--output-format=json", "--name=x", "--rw=bogus"])
    assert "failed parsing" in str(e.value) and "\n" not in str(e.value)


@needs_fio
def test_job_file_runs_with_plain_fio(tmp_path):
    env = {
        "TARGET": str(tmp_path / "m.dat"),
        "RUNTIME": "1",
        "SIZE": "8m",
        "NUMJOBS": "1",
        "IOENGINE": fio.best_ioengine(),
    }
    res = fio.run(fio.jobfile_argv(RUNNER / "micro.fio", ["--section=randread-4k"]), env=env)
    assert res.error is None and [j["jobname"] for j in res.jobs] == ["randread-4k"]
    assert res.metrics()["read_iops"] > 0


@needs_fio
@pytest.mark.parametrize("job", ["micro.fio", "precondition-fill.fio"])
def test_job_files_take_the_libaio_fallback_from_the_environment(tmp_path, job):
    env = {
        "TARGET": str(tmp_path / "m.dat"),
        "RUNTIME": "1",
        "SIZE": "8m",
        "NUMJOBS": "1",
        "IOENGINE": "libaio",
    }
    extra = ["--section=randread-4k"] if job == "micro.fio" else []
    res = fio.run(fio.jobfile_argv(RUNNER / job, extra), env=env)
    assert res.error is None and res.metrics()["ops"] > 0
    assert res.doc["global options"]["ioengine"] == "libaio"


@needs_fio
def test_version_and_engine():
    assert fio.fio_version().startswith("fio-")
    assert fio.best_ioengine() in ("io_uring", "libaio")


@needs_fio
@pytest.mark.parametrize("job", sorted(p.name for p in (RUNNER / "probe-micro").glob("*.fio")))
def test_probe_micro_job_files_parse_with_plain_fio(tmp_path, job):
    """The probe's micro workloads (runner/probe-micro/, the matrix's source) are job files
    plain fio accepts with the environment their headers name."""
    env = {
        "TARGET": str(tmp_path / "x.dat")
        if "filename=" in (RUNNER / "probe-micro" / job).read_text()
        else str(tmp_path),
        "RUNTIME": "1",
        "SIZE": "8m",
        "IOENGINE": "libaio",
    }
    proc = subprocess.run(
        ["fio", "--parse-only", str(RUNNER / "probe-micro" / job)],
        capture_output=True,
        text=True,
        env={**env, "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
