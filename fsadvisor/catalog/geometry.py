"""Size rules: the smallest device each mkfs accepts, and the XFS allocation-group count range.

The XFS rule, derived from xfsprogs 6.1 and checked with ``mkfs.xfs -N`` over a sweep of sizes
and block sizes, then with the real mkfs on loop devices (tests/device/test_catalog_mkfs.py):

- mkfs.xfs gives every AG ``ceil(data_blocks / agcount)`` blocks;
- the internal log lives inside one AG and must be >= 64 MiB ("Log size must be at least
  64MB"; xfsprogs >= 5.15 for filesystems >= 300 MB, and smaller ones are refused outright:
  "Filesystem must be larger than 300MB");
- an AG loses its headers (4 sectors, rounded up to blocks) plus 10 blocks (free-list reserve 4,
  AGF/AGI btree roots 3, finobt 1, refcount 1, and one spare block mkfs keeps) before the log
  fits, so the smallest AG holding the log is ``64 MiB / block + ceil(4 * sector / block) + 10``
  blocks (sweep: 16395 blocks at 4 KiB, 32779 at 2 KiB, 65548 at 1 KiB, 512-byte sectors);
- AGs are at most 1 TiB - 1 block and there must be >= 2 ("at least 2 superblocks").
On 2 GiB with 4 KiB blocks that gives agcount 2..31; 32 fails (AG = 16384 blocks < 16395).
"""

from __future__ import annotations

from fsadvisor.errors import ConfigError

MIB = 1 << 20
TIB = 1 << 40

XFS_MIN_DEVICE_BYTES = (
    300 * MIB
)  # mkfs.xfs 6.1: "Filesystem must be larger than 300MB" (=300 MiB, verified)
XFS_MIN_LOG_BYTES = 64 * MIB
XFS_MIN_AGCOUNT = 2
# mkfs.btrfs 6.2: "minimum size for each btrfs device is 114294784" (DUP metadata default).
BTRFS_MIN_DEVICE_BYTES = 114_294_784
# mkfs.f2fs 1.15 needs 52 MiB, 57 MiB with every feature (verified); round up to be safe.
F2FS_MIN_DEVICE_BYTES = 64 * MIB
# mkfs.ext4 1.47.0 with the catalog's -b 4096 accepts a file from 224 KiB, but below 8 MiB
# (2048 blocks) it prints "Filesystem too small for a journal" and makes a journal-less
# filesystem (verified with -n and for real on 8188 KiB vs 8 MiB files): not the journaled ext4
# whose data=/commit= options the catalog ranks.
EXT4_MIN_DEVICE_BYTES = 8 * MIB
# Sector size assumed for the AG headers when the device's is not known: 4 KiB (4Kn NVMe) is the
# larger header and so the stricter rule; a range computed with it holds on 512-byte sectors too.
DEFAULT_SECTOR_BYTES = 4096

MIN_DEVICE_BYTES = {
    "xfs": XFS_MIN_DEVICE_BYTES,
    "btrfs": BTRFS_MIN_DEVICE_BYTES,
    "f2fs": F2FS_MIN_DEVICE_BYTES,
    "ext4": EXT4_MIN_DEVICE_BYTES,
}


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def xfs_min_ag_blocks(block_size: int = 4096, sector_size: int | None = None) -> int:
    """Smallest AG (in blocks) that can hold the 64 MiB internal log."""
    sector_size = sector_size or DEFAULT_SECTOR_BYTES
    return XFS_MIN_LOG_BYTES // block_size + _ceil_div(4 * sector_size, block_size) + 10


def xfs_max_ag_blocks(block_size: int = 4096) -> int:
    """XFS_AG_MAX_BLOCKS: 1 TiB - 1 block (4 TiB device -> agsize=268435455 at 4 KiB, verified)."""
    return TIB // block_size - 1


def ag_count_range(
    device_size_bytes: int, block_size: int = 4096, sector_size: int | None = None
) -> tuple[int, int]:
    """(lo, hi): every agcount mkfs.xfs accepts for this size (and logical sector size, when
    known; unknown assumes 4 KiB, the stricter case). ConfigError if none exists."""
    if device_size_bytes < XFS_MIN_DEVICE_BYTES:
        raise ConfigError(
            f"xfs: device of {device_size_bytes} bytes is below mkfs.xfs's 300 MiB minimum"
        )
    blocks = device_size_bytes // block_size
    lo = max(XFS_MIN_AGCOUNT, _ceil_div(blocks, xfs_max_ag_blocks(block_size)))
    # ceil(blocks / n) >= m  <=>  n < blocks / (m - 1)
    m = xfs_min_ag_blocks(block_size, sector_size)
    hi = _ceil_div(blocks, m - 1) - 1
    if hi < lo:
        raise ConfigError(
            f"xfs: no allocation-group count fits a {device_size_bytes}-byte device "
            f"(each AG needs >= {m} blocks for the 64 MiB log)"
        )
    return lo, hi


def default_ag_count(device_size_bytes: int, block_size: int = 4096) -> int:
    """What mkfs.xfs picks on a single, unstriped device (xfsprogs calc_default_ag_geometry):
    4 AGs below 4 TiB, else 1 TiB AGs with a too-small tail AG dropped. A device that reports a
    stripe (optimal_io_size) gets more; mkfs_argv then still leaves the choice to mkfs."""
    blocks = device_size_bytes // block_size
    if blocks < (4 * TIB) // block_size:
        return 4
    agsize = xfs_max_ag_blocks(block_size)
    count = blocks // agsize
    if blocks % agsize >= (16 * MIB) // block_size:  # XFS_AG_MIN_BYTES
        count += 1
    return count
