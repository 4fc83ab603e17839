"""Which benchmark a profile cell runs: every shipped preset, by what the preset says, down to
the measured command line. No root, no devices."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsadvisor.domain import Device
from fsadvisor.probe.cell import CellRunner
from fsadvisor.probe.commands import Executor
from fsadvisor.probe.plan import build_plan, profile_workload
from fsadvisor.profiles import list_presets, load_profile
from fsadvisor.infra.resources import data_dir
from fsadvisor.tools import KIND_DB_BENCH, KIND_JOBFILE, KIND_SYSBENCH

GIB = 1 << 30
PRESETS = list_presets()


def expected_kind(profile) -> str:
    if profile.fio_job:
        return KIND_JOBFILE
    if profile.workload.op == "db_op":
        return KIND_DB_BENCH
    if "sysbench" in set(profile.tags or ()):
        return KIND_SYSBENCH
    return "fio"


def measured_step(profile_name: str):
    p = build_plan(
        "/dev/loop9",
        4 * GIB,
        filesystems=["ext4"],
        schedulers=["none"],
        profile=load_profile(profile_name),
        micro=False,
        quick=True,
        runtime_s=2,
        kernel_supports=lambda fs: True,
    )
    cell = next(c for c in p.cells() if c.config is not None)
    runner = CellRunner(
        plan=p,
        device="/dev/loop9",
        device_info=Device("/dev/loop9", 4 * GIB),
        mountpoint="/tmp/mnt-x",
        executor=Executor(),
    )
    steps = runner.steps(cell)
    return (
        cell.workload,
        [s for s in steps if s.role == "prepare"],
        next(s for s in steps if s.role == "measure"),
    )


@pytest.mark.parametrize("profile", PRESETS, ids=[p.name for p in PRESETS])
def test_every_preset_runs_what_it_names(profile):
    spec = profile_workload(profile)
    assert spec.kind == expected_kind(profile)
    if spec.kind == KIND_JOBFILE:
        assert (data_dir("runner") / spec.jobfile).is_file()


def test_the_filebench_oltp_preset_runs_its_fio_emulation_not_rocksdb():
    # It counts database operations (op = "db_op") but seed 004's OLTP is a Filebench
    # personality; a review found it ran db_bench with 210 threads instead.
    spec, prep, run = measured_step("filebench-oltp-004")
    assert spec.kind == KIND_JOBFILE
    assert run.argv[0] == "fio" and Path(run.argv[-1]).name == "filebench-oltp.fio"
    assert not any("db_bench" in a for s in prep for a in s.argv)


def test_a_ycsb_preset_runs_db_bench_with_its_mix_after_a_load():
    name = next(p.name for p in PRESETS if expected_kind(p) == KIND_DB_BENCH and "ycsb-b" in p.name)
    spec, prep, run = measured_step(name)
    assert spec.kind == KIND_DB_BENCH and run.tool == KIND_DB_BENCH
    assert run.argv[0] == "db_bench" and prep and "fillrandom" in " ".join(prep[0].argv)
    # YCSB B is read-mostly: 95% reads (seed 000 §III-B used YCSB through RocksDB)
    assert any(
        a in ("--readwritepercent=95", "--benchmarks=readrandomwriterandom") for a in run.argv
    )
    assert any(a.startswith("--db=/tmp/mnt-x/") for a in run.argv)


def test_a_sysbench_preset_prepares_then_runs_fileio_in_the_mount():
    name = next((p.name for p in PRESETS if expected_kind(p) == KIND_SYSBENCH), None)
    if name is None:
        pytest.fail("no preset is tagged sysbench: seed 001's sysbench fileio has no profile")
    spec, prep, run = measured_step(name)
    assert run.argv[0] == "sysbench" and "fileio" in run.argv and run.argv[-1] == "run"
    assert prep[0].argv[-1] == "prepare" and run.cwd == prep[0].cwd == "/tmp/mnt-x"
    # the preset's 60% reads reach sysbench as its reads-per-write ratio
    assert "--file-rw-ratio=1.5" in run.argv and "--file-fsync-freq=100" in run.argv
    assert "--file-block-size=16384" in run.argv and "--file-extra-flags=direct" not in run.argv
