"""A loop device is the user's to probe only when the file behind it is theirs
(service.probing.loop_not_yours), read from a fake /sys/block tree."""

from __future__ import annotations

import os

import pytest

from fsadvisor.service.probing import loop_not_yours


def _sys(tmp_path, name: str, backing: str | None):
    d = tmp_path / "sys" / name / "loop"
    d.mkdir(parents=True)
    if backing is not None:
        (d / "backing_file").write_text(backing + "\n")
    return str(tmp_path / "sys")


def test_a_loop_device_on_the_users_own_file_is_theirs(tmp_path):
    img = tmp_path / "mine.img"
    img.write_bytes(b"")
    assert loop_not_yours("/dev/loop7", _sys(tmp_path, "loop7", str(img))) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_a_loop_device_on_another_users_file_is_refused(tmp_path):
    img = tmp_path / "theirs.img"
    img.write_bytes(b"")
    os.chown(img, 65534, 65534)
    why = loop_not_yours("/dev/loop7", _sys(tmp_path, "loop7", str(img)))
    assert why and "uid 65534" in why and "not yours" in why and "scratch:SIZE" in why


def test_a_detached_or_deleted_backing_file_is_refused(tmp_path):
    assert "no file attached" in loop_not_yours("/dev/loop3", _sys(tmp_path, "loop3", None))
    gone = loop_not_yours("/dev/loop4", _sys(tmp_path, "loop4", str(tmp_path / "x (deleted)")))
    assert "gone" in gone


def test_other_devices_are_not_its_business(tmp_path):
    assert loop_not_yours("/dev/nvme0n1", str(tmp_path)) is None
