"""Option effects act only through their mechanism (predict/spec.py): where the workload does
not do the work an option changes, the option's effect is exactly zero, and the advice never
prefers it there."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from fsadvisor import catalog
from fsadvisor.domain import METADATA_MODES, FsConfig, Workload
from fsadvisor.predict import features, spec
from fsadvisor.predict.settings import ModelSettings
from fsadvisor.profiles import list_presets, load_profile

cli.register_all()
KINDS = ("nvme", "sata-ssd", "hdd", "ram-loop")

workloads = st.builds(
    Workload,
    rw=st.sampled_from(["read", "randread", "write", "randwrite", "randrw", "rw", *METADATA_MODES]),
    bs_bytes=st.sampled_from([512, 1024, 2048, 4096, 8192, 131072, 1 << 20]),
    iodepth=st.sampled_from([1, 4, 32]),
    numjobs=st.sampled_from([1, 2, 4, 16, 100]),
    rwmixread=st.integers(0, 100),
    fsync_every=st.sampled_from([0, 1, 32]),
    direct=st.booleans(),
    file_size_bytes=st.sampled_from([2048, 4096, 16384, 1 << 30]),
    create_frac=st.sampled_from([0.0, 0.1, 0.3]),
    stat_frac=st.sampled_from([0.0, 0.2]),
    delete_frac=st.sampled_from([0.0, 0.1]),
    op=st.sampled_from(["io", "file", "db_op"]),
)


def _catalog_configs() -> list[FsConfig]:
    return list(catalog.candidates(1 << 40, ("ext4", "xfs", "btrfs", "f2fs"), ("none",)))


CONFIGS = _catalog_configs()


def test_every_catalog_option_has_a_declared_mechanism():
    # A workload that does every kind of work, so every condition is non-zero.
    w = Workload(
        rw="randrw",
        numjobs=8,
        create_frac=0.2,
        stat_frac=0.1,
        delete_frac=0.1,
        fsync_every=1,
        op="file",
        bs_bytes=2048,
        file_size_bytes=2048,
        direct=False,
    )
    for cfg in CONFIGS:
        names = spec.option_features(cfg.fs, cfg.mkfs_dict, cfg.mount, cfg.ag_count, w, "hdd")
        undeclared = [n for n in names if n.endswith("*any")]
        assert not undeclared, (cfg.label(), undeclared)
        for n in names:
            assert spec.effect_of(n) is not None, n


@settings(max_examples=300, deadline=None)
@given(w=workloads, i=st.integers(0, len(CONFIGS) - 1), kind=st.sampled_from(KINDS))
def test_an_effect_is_absent_wherever_its_condition_is_zero(w, i, kind):
    cfg = CONFIGS[i]
    f = features.config_features(cfg, w, kind)
    for name in f:
        effect = spec.effect_of(name)
        if effect is not None:
            assert spec.CONDITIONS[effect.condition].of(w, kind) > 0, (name, w, kind)
            assert f[name] != 0.0
    # the option features are exactly the declared ones' (no bare option term)
    assert not [n for n in f if n.startswith(("opt:", "ag:")) and spec.effect_of(n) is None]


def test_allocation_groups_act_only_through_concurrent_allocation():
    xfs = FsConfig.make("xfs")
    for w in (
        Workload(rw="randread", numjobs=16),  # reads allocate nothing
        Workload(rw="randwrite", numjobs=16),  # overwrites of a laid-out file
        Workload(rw="filecreate", numjobs=1),  # one writer: no contention
        Workload(rw="randrw", numjobs=16, op="db_op", fsync_every=1),
    ):
        assert spec.concurrent_allocation(w) == 0
        for ag in (8, 32, 128):
            cfg = FsConfig.make("xfs", ag_count=ag)
            assert features.config_features(cfg, w, "nvme") == features.config_features(
                xfs, w, "nvme"
            )
    creators = Workload(rw="randrw", numjobs=16, create_frac=0.3, op="file")
    assert spec.concurrent_allocation(creators) > 0
    assert "ag:log*alloc" in features.config_features(
        FsConfig.make("xfs", ag_count=32), creators, "nvme"
    )


def test_block_size_acts_only_on_sub_block_io_or_allocation():
    small = FsConfig.make("xfs", mkfs={"block_size": 1024})
    for w in (
        Workload(rw="randrw", bs_bytes=8192, numjobs=16, fsync_every=1),  # 8 KB pages
        Workload(rw="randread", bs_bytes=131072, numjobs=4),
    ):
        assert not [k for k in features.config_features(small, w, "nvme") if "blk" in k]
    two_k = Workload(rw="randrw", bs_bytes=2048, numjobs=4)
    f1 = features.config_features(small, two_k, "hdd")
    f2 = features.config_features(FsConfig.make("xfs", mkfs={"block_size": 2048}), two_k, "hdd")
    # a 1 KiB block spares a 2 KiB write nothing more than a 2 KiB block does
    assert f1["opt:blk_small*subblock"] == f2["opt:blk_small*subblock"] == 1.0
    # a flash drive programs 4 KiB pages whatever the block: nothing spared there
    for kind in ("nvme", "sata-ssd", "ram-loop", "zram"):
        assert "opt:blk_small*subblock" not in features.config_features(small, two_k, kind)


def test_2010_rows_load_on_a_wide_era_twin():
    w = Workload(rw="randrw", numjobs=100, create_frac=0.1, op="file")
    f = features.config_features(FsConfig.make("xfs", ag_count=64), w, "hdd")
    assert f["ag:log*alloc"] == f["ag:log*alloc@2010"]
    assert "ag:log*alloc@2010" not in features.config_features(
        FsConfig.make("xfs", ag_count=64), w, "nvme"
    )
    s = ModelSettings.load(use_store_calibration=False)
    shared, era = s.prior("ag:log*alloc"), s.prior("ag:log*alloc@2010")
    assert era[0] == 0.0 and era[1] >= shared[1] > 0


def test_priors_and_words_come_from_the_declaration():
    s = ModelSettings.load(use_store_calibration=False)
    for e in spec.EFFECTS:
        assert s.prior(e.name) == pytest.approx((e.prior_mean, e.prior_sd * s.prior_scale))
        assert e.text and e.cite and e.condition in spec.CONDITIONS
    from fsadvisor.predict.rank import _mechanism

    assert _mechanism("opt:noatime*rf")["text"] == spec.BY_NAME["opt:noatime*rf"].text
    assert _mechanism("pwf:ag:log*alloc@2010")["cite"] == spec.BY_NAME["ag:log*alloc"].cite


def test_the_fit_cache_key_names_the_feature_code():
    from fsadvisor.predict.fit import settings_key

    key = settings_key(ModelSettings.load(use_store_calibration=False))
    assert spec.fingerprint() in key and len(spec.fingerprint()) == 8


def _presets():
    return [p if isinstance(p, str) else p.name for p in list_presets()]


@pytest.mark.parametrize("device", [None, "samsung-pm9a3-3.84tb-u2"])
def test_no_preset_gets_an_option_whose_mechanism_it_does_not_exercise(device, tmp_db):
    """Over every preset, on the default NVMe and on a data-centre NVMe with PLP: no #1 with
    a block below 4 KiB (a flash drive programs 4 KiB pages whatever the block), and no AG
    count other than mkfs.xfs's unless writers allocate concurrently."""
    runner = CliRunner()
    for name in _presets():
        w = load_profile(name).workload
        args = ["recommend", "--profile", name, "--json", "--top", "1"]
        if device:
            args += ["--device", device, "--plp", "yes"]
        r = runner.invoke(cli.app, args)
        assert r.exit_code == 0, (name, r.output)
        top = json.loads(r.output)["recommendations"][0]
        block = top["config"].get("mkfs", {}).get("block_size", 4096)
        assert block >= 4096, (name, top["config_label"])  # flash: never a sub-4K block
        if top["filesystem"] == "xfs" and top["config"].get("ag_count") is not None:
            assert spec.concurrent_allocation(w) > 0, (name, top["config_label"])


def test_ext4s_small_block_acts_on_buffered_writes_only():
    # ext4's buffered write path keeps a buffer head per block: four per page at 1 KiB.
    # Direct I/O, reads and XFS (iomap, no buffer heads) are untouched by it.
    appends = Workload(
        rw="write", bs_bytes=65536, numjobs=4, fsync_every=32, direct=False, ioengine="psync"
    )
    small = FsConfig.make("ext4", mkfs={"block_size": 1024})
    f = features.config_features(small, appends, "nvme")
    assert f["opt:blk_small*bufw"] == pytest.approx(2.0)  # log2(4096 / 1024) x all writes
    assert (
        f["opt:blk_small*bufw"]
        > features.config_features(
            FsConfig.make("ext4", mkfs={"block_size": 2048}), appends, "nvme"
        )["opt:blk_small*bufw"]
    )
    for cfg, w in (
        (FsConfig.make("xfs", mkfs={"block_size": 1024}), appends),
        (small, dataclasses.replace(appends, direct=True)),
        (small, dataclasses.replace(appends, rw="read", fsync_every=0)),
        (FsConfig.make("ext4"), appends),
    ):
        assert "opt:blk_small*bufw" not in features.config_features(cfg, w, "nvme"), (cfg, w)
