"""The probe state file is acted on as root (stop a process group, unmount, delete a file), so
it is trusted only as far as this program wrote it:

- the file must be a regular file of this user, writable by no one else, in a directory no
  one else can replace it in (sticky /tmp is fine); otherwise one line, and nothing is done;
- even from a trusted file, only what a probe makes is touched: a child process running one
  of the probe's commands with its recorded start time, mount points and a scratch file named
  as a probe names them, a scratch file that is a regular file of this user.

A crafted file of each kind goes through the real cleanup (cleanup_stale) with the real
process checks (SystemOps); the unmount, detach and delete calls are recorded instead of
made, so a failing test can never unmount anything of this machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.probe.state import (
    ProcessRef,
    StateFile,
    StateFileError,
    SystemOps,
    cleanup_stale,
    process_start_ticks,
)

NOBODY = 65534


class Recording(SystemOps):
    """The real process and file checks; what would change the machine is only recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def umount(self, mountpoint):
        self.calls.append(("umount", mountpoint))
        return None

    def is_mounted(self, mountpoint):
        return True  # as if every path named were mounted: only the name check stops it

    def remove_dir(self, path):
        self.calls.append(("rmdir", path))

    def set_scheduler(self, device, name):
        self.calls.append(("scheduler", device, name))

    def detach_loop(self, loop_device):
        self.calls.append(("detach", loop_device))

    def loops_of(self, backing_file):
        return []

    def loop_backing_file(self, loop_device):
        return None


def _state(tmp: Path, **live) -> dict:
    return {
        "version": 1,
        "owner": {"pid": 999_999_999, "start_ticks": 1},
        "matrices": {},
        "mounts": [],
        **live,
    }


def _write(path: Path, doc: dict, mode: int = 0o600) -> StateFile:
    path.write_text(json.dumps(doc))
    os.chmod(path, mode)
    return StateFile(path)


@pytest.fixture
def victim():
    """A process that is not a probe's: it must survive every cleanup here."""
    p = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    time.sleep(0.1)
    yield p
    p.kill()
    p.wait()


@pytest.fixture
def home(tmp_path):
    d = tmp_path / "store"
    d.mkdir(mode=0o700)
    return d


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_state_file_of_another_user_is_refused_in_one_line(home, victim):
    sf = _write(
        home / "s.db.probe-state.json",
        _state(home, child={"pid": victim.pid, "start_ticks": process_start_ticks(victim.pid)}),
    )
    os.chown(sf.path, NOBODY, NOBODY)
    with pytest.raises(StateFileError) as e:
        cleanup_stale(sf, Recording())
    assert "belongs to uid 65534" in str(e.value) and "\n" not in str(e.value)
    assert victim.poll() is None


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_a_state_file_others_can_write_is_refused(home, mode, victim):
    sf = _write(
        home / "s.db.probe-state.json",
        _state(home, child={"pid": victim.pid, "start_ticks": process_start_ticks(victim.pid)}),
        mode,
    )
    with pytest.raises(StateFileError, match="writable by others"):
        cleanup_stale(sf, Recording())
    assert victim.poll() is None


def test_a_symlinked_state_file_is_refused(home, tmp_path):
    real = _write(tmp_path / "elsewhere.json", _state(tmp_path)).path
    link = home / "s.db.probe-state.json"
    link.symlink_to(real)
    with pytest.raises(StateFileError, match="symbolic link"):
        StateFile(link).load()


def test_a_state_file_in_a_directory_others_can_write_is_refused_and_never_written(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # world-writable, not sticky: anyone may replace the file
    sf = _write(shared / "s.db.probe-state.json", _state(tmp_path))
    with pytest.raises(StateFileError, match="writable by others"):
        sf.load()
    sf.path.unlink()
    from fsadvisor.probe.state import ProbeState

    with pytest.raises(StateFileError, match="writable by others"):
        StateFile(shared / "t.db.probe-state.json").save(
            ProbeState(owner=ProcessRef(os.getpid(), None), device="/dev/loop9")
        )
    assert not (shared / "t.db.probe-state.json").exists()


def test_a_sticky_shared_directory_like_tmp_is_fine(tmp_path):
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    sf = _write(sticky / "s.db.probe-state.json", _state(tmp_path, matrices={"x": {}}))
    assert sf.load().matrices == {"x": {}}


def test_a_trusted_file_still_only_gets_the_probes_own_objects_undone(home, tmp_path, victim):
    """The file is ours, but what it names is not: a non-probe process under its true start
    time, mount points that are no probe's, a scratch path that is someone's data or a
    symbolic link to it, a scheduler nobody has. Nothing of it is touched."""
    data = tmp_path / "precious.db"
    data.write_text("keep me")
    link = tmp_path / "fsadvisor-scratch-evil.img"
    link.symlink_to(data)
    doc = _state(
        home,
        child={"pid": victim.pid, "start_ticks": process_start_ticks(victim.pid)},
        mounts=[
            {"device": "/dev/vda1", "mountpoint": "/"},
            {"device": "/dev/vda1", "mountpoint": "/home"},
            {"device": "/dev/loop9", "mountpoint": "/tmp/fsadvisor-mnt-x/../../etc"},
            {"device": "/dev/loop9", "mountpoint": "relative/fsadvisor-mnt-y"},
        ],
        device="/sys/kernel/x",
        original_scheduler="$(reboot)",
        scratch={"backing_file": str(data), "loop_device": "/dev/vda"},
    )
    sf = _write(home / "s.db.probe-state.json", doc)
    ops = Recording()
    cleanup_stale(sf, ops)
    assert ops.calls == []
    assert victim.poll() is None and data.read_text() == "keep me"
    doc["scratch"] = {"backing_file": str(link), "loop_device": None}
    sf = _write(home / "s.db.probe-state.json", doc)
    cleanup_stale(sf, ops)
    assert link.is_symlink() and data.read_text() == "keep me" and ops.calls == []


def test_a_child_without_its_start_time_is_never_signalled(home, victim):
    """A recorded pid with no start time may be anyone's by now."""
    sf = _write(
        home / "s.db.probe-state.json", _state(home, child={"pid": victim.pid, "start_ticks": None})
    )
    cleanup_stale(sf, Recording())
    assert victim.poll() is None


def test_a_probe_command_under_its_start_time_is_still_stopped(home, tmp_path):
    """What the cleanup exists for still works: a left-over benchmark (a process named fio,
    in its own group, as the probe starts it) is stopped, and our own scratch file deleted."""
    fio = subprocess.Popen(["bash", "-c", "exec -a fio sleep 60"], start_new_session=True)
    # reaped as soon as it ends, as a probe's runner would: a zombie still counts as alive
    threading.Thread(target=fio.wait, daemon=True).start()
    img = tmp_path / "fsadvisor-scratch-ours.img"
    img.write_bytes(b"\0" * 4096)
    try:
        time.sleep(0.2)
        sf = _write(
            home / "s.db.probe-state.json",
            _state(
                home,
                child={"pid": fio.pid, "start_ticks": process_start_ticks(fio.pid)},
                scratch={"backing_file": str(img), "loop_device": None},
            ),
        )
        report = cleanup_stale(sf, Recording())
        assert fio.wait(timeout=15) is not None  # ended within the SIGINT grace
        assert not img.exists()
        assert any("stopped the benchmark" in a for a in report.actions)
    finally:
        if fio.poll() is None:
            fio.kill()
            fio.wait()


_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10)),
    lambda c: st.one_of(
        st.lists(c, max_size=4), st.dictionaries(st.text(max_size=8), c, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    extra=st.dictionaries(
        st.sampled_from(
            ["owner", "mounts", "scratch", "child", "device", "original_scheduler", "matrices"]
        ),
        _JSON,
    )
)
def test_a_damaged_state_document_reads_as_what_it_safely_names(extra):
    """Any JSON under the right version (a hand edit, a damaged file) gives a state or a
    one-line StateFileError, and undoing it touches nothing that is not a probe's
    (benchmarks/fuzz_parsers.py found `"mounts": true` raising TypeError)."""
    from fsadvisor.probe.state import ProbeState, undo

    try:
        state = ProbeState.from_dict({**extra, "version": 1})
    except StateFileError as e:
        assert "\n" not in str(e)
        return
    ops = Recording()
    ops.is_mounted = lambda m: False  # type: ignore[method-assign]
    ops.process_alive = lambda ref: False  # type: ignore[method-assign]
    undo(state, ops)
    assert all(c[0] == "rmdir" and "fsadvisor-mnt-" in c[1] for c in ops.calls), ops.calls


def test_a_zombie_child_is_not_alive_so_the_cleanup_does_not_wait_for_its_reaping(tmp_path):
    """The orphaned benchmark of a SIGKILLed probe may end before the next probe cleans up;
    until init reaps it, it is a zombie: nothing to stop, nothing left (the cleanup once
    reported it 'still running' and refused the next probe)."""
    import subprocess as sp

    p = sp.Popen(["bash", "-c", "exec -a fio true"], start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # not reaped: a zombie until p.wait()
        stat = Path(f"/proc/{p.pid}/stat").read_text()
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            break
        time.sleep(0.02)
    try:
        ref = ProcessRef(p.pid, process_start_ticks(p.pid))
        assert ref.start_ticks is not None
        assert not SystemOps().process_alive(ref)
    finally:
        p.wait()
