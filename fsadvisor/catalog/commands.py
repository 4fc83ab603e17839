"""The commands a configuration turns into: mkfs and mount argument lists and an fstab line.

Only argument lists are produced (never a shell string). mkfs gets every catalog value
explicitly, defaults included: mke2fs would otherwise pick 1 KiB blocks and 128-byte inodes on
a device under 512 MiB (/etc/mke2fs.conf "small"), and tool defaults change between versions
(mkfs.xfs moved from 256- to 512-byte inodes), so the argv alone says what was built.
"""

from __future__ import annotations

from fsadvisor.catalog.rules import canonical
from fsadvisor.catalog.specs import MKFS_OPTIONS
from fsadvisor.domain import FsConfig

# Without these mke2fs leaves inode-table and journal zeroing to a kernel thread after the first
# mount, which writes for minutes and lands in the measured write and energy numbers.
EXT4_EAGER_INIT = "lazy_itable_init=0,lazy_journal_init=0"

# fsck pass (fstab field 6): fsck.xfs and fsck.btrfs are no-ops that exit 0 (XFS replays its log
# and btrfs verifies itself at mount; repairs are manual: xfs_repair, btrfs check), so 0 skips a
# useless boot step. e2fsck and fsck.f2fs really check, and 2 is the value for non-root
# filesystems (fstab(5); 1 is reserved for /).
FSCK_PASS = {"ext4": 2, "xfs": 0, "btrfs": 0, "f2fs": 2}


def _value(cfg: FsConfig, name: str):
    return cfg.mkfs_dict.get(name, MKFS_OPTIONS[cfg.fs][name].default)


def mkfs_argv(config: FsConfig, device: str) -> list[str]:
    """mkfs for ``config`` on ``device``; forces over an existing signature (the device safety
    check, not mkfs's prompt, is what protects real data)."""
    cfg = canonical(config)
    dev = str(device)
    if cfg.fs == "ext4":
        argv = [
            "mkfs.ext4",
            "-F",
            "-q",
            "-b",
            str(_value(cfg, "block_size")),
            "-I",
            str(_value(cfg, "inode_size")),
        ]
        if not _value(cfg, "journal"):
            argv += ["-O", "^has_journal"]
        return argv + ["-E", EXT4_EAGER_INIT, dev]
    if cfg.fs == "xfs":
        # Not quiet: the geometry mkfs.xfs prints is the record of the agcount it applied.
        argv = [
            "mkfs.xfs",
            "-f",
            "-b",
            f"size={_value(cfg, 'block_size')}",
            "-i",
            f"size={_value(cfg, 'inode_size')}",
        ]
        if cfg.ag_count is not None:
            argv += ["-d", f"agcount={cfg.ag_count}"]
        return argv + [dev]
    if cfg.fs == "btrfs":
        return [
            "mkfs.btrfs",
            "-f",
            "-n",
            str(_value(cfg, "nodesize")),
            "--csum",
            _value(cfg, "checksum"),
            dev,
        ]
    argv = ["mkfs.f2fs", "-f", "-q"]
    if _value(cfg, "features"):
        argv += ["-O", _value(cfg, "features")]
    return argv + [dev]


def mount_options_string(config: FsConfig) -> str:
    """The -o / fstab options field; "defaults" when there are none."""
    return ",".join(canonical(config).mount) or "defaults"


def mount_argv(config: FsConfig, device: str, mountpoint: str) -> list[str]:
    cfg = canonical(config)
    argv = ["mount", "-t", cfg.fs]
    if cfg.mount:
        argv += ["-o", ",".join(cfg.mount)]
    return argv + [str(device), str(mountpoint)]


def _fstab_escape(field: str) -> str:
    # fstab(5): blanks inside a field are written as octal escapes.
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in str(field))


def fstab_line(config: FsConfig, spec: str = "UUID=<uuid>", mountpoint: str = "/srv/data") -> str:
    """One /etc/fstab line: spec, mountpoint, type, options, dump 0, fsck pass (see FSCK_PASS)."""
    cfg = canonical(config)
    return " ".join(
        (
            _fstab_escape(spec),
            _fstab_escape(mountpoint),
            cfg.fs,
            mount_options_string(cfg),
            "0",
            str(FSCK_PASS[cfg.fs]),
        )
    )
