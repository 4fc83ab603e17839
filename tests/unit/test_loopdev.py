"""Scratch loop devices keep their promise of direct I/O: the kernel's own answer in sysfs is
read after losetup, since losetup exits 0 even when the kernel fell back to buffered I/O."""

from __future__ import annotations

import pytest

from fsadvisor.host import loopdev
from fsadvisor.host.run import CommandResult


def fake_losetup(monkeypatch, tmp_path, dio: str | None):
    """losetup that "attaches" /dev/loop9 and a /sys whose loop/dio says ``dio``."""
    calls: list[list[str]] = []
    sysdir = tmp_path / "sys" / "block" / "loop9" / "loop"
    sysdir.mkdir(parents=True)
    if dio is not None:
        (sysdir / "dio").write_text(dio + "\n")

    def run(argv, **kw):
        calls.append(list(argv))
        out = "/dev/loop9\n" if "--show" in argv else ""
        return CommandResult(tuple(argv), 0, out, "", 0.0)

    monkeypatch.setattr(loopdev.hostrun, "run", run)
    return calls, tmp_path / "sys"


def test_direct_io_in_effect_gives_the_device(monkeypatch, tmp_path):
    calls, sys_root = fake_losetup(monkeypatch, tmp_path, "1")
    assert loopdev.attach(tmp_path / "f.img", sys_root=sys_root) == "/dev/loop9"
    assert calls == [["losetup", "--find", "--show", "--direct-io=on", str(tmp_path / "f.img")]]


@pytest.mark.parametrize(
    "dio, why",
    [
        ("0", "fell back to buffered I/O"),
        (None, "does not report it"),
        ("garbage", "does not report it"),
    ],
)
def test_a_buffered_fallback_is_detached_and_refused(monkeypatch, tmp_path, dio, why):
    calls, sys_root = fake_losetup(monkeypatch, tmp_path, dio)
    with pytest.raises(loopdev.LoopError, match=why) as e:
        loopdev.attach(tmp_path / "f.img", sys_root=sys_root)
    assert "\n" not in str(e.value) and "O_DIRECT" in str(e.value)
    # a device that would measure the page cache is not left attached
    assert calls[-1] == ["losetup", "--detach", "/dev/loop9"]


def test_buffered_on_request_is_not_checked(monkeypatch, tmp_path):
    calls, sys_root = fake_losetup(monkeypatch, tmp_path, "0")
    assert loopdev.attach(tmp_path / "f.img", direct_io=False, sys_root=sys_root) == "/dev/loop9"
    assert len(calls) == 1 and "--direct-io=on" not in calls[0]
