"""Cancel from another thread (the TUI's Cancel button) behaves as Ctrl-C: the running
command's process group gets SIGINT at once (host/run.py's stop_group does the same for a
signal on the main thread), and the probe raises ProbeInterrupted at its next check, so the
matrix's own cleanup runs. And what the device list says a probe would destroy."""

from __future__ import annotations

import threading
import time

import pytest

from fsadvisor.probe.commands import Executor
from fsadvisor.probe.run import Interruptions, ProbeInterrupted
from fsadvisor.service.probing import BlockDevice


def start_under_guard(argv: list[str]) -> tuple[Interruptions, threading.Thread, dict]:
    """Run ``argv`` through the Executor in a thread, the guard told its process group as
    MatrixRun._child tells it; returns once the group is known. ``out`` gets the result and
    the wall time when the thread ends."""
    guard = Interruptions()
    ex = Executor(
        on_child=lambda pid: setattr(guard, "child_pgid", pid or None), critical=guard.critical
    )
    out: dict = {}

    def run() -> None:
        t0 = time.monotonic()
        out["result"] = ex.run(argv, check=False)
        out["wall_s"] = time.monotonic() - t0

    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 10
    while guard.child_pgid is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert guard.child_pgid is not None
    return guard, t, out


def test_cancel_stops_the_running_command_instead_of_waiting_for_it():
    guard, t, out = start_under_guard(["sh", "-c", "echo up; exec sleep 30"])
    guard.cancel("cancelled from the TUI")
    t.join(15)
    assert not t.is_alive()
    assert out["wall_s"] < 10, "cancel waited for the command to end"
    assert out["result"].returncode != 0  # killed by SIGINT
    assert guard.child_pgid is None  # the executor reported it gone
    with pytest.raises(ProbeInterrupted, match="cancelled from the TUI"):
        guard.check()
    guard.check()  # only once: the cleanup that follows is not interrupted again


def test_cancel_without_a_running_command_only_marks_the_probe():
    guard = Interruptions()
    guard.cancel("cancelled from the TUI")
    assert guard.received == "cancelled from the TUI"
    with pytest.raises(ProbeInterrupted):
        guard.check()


def test_contents_names_signatures_fstype_and_label_once():
    d = BlockDevice(
        path="/dev/x",
        size_bytes=1,
        kind="nvme",
        model="",
        allowed=False,
        reason="holds data",
        signatures=("ext4",),
        fstype="ext4",
        label="home",
    )
    assert d.contents == "the ext4 data labelled 'home' on it: every file, beyond recovery"
    blank = BlockDevice(
        path="/dev/y", size_bytes=1, kind="loop", model="", allowed=True, reason=None
    )
    assert blank.contents.startswith("no filesystem, partition table or RAID signature found")


def test_a_command_that_ignores_sigint_is_killed_after_the_grace_period():
    # fio has been seen to hang on SIGINT while laying out a file; the probe's thread waits
    # for the command, so cancel must not rely on SIGINT alone.
    guard, t, out = start_under_guard(["sh", "-c", "trap '' INT; echo up; sleep 30 & wait"])
    time.sleep(0.2)  # the trap is set
    guard.cancel("cancelled from the TUI", grace_s=0.5)
    t.join(15)
    assert not t.is_alive()
    assert 0.5 <= out["wall_s"] < 10  # not before the grace period, not after the command
    assert out["result"].returncode == -9  # SIGKILL: SIGINT was ignored
    assert guard.child_pgid is None
