"""Kill and resume: SIGINT at a random moment of a running probe, SIGKILL at another, then
``probe --resume`` finishes the matrix.

After each blow: no mount from the scratch device remains once a probe has finished its
cleanup (the interrupted one itself, or the next invocation after a SIGKILL), no loop device
over a test backing file is left attached, no completed cell is lost or run twice, and the
interrupted cell is never stored as a result. The random moments come from a seed that is
printed (set FSADVISOR_TEST_SEED to replay one).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from fsadvisor.store import open_store

pytestmark = pytest.mark.device

CELLS = 2 * 2 * 2  # ext4, xfs x two workloads x 2 reps
# A cell with a 1 s run never takes less than this (fio's run plus mkfs/mount/fill; measured
# 1.7-4 s here): random moments drawn below it always fall inside the matrix.
CELL_MIN_S = 1.5
ARGS = [
    "--fs",
    "ext4,xfs",
    "--schedulers",
    "none",
    "--workloads",
    "4k-randread-qd32,4k-randwrite-qd32",
    "--reps",
    "2",
    "--runtime",
    "1",
    "--cooldown",
    "0",
    "--no-baseline",
    "--no-variants",
]


def start(tmp: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, FSADVISOR_DB=str(tmp / "probe.db"))
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fsadvisor.cli",
            "probe",
            "--scratch",
            "512M",
            "--scratch-dir",
            str(tmp / "scratch"),
            *ARGS,
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def state(tmp: Path) -> dict:
    p = tmp / "probe.db.probe-state.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return {}


def wait_for_matrix(tmp: Path, proc: subprocess.Popen, timeout: float = 60) -> dict:
    """Until the probe has attached its device and started (or resumed) its matrix."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = state(tmp)
        if (s.get("owner") or {}).get("pid") == proc.pid and s.get("matrix_id"):
            return s
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("probe did not start its matrix in time")


def our_loops(tmp: Path) -> list[str]:
    out = subprocess.run(
        ["losetup", "-a", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True
    ).stdout
    return [ln.split()[0] for ln in out.splitlines() if str(tmp) in ln]


def our_mounts(tmp: Path, mountpoints: set[str]) -> list[str]:
    """Mounts whose source is one of our loop devices or whose target we saw in a state file."""
    loops = set(our_loops(tmp))
    out = []
    for ln in Path("/proc/self/mounts").read_text().splitlines():
        src, mnt = ln.split()[:2]
        if src in loops or mnt in mountpoints:
            out.append(ln)
    return out


def ok_runs(tmp: Path) -> dict[tuple[str, int], list[int]]:
    if not (tmp / "probe.db").exists():
        return {}
    with open_store(tmp / "probe.db") as store:
        runs = store.runs()
    out: dict[tuple[str, int], list[int]] = {}
    for r in runs:
        if r["status"] == "ok":
            out.setdefault((r["cell_key"], r["rep"]), []).append(r["run_id"])
            # a stored result is a whole run, never the part before an interruption
            assert 0.9 <= r["runtime_s"] <= 3 and r["iops"] > 0, r
    return out


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_sigint_then_sigkill_then_resume(tmp_path):
    seed = int(os.environ.get("FSADVISOR_TEST_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    print(f"kill-and-resume seed {seed} (FSADVISOR_TEST_SEED={seed} replays it)")
    (tmp_path / "scratch").mkdir()
    loops_before = our_loops(tmp_path)
    assert loops_before == []
    mnt_dirs_before = set(Path(tempfile.gettempdir()).glob("fsadvisor-mnt-*"))
    matrix_s = CELLS * CELL_MIN_S
    seen_mounts: set[str] = set()

    # 1. SIGINT somewhere in the first 60% of the matrix: the probe cleans up after itself.
    p1 = start(tmp_path)
    s1 = wait_for_matrix(tmp_path, p1)
    t_int = rng.uniform(0.0, 0.6 * matrix_s)
    time.sleep(t_int)
    seen_mounts.update(m["mountpoint"] for m in state(tmp_path).get("mounts", []))
    p1.send_signal(signal.SIGINT)
    out1, err1 = p1.communicate(timeout=120)
    ctx = f"seed {seed}, SIGINT at {t_int:.2f} s\n{err1[-2000:]}"
    assert p1.returncode == 130, ctx
    assert "interrupted by SIGINT" in out1, ctx
    assert our_loops(tmp_path) == [], ctx
    assert our_mounts(tmp_path, seen_mounts) == [], ctx
    assert list((tmp_path / "scratch").iterdir()) == [], ctx  # backing file deleted
    after1 = state(tmp_path)
    assert not after1.get("owner") and not after1.get("mounts") and not after1.get("scratch")
    assert after1["matrices"]["scratch"]["matrix_id"] == s1["matrix_id"]
    done1 = ok_runs(tmp_path)
    with open_store(tmp_path / "probe.db") as store:
        incomplete = [r for r in store.runs() if r["status"] == "incomplete"]
    assert len(incomplete) <= 1, ctx
    for r in incomplete:
        assert (r["cell_key"], r["rep"]) not in done1 and "SIGINT" in r["error"]

    # 2. --resume, then SIGKILL at another moment: nothing can clean up in-process.
    p2 = start(tmp_path, "--resume")
    s2 = wait_for_matrix(tmp_path, p2)
    assert s2["matrix_id"] == s1["matrix_id"]
    remaining_s = (CELLS - len(done1)) * CELL_MIN_S
    t_kill = rng.uniform(0.0, 0.6 * remaining_s)
    time.sleep(t_kill)
    p2.kill()
    p2.communicate(timeout=60)
    left = state(tmp_path)
    seen_mounts.update(m["mountpoint"] for m in left.get("mounts", []))
    ctx = f"seed {seed}, SIGINT at {t_int:.2f} s, SIGKILL at {t_kill:.2f} s; state {left}"
    assert left.get("owner", {}).get("pid") == p2.pid, ctx  # the dead probe's leftovers
    done2 = ok_runs(tmp_path)
    for key, ids in done1.items():
        assert done2[key] == ids, ctx  # nothing completed before was lost or redone

    # 3. Any probe invocation cleans up after the dead one and says so; --resume finishes.
    env = dict(os.environ, FSADVISOR_DB=str(tmp_path / "probe.db"))
    p3 = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsadvisor.cli",
            "probe",
            "--scratch",
            "512M",
            "--scratch-dir",
            str(tmp_path / "scratch"),
            *ARGS,
            "--resume",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    ctx += f"\n{p3.stderr[-3000:]}"
    assert p3.returncode == 0, ctx
    assert f"earlier probe (pid {p2.pid}) did not finish; cleaned up after it" in p3.stderr, ctx
    if left.get("scratch", {}).get("loop_device"):
        assert f"detached scratch loop device {left['scratch']['loop_device']}" in p3.stderr, ctx
    summary = json.loads(p3.stdout)
    assert summary["matrix_id"] == s1["matrix_id"]
    assert summary["cells"]["already_done"] == len(done2), ctx
    assert summary["cells"]["ok"] + len(done2) == CELLS, ctx
    assert summary["cells"]["failed"] == summary["cells"]["incomplete"] == 0, ctx

    final = ok_runs(tmp_path)
    assert len(final) == CELLS and all(len(ids) == 1 for ids in final.values()), ctx
    for key, ids in done2.items():
        assert final[key] == ids, ctx
    with open_store(tmp_path / "probe.db") as store:
        assert store.matrix(s1["matrix_id"])["status"] == "done"
    assert our_loops(tmp_path) == loops_before == [], ctx
    assert our_mounts(tmp_path, seen_mounts) == [], ctx
    assert not any(Path(m).exists() for m in seen_mounts), ctx  # mount points removed
    # ... including any this test never saw in a state file (a benchmark that outlived a
    # kill once wrote its fill into a bare mount point directory)
    assert set(Path(tempfile.gettempdir()).glob("fsadvisor-mnt-*")) <= mnt_dirs_before, ctx
    assert list((tmp_path / "scratch").iterdir()) == [], ctx
    assert not (tmp_path / "probe.db.probe-state.json").exists(), ctx
    child = (left.get("child") or {}).get("pid")
    if child:
        assert (
            not Path(f"/proc/{child}").exists()
            or Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
        ), ctx


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_sigterm_on_a_real_device_then_resume_without_force(loop_device, tmp_path):
    """A user's device (not --scratch): after SIGTERM the scheduler is back, nothing is
    mounted, the device holds no signature of ours, and --resume needs no --force."""
    from fsadvisor.host import device as devmod

    dev = loop_device(512 << 20)
    devmod.set_scheduler(dev, "kyber")
    env = dict(os.environ, FSADVISOR_DB=str(tmp_path / "probe.db"))
    args = [
        sys.executable,
        "-m",
        "fsadvisor.cli",
        "probe",
        dev,
        "--yes-wipe",
        dev,
        "--fs",
        "ext4",
        "--schedulers",
        "mq-deadline",
        "--workloads",
        "4k-randread-qd32,4k-randwrite-qd32",
        "--reps",
        "2",
        "--runtime",
        "1",
        "--cooldown",
        "0",
        "--no-baseline",
        "--no-variants",
    ]
    p1 = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    wait_for_matrix(tmp_path, p1)  # the store exists (and is migrated) before we read it
    deadline = time.monotonic() + 60
    while not ok_runs(tmp_path) and time.monotonic() < deadline:
        assert p1.poll() is None, p1.communicate()
        time.sleep(0.1)
    p1.send_signal(signal.SIGTERM)  # the scratch test above covers SIGINT
    out, err = p1.communicate(timeout=120)
    assert p1.returncode == 143 and "interrupted by SIGTERM" in out, err
    assert devmod.read_scheduler(dev)[0] == "kyber"
    assert not [
        ln for ln in Path("/proc/self/mounts").read_text().splitlines() if ln.split()[0] == dev
    ]
    blkid = subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True)
    assert "TYPE=" not in blkid.stdout, (blkid.stdout, err)
    done = ok_runs(tmp_path)
    p2 = subprocess.run(
        args + ["--resume", "--json"], capture_output=True, text=True, env=env, timeout=300
    )
    assert p2.returncode == 0, p2.stderr
    s = json.loads(p2.stdout)
    assert s["cells"]["already_done"] == len(done) and s["cells"]["ok"] + len(done) == 4
    assert devmod.read_scheduler(dev)[0] == "kyber"


def wait_for_own_signature(
    tmp: Path, proc: subprocess.Popen, dev: str, timeout: float = 60
) -> dict:
    """Until the probe has formatted ``dev`` and recorded the signature its mkfs made."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = state(tmp)
        rec = ((s.get("matrices") or {}).get(dev) or {}).get("own_signature")
        if (s.get("owner") or {}).get("pid") == proc.pid and rec:
            return rec
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError("probe did not record its mkfs in time")


def blkid_of(dev: str) -> dict[str, str]:
    out = subprocess.run(
        ["blkid", "-p", "-o", "export", dev], capture_output=True, text=True
    ).stdout
    return dict(ln.split("=", 1) for ln in out.splitlines() if "=" in ln)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_sigkill_on_a_real_device_resume_needs_no_force_unless_the_signature_is_foreign(
    loop_device, tmp_path
):
    """After a SIGKILL nobody wipes the probe's own filesystem (the later cleanup never
    wipes): --resume recognises it (recorded TYPE+UUID) and proceeds without --force. A
    signature the probe did not make (mkfs.ext4 by this test) is still refused."""
    from fsadvisor.service import probing

    dev = loop_device(512 << 20)
    env = dict(os.environ, FSADVISOR_DB=str(tmp_path / "probe.db"))
    args = [
        sys.executable,
        "-m",
        "fsadvisor.cli",
        "probe",
        dev,
        "--yes-wipe",
        dev,
        "--fs",
        "ext4",
        "--schedulers",
        "none",
        "--workloads",
        "4k-randwrite-qd32",
        "--reps",
        "1",
        "--runtime",
        "1",
        "--cooldown",
        "0",
        "--size",
        "16M",
        "--no-baseline",
        "--no-variants",
    ]

    # 1. killed after its mkfs: its ext4 stays on the device, exactly as recorded
    p1 = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    rec = wait_for_own_signature(tmp_path, p1, dev)
    p1.kill()
    p1.communicate(timeout=60)
    on_disk = blkid_of(dev)
    assert rec["identity"]["TYPE"] == on_disk["TYPE"] == "ext4"
    assert rec["identity"]["UUID"] == on_disk["UUID"]

    # 2. --resume without --force proceeds (after cleaning up) and finishes the matrix
    p2 = subprocess.run(
        args + ["--resume", "--json"], capture_output=True, text=True, env=env, timeout=300
    )
    assert p2.returncode == 0, p2.stderr
    assert f"earlier probe (pid {p1.pid}) did not finish; cleaned up after it" in p2.stderr
    assert (
        f"the ext4 signature on {dev} (UUID {on_disk['UUID']}) is the one this probe made "
        "before it stopped; formatting it needs no --force"
    ) in p2.stderr, p2.stderr
    s = json.loads(p2.stdout)
    assert s["cells"]["ok"] == s["cells"]["total"] == 1 and s["interrupted"] is None
    assert "TYPE" not in blkid_of(dev)  # finished in-process: its last signature wiped
    assert not (tmp_path / "probe.db.probe-state.json").exists()

    # 3. killed again after its mkfs, then someone else formats the device: refused
    p3 = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    rec3 = wait_for_own_signature(tmp_path, p3, dev)
    p3.kill()
    p3.communicate(timeout=60)
    report = probing.cleanup_stale_state(tmp_path / "probe.db")  # unmounts it for mkfs below
    assert report.cleaned
    # a new probe of the device (not only --resume) recognises it too; shown by a dry run
    dry = subprocess.run(args + ["--dry-run"], capture_output=True, text=True, env=env, timeout=120)
    assert dry.returncode == 0, dry.stderr
    # the note, folded over comment lines after the header
    comments = " ".join(
        ln.removeprefix("# ") for ln in dry.stdout.splitlines() if ln.startswith("# ")
    )
    assert (
        f"the ext4 signature on {dev} (UUID {rec3['identity']['UUID']}) is the one an "
        "unfinished probe made; formatting it needs no --force"
    ) in comments
    mk = subprocess.run(["mkfs.ext4", "-q", "-F", dev], capture_output=True, text=True)
    assert mk.returncode == 0, mk.stderr
    foreign = blkid_of(dev)
    assert foreign["TYPE"] == "ext4" and foreign["UUID"] != rec3["identity"]["UUID"]
    p4 = subprocess.run(args + ["--resume"], capture_output=True, text=True, env=env, timeout=120)
    lines = [ln for ln in p4.stderr.splitlines() if ln.strip()]
    assert p4.returncode == 2 and len(lines) == 1, p4.stderr
    assert (
        f"{dev} holds data: ext4 signature found, not the one this probe made "
        f"(ext4 UUID {rec3['identity']['UUID']}); pass --force to destroy it"
    ) in lines[0]
    assert blkid_of(dev)["UUID"] == foreign["UUID"]  # untouched
    with open_store(tmp_path / "probe.db") as store:
        assert [r["status"] for r in store.runs()] == ["ok"]  # only the finished matrix's cell


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_the_check_between_cells_sees_mounts_swap_and_exclusive_opens(loop_device, tmp_path):
    """The real per-cell check (MatrixRun's default): the probe's own unmounted filesystem
    is expected there; a mount, active swap or an exclusive opener is someone else's."""
    from fsadvisor.host import device as devmod

    dev = loop_device(64 << 20)
    assert devmod.in_use_reason(dev) is None
    subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
    assert devmod.in_use_reason(dev) is None  # a signature alone: between cells it is ours
    mnt = tmp_path / "theirs"
    mnt.mkdir()
    subprocess.run(["mount", dev, str(mnt)], check=True, capture_output=True)
    try:
        assert devmod.in_use_reason(dev) == f"{dev} is mounted on {mnt}; unmount it first"
    finally:
        subprocess.run(["umount", str(mnt)], check=True, capture_output=True)
    subprocess.run(["mkswap", dev], check=True, capture_output=True)
    if subprocess.run(["swapon", dev], capture_output=True).returncode == 0:
        try:
            assert devmod.in_use_reason(dev) == f"{dev} is active swap (/proc/swaps); never probed"
        finally:
            subprocess.run(["swapoff", dev], capture_output=True, timeout=60)
    fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
    try:
        assert "is busy (mounted or claimed" in devmod.in_use_reason(dev)
    finally:
        os.close(fd)
    assert devmod.in_use_reason(dev) is None
