"""A device given by size or name has a logical sector size: 4096 assumed (the stricter case:
every mkfs command made for it also runs on a 512-byte-sector drive), --sector-size 512 to
consider smaller blocks; recommend says which it used. (A device path keeps its own, from
sysfs: tests/device/test_catalog_mkfs.py.)"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from fsadvisor.errors import ConfigError
from fsadvisor.service import advice


def _blocks(rec) -> set[int]:
    entries = rec.ranked + list(rec.best_per_filesystem.values())
    return {dict(r.config.mkfs).get("block_size", 4096) for r in entries}


@pytest.mark.parametrize("device", [None, "nvme:2T", "samsung-pm9a3-3.84tb-u2"])
def test_a_spec_or_name_assumes_4k_sectors_and_says_so(device, tmp_db):
    rec = advice.recommend("filebench-fileserver-004", device, top=30)
    assert rec.device.logical_block_size == 4096
    assert min(_blocks(rec)) >= 4096
    assert any(n.startswith("logical sector size 4096 B assumed") for n in rec.notes)


def test_sector_size_512_widens_the_candidates(tmp_db):
    assumed = advice.recommend("filebench-fileserver-004", top=1)
    small = advice.recommend("filebench-fileserver-004", top=1, sector_size=512)
    assert small.device.logical_block_size == 512
    assert small.considered > assumed.considered  # the 1 and 2 KiB blocks of ext4 and xfs
    assert "logical sector size 512 B (--sector-size)" in small.notes


def test_a_sector_size_no_drive_reports_is_refused(tmp_db):
    with pytest.raises(ConfigError, match="512 or 4096"):
        advice.recommend("oltp", sector_size=1024)
    cli.register_all()
    r = CliRunner().invoke(cli.app, ["recommend", "-p", "oltp", "--sector-size", "2048"])
    assert r.exit_code != 0 and "512 or 4096" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli.app, ["recommend", "-p", "oltp", "--sector-size", "512", "--json"])
    assert json.loads(r.output)["device"]["logical_block_size"] == 512
