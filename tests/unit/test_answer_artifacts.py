"""Issue 12 §5: recommend's udev rule is apply's rule for the target device itself, no
scheduler "none" for a rotational disk, and valid mount options people type are accepted."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from fsadvisor import catalog
from fsadvisor.catalog import artifacts
from fsadvisor.domain import FsConfig
from fsadvisor.errors import ConfigError
from fsadvisor.host import device as devmod
from fsadvisor.service import advice
from fsadvisor.service.device_target import target_for

cli.register_all()


def test_without_a_device_the_rule_names_no_device_kind_pattern():
    doc = json.loads(
        CliRunner().invoke(cli.app, ["recommend", "-p", "oltp", "--top", "2", "--json"]).output
    )
    for r in doc["recommendations"]:
        rule = r["scheduler_udev_rule"]
        assert 'KERNEL=="nvme[0-9]*n[0-9]*"' not in rule  # never every namespace on the host
        assert 'KERNEL=="DEVICE"' in rule and "fsadvisor apply --device" in rule
        assert r["scheduler_udev_file"] == artifacts.UDEV_RULE_PATH


def test_with_a_device_the_rule_is_applys_rule_for_it(monkeypatch):
    monkeypatch.setattr(
        devmod,
        "safety_verdict",
        lambda p, **k: devmod.Verdict(ok=True, reason=None, resolved_path=p),
    )
    dev = replace(advice.resolve_device("sata-ssd:480G"), path="/dev/sdq", kind="sata-ssd")
    rec = advice.recommend("oltp", device=dev, top=2)
    for r in rec.ranked:
        expected = artifacts.udev_rule(target_for("/dev/sdq"), r.config.scheduler)
        assert r.commands["udev"] == expected
        assert 'KERNEL=="sdq"' in expected
    text = CliRunner().invoke(cli.app, ["recommend", "-p", "oltp", "--top", "1"]).output
    assert "udev:" in text and artifacts.UDEV_RULE_PATH in text


@pytest.mark.parametrize("spec", ["hdd:4T"])
def test_no_scheduler_none_for_a_rotational_disk(spec):
    rec = advice.recommend("oltp", device=spec, top=5)
    assert rec.excluded["scheduler_none_on_rotational_disk"] > 0
    shown = rec.ranked + list(rec.best_per_filesystem.values())
    assert shown and all(r.config.scheduler != "none" for r in shown)
    assert all("none" not in r.scheduler_alternatives for r in shown)
    rot = replace(advice.resolve_device("sata-ssd:480G"), rotational=True)
    assert all(r.config.scheduler != "none" for r in advice.recommend("oltp", rot, top=3).ranked)


@pytest.mark.parametrize(
    "fs, opts",
    [
        ("ext4", ["noatime", "nodiratime"]),
        ("xfs", ["nodiratime", "inode64"]),
        ("xfs", ["inode32"]),
        ("btrfs", ["nodiratime"]),
        ("ext4", ["diratime"]),
    ],
)
def test_valid_mount_options_people_type_are_accepted(fs, opts):
    cfg = catalog.config_from_dict({"filesystem": fs, "mount": opts})
    catalog.validate(cfg, 1 << 40)
    assert all(o in catalog.mount_options_string(cfg) for o in opts)


def test_inode64_is_xfs_only_and_one_inode_mode():
    with pytest.raises(ConfigError):
        catalog.validate(
            catalog.config_from_dict({"filesystem": "ext4", "mount": ["inode64"]}), 1 << 40
        )
    with pytest.raises(ConfigError):
        catalog.validate(
            catalog.config_from_dict({"filesystem": "xfs", "mount": ["inode64", "inode32"]}),
            1 << 40,
        )


def test_predict_prints_no_python_repr():
    out = (
        CliRunner()
        .invoke(
            cli.app, ["predict", "-c", '{"filesystem":"xfs","mount":["noatime"]}', "-p", "oltp"]
        )
        .output
    )
    assert out.splitlines()[0] == "xfs, noatime, sched none"
    assert "{'" not in out
