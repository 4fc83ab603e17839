"""Whether a configuration is one the tools and this kernel accept, and parsing one from JSON.

A configuration is canonical when its mkfs values are normalised (sizes as ints, f2fs features
as a comma string in catalog order), mkfs values equal to the tool default are left out (so
``{"block_size": 4096}`` and ``{}`` are one configuration) and mount options are in their
canonical spelling (``logbsize=262144`` -> ``logbsize=256k``). mkfs_argv still passes every
value explicitly, so the argv does not depend on mke2fs.conf or on the tool version.
"""

from __future__ import annotations

from typing import Any, Mapping

from fsadvisor.catalog import geometry
from fsadvisor.catalog.specs import MKFS_OPTIONS, an, mkfs_option, parse_mount_option
from fsadvisor.domain import FILESYSTEMS, SCHEDULERS, FsConfig
from fsadvisor.errors import ConfigError


def _check_fs(fs: Any) -> str:
    if not isinstance(fs, str) or fs not in FILESYSTEMS:
        raise ConfigError(f"unknown filesystem {fs!r} (known: {', '.join(FILESYSTEMS)})")
    return fs


def _canonical_mkfs(fs: str, mkfs: Mapping[Any, Any]) -> dict[str, Any]:
    out = {}
    for name, value in mkfs.items():
        spec = mkfs_option(fs, name)
        v = spec.normalise(fs, value)
        if v != spec.default:
            out[name] = v
    return out


def _mkfs_value(fs: str, mkfs: Mapping[str, Any], name: str) -> Any:
    return mkfs.get(name, MKFS_OPTIONS[fs][name].default)


def _check_mkfs_combination(fs: str, mkfs: Mapping[str, Any]) -> None:
    if fs == "ext4":
        bs, isz = _mkfs_value(fs, mkfs, "block_size"), _mkfs_value(fs, mkfs, "inode_size")
        if isz > bs:  # mke2fs: "invalid inode size 2048 (min 128/max 1024)" (verified)
            raise ConfigError(f"ext4: inode_size {isz} is larger than block_size {bs}")
    elif fs == "xfs":
        bs, isz = _mkfs_value(fs, mkfs, "block_size"), _mkfs_value(fs, mkfs, "inode_size")
        if isz > bs // 2:  # mkfs.xfs 6.1: at least two inodes per block (verified)
            raise ConfigError(
                f"xfs: inode_size {isz} needs block_size >= {2 * isz} "
                f"(mkfs.xfs wants two inodes per block), not {bs}"
            )
    elif fs == "f2fs":
        feats = set(filter(None, _mkfs_value(fs, mkfs, "features").split(",")))
        for f in ("inode_checksum", "compression"):
            if f in feats and "extra_attr" not in feats:  # mkfs.f2fs exits 1 (verified)
                raise ConfigError(f"f2fs: feature {f} needs extra_attr")


def _canonical_mount(fs: str, mount: tuple[Any, ...]) -> tuple[str, ...]:
    out: list[str] = []
    seen: dict[str, str] = {}
    for text in mount:
        spec, canon = parse_mount_option(fs, text)
        if spec.group in seen:
            raise ConfigError(f"{fs}: mount options {seen[spec.group]!r} and {canon!r} conflict")
        seen[spec.group] = canon
        out.append(canon)
    return tuple(out)


def _check_mount_combination(fs: str, mkfs: Mapping[str, Any], cfg: FsConfig) -> None:
    if fs == "ext4":
        data = cfg.mount_value("data")
        if not _mkfs_value(fs, mkfs, "journal"):
            for key in ("data", "commit", "journal_async_commit"):
                if cfg.mount_value(key) is not None:
                    raise ConfigError(
                        f"ext4: mount option {key!r} needs a journal "
                        f"(mkfs journal=false; the kernel refuses it)"
                    )
        if cfg.mount_value("journal_async_commit") is not None and data in (None, "ordered"):
            raise ConfigError(
                "ext4: journal_async_commit is refused under data=ordered "
                "(the default); use data=writeback or data=journal"
            )
        if data == "journal" and cfg.mount_value("dioread_nolock") is not None:
            raise ConfigError(
                "ext4: dioread_nolock is ignored under data=journal "
                "(the kernel mounts nodioread_nolock)"
            )
    elif fs == "btrfs":
        if cfg.mount_value("compress") is not None:
            for key in ("nodatacow", "nodatasum"):
                if cfg.mount_value(key) is not None:
                    raise ConfigError(
                        f"btrfs: compress= turns {key} back off (compression needs "
                        f"data checksums); choose one of them"
                    )
    elif fs == "f2fs":
        feats = _mkfs_value(fs, mkfs, "features").split(",")
        if cfg.mount_value("compress_algorithm") is not None and "compression" not in feats:
            raise ConfigError(
                "f2fs: compress_algorithm= needs mkfs features compression,extra_attr"
            )


def canonical(config: FsConfig) -> FsConfig:
    """The canonical form of ``config`` (see module docstring); ConfigError when invalid."""
    fs = _check_fs(config.fs)
    if not isinstance(config.mkfs, tuple) or not all(
        isinstance(kv, tuple) and len(kv) == 2 for kv in config.mkfs
    ):
        raise ConfigError(f"{fs}: mkfs options must be name/value pairs")
    if isinstance(config.mount, str) or not isinstance(config.mount, (tuple, list)):
        raise ConfigError(f"{fs}: mount options must be a list")
    return build(fs, dict(config.mkfs), tuple(config.mount), config.scheduler, config.ag_count)


def build(
    fs: str,
    mkfs: Mapping[Any, Any],
    mount: tuple[Any, ...],
    scheduler: Any = "none",
    ag_count: Any = None,
) -> FsConfig:
    """A canonical FsConfig from its parts, validated (size-independent rules only)."""
    fs = _check_fs(fs)
    mk = _canonical_mkfs(fs, mkfs)
    _check_mkfs_combination(fs, mk)
    mo = _canonical_mount(fs, mount)
    if not isinstance(scheduler, str) or scheduler not in SCHEDULERS:
        raise ConfigError(f"unknown I/O scheduler {scheduler!r} (known: {', '.join(SCHEDULERS)})")
    if ag_count is not None:
        if fs != "xfs":
            raise ConfigError(f"{fs}: ag_count is an xfs setting, not {an(fs)} one")
        if (
            isinstance(ag_count, bool)
            or not isinstance(ag_count, int)
            or ag_count < geometry.XFS_MIN_AGCOUNT
        ):
            raise ConfigError(f"xfs: ag_count must be an integer >= 2, not {ag_count!r}")
    out = FsConfig(fs, tuple(sorted(mk.items())), mo, scheduler, ag_count)
    _check_mount_combination(fs, mk, out)
    return out


def _human(n: int) -> str:
    return f"{n >> 20} MiB" if n % (1 << 20) == 0 else f"{n}-byte"


def validate(
    config: FsConfig, device_size_bytes: int | None = None, sector_size: int | None = None
) -> None:
    """None when mkfs and mount will accept ``config`` (on a device of that size and logical
    sector size, when given), else a one-line ConfigError."""
    cfg = canonical(config)
    if sector_size is not None and cfg.fs in ("ext4", "xfs"):
        bs = _mkfs_value(cfg.fs, cfg.mkfs_dict, "block_size")
        if bs < sector_size:  # verified on a 4Kn loop device: both mkfs refuse
            raise ConfigError(
                f"{cfg.fs}: block_size {bs} is smaller than the device's "
                f"{sector_size}-byte logical sectors"
            )
    if device_size_bytes is None:
        return
    minimum = geometry.MIN_DEVICE_BYTES[cfg.fs]
    if device_size_bytes < minimum:
        raise ConfigError(
            f"{cfg.fs}: a {_human(device_size_bytes)} device is below "
            f"mkfs.{cfg.fs}'s minimum of {_human(minimum)}"
        )
    if cfg.ag_count is not None:
        lo, hi = geometry.ag_count_range(
            device_size_bytes, _mkfs_value("xfs", cfg.mkfs_dict, "block_size"), sector_size
        )
        if not lo <= cfg.ag_count <= hi:
            raise ConfigError(
                f"xfs: ag_count {cfg.ag_count} is outside {lo}..{hi} for a "
                f"{_human(device_size_bytes)} device (AG <= 1 TiB, log >= 64 MiB per AG)"
            )


_TOP_KEYS = ("filesystem", "fs", "mkfs", "mount", "scheduler", "ag_count")


def _mount_list(fs: str, mount: Any) -> tuple[str, ...]:
    if mount is None:
        return ()
    if isinstance(mount, str):
        items = mount.split(",")
    elif isinstance(mount, (list, tuple)):
        items = []
        for m in mount:
            if not isinstance(m, str):
                raise ConfigError(f"{fs}: mount option {m!r} is not a string")
            items.extend(m.split(","))
    else:
        raise ConfigError(f"{fs}: mount must be a list or a comma-separated string, not {mount!r}")
    # "defaults" is the fstab placeholder for "no options"; it carries no meaning of its own.
    return tuple(i.strip() for i in items if i.strip() and i.strip() != "defaults")


def config_from_dict(d: Any) -> FsConfig:
    """Parse a user's configuration (JSON shape of FsConfig.to_dict; ``mount`` may be a list or
    a comma string, ``fs`` is accepted for ``filesystem``). Returns the canonical, validated
    FsConfig; anything wrong is a one-line ConfigError."""
    if not isinstance(d, Mapping):
        raise ConfigError(f"a configuration must be a JSON object, not {type(d).__name__}")
    unknown = [k for k in d if k not in _TOP_KEYS]
    if unknown:
        raise ConfigError(
            f"unknown configuration key {unknown[0]!r} (known: filesystem, mkfs, "
            f"mount, scheduler, ag_count)"
        )
    if "filesystem" in d and "fs" in d and d["filesystem"] != d["fs"]:
        raise ConfigError("give the filesystem once ('filesystem' and 'fs' differ)")
    fs = _check_fs(d.get("filesystem", d.get("fs")))
    mkfs = d.get("mkfs") or {}
    if not isinstance(mkfs, Mapping):
        raise ConfigError(f"{fs}: mkfs must be an object of option: value, not {mkfs!r}")
    for name in mkfs:
        mkfs_option(fs, name)
    scheduler = d.get("scheduler", "none")
    if scheduler is None:
        scheduler = "none"
    return build(fs, mkfs, _mount_list(fs, d.get("mount")), scheduler, d.get("ag_count"))
