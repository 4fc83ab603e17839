"""A loop device is the user's to format only when the file behind it is theirs
(host.device.loop_not_yours, part of the safety verdict every front end goes through), read
from a fake sysfs ``loop/`` directory; whose files are the user's (users_uids) under sudo."""

from __future__ import annotations

import os

import pytest

from fsadvisor.host import device as devmod
from fsadvisor.host.device import loop_not_yours, users_uids


def _loop_dir(tmp_path, name: str, backing: str | None):
    d = tmp_path / "sys" / name / "loop"
    d.mkdir(parents=True)
    if backing is not None:
        (d / "backing_file").write_text(backing + "\n")
    return d


def test_a_loop_device_on_the_users_own_file_is_theirs(tmp_path):
    img = tmp_path / "mine.img"
    img.write_bytes(b"")
    assert loop_not_yours("/dev/loop7", _loop_dir(tmp_path, "loop7", str(img))) is None


def test_a_loop_device_on_another_users_file_is_refused_with_what_to_do(tmp_path):
    img = tmp_path / "theirs.img"
    img.write_bytes(b"")
    mine = os.stat(img).st_uid
    why = loop_not_yours(
        "/dev/loop7", _loop_dir(tmp_path, "loop7", str(img)), uids=frozenset({mine + 1})
    )
    assert why == (
        f"/dev/loop7 is a loop device on {img}, a file of uid {mine}, not yours "
        f"(uid {mine + 1}): make the file yours (chown) if it is, or probe a "
        "scratch device of your own (--scratch SIZE)"
    )


def test_a_detached_or_deleted_backing_file_is_refused(tmp_path):
    assert "no file attached" in loop_not_yours("/dev/loop3", _loop_dir(tmp_path, "loop3", None))
    gone = loop_not_yours("/dev/loop4", _loop_dir(tmp_path, "loop4", str(tmp_path / "x (deleted)")))
    assert gone and "which is gone" in gone


def test_the_verdict_refuses_it_before_anything_it_would_otherwise_say():
    """Another user's device is refused whatever else is true of it (unmounting it would
    not make it the user's), and no --force overrides it."""
    facts = devmod.DeviceFacts(
        path="/dev/loop7",
        resolved="/dev/loop7",
        name="loop7",
        size_bytes=1 << 30,
        mounted=[("/dev/loop7", "/mnt")],
        signatures=["ext4"],
        not_yours="/dev/loop7 is ... not yours",
    )
    for force in (False, True):
        verdict = devmod.judge(facts, force=force)
        assert not verdict.ok and verdict.reason == "/dev/loop7 is ... not yours"


@pytest.mark.parametrize(
    "euid, sudo_uid, expected",
    [
        (0, None, {0}),
        (0, "1000", {0, 1000}),
        (0, "x", {0}),  # not a uid: ignored
        (1000, "0", {1000}),  # SUDO_UID counts only for root: anyone can set it
    ],
)
def test_whose_files_are_the_users(monkeypatch, euid, sudo_uid, expected):
    monkeypatch.setattr(devmod.os, "geteuid", lambda: euid)
    if sudo_uid is None:
        monkeypatch.delenv("SUDO_UID", raising=False)
    else:
        monkeypatch.setenv("SUDO_UID", sudo_uid)
    assert users_uids() == frozenset(expected)
