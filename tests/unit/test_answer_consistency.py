"""One story in recommend's answer: the headline's probe time is the settle line's, an
unmeasured filesystem never wins a tie on its prior, the mount lines are complete, and the
user's own profile runs are found under the name a probe stores them by (issues 10, 11, 12)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from typer.testing import CliRunner

import fsadvisor.cli as cli
from fsadvisor.domain import Device, EnergyReading, FsConfig, RunRecord, Workload
from fsadvisor.predict import rank as rankmod
from fsadvisor.predict.fit import fit
from fsadvisor.predict.settings import ModelSettings
from fsadvisor.service import advice
from fsadvisor.store import reference
from fsadvisor.store.datasets import load_observations

cli._register()
runner = CliRunner()


@pytest.fixture(autouse=True)
def _host_free(monkeypatch):
    monkeypatch.setattr(advice, "kernel_filesystems",
                        lambda: {"ext4": True, "xfs": True, "btrfs": True, "f2fs": False})


def run(*args):
    r = runner.invoke(cli.app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("profile", ["oltp", "build-unpack"])
def test_headline_and_settle_line_give_one_duration(profile):
    text = run("recommend", "-p", profile, "--top", "3")
    how_sure = text.splitlines()[1]
    settle = next(ln for ln in text.splitlines() if ln.strip().startswith("tied: to settle it"))
    head = re.search(r"decides among the leading (\d+) in about (\d+(?:\.\d)? (?:s|min|h))",
                     how_sure)
    cells = re.search(r"measure (\d+) cells \(about (\d+(?:\.\d)? (?:s|min|h)) on this device",
                      settle)
    assert head and cells, (how_sure, settle)
    assert head.groups() == cells.groups()


@pytest.fixture(scope="module")
def shipped_fit():
    obs = load_observations(include=("upper-bound", "lower-bound")) + reference.load_observations()
    return fit(obs, ModelSettings.load(use_store_calibration=False))


def test_a_filesystem_measured_only_on_plain_io_rests_on_priors_for_metadata_and_fsync(
        shipped_fit):
    f2fs, xfs = FsConfig.make("f2fs"), FsConfig.make("xfs")
    meta = Workload(rw="randwrite", create_frac=1.0)
    fsync = Workload(rw="randwrite", bs_bytes=4096, fsync_every=1)
    plain = Workload(rw="randwrite", bs_bytes=4096, iodepth=32)
    # seed 000 measured f2fs on plain reads and writes only; nothing on creates or fsync
    assert rankmod._has_data(shipped_fit, f2fs, plain)
    assert not rankmod._has_data(shipped_fit, f2fs, meta)
    assert not rankmod._has_data(shipped_fit, f2fs, fsync)
    assert rankmod._has_data(shipped_fit, xfs, meta) and rankmod._has_data(shipped_fit, xfs, fsync)


def test_among_equals_measured_goes_before_fewer_settings():
    # Two statistically tied candidates (within the 1% tolerance): the prior-only one is
    # simpler and scores higher, and still comes second.
    dev = Device(None, 1 << 40)
    prior_only = FsConfig.make("f2fs")
    measured = FsConfig.make("xfs", mount=("noatime",), ag_count=16)
    kept = [(1000.0, prior_only, None, []), (995.0, measured, None, [])]
    ordered, _ = rankmod._order(kept, dev, top=2, measured=lambda c: c.fs != "f2fs")
    assert [item[1] for item in ordered] == [measured, prior_only]
    # without the evidence rule the simpler one would lead (the old behaviour)
    ordered, _ = rankmod._order(kept, dev, top=2, measured=lambda c: True)
    assert ordered[0][1] == prior_only


def test_build_unpack_is_not_won_by_an_unmeasured_filesystem():
    doc = json.loads(run("recommend", "-p", "build-unpack", "--top", "3", "--json"))
    top = doc["recommendations"][0]
    assert top["filesystem"] != "f2fs", top["config_label"]


def test_mount_lines_create_the_mount_point_and_name_the_uuid_command():
    text = run("recommend", "-p", "oltp", "--top", "1")
    mount = next(ln for ln in text.splitlines() if ln.strip().startswith("mount:"))
    assert "mkdir -p /srv/data && mount -t " in mount and mount.rstrip().endswith(
        "/dev/DEVICE /srv/data")
    assert "blkid -s UUID -o value /dev/DEVICE" in text
    doc = json.loads(run("recommend", "-p", "oltp", "--top", "1", "--json"))
    r = doc["recommendations"][0]
    assert r["mount_setup"].startswith("mkdir -p /srv/data && mount -t ")
    assert r["uuid_command"] == "blkid -s UUID -o value /dev/DEVICE"


def test_a_quoted_device_path_stays_one_word_in_the_mount_lines():
    cmds = rankmod.commands_for(FsConfig.make("ext4"), "/dev/disk/by-id/nvme-X Y")
    assert "'/dev/disk/by-id/nvme-X Y' /srv/data" in cmds["mount_setup"]
    assert cmds["uuid_command"].endswith("'/dev/disk/by-id/nvme-X Y'")


def test_runs_a_profile_probe_stored_are_found_first(tmp_path, monkeypatch):
    """A probe with --profile stores its cells under "profile:<name>"
    (probe/plan.profile_workload): the why-line must find them there too."""
    from fsadvisor.probe.plan import profile_workload
    from fsadvisor.store import open_store
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "own.db"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    advice._cache.clear()
    prof = advice.get_profile("oltp")
    disk = Device("/dev/nvme7n1", 1 << 40, serial="S1")
    dev = replace(advice.resolve_device("nvme:1T"), path="/dev/nvme7n1", serial="S1")
    top = advice.recommend(prof, device=disk, top=1).ranked[0]
    name = profile_workload(prof).name
    assert name == "profile:oltp"
    with open_store(None) as store:
        store.ensure_seeded()
        for rep, iops in enumerate((60_000.0, 61_000.0, 62_000.0), 1):
            store.record_run(RunRecord(
                cell_key=f"{top.config.key()} | {name}", device=dev, config=top.config,
                workload_name=name, workload=prof.workload, rep=rep, status="ok",
                started_at=1_700_000_000.0 + rep, wall_s=12.0,
                metrics={"iops": iops, "mb_s": iops * 8192 / 1e6, "p99_latency_us": 900.0,
                         "mean_latency_us": 250.0, "runtime_s": 10.0},
                energy=EnergyReading(source="rapl", scope="system", energy_j=600.0,
                                     avg_watts=60.0, duration_s=10.0, samples=10),
                host={"hostname": "box", "kernel": "6.18", "cores": 2}))
    advice._cache.clear()
    rec = advice.recommend(prof, device=disk, top=5)
    mine = [r for r in rec.ranked if r.config == top.config]
    assert mine and mine[0].why[0] == "measured on /dev/nvme7n1: 3 runs, 61k ± 1k IOPS"
