"""The dry-run preview is shell-safe: every previewed command is quoted word by
word, the ``echo X > path`` lines quote the path, and a hostile device path or
--scratch-dir stays one word. For ordinary paths the preview is byte-identical to the
golden files, recorded from the code before quoting was added."""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.errors import ConfigError, DeviceRefused
from fsadvisor.probe.plan import build_plan
from fsadvisor.probe.report import dry_run_lines

GIB = 1 << 30
GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def fixed_tmp(monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", "/tmp")


def device_plan(device="/dev/loop9"):
    return build_plan(
        device,
        4 * GIB,
        filesystems=["ext4", "xfs", "btrfs"],
        schedulers=["none", "mq-deadline"],
        agcounts=[4],
        kernel_supports=lambda fs: fs != "btrfs",
        ioengine="io_uring",
        reps=1,
        micro_names=["4k-randread-qd32", "meta-stat"],
        variants=False,
    )


def scratch_plan(scratch_dir="/var/tmp/fsadvisor"):
    return build_plan(
        None,
        2 * GIB,
        filesystems=["ext4"],
        schedulers=["none"],
        quick=True,
        kernel_supports=lambda fs: True,
        scratch_size_bytes=2 * GIB,
        scratch_dir=scratch_dir,
        ioengine="libaio",
    )


def test_ordinary_paths_preview_byte_identical_to_before(fixed_tmp):
    for plan, name in (
        (device_plan(), "dry_run_device.out"),
        (scratch_plan(), "dry_run_scratch.out"),
    ):
        assert "\n".join(dry_run_lines(plan)) + "\n" == (GOLDEN / name).read_text(), name


def commands(lines):
    return [ln for ln in lines if not ln.startswith("#")]


HOSTILE = "/tmp/x y;touch PWN$(id)"


def test_a_hostile_device_path_is_one_quoted_word_everywhere(fixed_tmp):
    lines = dry_run_lines(device_plan(HOSTILE))
    assert not any("> /sys/block/x y;touch" in ln for ln in lines)
    uses = 0
    for ln in commands(lines):
        cmd = ln.split("  # ")[0]
        words = shlex.split(cmd)
        mine = [w for w in words if w == HOSTILE or w.endswith("=" + HOSTILE)]
        uses += bool(mine)
        for w in words:  # the path is one whole word, never split into a command
            assert w in mine or "PWN" not in w or w.startswith("/sys/block/"), ln
        if words[:1] == ["echo"] and "scheduler" in cmd:
            assert words[2] == ">" and words[3].startswith("/sys/block/") and len(words) == 4, ln
            assert words[3] == "/sys/block/x_y_touch_PWN__id_/queue/scheduler"
    assert uses >= 3  # discard, mkfs, mount, fio, wipefs name the device


@settings(max_examples=60, deadline=None)
@given(
    st.text(
        st.characters(min_codepoint=32, max_codepoint=0x2FFF, blacklist_characters="\x7f"),
        min_size=1,
        max_size=30,
    )
)
def test_any_scratch_dir_stays_one_word(name):
    scratch_dir = "/tmp/" + name
    img = os.path.join(scratch_dir, "fsadvisor-scratch-<random>.img")
    shown = [
        ln
        for ln in commands(dry_run_lines(scratch_plan(scratch_dir)))
        if "fsadvisor-scratch-" in ln
    ]
    assert [shlex.split(ln) for ln in shown] == [
        ["truncate", "-s", str(2 * GIB), img],
        ["losetup", "--find", "--show", "--direct-io=on", img],
        ["rm", img],
    ]


@pytest.mark.parametrize("bad", ["/tmp/a\nrm -rf /", "/tmp/a\0b", "/tmp/\x1b[31m"])
def test_control_characters_in_a_scratch_dir_are_refused(bad, tmp_path):
    from fsadvisor.service import probing

    with pytest.raises(ConfigError, match="control character"):
        probing.plan_probe(
            probing.ProbeRequest.make(
                scratch="512M", scratch_dir=bad, dry_run=True, db=tmp_path / "s.db"
            )
        )


@pytest.mark.parametrize("bad", ["/dev/loop0\0", "/dev/loop0\nx", "/dev/\x7f"])
def test_nul_and_control_characters_in_a_device_spec_are_domain_errors(bad, tmp_path):
    from fsadvisor.host import device
    from fsadvisor.service import advice, probing

    with pytest.raises(DeviceRefused, match="control character"):
        device.inspect(bad)
    with pytest.raises(DeviceRefused, match="control character"):
        device.require_safe(bad, force=True)
    with pytest.raises(ConfigError, match="control character"):
        device.device_from_spec(bad)
    with pytest.raises(DeviceRefused, match="control character"):
        probing.plan_probe(probing.ProbeRequest.make(bad, dry_run=True, db=tmp_path / "s.db"))
    with pytest.raises((ConfigError, DeviceRefused), match="control character"):
        advice.resolve_device(bad)
    v = device.safety_verdict(bad)
    assert not v.ok and "\n" not in v.reason and "control character" in v.reason
