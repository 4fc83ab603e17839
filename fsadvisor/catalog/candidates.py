"""The configurations worth comparing: per-filesystem option axes, crossed.

Each axis lists alternatives for one knob, the first being the default; a candidate picks one
alternative per axis. The knobs are the ones the seeds measured or single out (seed 004 Table 2:
block size, inode size, journal mode, noatime, XFS AG count; seed 002: data=writeback, nobarrier,
commit=60; seed 000: AG count ~ CPU count) plus each filesystem's own energy-relevant choices
(btrfs compression and checksum, f2fs log-structured mode). Risky options are included: recommend
filters them by the profile. Combinations the tools refuse are dropped by validation.

Discard: btrfs mounts with discard=async by default since Linux 6.2 and f2fs discards by default;
the TRIMs are issued in the background at times unrelated to the measured run, so they leak cost
into later runs, and ext4/xfs do not discard by default. Every generated btrfs/f2fs candidate
therefore states ``nodiscard`` or its discard variant explicitly, and default_config uses
``nodiscard`` for both: the baseline is controlled and compares like with like.
"""

from __future__ import annotations

import functools
import itertools
import os
from typing import Any, Iterable

from fsadvisor.catalog import geometry
from fsadvisor.catalog.rules import build, canonical, validate
from fsadvisor.domain import FILESYSTEMS, SCHEDULERS, FsConfig
from fsadvisor.errors import ConfigError

Axis = list[tuple[dict[str, Any], tuple[str, ...]]]


def _mk(*values: dict[str, Any]) -> Axis:
    return [(v, ()) for v in values]


def _mo(*values: tuple[str, ...]) -> Axis:
    return [({}, v) for v in values]


_ATIME = _mo((), ("noatime",))

AXES: dict[str, list[Axis]] = {
    "ext4": [
        _mk({}, {"block_size": 1024}, {"block_size": 2048}),
        _mk({}, {"inode_size": 1024}),
        _mk({}, {"journal": False}),
        _ATIME,
        _mo((), ("data=writeback",), ("data=writeback", "journal_async_commit"), ("data=journal",)),
        _mo((), ("nobarrier",)),
        _mo((), ("commit=60",)),
    ],
    "xfs": [
        _mk({}, {"block_size": 2048}, {"block_size": 1024}),
        _mk({}, {"inode_size": 1024}, {"inode_size": 2048}),
        _ATIME,
        # seed 002's XFS row: logbufs=8,logbsize=256k
        _mo((), ("logbufs=8", "logbsize=256k")),
    ],
    "btrfs": [
        _mk({}, {"nodesize": 65536}),
        _mk({}, {"checksum": "xxhash"}, {"checksum": "blake2"}),
        _ATIME,
        _mo((), ("compress=zstd:1",), ("compress=zstd:3",), ("compress=lzo",), ("nodatacow",)),
        _mo(("nodiscard",), ("discard=async",)),
        _mo((), ("nobarrier",)),
    ],
    "f2fs": [
        _mk(
            {},
            {"features": "extra_attr,inode_checksum,sb_checksum"},
            {"features": "extra_attr,compression"},
        ),
        _ATIME,
        _mo((), ("mode=lfs",)),
        _mo(("nodiscard",), ("discard",)),
        _mo((), ("fsync_mode=nobarrier",)),
        _mo((), ("compress_algorithm=lz4",)),
    ],
}

# XFS AG counts to try: seed 004 swept 8..128 in powers of two (default then 16); seed 000
# suggests one AG per CPU. Filtered by what the device size allows.
AG_COUNTS = (8, 16, 32, 64, 128)

DEFAULT_MOUNT = {"ext4": (), "xfs": (), "btrfs": ("nodiscard",), "f2fs": ("nodiscard",)}


def default_config(
    fs: str, device_size_bytes: int | None = None, scheduler: str = "none"
) -> FsConfig:
    """The tools' defaults (plus explicit nodiscard for btrfs/f2fs, see module docstring)."""
    cfg = canonical(FsConfig(fs=fs, mount=DEFAULT_MOUNT.get(fs, ()), scheduler=scheduler))
    validate(cfg, device_size_bytes)
    return cfg


@functools.lru_cache(maxsize=None)
def _static_configs(fs: str) -> tuple[FsConfig, ...]:
    """Every valid cross of the axes (size-independent, scheduler "none", no ag_count)."""
    out: dict[FsConfig, None] = {}
    for combo in itertools.product(*AXES[fs]):
        mkfs: dict[str, Any] = {}
        mount: list[str] = []
        for mk, mo in combo:
            mkfs.update(mk)
            mount.extend(mo)
        try:
            cfg = build(fs, mkfs, tuple(mount))
        except ConfigError:
            continue  # e.g. data=writeback on an ext4 without journal
        out[cfg] = None
    return tuple(out)


def _ag_choices(
    device_size_bytes: int, block_size: int, ncpus: int, sector_size: int | None
) -> list[int | None]:
    try:
        lo, hi = geometry.ag_count_range(device_size_bytes, block_size, sector_size)
    except ConfigError:
        return []
    default = geometry.default_ag_count(device_size_bytes, block_size)
    out: list[int | None] = [None]
    for n in (*AG_COUNTS, ncpus):
        if lo <= n <= hi and n != default and n not in out:
            out.append(n)
    return out


@functools.lru_cache(maxsize=32)
def _candidates(
    device_size_bytes: int,
    filesystems: tuple[str, ...],
    schedulers: tuple[str, ...],
    ncpus: int,
    sector_size: int | None,
) -> tuple[FsConfig, ...]:
    out: list[FsConfig] = []
    for fs in filesystems:
        if device_size_bytes < geometry.MIN_DEVICE_BYTES[fs]:
            continue
        for base in _static_configs(fs):
            bs = base.mkfs_dict.get("block_size", 4096)
            if sector_size and fs in ("ext4", "xfs") and bs < sector_size:
                continue  # a 4Kn device takes no 1-2 KiB blocks
            if fs == "xfs":
                ags = _ag_choices(device_size_bytes, bs, ncpus, sector_size)
            else:
                ags = [None]
            # FsConfig(...) rather than .with_(): dataclasses.replace is the slow part here
            out.extend(FsConfig(fs, base.mkfs, base.mount, s, ag) for ag in ags for s in schedulers)
    return tuple(out)


def candidates(
    device_size_bytes: int,
    filesystems: Iterable[str] = FILESYSTEMS,
    schedulers: Iterable[str] = SCHEDULERS,
    ncpus: int | None = None,
    sector_size: int | None = None,
) -> list[FsConfig]:
    """Every generated configuration that fits a device of this size (>= 1,000 for 1 TB) and,
    when given, logical sector size. ``ncpus`` (default: this machine's) adds an AG count of
    one per CPU (seed 000)."""
    fss, scheds = tuple(dict.fromkeys(filesystems)), tuple(dict.fromkeys(schedulers))
    for fs in fss:
        if fs not in FILESYSTEMS:
            raise ConfigError(f"unknown filesystem {fs!r} (known: {', '.join(FILESYSTEMS)})")
    for s in scheds:
        if s not in SCHEDULERS:
            raise ConfigError(f"unknown I/O scheduler {s!r} (known: {', '.join(SCHEDULERS)})")
    if (
        isinstance(device_size_bytes, bool)
        or not isinstance(device_size_bytes, int)
        or device_size_bytes <= 0
    ):
        raise ConfigError(
            f"device size must be a positive number of bytes, not {device_size_bytes!r}"
        )
    return list(
        _candidates(device_size_bytes, fss, scheds, ncpus or os.cpu_count() or 1, sector_size)
    )
