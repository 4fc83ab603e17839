"""The catalog's size rules checked against the installed mkfs tools, as dry runs on sparse
files (mkfs.ext4 -n, mkfs.xfs -N: nothing is formatted, no root needed)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from fsadvisor import catalog
from fsadvisor.domain import FsConfig

pytestmark = pytest.mark.device
TB = 10**12
GIB = 1 << 30
MIB = 1 << 20


def cfg(fs, mkfs=None, mount=(), scheduler="none", ag_count=None):
    return FsConfig.make(fs, mkfs, mount, scheduler, ag_count)


@pytest.mark.skipif(shutil.which("mkfs.ext4") is None, reason="mkfs.ext4 not installed")
def test_ext4_minimum_is_where_mkfs_keeps_the_journal(tmp_path):
    """Below the catalog's ext4 minimum mkfs.ext4 (dry run, on a plain file) drops the journal;
    at it, it keeps one."""
    minimum = catalog.geometry.MIN_DEVICE_BYTES["ext4"]
    for size, journal in ((minimum - 4096, False), (minimum, True)):
        img = tmp_path / f"{size}.img"
        with open(img, "wb") as f:
            f.truncate(size)
        argv = catalog.mkfs_argv(cfg("ext4"), str(img))
        proc = subprocess.run(
            [argv[0], "-n", *argv[1:]], capture_output=True, text=True, timeout=30
        )
        assert proc.returncode == 0, proc.stderr
        assert ("too small for a journal" not in proc.stdout + proc.stderr) == journal, size


def _mkfs_xfs_dry(tmp_path, size_bytes, agcount, block_size=4096, sector_size=512):
    img = tmp_path / "xfs.img"
    with open(img, "wb") as f:
        f.truncate(size_bytes)
    p = subprocess.run(
        [
            "mkfs.xfs",
            "-N",
            "-f",
            "-b",
            f"size={block_size}",
            "-s",
            f"size={sector_size}",
            "-d",
            f"agcount={agcount}",
            str(img),
        ],
        capture_output=True,
        text=True,
    )
    return p.returncode == 0, p.stdout + p.stderr


# 2148925440 bytes = 32 * 16395 blocks: the one size here where 512-byte and 4 KiB sectors differ.
@pytest.mark.skipif(not shutil.which("mkfs.xfs"), reason="mkfs.xfs missing")
@pytest.mark.parametrize(
    "size,block,sector",
    [
        (2 * GIB, 4096, 512),
        (2 * GIB, 1024, 512),
        (2 * GIB, 2048, 512),
        (3 * GIB, 4096, 4096),
        (300 * MIB, 4096, 512),
        (2148925440, 4096, 512),
        (2148925440, 4096, 4096),
        (10 * GIB + 12345 * 4096, 4096, 4096),
        (TB, 4096, 512),
    ],
)
def test_ag_count_range_matches_mkfs_xfs_dry_run(tmp_path, size, block, sector):
    lo, hi = catalog.ag_count_range(size, block, sector)
    assert _mkfs_xfs_dry(tmp_path, size, hi, block, sector)[0]
    ok, out = _mkfs_xfs_dry(tmp_path, size, hi + 1, block, sector)
    assert not ok and "Log size must be at least 64MB" in out
    assert _mkfs_xfs_dry(tmp_path, size, lo, block, sector)[0]
    assert not _mkfs_xfs_dry(tmp_path, size, lo - 1, block, sector)[0]


@pytest.mark.skipif(not shutil.which("mkfs.xfs"), reason="mkfs.xfs missing")
@pytest.mark.parametrize("size", [2 * GIB, TB, 4 << 40, 5 * 10**12])
def test_default_ag_count_matches_mkfs_xfs(tmp_path, size):
    img = tmp_path / "xfs.img"
    with open(img, "wb") as f:
        f.truncate(size)
    out = subprocess.run(["mkfs.xfs", "-N", "-f", str(img)], capture_output=True, text=True).stdout
    assert f"agcount={catalog.default_ag_count(size)}," in out
