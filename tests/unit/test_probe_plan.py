"""The probe's pure parts: plan enumeration, cell keys and steps, the state file and the
stale-state cleanup (with a fake host), measurement arithmetic, signal handling, and the
executor's process-group stop. No root, no devices."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _script import header

from fsadvisor.domain import FsConfig
from fsadvisor.errors import ConfigError
from fsadvisor.probe import measure
from fsadvisor.probe.cell import CellRunner, Step, bench_job
from fsadvisor.tools.fiobench import fill_argv, jobfile_env, measure_argv
from fsadvisor.probe.commands import CommandFailed, Executor
from fsadvisor.probe.plan import MICRO, UNSUPPORTED_FMT, Plan, build_plan, cell_key
from fsadvisor.probe.report import dry_run_lines
from fsadvisor.probe.run import Interruptions, ProbeInterrupted
from fsadvisor.probe.state import (
    CleanupReport,
    ProbeState,
    ProcessRef,
    StateFile,
    StateFileError,
    cleanup_stale,
    state_path_for,
    undo,
)

GIB = 1 << 30


def plan(**kw) -> Plan:
    kw.setdefault("kernel_supports", lambda fs: fs != "f2fs")
    return build_plan("/dev/loop9", kw.pop("size", 4 * GIB), **kw)


# ---------------------------------------------------------------- plan enumeration


def test_default_matrix_counts_and_order():
    p = plan(
        filesystems=["ext4", "xfs", "btrfs", "f2fs"], schedulers=["none", "mq-deadline"], reps=2
    )
    # default + variants: ext4 3, xfs 2, btrfs 2, f2fs 2 configurations, per scheduler
    assert len(p.configs) == (3 + 2 + 2 + 2) * 2
    assert {c.scheduler for c in p.configs} == {"none", "mq-deadline"}
    cells = p.cells()
    raw = [w for w in p.workloads if w.raw_baseline]
    assert len(raw) == 6  # metadata jobs have no raw-device counterpart
    assert len(cells) == 2 * (2 * len(raw) + len(p.configs) * len(MICRO))
    # repetitions outermost (seed 000 repeated the whole experiment)
    reps = [c.rep for c in cells]
    assert reps == sorted(reps)
    # rep 1 opens with the raw-device baseline
    assert cells[0].config is None
    # every (cell, rep) once; keys are shared by repetitions and say nothing of the rep
    pairs = [(c.key, c.rep) for c in cells]
    assert len(set(pairs)) == len(pairs)
    assert all("rep" not in c.key.split(" | ")[-1] for c in cells)
    assert len({c.key for c in cells}) == len(cells) // 2


def test_f2fs_cells_are_skipped_with_the_kernel_reason_and_the_matrix_goes_on():
    p = plan(filesystems=["f2fs", "ext4"], schedulers=["none"], quick=True)
    f2fs = [c for c in p.cells() if c.config and c.config.fs == "f2fs"]
    others = [c for c in p.cells() if not (c.config and c.config.fs == "f2fs")]
    assert f2fs and all(c.skip_reason == UNSUPPORTED_FMT.format(fs="f2fs") for c in f2fs)
    assert f2fs[0].skip_reason == "f2fs: not supported by this kernel"
    assert others and all(c.skip_reason is None for c in others)
    assert p.unsupported == {"f2fs": "f2fs: not supported by this kernel"}


def test_quick_is_one_rep_short_runs_two_workloads_no_variants():
    p = plan(filesystems=["ext4"], schedulers=["none"], quick=True)
    assert p.reps == 1 and p.runtime_s == 10 and p.cooldown_s == 0
    assert [w.name for w in p.workloads] == ["4k-randread-qd32", "4k-randwrite-qd32"]
    assert len(p.configs) == 1


def test_explicit_configs_replace_defaults_and_keep_their_own_scheduler():
    p = plan(
        explicit_configs=[
            {"filesystem": "xfs", "mount": ["noatime"]},
            {"filesystem": "ext4", "scheduler": "bfq"},
        ],
        schedulers=["none", "kyber"],
        quick=True,
    )
    got = [(c.fs, c.mount, c.scheduler) for c in p.configs]
    assert got == [
        ("xfs", ("noatime",), "none"),
        ("xfs", ("noatime",), "kyber"),
        ("ext4", (), "bfq"),
    ]


def test_agcounts_add_xfs_configs_and_are_range_checked():
    p = plan(filesystems=["xfs"], schedulers=["none"], agcounts=[4, 16], variants=False)
    assert sorted(c.ag_count or 0 for c in p.configs) == [0, 4, 16]
    with pytest.raises(ConfigError, match="agcounts 64"):
        plan(filesystems=["xfs"], schedulers=["none"], agcounts=[64], size=512 << 20)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"filesystems": ["zfs"]}, "unknown filesystem 'zfs'"),
        ({"schedulers": ["cfq"]}, "unknown scheduler 'cfq'"),
        ({"reps": 0}, "--reps"),
        ({"runtime_s": 0}, "--runtime"),
        ({"micro": False}, "nothing to run"),
        ({"micro_names": ["nope"]}, "unknown micro workload"),
        ({"size_bytes": 3 * GIB}, "more than half"),
        ({"filesystems": ["ext4"], "agcounts": [8]}, "--agcounts applies to xfs"),
    ],
)
def test_plan_errors_are_one_line_config_errors(kw, match):
    with pytest.raises(ConfigError, match=match) as e:
        plan(**kw)
    assert "\n" not in str(e.value)


def test_micro_jobs_get_the_best_engine_metadata_jobs_keep_theirs():
    p = plan(filesystems=["ext4"], schedulers=["none"], ioengine="libaio", reps=1)
    engines = {w.name: w.workload.ioengine for w in p.workloads}
    assert engines["4k-randread-qd32"] == "libaio"
    assert engines["meta-stat"] == "filestat"


@settings(max_examples=40, deadline=None)
@given(
    reps=st.integers(1, 5),
    runtime=st.floats(0.5, 120),
    cooldown=st.floats(0, 60),
    fs=st.lists(st.sampled_from(["ext4", "xfs", "btrfs", "f2fs"]), min_size=1, unique=True),
    scheds=st.lists(
        st.sampled_from(["none", "mq-deadline", "kyber", "bfq"]), min_size=1, unique=True
    ),
)
def test_plan_round_trips_through_its_dict(reps, runtime, cooldown, fs, scheds):
    p = plan(
        filesystems=fs,
        schedulers=scheds,
        reps=reps,
        runtime_s=runtime,
        cooldown_s=cooldown,
        micro_names=["4k-randread-qd32", "meta-stat"],
    )
    # JSON in between, as in the state file and the store
    q = Plan.from_dict(json.loads(json.dumps(p.to_dict())))
    assert [(c.key, c.rep, c.skip_reason) for c in q.cells()] == [
        (c.key, c.rep, c.skip_reason) for c in p.cells()
    ]
    assert q.fingerprint() == p.fingerprint()


def test_cell_key_names_config_scheduler_and_workload():
    cfg = FsConfig.make("xfs", {}, ("noatime",), "kyber", 8)
    assert cell_key(cfg, "kyber", "4k-randread-qd32") == f"{cfg.key()} | 4k-randread-qd32"
    assert "agcount=8" in cfg.key() and "kyber" in cfg.key()
    assert cell_key(None, "bfq", "w") == "raw-device bfq | w"


# ---------------------------------------------------------------- cell steps


def runner_for(p: Plan) -> CellRunner:
    from fsadvisor.domain import Device

    return CellRunner(
        plan=p,
        device="/dev/loop9",
        device_info=Device("/dev/loop9", 4 * GIB),
        mountpoint="/tmp/mnt-x",
        executor=Executor(),
    )


def roles(steps: list[Step]) -> list[str]:
    return [s.role for s in steps]


def test_filesystem_cell_steps_in_order_with_fill_before_reads():
    p = plan(filesystems=["ext4"], schedulers=["mq-deadline"], quick=True, runtime_s=2)
    r = runner_for(p)
    read_cell = next(c for c in p.cells() if c.config and c.workload.name == "4k-randread-qd32")
    steps = r.steps(read_cell)
    assert roles(steps) == [
        "discard",
        "mkfs",
        "mount",
        "scheduler",
        "prepare",
        "sync",
        "drop-caches",
        "measure",
        "cooldown",
        "umount",
    ]
    assert steps[0].argv == ("blkdiscard", "-f", "/dev/loop9") and steps[0].optional
    assert steps[1].argv[0] == "mkfs.ext4" and steps[1].argv[-1] == "/dev/loop9"
    assert steps[2].argv[-2:] == ("/dev/loop9", "/tmp/mnt-x")
    assert steps[3].value == "mq-deadline"
    fill, run = steps[4].argv, steps[7].argv
    assert fill[: len(run)] == run  # the same job, with overrides appended
    assert "--rw=write" in fill[len(run) :] and "--time_based=0" in fill[len(run) :]
    assert "--filename=/tmp/mnt-x/4k-randread-qd32.dat" in run
    assert steps[-1].argv == ("umount", "/tmp/mnt-x")
    write_cell = next(c for c in p.cells() if c.config and c.workload.name == "4k-randwrite-qd32")
    prep = r.steps(write_cell)[4]
    assert prep.argv[-1] == "--create_only=1" and "--rw=write" not in prep.argv


def test_raw_cell_has_no_mkfs_mount_or_umount():
    p = plan(filesystems=["ext4"], schedulers=["none"], quick=True)
    raw = next(c for c in p.cells() if c.config is None and c.workload.name == "4k-randread-qd32")
    steps = runner_for(p).steps(raw)
    assert roles(steps) == [
        "discard",
        "scheduler",
        "prepare",
        "sync",
        "drop-caches",
        "measure",
        "cooldown",
    ]
    assert "--filename=/dev/loop9" in steps[-2].argv


def test_filestat_cell_creates_its_files_first_without_a_short_cap():
    p = plan(
        filesystems=["xfs"],
        schedulers=["none"],
        micro_names=["meta-stat"],
        reps=1,
        runtime_s=1,
        variants=False,
    )
    cell = next(c for c in p.cells() if c.config)
    steps = runner_for(p).steps(cell)
    prep = next(s for s in steps if s.role == "prepare")
    assert "--ioengine=filecreate" in prep.argv
    # the creator must make every file: a 1 s cap left files missing on a slow device
    assert "--runtime=1s" not in prep.argv
    assert "--ioengine=filestat" in next(s for s in steps if s.role == "measure").argv


def test_fill_covers_many_files_round_robin():
    from fsadvisor.domain import Workload

    w = Workload(rw="randread", nrfiles=8, file_size_bytes=1 << 20, bs_bytes=4096)
    argv = fill_argv(["fio", "--name=x"], w, 8 << 20)
    assert "--file_service_type=roundrobin" in argv and "--bs=4096" in argv


def test_jobfile_env_scales_per_thread_files_to_the_budget():
    from fsadvisor.domain import Workload

    p = plan(filesystems=["ext4"], schedulers=["none"], quick=True, size_bytes=64 << 20)
    w = Workload(rw="read", numjobs=100, nrfiles=20000, file_size_bytes=32 << 10)
    env = jobfile_env(w, "/mnt", "nrfiles=${NRFILES}\nsize=${SIZE}", p.size_bytes, p.runtime_s)
    assert env["NUMJOBS"] == "100" and env["TARGET"] == "/mnt"
    assert int(env["NUMJOBS"]) * int(env["SIZE"]) <= 64 << 20
    assert int(env["SIZE"]) == int(env["NRFILES"]) * 2 * (32 << 10)
    total = jobfile_env(
        replace(w, working_set_bytes=5 * GIB), "/mnt", "size=${SIZE}", p.size_bytes, p.runtime_s
    )
    assert total["SIZE"] == str(64 << 20)


def test_dry_run_lists_every_command_and_shows_what_skipped_f2fs_would_run():
    p = plan(filesystems=["ext4", "f2fs"], schedulers=["none"], quick=True)
    lines = dry_run_lines(p)
    text = "\n".join(lines)
    assert "nothing below is executed" in header(lines)
    assert text.count("\nmkfs.ext4 ") == 2 and text.count("\numount ") == 2
    assert "SKIPPED: f2fs: not supported by this kernel" in text
    assert "#   mkfs.f2fs" in text and "#   mount -t f2fs" in text
    assert "echo none > /sys/block/loop9/queue/scheduler" in text
    assert "echo 3 > /proc/sys/vm/drop_caches" in text
    scratch = replace(p, device=None, scratch_size_bytes=GIB)
    s_lines = dry_run_lines(scratch)
    assert any(ln.startswith("losetup --find --show --direct-io=on ") for ln in s_lines)
    assert s_lines[-2] == "losetup --detach /dev/loopN" and s_lines[-1].startswith("rm ")


# ---------------------------------------------------------------- state file


def full_state() -> ProbeState:
    return ProbeState(
        owner=ProcessRef(4242, 99),
        matrix_id="m1",
        device="/dev/loop5",
        original_scheduler="bfq",
        mounts=[{"device": "/dev/loop5", "mountpoint": "/tmp/fsadvisor-mnt-a"}],
        scratch={"backing_file": "/tmp/fsadvisor-scratch-s.img", "loop_device": "/dev/loop5"},
        child=ProcessRef(4300, 7),
        current_cell="xfs ... | rep 2",
        matrices={"scratch": {"matrix_id": "m1", "plan": {"reps": 2}}},
    )


def test_state_file_round_trip_and_atomic_replace(tmp_path):
    sf = StateFile(state_path_for(tmp_path / "f.db"))
    assert sf.path.name == "f.db.probe-state.json"
    sf.save(full_state())
    assert sf.load().to_dict() == full_state().to_dict()
    assert [p.name for p in tmp_path.iterdir()] == [sf.path.name]  # no temp file left
    s = sf.load()
    s.clear_live()
    sf.save(s)
    assert sf.exists() and sf.load().matrices  # resume information outlives the run
    s.matrices.clear()
    sf.save(s)
    assert not sf.exists()


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(
        st.text(max_size=200),
        st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=10),
            lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
            max_leaves=20,
        ).map(json.dumps),
    )
)
def test_state_loader_never_crashes_on_garbage(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("s") / "x.probe-state.json"
    path.write_text(text)
    try:
        state = StateFile(path).load()
    except StateFileError as e:
        assert "\n" not in str(e)
    else:
        assert isinstance(state, ProbeState)
        state.to_dict()


@settings(max_examples=50, deadline=None)
@given(
    mounts=st.lists(st.text(min_size=1, max_size=20), max_size=3),
    sched=st.none() | st.sampled_from(["none", "bfq"]),
    pid=st.integers(1, 1 << 22),
    ticks=st.none() | st.integers(0, 1 << 40),
)
def test_state_dict_round_trip(mounts, sched, pid, ticks):
    s = ProbeState(
        owner=ProcessRef(pid, ticks),
        original_scheduler=sched,
        mounts=[{"device": "/dev/x", "mountpoint": m} for m in mounts],
    )
    assert ProbeState.from_dict(json.loads(json.dumps(s.to_dict()))).to_dict() == s.to_dict()


class FakeHost:
    """Records what the cleanup does; the world is what the test says it is."""

    def __init__(
        self,
        alive=(),
        mounted=(),
        scheduler=None,
        backing=None,
        loops=(),
        files=(),
        benchmarks=None,
    ):
        self.alive, self.mounted = set(alive), set(mounted)
        self.benchmarks = benchmarks or {}  # pid -> the paths its arguments mention
        self.scheduler, self.backing, self.loops = scheduler, backing or {}, list(loops)
        self.files, self.calls = set(files), []

    def process_alive(self, ref):
        return ref.pid in self.alive

    def stop_process_group(self, ref):
        self.calls.append(("stop", ref.pid))
        self.alive.discard(ref.pid)

    def benchmarks_using(self, paths):
        return [
            ProcessRef(pid, 1)
            for pid, uses in self.benchmarks.items()
            if pid in self.alive and set(uses) & set(paths)
        ]

    def is_mounted(self, mnt):
        return mnt in self.mounted

    def umount(self, mnt):
        self.calls.append(("umount", mnt))
        self.mounted.discard(mnt)
        return None

    def remove_dir(self, path):
        self.calls.append(("rmdir", path))

    def current_scheduler(self, dev):
        return self.scheduler

    def set_scheduler(self, dev, name):
        self.calls.append(("scheduler", dev, name))
        self.scheduler = name

    def loop_backing_file(self, dev):
        return self.backing.get(dev)

    def loops_of(self, f):
        return [d for d in self.loops if self.backing.get(d) == f]

    def detach_loop(self, dev):
        self.calls.append(("detach", dev))

    def remove_file(self, path):
        self.calls.append(("rm", path))
        Path(path).unlink(missing_ok=True)


def test_cleanup_after_a_dead_probe_undoes_everything_in_order(tmp_path):
    img = tmp_path / "fsadvisor-scratch-s.img"
    img.write_bytes(b"")
    state = full_state()
    state.scratch = {"backing_file": str(img), "loop_device": "/dev/loop5"}
    sf = StateFile(tmp_path / "x.probe-state.json")
    sf.save(state)
    host = FakeHost(
        alive={4300},
        mounted={"/tmp/fsadvisor-mnt-a"},
        scheduler="mq-deadline",
        backing={"/dev/loop5": str(img) + " (deleted)"},
    )
    report = cleanup_stale(sf, host, me=1)
    assert isinstance(report, CleanupReport) and report.cleaned
    assert report.owner_pid == 4242 and report.matrix_id == "m1"
    assert report.interrupted_cell == "xfs ... | rep 2"
    assert host.calls == [
        ("stop", 4300),
        ("umount", "/tmp/fsadvisor-mnt-a"),
        ("rmdir", "/tmp/fsadvisor-mnt-a"),
        ("scheduler", "/dev/loop5", "bfq"),
        ("detach", "/dev/loop5"),
        ("rm", str(img)),
    ]
    assert len(report.actions) == 5 and all("\n" not in a for a in report.actions)
    after = sf.load()
    assert not after.has_live_resources
    assert after.matrices == state.matrices  # --resume still finds its matrix
    assert cleanup_stale(sf, host, me=1).actions == []  # nothing left: a no-op


def test_cleanup_leaves_a_live_probe_alone(tmp_path):
    sf = StateFile(tmp_path / "x.probe-state.json")
    sf.save(full_state())
    host = FakeHost(alive={4242}, mounted={"/tmp/fsadvisor-mnt-a"})
    report = cleanup_stale(sf, host, me=1)
    assert not report.cleaned and host.calls == []
    assert sf.load().to_dict() == full_state().to_dict()


def test_cleanup_does_not_touch_a_loop_device_that_now_serves_someone_else(tmp_path):
    state = full_state()
    host = FakeHost(scheduler="mq-deadline", backing={"/dev/loop5": "/other/user.img"})
    actions = undo(state, host)
    assert ("detach", "/dev/loop5") not in host.calls
    assert not any(c[0] == "scheduler" for c in host.calls)
    assert not any("scheduler" in a for a in actions)


def test_cleanup_finds_a_loop_device_attached_before_its_name_was_saved(tmp_path):
    img = tmp_path / "fsadvisor-scratch-s.img"
    img.write_bytes(b"")
    state = ProbeState(
        owner=ProcessRef(4242, 1), scratch={"backing_file": str(img), "loop_device": None}
    )
    host = FakeHost(backing={"/dev/loop6": str(img)}, loops=["/dev/loop6"])
    undo(state, host)
    assert ("detach", "/dev/loop6") in host.calls and ("rm", str(img)) in host.calls


def test_cleanup_restores_the_scheduler_only_when_it_changed():
    state = ProbeState(owner=ProcessRef(1, 1), device="/dev/sdz", original_scheduler="none")
    host = FakeHost(scheduler="none")
    assert undo(state, host) == [] and host.calls == []


# ---------------------------------------------------------------- measurement arithmetic


def test_write_amplification_and_device_bytes():
    before = {
        "read_sectors": 10,
        "write_sectors": 100,
        "read_ios": 1,
        "write_ios": 2,
        "flush_ios": 0,
        "in_flight": 3,
    }
    after = {
        "read_sectors": 10,
        "write_sectors": 100 + 24,
        "read_ios": 1,
        "write_ios": 5,
        "flush_ios": 2,
        "in_flight": 0,
    }
    delta = measure.block_delta(before, after)
    assert "in_flight" not in delta
    m = measure.device_metrics(delta, {"app_write_bytes": 4096})
    assert m["dev_write_bytes"] == 24 * 512 and m["write_amplification"] == 3.0
    assert m["dev_flush_ios"] == 2
    assert "write_amplification" not in measure.device_metrics(delta, {})


def test_a_counter_that_went_backwards_is_dropped():
    assert measure.block_delta({"write_sectors": 50}, {"write_sectors": 10}) == {}


@pytest.mark.parametrize(
    "direct, app, dev, flagged",
    [
        (True, 100e6, 100e6, False),
        (True, 100e6, 49e6, True),  # data=journal: page cache answered (domain notes §5)
        (False, 100e6, 0.0, False),  # buffered: caching is allowed
        (True, None, 0.0, False),  # no reads at all
    ],
)
def test_direct_io_not_honoured(direct, app, dev, flagged):
    assert measure.direct_io_not_honoured(direct, app, dev) is flagged


def test_cpu_busy_from_proc_stat():
    a = measure.CpuTimes.parse("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n")
    b = measure.CpuTimes.parse("cpu  200 0 200 800 100 0 0 0 0 0\n")
    assert measure.cpu_busy_pct(a, b) == pytest.approx(200 / 300 * 100)
    assert measure.cpu_busy_pct(b, b) is None


@given(
    st.text(max_size=300)
    | st.lists(st.integers(0, 1 << 40), max_size=12).map(lambda xs: "cpu " + " ".join(map(str, xs)))
)
def test_proc_stat_parser_accepts_only_an_aggregate_cpu_line(text):
    first = next((ln.split()[1:] for ln in text.splitlines() if ln.split()[:1] == ["cpu"]), None)
    try:
        t = measure.CpuTimes.parse(text)
    except ValueError:
        assert (
            first is None or len(first) < 4 or not all(v.isascii() and v.isdigit() for v in first)
        )
        return
    assert t.total == sum(int(v) for v in first[:8])


def test_host_info_names_what_the_store_keys_on():
    h = measure.host_info("fio-3.33")
    assert h["fio_version"] == "fio-3.33" and h["kernel"] == os.uname().release
    assert h["hostname"] and isinstance(h["cores"], int)


# ---------------------------------------------------------------- interruptions


def test_first_signal_interrupts_later_ones_wait_for_cleanup():
    g = Interruptions()
    with pytest.raises(ProbeInterrupted) as e:
        g._handler(signal.SIGTERM, None)
    assert e.value.signame == "SIGTERM"
    g._handler(signal.SIGINT, None)  # during cleanup: remembered, not raised
    assert g.received == "SIGTERM"


def test_signal_inside_a_critical_section_is_raised_after_it():
    g = Interruptions()
    stored = []
    with pytest.raises(ProbeInterrupted):
        with g.critical():
            g._handler(signal.SIGINT, None)
            stored.append("run record")  # finishes despite the signal
    assert stored == ["run record"]


def test_cancel_from_another_thread_stops_at_the_next_check():
    g = Interruptions()
    g.check()
    g.cancel("cancelled by the TUI")
    with pytest.raises(ProbeInterrupted, match="TUI"):
        g.check()


# ---------------------------------------------------------------- executor


def test_executor_stops_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "bg.pid"
    seen = []
    ex = Executor(on_child=seen.append, stop_grace_s=0.5)
    # A child that forks a grandchild, like fio's job processes.
    script = f"sleep 60 & echo $! > {pidfile}; wait"
    with pytest.raises(CommandFailed, match="timed out"):
        ex.run(["sh", "-c", script], timeout_s=1.0)
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _running(grandchild):
        time.sleep(0.05)
    assert not _running(grandchild)
    assert seen[0] is not None and seen[-1] is None


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan may wait a while for the container's init)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_executor_reports_the_last_stderr_line():
    with pytest.raises(CommandFailed) as e:
        Executor().run(
            [
                sys.executable,
                "-c",
                "import sys; print('usage: x', file=sys.stderr);"
                " print('bad option -Q', file=sys.stderr); sys.exit(3)",
            ]
        )
    assert str(e.value).endswith("exited 3: bad option -Q")
    r = Executor().run(["true"])
    assert r.ok and r.returncode == 0


def test_executor_missing_program_is_a_one_line_error():
    with pytest.raises(CommandFailed, match="cannot run no-such-tool-xyz"):
        Executor().run(["no-such-tool-xyz"])


class FakeExecutor:
    """Runs nothing; fails the command whose program is ``fail``."""

    def __init__(self, fail: str):
        self.fail, self.ran = fail, []

    def run(self, argv, **kw):
        from fsadvisor.probe.commands import CommandResult

        self.ran.append(tuple(argv))
        r = CommandResult(
            tuple(argv),
            32 if argv[0] == self.fail else 0,
            "",
            f"{argv[0]}: wrong fs type, bad option" if argv[0] == self.fail else "",
            0.0,
        )
        if not r.ok and kw.get("check", True):
            raise CommandFailed(r.one_line_error(), r)
        return r


def test_a_failing_mount_fails_the_cell_and_stops_its_steps():
    p = plan(filesystems=["ext4"], schedulers=["kyber"], quick=True)
    cell = next(c for c in p.cells() if c.config)
    r = runner_for(p)
    r.executor = FakeExecutor("mount")
    scheduler_calls = []
    r.set_scheduler = lambda dev, name: scheduler_calls.append(name)
    rec = r.run(cell)
    assert rec.status == "failed"
    assert rec.error == "mount: mount exited 32: mount: wrong fs type, bad option"
    assert [a[0] for a in r.executor.ran] == ["blkdiscard", "mkfs.ext4", "mount"]
    assert scheduler_calls == [] and not r.mounted and r.fatal is None
    # nothing measured; only where its time went, step by step, up to the failing mount
    assert set(rec.metrics) == {"step_seconds"} and rec.energy is None
    assert list(rec.metrics["step_seconds"]) == ["discard", "mkfs", "mount"]
    assert "loop-device" not in rec.flags  # the fake device is not a loop device


def test_a_device_that_cannot_discard_is_flagged_not_failed():
    p = plan(filesystems=["ext4"], schedulers=["none"], quick=True)
    cell = next(c for c in p.cells() if c.config)
    r = runner_for(p)
    r.executor = FakeExecutor("blkdiscard")
    flags: list[str] = []
    r._do(r.steps(cell)[0], flags)
    assert flags == ["no-discard"]


def test_what_cannot_be_undone_stays_in_the_state_for_the_next_run(tmp_path):
    sf = StateFile(tmp_path / "x.probe-state.json")
    sf.save(full_state())

    class StuckMount(FakeHost):
        def umount(self, mnt):
            self.calls.append(("umount", mnt))
            return "target is busy"

    host = StuckMount(mounted={"/tmp/fsadvisor-mnt-a"}, scheduler="bfq")
    report = cleanup_stale(sf, host, me=1)
    assert "could not unmount /tmp/fsadvisor-mnt-a: target is busy" in report.actions
    assert "still left: /tmp/fsadvisor-mnt-a is still mounted" in report.actions
    kept = sf.load()
    assert kept.mounts == full_state().mounts and kept.owner.pid == -1
    # the next attempt, once the mount is gone, finishes the job
    host2 = FakeHost(scheduler="bfq")
    assert cleanup_stale(sf, host2, me=1).cleaned
    assert not sf.load().has_live_resources


def test_a_many_file_profile_fits_the_data_set_budget_across_its_jobs():
    from fsadvisor.domain import Profile, Workload

    prof = Profile(
        "pg",
        "",
        Workload(
            rw="randrw",
            rwmixread=70,
            bs_bytes=8192,
            numjobs=16,
            nrfiles=64,
            file_size_bytes=GIB,
            working_set_bytes=64 * GIB,
            ioengine="psync",
            direct=False,
        ),
    )
    p = plan(
        filesystems=["ext4"],
        schedulers=["none"],
        profile=prof,
        micro=False,
        reps=1,
        size_bytes=128 << 20,
    )
    cell = next(c for c in p.cells() if c.config)
    argv = measure_argv(bench_job(p, cell, "/mnt", "/dev/loop9"))
    opt = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in argv if "=" in a}
    files_total = int(opt["--numjobs"]) * int(opt["--nrfiles"]) * int(opt["--filesize"])
    assert files_total <= 128 << 20
    assert int(opt["--numjobs"]) * int(opt["--size"]) <= 128 << 20
    assert opt["--ioengine"] == "psync"  # the profile's own engine is kept


def test_cleanup_stops_a_benchmark_started_just_before_the_kill(tmp_path):
    """The child was started but its pid never reached the state file: it is found by the
    mount point in its arguments, stopped, and only then is the filesystem unmounted."""
    state = full_state()
    state.child = None
    host = FakeHost(
        alive={777, 888},
        mounted={"/tmp/fsadvisor-mnt-a"},
        benchmarks={777: ["/tmp/fsadvisor-mnt-a"], 888: ["/somewhere/else"]},
        backing={"/dev/loop5": "/tmp/fsadvisor-scratch-s.img"},
    )
    undo(state, host)
    assert host.calls[:2] == [("stop", 777), ("umount", "/tmp/fsadvisor-mnt-a")]
    assert ("stop", 888) not in host.calls


def test_benchmarks_are_found_by_their_arguments_or_working_directory(tmp_path):
    """The real /proc scan: programs named like our benchmarks that mention our path (or
    work inside it) are found; anything else is not."""
    from fsadvisor.probe.state import SystemOps

    target = tmp_path / "fsadvisor-mnt-zz"
    target.mkdir()
    (target / "x").write_text("")
    by_arg = subprocess.Popen(["bash", "-c", f"exec -a fio tail -f {target}/x"])
    by_cwd = subprocess.Popen(["bash", "-c", "exec -a sysbench sleep 30"], cwd=target)
    other = subprocess.Popen(["tail", "-f", f"{target}/x"])  # mentions it, is no benchmark
    try:
        time.sleep(0.3)
        found = {r.pid for r in SystemOps().benchmarks_using([str(target)])}
        assert {by_arg.pid, by_cwd.pid} <= found and other.pid not in found
        assert SystemOps().benchmarks_using([str(tmp_path / "other")]) == []
    finally:
        for p in (by_arg, by_cwd, other):
            p.kill()
            p.wait()
