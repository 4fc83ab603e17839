"""Documented guidance as tests (datasets/guidance.toml, service/guidance.py): every rule has
its source and a check, each check fires on a configuration that goes against it and not on
the defaults, no preset's #1 goes against any rule on a default NVMe or a data-centre NVMe
with PLP, and a #1 that did would be marked in the answer."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fsadvisor.domain import Device, FsConfig
from fsadvisor.profiles import list_presets, load_profile
from fsadvisor.service import advice, guidance

NVME = Device(None, 1 << 40, kind="nvme", logical_block_size=512)


def _presets():
    return [p if isinstance(p, str) else p.name for p in list_presets()]


def test_every_rule_has_a_source_and_a_check():
    rules = guidance.rules()
    assert set(rules) == set(guidance.CHECKS)
    for r in rules.values():
        assert r.says and r.applies and len(r.source) > 20, r.id


# (rule, a configuration against it, profile, device): each check must be able to fire.
AGAINST = [
    ("block-size-default", FsConfig.make("xfs", mkfs={"block_size": 1024}), "oltp", NVME),
    (
        "agcount-parallel-allocation",
        FsConfig.make("xfs", ag_count=128),
        "fio-randwrite-4k-j1",
        NVME,
    ),
    ("inode-size-metadata", FsConfig.make("xfs", mkfs={"inode_size": 2048}), "oltp", NVME),
    ("barriers-need-plp", FsConfig.make("ext4", mount=("barrier=0",)), "oltp", NVME),
    (
        "xfs-nobarrier-removed",
        FsConfig.make("xfs", mount=("nobarrier",)),
        "oltp",
        replace(NVME, plp="yes"),
    ),
    ("ext4-writeback-durability", FsConfig.make("ext4", mount=("data=writeback",)), "oltp", NVME),
    ("ext4-commit-durability", FsConfig.make("ext4", mount=("commit=60",)), "oltp", NVME),
    (
        "scheduler-none-not-rotational",
        FsConfig.make("ext4"),
        "oltp",
        Device(None, 1 << 40, kind="hdd", rotational=True),
    ),
    (
        "f2fs-needs-the-kernel",
        FsConfig.make("f2fs", mount=("nodiscard",)),
        "oltp",
        replace(NVME, path="/dev/nvme9n1"),
    ),
]


@pytest.mark.parametrize("rule,cfg,profile,device", AGAINST, ids=[a[0] for a in AGAINST])
def test_each_check_fires_where_the_rule_is_broken(rule, cfg, profile, device):
    prof = load_profile(profile)
    broken = [r.id for r in guidance.against(cfg, prof, device, {"f2fs": False})]
    assert rule in broken
    default = FsConfig.make(cfg.fs, mount=("nodiscard",) if cfg.fs == "f2fs" else ())
    flash = replace(device, rotational=False, kind="nvme")  # (an hdd is rotational by kind)
    assert rule not in [r.id for r in guidance.against(default, prof, flash, {"f2fs": True})]


def test_writeback_is_within_the_guidance_where_durability_is_waived_and_plp_known():
    prof = load_profile("oltp")
    prof = replace(prof, constraints=replace(prof.constraints, durability=False))
    cfg = FsConfig.make("ext4", mount=("data=writeback",))
    assert not guidance.against(cfg, prof, replace(NVME, plp="yes"))
    assert guidance.against(cfg, prof, NVME)  # PLP unknown: against it


@pytest.mark.parametrize("device,plp", [(None, None), ("samsung-pm9a3-3.84tb-u2", "yes")])
def test_no_preset_first_choice_goes_against_documented_guidance(device, plp, tmp_db):
    for name in _presets():
        rec = advice.recommend(name, device, plp=plp, top=1)
        broken = guidance.against(rec.ranked[0].config, rec.profile, rec.device)
        assert not broken, (name, rec.ranked[0].config.label(), [r.id for r in broken])


def test_a_first_choice_against_the_guidance_is_marked(tmp_db):
    from fsadvisor.predict.rank import rank

    prof = load_profile("oltp")
    dev = advice.resolve_device(None, sector_size=512)
    bad = FsConfig.make("xfs", mkfs={"block_size": 1024})
    rec = rank(advice.get_model(None), prof, dev, top=1, candidates=[bad])
    rec = advice.finish(rec, None, "test", [])
    warned = [w for w in rec.ranked[0].warnings if w.startswith("goes against documented")]
    assert warned and "Performance Tuning Guide" in warned[0]
