"""Workloads are data: the probe's micro matrix is runner/probe-micro/*.fio (one job file
per workload) and seed 000's preset matrix is runner/micro.fio. What is derived from them
agrees with what was written out by hand before (golden copies), and adding a file adds a
workload."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from fsadvisor.domain import Workload
from fsadvisor.errors import ConfigError
from fsadvisor.probe import micro
from fsadvisor.probe.plan import MICRO, MICRO_BY_NAME
from fsadvisor.profiles import list_presets, load_profile, profiles_from_toml
from fsadvisor.profiles.jobfiles import micro_presets

RUNNER = Path(__file__).resolve().parents[2] / "runner"
GOLDEN = Path(__file__).parent / "golden"
KIB = 1 << 10
META = dict(
    bs_bytes=4 * KIB,
    nrfiles=4096,
    file_size_bytes=4 * KIB,
    working_set_bytes=4096 * 4 * KIB,
    op="file",
)

# The matrix as plan.py spelled it out before the job files were its source.
WRITTEN_BEFORE = [
    ("4k-randread-qd32", Workload(rw="randread", bs_bytes=4 * KIB, iodepth=32), True),
    ("4k-randwrite-qd32", Workload(rw="randwrite", bs_bytes=4 * KIB, iodepth=32), True),
    ("4k-randrw70-qd32", Workload(rw="randrw", rwmixread=70, bs_bytes=4 * KIB, iodepth=32), True),
    (
        "4k-randwrite-fsync1",
        Workload(rw="randwrite", bs_bytes=4 * KIB, iodepth=1, fsync_every=1, fsync_mode="every_n"),
        True,
    ),
    ("128k-read-qd8", Workload(rw="read", bs_bytes=128 * KIB, iodepth=8, rank_by="bytes"), True),
    ("128k-write-qd8", Workload(rw="write", bs_bytes=128 * KIB, iodepth=8, rank_by="bytes"), True),
    (
        "meta-create",
        Workload(rw="filecreate", ioengine="filecreate", create_frac=1.0, **META),
        False,
    ),
    ("meta-stat", Workload(rw="filestat", ioengine="filestat", stat_frac=1.0, **META), False),
    (
        "meta-delete",
        Workload(rw="filedelete", ioengine="filedelete", delete_frac=1.0, **META),
        False,
    ),
]


def test_the_micro_matrix_read_from_job_files_is_the_one_written_before():
    assert [(w.name, w.workload, w.raw_baseline) for w in MICRO] == WRITTEN_BEFORE
    assert all(w.source == "micro" for w in MICRO) and set(MICRO_BY_NAME) == {
        n for n, _, _ in WRITTEN_BEFORE
    }


def test_seed_000_presets_made_from_micro_fio_are_the_ones_written_before():
    before = profiles_from_toml((GOLDEN / "fio-micro-presets.toml").read_text(), origin="golden")
    assert sorted(micro_presets(), key=lambda p: p.name) == sorted(before, key=lambda p: p.name)
    shipped = {p.name: p for p in list_presets()}
    assert all(shipped[p.name] == p for p in before)
    assert load_profile("fio-randrw-128k-j8") == next(
        p for p in before if p.name == "fio-randrw-128k-j8"
    )


def test_adding_a_job_file_adds_a_workload(tmp_path):
    shutil.copytree(RUNNER / micro.MICRO_DIR, tmp_path, dirs_exist_ok=True)
    (tmp_path / "10-64k-randwrite-qd4.fio").write_text(
        "[global]\nfilename=${TARGET}\nsize=${SIZE}\ndirect=1\n\n"
        "[64k-randwrite-qd4]\ndescription=64 KiB random writes\nrw=randwrite\nbs=64k\niodepth=4\n"
    )
    jobs = micro.micro_jobs(str(tmp_path))
    assert [n for n, _, _ in jobs[:-1]] == [n for n, _, _ in WRITTEN_BEFORE]
    assert jobs[-1] == (
        "64k-randwrite-qd4",
        Workload(rw="randwrite", bs_bytes=64 * KIB, iodepth=4),
        True,
    )


@pytest.mark.parametrize(
    "body, message",
    [
        ("[a]\nrw=read\n[b]\nrw=write\n", "exactly one job, not 2"),
        ("[a]\nrw=read\nverify=md5\n", "would not honour: verify"),
        ("[a]\nrw=read\nbs=lots\n", "lots"),
        ("[a]\nbs=4k\n", "'rw'"),
        ("rw=read\n", "not a fio job file"),
    ],
)
def test_a_job_file_the_probe_cannot_honour_is_refused(tmp_path, body, message):
    (tmp_path / "01-x.fio").write_text(body)
    with pytest.raises(ConfigError, match=message):
        micro.micro_jobs(str(tmp_path))


@pytest.mark.parametrize("job", sorted(p.name for p in (RUNNER / micro.MICRO_DIR).glob("*.fio")))
def test_micro_job_files_are_self_describing(job):
    """As runner/*.fio: a header (purpose, expectations, hazards, how to run it by hand),
    the target only through the environment, a description for the job."""
    body = (RUNNER / micro.MICRO_DIR / job).read_text()
    assert body.startswith(f"# {job} — ")
    header = body.split("\n[", 1)[0]
    assert (
        "HAZARDS:" in header
        and "What to expect" in header
        and f"runner/{micro.MICRO_DIR}/{job}" in header
    )
    assert re.search(r"^description=\S", body.split("\n[", 2)[2], re.M)
    assert re.search(r"^(filename|directory)=\$\{TARGET\}", body, re.M)
    assert micro.MICRO_DIR in (RUNNER / "README.md").read_text()
