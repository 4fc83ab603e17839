"""One eligibility rule (rank.exclusion) for every command that picks a configuration:
recommend, report, compare and fleet rank through it, and the adaptive probe's chooser asks
it too. The same cases go through the ranking and the chooser and must agree: a rotational
disk never gets scheduler none, a device on this host never gets a filesystem its kernel
cannot mount (offline, a spec keeps it with a note), PLP unknown never gets a durability
hazard even where the profile waives durability."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from types import SimpleNamespace

import pytest

from fsadvisor import catalog
from fsadvisor.domain import Device
from fsadvisor.predict.rank import exclusion, rank
from fsadvisor.profiles import load_profile
from fsadvisor.service import advice
from fsadvisor.service.adaptive import Chooser

KERNEL = {"ext4": True, "xfs": True, "btrfs": True, "f2fs": False}  # this machine's
GIB = 1 << 30

CASES = {
    "nvme spec": Device(None, 1 << 40, kind="nvme"),
    "hdd spec": Device(None, 1 << 40, kind="hdd", rotational=True),
    "local nvme": Device("/dev/nvme9n1", 64 * GIB, kind="nvme"),
    "local rotational": Device("/dev/sdz", 64 * GIB, kind="hdd", rotational=True),
    # a direct-I/O loop on a file on a virtio disk reports rotational 1: the flag is its
    # backing's, and the loop device is no disk to sort seeks for
    "loop on a rotational backing": Device("/dev/loop7", 8 * GIB, kind="loop", rotational=True),
}


def _profile(name: str, durable: bool = True):
    p = load_profile(name)
    return replace(p, constraints=replace(p.constraints, durability=durable))


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize(
    "profile,durable", [("oltp", True), ("oltp", False), ("fio-randread-4k-j8", True)]
)
def test_the_ranking_and_the_adaptive_chooser_apply_one_rule(case, profile, durable, tmp_db):
    device = CASES[case]
    prof = _profile(profile, durable)
    cands = catalog.candidates(device.size_bytes, sector_size=4096)
    expected = Counter(exclusion(c, prof, device, KERNEL) for c in cands)
    rec = rank(advice.get_model(None), prof, device, top=3, candidates=cands, kernel_has=KERNEL)
    # the ranking excluded exactly what the rule excludes, reason by reason
    for reason, n in rec.excluded.items():
        if reason.startswith("fails_"):
            continue  # the profile's throughput/latency floors: predictions, not eligibility
        assert n == expected.get(reason, 0), (case, reason, n, expected)
    shown = rec.ranked + list(rec.best_per_filesystem.values())
    assert all(exclusion(r.config, prof, device, KERNEL) is None for r in shown)
    if device.rotational and device.kind == "hdd":
        assert all(r.config.scheduler != "none" for r in shown)
    if device.kind == "loop":
        assert expected.get("scheduler_none_on_rotational_disk", 0) == 0
    if device.path:
        assert all(r.config.fs != "f2fs" for r in shown)
        assert any("not supported by this kernel" in n for n in rec.notes)
    else:
        # offline: f2fs stays (with its note to check the target's kernel)
        assert expected.get("not_supported_by_this_kernel", 0) == 0
    if device.plp == "unknown":
        assert not any(catalog.risks(r.config) for r in shown), case
    # the adaptive probe's chooser, on the same configurations, keeps the same ones
    chooser = object.__new__(Chooser)
    chooser.plan = SimpleNamespace(
        configs=cands,
        unsupported={f for f, ok in KERNEL.items() if not ok} if device.path else set(),
    )
    chooser.excluded, chooser.schedulers, chooser.profile = {}, None, prof
    kept = set(chooser.candidates(device))
    assert kept == {c for c in cands if exclusion(c, prof, device, KERNEL) is None}
