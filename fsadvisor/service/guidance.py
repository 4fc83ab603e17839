"""Documented guidance as checks: each rule of datasets/guidance.toml (what a man page, the
kernel's documentation or a vendor's tuning guide says, with its source) and the check that
holds a configuration to it for a workload, a device and a profile's durability.

recommend marks a #1 that contradicts a rule: with this device's own runs behind it the
why-line says it is measured here against the guidance; without, a warning names the rule. A
test runs every preset on a default NVMe and a library NVMe with PLP and finds no #1 against
any rule (tests/unit/test_guidance.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from fsadvisor import catalog
from fsadvisor.domain import Device, FsConfig, Profile
from fsadvisor.predict import spec
from fsadvisor.predict.rank import seeks
from fsadvisor.infra.resources import data_dir, read_toml

FLASH = ("nvme", "sata-ssd")
EXT4_DEFAULT_COMMIT_S = 5  # ext4.rst: commit=nrsec, default 5


@dataclass(frozen=True)
class Rule:
    id: str
    says: str
    source: str
    applies: str


@functools.lru_cache(maxsize=1)
def rules() -> dict[str, Rule]:
    # (through the parsed-TOML cache: a warm `recommend` loads no TOML parser)
    doc = read_toml(data_dir("datasets") / "guidance.toml")
    return {r["id"]: Rule(**r) for r in doc["rule"]}


def _mount(cfg: FsConfig) -> dict[str, str]:
    return {o.partition("=")[0]: o.partition("=")[2] for o in cfg.mount}


def _durable(profile: Profile, device: Device) -> bool:
    """The profile needs its writes to survive a power loss, or nobody said the drive has
    PLP: either way an option that trades durability for speed is against the guidance."""
    c = profile.constraints
    return (c.durability and not c.allow_risky) or device.plp != "yes"


# One check per rule: True when the configuration goes against the rule here.
CHECKS: dict[str, Callable[[FsConfig, Profile, Device, dict[str, bool] | None], bool]] = {
    "block-size-default": lambda cfg, p, d, k: (
        cfg.fs in ("ext4", "xfs")
        and d.kind in FLASH
        and dict(cfg.mkfs).get("block_size", 4096) < 4096
    ),
    "agcount-parallel-allocation": lambda cfg, p, d, k: (
        cfg.fs == "xfs"
        and cfg.ag_count is not None
        and cfg.ag_count != catalog.default_ag_count(d.size_bytes)
        and spec.concurrent_allocation(p.workload) == 0
    ),
    "inode-size-metadata": lambda cfg, p, d, k: (
        cfg.fs == "xfs"
        and dict(cfg.mkfs).get("inode_size", 512) > 512
        and p.workload.metadata_frac == 0
    ),
    "barriers-need-plp": lambda cfg, p, d, k: (
        (
            "nobarrier" in _mount(cfg)
            or _mount(cfg).get("barrier") == "0"
            or _mount(cfg).get("fsync_mode") == "nobarrier"
        )
        and d.plp != "yes"
    ),
    "xfs-nobarrier-removed": lambda cfg, p, d, k: (
        cfg.fs == "xfs" and bool({"nobarrier", "barrier"} & set(_mount(cfg)))
    ),
    "ext4-writeback-durability": lambda cfg, p, d, k: (
        cfg.fs == "ext4" and _mount(cfg).get("data") == "writeback" and _durable(p, d)
    ),
    "ext4-commit-durability": lambda cfg, p, d, k: (
        cfg.fs == "ext4"
        and int(_mount(cfg).get("commit") or EXT4_DEFAULT_COMMIT_S) > EXT4_DEFAULT_COMMIT_S
        and _durable(p, d)
    ),
    "scheduler-none-not-rotational": lambda cfg, p, d, k: seeks(d) and cfg.scheduler == "none",
    "f2fs-needs-the-kernel": lambda cfg, p, d, k: (
        cfg.fs == "f2fs" and d.path is not None and k is not None and not k.get("f2fs")
    ),
}


def against(
    cfg: FsConfig, profile: Profile, device: Device, kernel_has: dict[str, bool] | None = None
) -> list[Rule]:
    """The documented rules this configuration goes against for this profile and device."""
    table = rules()
    return [table[rid] for rid, check in CHECKS.items() if check(cfg, profile, device, kernel_has)]
