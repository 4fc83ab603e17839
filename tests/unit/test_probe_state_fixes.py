"""Review fixes in the probe runner, without root or devices:

- the crash cleanup stops only benchmarks that use *our* paths (whole path components, not
  substrings: /dev/loop10 is not /dev/loop1), read from a fake /proc process table;
- the filesystem a probe made itself (recorded after its mkfs) needs no --force, any other
  signature still does;
- the device is checked before every cell, and a device taken by someone else stops the
  matrix with one line, keeps what was stored, and cleans up.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.host import device as devmod
from fsadvisor.domain import Device
from fsadvisor.records import RunRecord
from fsadvisor.errors import DeviceRefused
from fsadvisor.probe.plan import build_plan
from fsadvisor.probe.state import (
    ProbeState,
    ProcessRef,
    StateFile,
    SystemOps,
    process_uses,
    recorded_signature,
    state_path_for,
    undo,
)

GIB = 1 << 30
MNT = "/tmp/fsadvisor-mnt-abc"
SIBLING = "/tmp/fsadvisor-mnt-abcd"


# ---------------------------------------------------------------- 1. exact path matching


def fake_proc(root: Path, procs: dict[int, tuple[list[str], str | None, dict[str, str]]]) -> str:
    """A /proc with cmdline (NUL-separated), cwd (a symlink) and environ per pid."""
    for pid, (argv, cwd, env) in procs.items():
        d = root / str(pid)
        d.mkdir(parents=True)
        (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        if cwd is not None:
            os.symlink(cwd, d / "cwd")
        (d / "environ").write_bytes(b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items()))
        # start time (field 22) for ProcessRef.of
        (d / "stat").write_text(
            f"{pid} ({Path(argv[0]).name}) S " + " ".join(["0"] * 18) + " 4242 0\n"
        )
    (root / "self").mkdir()  # not a pid: skipped
    return str(root)


TABLE = {
    # someone else's fio on devices whose names start like ours
    101: (["fio", "--name=x", "--filename=/dev/loop10"], "/", {}),
    102: (["fio", "--name=x", "--filename=/dev/loop1p1"], "/", {}),
    103: (["/usr/bin/fio", "--filename=/dev/loop1", "--rw=randread"], "/", {}),  # ours
    104: (["fio", "--filename=/dev/loop2:/dev/loop1"], "/", {}),  # fio's ':' list: ours
    105: (["fio", "/dev/loop1"], "/", {}),  # an argument equal to the path: ours
    # a sibling mount point whose name extends ours
    110: (["fio", f"--directory={SIBLING}"], "/", {}),
    111: (["fio", f"--filename={SIBLING}/job.dat"], "/", {}),
    112: (["sysbench", "fileio", "run"], SIBLING, {}),
    113: (["fio", "/usr/share/fsadvisor/runner/oltp.fio"], "/", {"TARGET": SIBLING}),
    114: (["db_bench", f"--db={SIBLING}/db"], "/", {}),
    # ours, each by one witness
    120: (["fio", f"--directory={MNT}"], "/", {}),
    121: (["fio", f"--filename={MNT}/job.dat"], "/", {}),
    122: (["sysbench", "fileio", "run"], f"{MNT}/sub", {}),
    123: (["fio", "/usr/share/fsadvisor/runner/oltp.fio"], "/", {"TARGET": MNT}),
    124: (["db_bench", f"--db={MNT}/db"], "/", {}),
    125: (["fio", f"--directory={MNT}/"], "/", {}),
    # not a benchmark at all, although it names our paths
    130: (["tail", "-f", f"{MNT}/job.dat", "/dev/loop1"], MNT, {"TARGET": MNT}),
}


def test_benchmarks_are_matched_on_whole_path_components(tmp_path):
    ops = SystemOps(proc_root=fake_proc(tmp_path / "proc", TABLE))
    assert {r.pid for r in ops.benchmarks_using(["/dev/loop1"])} == {103, 104, 105}
    assert {r.pid for r in ops.benchmarks_using([MNT])} == {120, 121, 122, 123, 124, 125}
    assert {r.pid for r in ops.benchmarks_using([SIBLING])} == {110, 111, 112, 113, 114}
    assert ops.benchmarks_using(["/dev/loop1p"]) == []
    assert ops.benchmarks_using(["/tmp/fsadvisor-mnt-ab"]) == []
    ref = ops.benchmarks_using(["/dev/loop10"])
    assert [(r.pid, r.start_ticks) for r in ref] == [(101, 4242)]


def test_cleanup_of_a_dead_scratch_probe_stops_only_its_own_fio(tmp_path):
    """The reviewer's case: our scratch device was /dev/loop1, someone else runs fio on
    /dev/loop10 and /dev/loop1p1 and in a mount point named like ours plus one letter."""
    img = tmp_path / "fsadvisor-scratch-s.img"
    img.write_bytes(b"")
    ops = SystemOps(proc_root=fake_proc(tmp_path / "proc", TABLE))
    stopped: list[int] = []

    class Host:
        def process_alive(self, ref):
            return False

        def stop_process_group(self, ref):
            stopped.append(ref.pid)

        def benchmarks_using(self, paths):
            return ops.benchmarks_using(paths)

        def is_mounted(self, mnt):
            return False

        def umount(self, mnt):
            return None

        def remove_dir(self, path):
            pass

        def current_scheduler(self, dev):
            return None

        def set_scheduler(self, dev, name):
            pass

        def loop_backing_file(self, dev):
            return str(img) if dev == "/dev/loop1" else None

        def loops_of(self, f):
            return []

        def detach_loop(self, dev):
            pass

        def remove_file(self, path):
            pass

    state = ProbeState(
        owner=ProcessRef(4242, 1),
        device="/dev/loop1",
        mounts=[{"device": "/dev/loop1", "mountpoint": MNT}],
        scratch={"backing_file": str(img), "loop_device": "/dev/loop1"},
    )
    undo(state, Host())
    assert sorted(stopped) == [103, 104, 105, 120, 121, 122, 123, 124, 125]


@settings(max_examples=200, deadline=None)
@given(
    suffix=st.text(alphabet="0123456789abcdefp-_.", min_size=1, max_size=6),
    opt=st.sampled_from(["--filename=", "--directory=", "--db=", ""]),
)
def test_a_path_that_merely_starts_like_ours_never_matches(suffix, opt):
    for ours in ("/dev/loop1", MNT):
        other = ours + suffix
        assert not process_uses(
            ["fio", opt + other, opt + other + "/f"], "/", {"TARGET": other}, [ours]
        )
        assert process_uses(["fio", opt + ours + "/" + suffix], "/", {}, [ours])


# ---------------------------------------------------------------- 2. own signature

EXT4 = {"TYPE": "ext4", "UUID": "0b5d7a1e-1111-4c39-9d4e-2d2f0c0d8e01"}


def facts(signatures, recorded=None, own=False) -> devmod.DeviceFacts:
    return devmod.DeviceFacts(
        path="/dev/loop3",
        resolved="/dev/loop3",
        name="loop3",
        parent=None,
        size_bytes=GIB,
        signatures=list(signatures),
        recorded=recorded,
        own_signature=own,
    )


def test_exactly_the_probes_own_signature_needs_no_force():
    ident = dict(EXT4)
    assert devmod.is_own_signature(["ext4"], ident, EXT4)
    v = devmod.judge(facts(["ext4"], EXT4, own=True))
    assert v.ok and v.own_signature and not v.needs_force


@pytest.mark.parametrize(
    "sigs, ident",
    [
        (
            ["ext4"],
            {**EXT4, "UUID": "0b5d7a1e-2222-4c39-9d4e-2d2f0c0d8e01"},
        ),  # mkfs.ext4 by someone else
        (["xfs"], {"TYPE": "xfs", "UUID": EXT4["UUID"]}),  # another filesystem
        (["dos", "ext4"], dict(EXT4)),  # plus a partition table
        (["ext4"], None),  # blkid could not tell
        (["ext4"], {**EXT4, "UUID_SUB": "x"}),  # not the same mkfs
    ],
)
def test_any_other_signature_still_needs_force(sigs, ident):
    assert not devmod.is_own_signature(sigs, ident, EXT4)
    v = devmod.judge(facts(sigs, EXT4, own=False))
    assert not v.ok and v.needs_force and not v.own_signature
    assert v.reason == (
        f"/dev/loop3 holds data: {', '.join(sigs)} signature found, not the one "
        f"this probe made (ext4 UUID {EXT4['UUID']}); pass --force to destroy it"
    )
    assert devmod.judge(facts(sigs, EXT4), force=True).ok


def test_without_a_record_the_refusal_is_unchanged():
    v = devmod.judge(facts(["ext4"]))
    assert v.reason == "/dev/loop3 holds data: ext4 signature found; pass --force to destroy it"
    assert not devmod.is_own_signature(["ext4"], dict(EXT4), None)
    assert not devmod.is_own_signature(["ext4"], dict(EXT4), {"TYPE": "ext4"})  # no UUID: never


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["TYPE", "UUID", "UUID_SUB", "PTTYPE", "LABEL", "USAGE", "BLOCK_SIZE"]),
        st.text(max_size=8),
        max_size=7,
    )
)
def test_identity_keeps_only_type_and_uuids(blkid):
    ident = devmod.identity_of(blkid)
    if not blkid.get("TYPE") or not blkid.get("UUID"):
        assert ident is None
    else:
        assert ident == {k: v for k, v in blkid.items() if k in devmod.IDENTITY_KEYS and v}


def test_the_recorded_signature_is_for_this_device_only(tmp_path):
    sf = StateFile(state_path_for(tmp_path / "p.db"))
    state = ProbeState(
        matrices={
            "/dev/loop3": {
                "matrix_id": "m1",
                "plan": {},
                "own_signature": {"device": "/dev/loop3", "identity": dict(EXT4)},
            }
        }
    )
    sf.save(state)
    loaded = sf.load()
    assert recorded_signature(loaded, "/dev/loop3", "/dev/loop3") == EXT4
    assert recorded_signature(loaded, "/dev/loop3", "/dev/loop4") is None
    assert recorded_signature(loaded, "/dev/loop4", "/dev/loop4") is None
    for garbage in (
        None,
        "x",
        {"device": "/dev/loop3"},
        {"device": "/dev/loop3", "identity": {"TYPE": 1}},
        {"device": 3, "identity": dict(EXT4)},
    ):
        loaded.matrices["/dev/loop3"]["own_signature"] = garbage
        assert recorded_signature(loaded, "/dev/loop3", "/dev/loop3") is None


# ---------------------------------------------------------------- 3. a check before every cell


class FakeStore:
    def __init__(self):
        self.records: list[RunRecord] = []
        self.finished: list[str] = []

    def start_matrix(self, plan):
        return "m-test"

    def runs(self, **filters):
        return [{"cell_key": r.cell_key, "rep": r.rep} for r in self.records]

    def record_run(self, rec):
        self.records.append(rec)
        return len(self.records)

    def finish_matrix(self, matrix_id, status):
        self.finished.append(status)


@pytest.fixture
def matrix(tmp_path, monkeypatch):
    """A MatrixRun over a device that does not exist, every host action faked."""
    from fsadvisor.tools import fio
    from fsadvisor.probe import run as runmod
    from fsadvisor.probe.cell import CellRunner

    dev = str(tmp_path / "no-such-device")
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # our mount point goes here
    monkeypatch.setattr(
        devmod,
        "safety_verdict",
        lambda path, force=False, own_signature=None, host=None: devmod.Verdict(True, None, path),
    )
    monkeypatch.setattr(devmod, "inspect", lambda path, plp="unknown": Device(path, 4 * GIB))
    monkeypatch.setattr(devmod, "read_scheduler", lambda path: ("none", ["none"]))
    monkeypatch.setattr(fio, "fio_version", lambda: "fio-3.33")
    monkeypatch.setattr(runmod.MatrixRun, "_meter", lambda self, d: None)
    ran: list[str] = []

    def fake_cell(self, cell, on_step=None):
        ran.append(cell.label)
        return RunRecord(
            cell_key=cell.key,
            device=self.device_info,
            config=cell.config,
            workload_name=cell.workload.name,
            workload=cell.workload.workload,
            rep=cell.rep,
            status="ok",
            started_at=0.0,
            wall_s=0.01,
            matrix_id=self.matrix_id,
        )

    monkeypatch.setattr(CellRunner, "run", fake_cell)
    plan = build_plan(
        dev,
        4 * GIB,
        filesystems=["ext4"],
        schedulers=["none"],
        reps=2,
        micro_names=["4k-randread-qd32"],
        variants=False,
        baseline=False,
        runtime_s=1,
        cooldown_s=0,
        kernel_supports=lambda fs: True,
        db_path=str(tmp_path / "p.db"),
    )
    sf = StateFile(state_path_for(tmp_path / "p.db"))
    return plan, sf, ran


def test_the_device_is_checked_before_every_cell(matrix):
    from fsadvisor.probe.run import MatrixRun

    plan, sf, ran = matrix
    checked: list[tuple[str, int]] = []

    def check(dev):
        checked.append((dev, len(ran)))
        return None

    run = MatrixRun(plan, FakeStore(), sf, device_check=check)
    run._wipe_own_signature = lambda dev: []  # the fake device is never wiped
    summary = run.execute()
    assert len(ran) == len(plan.cells()) == 2 and summary.complete
    assert checked == [(str(plan.device), 0), (str(plan.device), 1)]


def test_a_device_taken_between_cells_stops_the_matrix_in_one_line(matrix):
    from fsadvisor.probe.run import DeviceTaken, MatrixRun

    plan, sf, ran = matrix
    dev = str(plan.device)
    reason = f"{dev} is mounted on /mnt/theirs; unmount it first"
    answers = iter([None, reason])
    events = []
    store = FakeStore()
    run = MatrixRun(
        plan, store, sf, on_progress=events.append, device_check=lambda d: next(answers)
    )
    wiped: list[str] = []
    run._wipe_own_signature = lambda d: wiped.append(d) or []
    with pytest.raises(DeviceTaken) as e:
        run.execute()
    msg = str(e.value)
    assert isinstance(e.value, DeviceRefused) and "\n" not in msg
    assert msg == (
        f"probe stopped before cell {plan.cells()[1].label}: {reason}; the 1 cell "
        "done so far is stored, --resume continues"
    )
    assert len(ran) == 1 and [r.status for r in store.records] == ["ok"]  # kept
    assert store.finished == ["interrupted"]
    assert wiped == []  # someone else's device now: not touched
    # cleanup as on an interrupt: our mount point is gone, nothing live is left, and the
    # matrix can be resumed
    mounts = [ev for ev in events if ev.kind == "cleanup"]
    assert not any("still left" in ev.message for ev in mounts)
    state = json.loads(sf.path.read_text())
    assert not state["owner"] and not state["mounts"]
    assert state["matrices"][dev]["matrix_id"] == "m-test"
    assert list(Path(tempfile.gettempdir()).glob("fsadvisor-mnt-*")) == []


def test_the_default_check_refuses_a_device_that_vanished(tmp_path):
    assert devmod.in_use_reason(str(tmp_path / "nothing-here"))


def test_a_device_without_a_scheduler_runs_its_none_cells_and_skips_the_others(matrix, monkeypatch):
    """zram has no queue/scheduler: the matrix runs its "none" cells, skips the others with
    the reason, notes it once, and has no scheduler to restore afterwards."""
    from fsadvisor.errors import NotSupported
    from fsadvisor.probe.run import MatrixRun

    plan, sf, ran = matrix

    def no_scheduler(path):
        raise NotSupported(f"{path}: zram9 has no I/O scheduler")

    monkeypatch.setattr(devmod, "read_scheduler", no_scheduler)
    plan.configs = plan.configs + [c.with_(scheduler="mq-deadline") for c in plan.configs]
    events = []
    run = MatrixRun(plan, FakeStore(), sf, on_progress=events.append, device_check=lambda d: None)
    run._wipe_own_signature = lambda dev: []
    summary = run.execute()
    assert len(ran) == 2 and all(" none | " in r for r in ran)
    assert summary.count("ok") == 2 and summary.count("skipped") == 2
    notes = [e.message for e in events if e.kind == "note"]
    assert any("has no selectable I/O scheduler" in n and "scheduler 'none'" in n for n in notes)
    assert run.state.original_scheduler is None
