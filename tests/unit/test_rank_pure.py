"""Ranking is a pure function of (model, profile, device description): the device safety
check and the kernel's filesystem list are the service's to find out and pass in."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fsadvisor import catalog
from fsadvisor.host import device as devmod
from fsadvisor.predict.rank import DEVICE_PLACEHOLDER, CommandTarget, rank
from fsadvisor.service import advice


@pytest.fixture
def no_host(monkeypatch):
    """Any look at the host from inside rank() fails the test."""

    def forbidden(*a, **k):
        raise AssertionError("rank() looked at the host")

    for name in ("safety_verdict", "inspect", "lsblk", "require_safe"):
        monkeypatch.setattr(devmod, name, forbidden)
    monkeypatch.setattr(catalog, "kernel_supports", forbidden)


def test_rank_never_inspects_the_host(no_host):
    model = advice.get_model()
    dev = replace(advice.resolve_device("nvme:1T"), path="/dev/nvme9n9")
    rec = rank(model, advice.get_profile("oltp"), dev, top=2)
    # without a target decided by the caller nothing is printed ready to run
    assert all(DEVICE_PLACEHOLDER in r.commands["mkfs"] for r in rec.ranked)
    rec = rank(
        model,
        advice.get_profile("oltp"),
        dev,
        top=2,
        target=CommandTarget("/dev/nvme9n9", "why not"),
        kernel_has={"f2fs": False},
    )
    assert all("/dev/nvme9n9" in r.commands["mkfs"] and "why not" in r.warnings for r in rec.ranked)


@pytest.mark.parametrize(
    "verdict, path, warning",
    [
        (devmod.Verdict(ok=True, reason=None, resolved_path="/dev/x"), "/dev/x", None),
        (
            devmod.Verdict(ok=False, reason="holds /", resolved_path="/dev/x"),
            None,
            "/dev/x must not be formatted (holds /); commands show /dev/DEVICE",
        ),
        (
            devmod.Verdict(
                ok=False, reason="xfs signature", resolved_path="/dev/x", needs_force=True
            ),
            "/dev/x",
            "/dev/x: xfs signature — formatting destroys it",
        ),
    ],
)
def test_the_service_decides_the_mkfs_target(monkeypatch, verdict, path, warning):
    monkeypatch.setattr(devmod, "safety_verdict", lambda p, **k: verdict)
    dev = replace(advice.resolve_device("nvme:1T"), path="/dev/x")
    got = advice.mkfs_target(dev)
    assert (got.path, got.warning) == (path, warning)
    # a device that is printed gets apply's own udev target for it
    assert (got.udev is not None and got.udev.path == "/dev/x") == (path is not None)
    assert advice.mkfs_target(advice.resolve_device("nvme:1T")) == CommandTarget()
