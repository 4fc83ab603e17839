"""What each filesystem accepts: mkfs options (catalog names) and mount options (native strings).

Every range here was checked against the real tools on this machine (kernel 6.18, e2fsprogs 1.47,
xfsprogs 6.1, btrfs-progs 6.2, f2fs-tools 1.15) unless the comment names another source; the
device tests (tests/device/test_catalog_mkfs.py) re-check them on loop devices. Where the kernel
silently clamps or ignores a value (``compress=zstd:16`` mounts as ``zstd:15``) the catalog refuses
it, so a configuration always means what it says.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Callable

from fsadvisor.errors import ConfigError
from fsadvisor.sizes import format_size, parse_size

KIB = 1 << 10
MIB = 1 << 20


def _pow2_range(lo: int, hi: int) -> tuple[int, ...]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return tuple(out)


# --------------------------------------------------------------------------- mkfs options


@dataclass(frozen=True)
class MkfsOption:
    """One mkfs knob under its catalog name. ``choices`` is every value the catalog accepts;
    ``default`` is what the tool would pick and is what an absent key means."""

    name: str
    kind: str  # "size" | "bool" | "choice" | "features"
    choices: tuple[Any, ...]
    default: Any
    why: str = ""

    def normalise(self, fs: str, value: Any) -> Any:
        """The canonical value, or ConfigError naming what is wrong with ``value``."""
        if self.kind == "size":
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise ConfigError(f"{fs}: mkfs option {self.name} must be a size, not {value!r}")
            try:
                n = parse_size(value)
            except (ValueError, OverflowError):
                raise ConfigError(
                    f"{fs}: mkfs option {self.name}={value!r} is not a size"
                ) from None
            if n not in self.choices:
                raise ConfigError(
                    f"{fs}: mkfs option {self.name}={value!r} is out of range "
                    f"(one of {', '.join(map(str, self.choices))})"
                )
            return n
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(
                    f"{fs}: mkfs option {self.name} must be true or false, not {value!r}"
                )
            return value
        if self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise ConfigError(
                    f"{fs}: mkfs option {self.name}={value!r} is not one of "
                    f"{', '.join(self.choices)}"
                )
            return value
        # features: a set of names, given as a list or a comma string; canonical = comma string
        # in catalog order (hashable, readable in FsConfig.key()).
        if isinstance(value, str):
            names = [v.strip() for v in value.split(",") if v.strip()]
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            names = [v.strip() for v in value if v.strip()]
        else:
            raise ConfigError(
                f"{fs}: mkfs option {self.name} must be a list of names, not {value!r}"
            )
        for name in names:
            if name not in self.choices:
                raise ConfigError(
                    f"{fs}: mkfs feature {name!r} is not one of {', '.join(self.choices)}"
                )
        return ",".join(c for c in self.choices if c in names)


MKFS_OPTIONS: dict[str, dict[str, MkfsOption]] = {
    "ext4": {
        # Block size above the 4 KiB page cannot be mounted by ext4 here; seed 004 Table 2
        # measured blk1k/blk2k (+98% .. -64% depending on workload).
        "block_size": MkfsOption(
            "block_size", "size", (1024, 2048, 4096), 4096, "seed 004 Table 2 blk1k/blk2k"
        ),
        # mke2fs: "invalid inode size 2048 (min 128/max 1024)" with 1 KiB blocks -> inode <= block
        # (checked in rules.py); 128 works but mke2fs warns it cannot hold dates past 2038.
        "inode_size": MkfsOption(
            "inode_size", "size", _pow2_range(128, 4096), 256, "seed 004 Table 2 isz1k"
        ),
        # false -> -O ^has_journal (seed 004's ext2 rows); the kernel then refuses data=, commit=
        # and journal_async_commit (verified: "can't mount with data=, fs mounted w/o journal").
        "journal": MkfsOption("journal", "bool", (True, False), True, "seed 004 ext2 vs ext3"),
    },
    "xfs": {
        # 1..4 KiB: kernels before 6.12 cannot mount XFS blocks larger than the page (6.18 can,
        # verified with 8 KiB), and a recommendation must mount wherever it is applied.
        "block_size": MkfsOption(
            "block_size", "size", (1024, 2048, 4096), 4096, "seed 004 Table 2 blk1k/blk2k"
        ),
        # CRC (v5) filesystems need >= 512 B inodes; mkfs.xfs 6.1 also wants >= 2 inodes per
        # block ("allowable inode size with 1024 byte blocks is between 256 and 512").
        "inode_size": MkfsOption(
            "inode_size", "size", (512, 1024, 2048), 512, "seed 004 Table 2 isz1k"
        ),
    },
    "btrfs": {
        # mkfs.btrfs 6.2: "illegal nodesize 2048 (smaller than 4096)" / "(larger than 65536)".
        "nodesize": MkfsOption(
            "nodesize", "size", _pow2_range(4096, 65536), 16384, "metadata B-tree node size"
        ),
        "checksum": MkfsOption(
            "checksum",
            "choice",
            ("crc32c", "xxhash", "sha256", "blake2"),
            "crc32c",
            "data and metadata checksum algorithm",
        ),
    },
    "f2fs": {
        # mkfs.f2fs 1.15 refuses inode_checksum or compression without extra_attr (verified).
        "features": MkfsOption(
            "features",
            "features",
            ("extra_attr", "inode_checksum", "sb_checksum", "compression"),
            "",
            "mkfs.f2fs -O",
        ),
    },
}


# --------------------------------------------------------------------------- mount options


@dataclass(frozen=True)
class MountOption:
    """A native mount option key. ``check`` turns the text after '=' into its canonical form
    (or raises ValueError with the allowed range); ``flag`` says the bare key is valid. Options
    sharing a ``group`` exclude each other (noatime vs relatime, discard vs nodiscard)."""

    key: str
    group: str
    flag: bool = False
    check: Callable[[str], str] | None = None
    removed: str | None = None
    examples: tuple[str, ...] = ()  # valid full option strings, boundaries included
    why: str = ""


_DIGITS = re.compile(r"[0-9]{1,9}")


def _int_in(lo: int, hi: int) -> Callable[[str], str]:
    def check(v: str) -> str:
        if not _DIGITS.fullmatch(v) or not lo <= int(v) <= hi:
            raise ValueError(f"an integer {lo}..{hi}")
        return str(int(v))

    return check


def _one_of(*values: str) -> Callable[[str], str]:
    def check(v: str) -> str:
        if v not in values:
            raise ValueError("one of " + "|".join(values))
        return v

    return check


def _pow2_size(lo: int, hi: int) -> Callable[[str], str]:
    allowed = _pow2_range(lo, hi)

    def check(v: str) -> str:
        try:
            n = parse_size(v)
        except (ValueError, OverflowError):
            n = -1
        if n not in allowed:
            raise ValueError(f"a power of two {format_size(lo)}..{format_size(hi)}")
        return format_size(n)

    return check


def _levelled(algos: dict[str, tuple[int, int] | None]) -> Callable[[str], str]:
    """``algo`` or ``algo:level`` with the level inside the algorithm's range."""
    allowed = "|".join(f"{a}[:{r[0]}..{r[1]}]" if r else a for a, r in algos.items())

    def check(v: str) -> str:
        algo, sep, level = v.partition(":")
        if algo not in algos:
            raise ValueError(allowed)
        rng = algos[algo]
        if not sep:
            return algo
        if rng is None or not _DIGITS.fullmatch(level) or not rng[0] <= int(level) <= rng[1]:
            raise ValueError(allowed)
        return f"{algo}:{int(level)}"

    return check


def _flag(key: str, group: str, why: str = "") -> MountOption:
    return MountOption(key, group, flag=True, examples=(key,), why=why)


# Commit intervals above 300 s are accepted by both kernels (btrfs only warns) but nobody
# wants them; above HUGE_COMMIT_S the catalog reports a loses-recent-writes risk.
COMMIT_MAX_S = 300
# nodiratime/diratime are VFS flags every filesystem accepts (mount(8), "FILESYSTEM-
# INDEPENDENT MOUNT OPTIONS"); noatime already implies nodiratime, so they are their own
# group: "noatime,nodiratime" as people type it from old tuning guides is valid.
_ATIME = (
    _flag("noatime", "atime", "seed 002: saves 5-15% of write IOPS on read-heavy mixes"),
    _flag("relatime", "atime", "the kernel default"),
    _flag("nodiratime", "diratime", "directory access times only; implied by noatime"),
    _flag("diratime", "diratime"),
)

_XFS_BARRIER_GONE = (
    'was removed in Linux 4.19 (6.18 rejects it: "Unknown parameter"); '
    "XFS always flushes the write cache, a PLP drive makes the flush cheap"
)

MOUNT_OPTIONS: dict[str, dict[str, MountOption]] = {
    "ext4": {
        o.key: o
        for o in (
            *_ATIME,
            MountOption(
                "data",
                "data",
                check=_one_of("ordered", "writeback", "journal"),
                examples=("data=ordered", "data=writeback", "data=journal"),
                why="seed 002: journal mode sets write amplification (12/4.5/16 KB per 4 KB)",
            ),
            MountOption(
                "commit",
                "commit",
                check=_int_in(1, COMMIT_MAX_S),
                examples=("commit=1", f"commit={COMMIT_MAX_S}"),
                why="journal commit interval",
            ),
            MountOption(
                "barrier",
                "barrier",
                flag=True,
                check=_one_of("0", "1"),
                examples=("barrier", "barrier=0", "barrier=1"),
            ),
            _flag("nobarrier", "barrier", "seed 002: only with PLP"),
            # Refused under data=ordered (verified: "can't mount with journal_async_commit in
            # data=ordered mode"); rules.py demands data=writeback or data=journal.
            MountOption(
                "journal_async_commit",
                "journal_async_commit",
                flag=True,
                examples=("data=writeback,journal_async_commit",),
            ),
            _flag("discard", "discard"),
            _flag("nodiscard", "discard"),
            # dioread_nolock is the default since 5.6; under data=journal the kernel silently
            # mounts nodioread_nolock (verified), which rules.py refuses.
            _flag("dioread_nolock", "dioread"),
            _flag("dioread_lock", "dioread"),
        )
    },
    "xfs": {
        o.key: o
        for o in (
            *_ATIME,
            # Kernel bounds verified: "invalid logbufs value: 9 [not 2-8]",
            # "invalid logbufsize: 524288 [not 16k,32k,64k,128k or 256k]".
            MountOption(
                "logbufs", "logbufs", check=_int_in(2, 8), examples=("logbufs=2", "logbufs=8")
            ),
            MountOption(
                "logbsize",
                "logbsize",
                check=_pow2_size(16 * KIB, 256 * KIB),
                examples=tuple(f"logbsize={k}k" for k in (16, 32, 64, 128, 256)),
            ),
            _flag("largeio", "largeio"),
            # inode64 is the default since Linux 3.7 (Documentation/admin-guide/xfs.rst);
            # inode32 keeps inode numbers below 2^32 for old 32-bit NFS clients.
            _flag("inode64", "inode"),
            _flag("inode32", "inode"),
            # "invalid log iosize: 31 [not 12-30]" -> 4 KiB .. 1 GiB.
            MountOption(
                "allocsize",
                "allocsize",
                check=_pow2_size(4 * KIB, 1 << 30),
                examples=("allocsize=4k", "allocsize=1m", "allocsize=1g"),
            ),
            _flag("discard", "discard"),
            _flag("nodiscard", "discard"),
            MountOption("barrier", "barrier", flag=True, removed=_XFS_BARRIER_GONE),
            MountOption("nobarrier", "barrier", flag=True, removed=_XFS_BARRIER_GONE),
        )
    },
    "btrfs": {
        o.key: o
        for o in (
            *_ATIME,
            # The kernel clamps zstd:16 to 15 and zlib:10 to 9 (verified); the catalog refuses them.
            MountOption(
                "compress",
                "compress",
                flag=True,
                check=_levelled({"zstd": (1, 15), "lzo": None, "zlib": (1, 9)}),
                examples=(
                    "compress=zstd:1",
                    "compress=zstd:15",
                    "compress=lzo",
                    "compress=zlib:1",
                    "compress=zlib:9",
                ),
            ),
            # nodatacow implies nodatasum; either one is undone by a later compress= (verified:
            # "nodatacow,compress=zstd:3" mounts with datacow), so rules.py refuses the mix.
            _flag("nodatacow", "datacow"),
            _flag("nodatasum", "datasum"),
            _flag("ssd", "ssd"),
            _flag("nossd", "ssd"),
            # discard=async is the default since 6.2 (verified in /proc/mounts); see candidates.py
            # for why generated configurations say nodiscard or discard=async explicitly.
            MountOption(
                "discard",
                "discard",
                flag=True,
                check=_one_of("async", "sync"),
                examples=("discard", "discard=async", "discard=sync"),
            ),
            _flag("nodiscard", "discard"),
            # v1 fails on a filesystem with the free-space tree mkfs.btrfs >= 5.15 creates (verified).
            MountOption(
                "space_cache", "space_cache", check=_one_of("v2"), examples=("space_cache=v2",)
            ),
            MountOption(
                "commit",
                "commit",
                check=_int_in(1, COMMIT_MAX_S),
                examples=("commit=1", f"commit={COMMIT_MAX_S}"),
            ),
            _flag("nobarrier", "barrier", "seed 002: only with PLP"),
            _flag("barrier", "barrier"),
        )
    },
    # f2fs cannot be mounted by this kernel: these follow the kernel's f2fs documentation
    # (Documentation/filesystems/f2fs.rst) and are not verified here.
    "f2fs": {
        o.key: o
        for o in (
            *_ATIME,
            MountOption(
                "mode",
                "mode",
                check=_one_of("adaptive", "lfs"),
                examples=("mode=adaptive", "mode=lfs"),
            ),
            MountOption(
                "background_gc",
                "background_gc",
                check=_one_of("on", "off", "sync"),
                examples=("background_gc=on", "background_gc=off", "background_gc=sync"),
            ),
            _flag("discard", "discard"),
            _flag("nodiscard", "discard"),
            MountOption(
                "active_logs",
                "active_logs",
                check=_one_of("2", "4", "6"),
                examples=("active_logs=2", "active_logs=4", "active_logs=6"),
            ),
            MountOption(
                "compress_algorithm",
                "compress_algorithm",
                check=_one_of("lz4", "zstd", "lzo"),
                examples=("compress_algorithm=lz4",),
            ),
            MountOption(
                "fsync_mode",
                "fsync_mode",
                check=_one_of("posix", "strict", "nobarrier"),
                examples=("fsync_mode=posix", "fsync_mode=strict", "fsync_mode=nobarrier"),
            ),
            MountOption(
                "checkpoint",
                "checkpoint",
                check=_one_of("disable", "enable"),
                examples=("checkpoint=disable",),
            ),
            _flag("nobarrier", "barrier", "f2fs.rst: skips cache flushes"),
            _flag("barrier", "barrier"),
        )
    },
}


def an(fs: str) -> str:
    """ "an xfs", "a btrfs": filesystem names are read letter by letter."""
    return f"an {fs}" if fs[0] in "aefhilmnorsx" else f"a {fs}"


def mkfs_option(fs: str, name: Any) -> MkfsOption:
    table = MKFS_OPTIONS[fs]
    if not isinstance(name, str) or name not in table:
        raise ConfigError(
            f"{fs}: mkfs option {name!r} is not {an(fs)} mkfs option (known: {', '.join(table)})"
        )
    return table[name]


def parse_mount_option(fs: str, text: Any) -> tuple[MountOption, str]:
    """(spec, canonical text) for one native option string, or a one-line ConfigError."""
    if not isinstance(text, str):
        raise ConfigError(f"{fs}: mount option {text!r} is not a string")
    return _parse_mount_option(fs, text)


_BLANK = re.compile(r"\s")


@functools.lru_cache(
    maxsize=4096
)  # candidates() parses the same few dozen strings thousands of times
def _parse_mount_option(fs: str, text: str) -> tuple[MountOption, str]:
    key, sep, value = text.partition("=")
    spec = MOUNT_OPTIONS[fs].get(key)
    if spec is None or _BLANK.search(text):
        raise ConfigError(f"{fs}: mount option {text!r} is not {an(fs)} option")
    if spec.removed:
        raise ConfigError(f"{fs}: mount option {text!r} {spec.removed}")
    if not sep:
        if not spec.flag:
            raise ConfigError(f"{fs}: mount option {key!r} needs a value")
        return spec, key
    if spec.check is None:
        raise ConfigError(f"{fs}: mount option {key!r} takes no value")
    try:
        return spec, f"{key}={spec.check(value)}"
    except ValueError as e:
        raise ConfigError(f"{fs}: mount option {text!r} is not valid ({key}= takes {e})") from None
