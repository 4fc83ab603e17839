"""Two devices that look empty to the kernel's partition list and to O_EXCL but hold
someone's data: a disk with a partition table the kernel never scanned (a loop
device attached without --partscan), and a disk that is the backing file of another loop
device. Both are refused whatever the flags, by the library, the probe command and the
check a probe repeats before every cell. Real loop devices, at most two at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsadvisor.host import device as devmod

pytestmark = pytest.mark.device

QUICK = ["--fs", "ext4", "--schedulers", "none", "--quick", "--runtime", "1", "--cooldown", "0"]


def probe_cli(*args: str, db: Path):
    env = dict(os.environ, FSADVISOR_DB=str(db))
    return subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", "probe", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def one_line(p) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


def blkid(dev: str) -> dict[str, str]:
    out = subprocess.run(
        ["blkid", "-p", "-o", "export", dev], capture_output=True, text=True
    ).stdout
    return devmod.parse_blkid_export(out)


def gpt(dev: str) -> None:
    subprocess.run(
        ["sfdisk", "-q", "--no-reread", dev],
        input="label: gpt\n,32M,L\n",
        text=True,
        capture_output=True,
        timeout=60,
    )
    assert blkid(dev).get("PTTYPE") == "gpt"


def test_a_partition_table_the_kernel_never_scanned_is_refused_even_with_force(
    loop_device, tmp_path
):
    dev = loop_device(320 << 20)
    gpt(dev)
    assert not list(Path(f"/sys/block/{os.path.basename(dev)}").glob("*/partition"))  # no partscan
    for force in (False, True):
        v = devmod.safety_verdict(dev, force=force)
        assert not v.ok and not v.needs_force, v
        assert v.reason == (
            f"{dev} has a partition table (PMBR, gpt); --force does not override "
            f"it: clear it deliberately (wipefs -a {dev}) if that is what you want"
        )
    for extra in ([], ["--force"], ["--dry-run"], ["--dry-run", "--force"]):
        line = one_line(probe_cli(dev, *QUICK, "--yes-wipe", dev, *extra, db=tmp_path / "p.db"))
        assert "partition table" in line and f"wipefs -a {dev}" in line, line
    assert blkid(dev).get("PTTYPE") == "gpt"  # the partitions are still there
    # Cleared deliberately, the device is an ordinary empty one again.
    subprocess.run(["wipefs", "-q", "-a", dev], check=True, capture_output=True)
    assert devmod.safety_verdict(dev).ok


def test_a_partition_table_written_between_cells_stops_the_probe(loop_device):
    dev = loop_device(320 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
    assert devmod.in_use_reason(dev) is None  # the probe's own filesystem is expected
    subprocess.run(["wipefs", "-q", "-a", dev], check=True, capture_output=True)
    gpt(dev)
    assert "has a partition table (PMBR, gpt)" in devmod.in_use_reason(dev)


@pytest.fixture
def backed(loop_device, tmp_path):
    """A (a loop device) and a way to attach loop device B on top of it; B is detached after."""
    a = loop_device(320 << 20)
    attached: list[str] = []

    def attach(path: str) -> str:
        b = subprocess.run(
            ["losetup", "-f", "--show", path],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
        attached.append(b)
        return b

    try:
        yield a, attach
    finally:
        for b in attached:
            subprocess.run(["losetup", "-d", b], capture_output=True, timeout=60)


def test_a_device_that_backs_a_loop_device_is_refused(backed, tmp_path):
    a, attach = backed
    assert devmod.in_use_reason(a) is None
    b = attach(a)
    with open(b, "r+b") as f:
        f.write(b"B's data" * 512)
    assert os.open(a, os.O_RDONLY | os.O_EXCL) >= 0  # the kernel's guard does not see it
    for force in (False, True):
        v = devmod.safety_verdict(a, force=force)
        assert not v.ok and v.reason == (
            f"{a} is the backing file of {b}; detach it "
            f"(losetup -d {b}) if it is not in use; never probed"
        ), v
    for extra in ([], ["--force"], ["--dry-run"]):
        line = one_line(probe_cli(a, *QUICK, "--yes-wipe", a, *extra, db=tmp_path / "p.db"))
        assert f"backing file of {b}" in line, line
    with open(b, "rb") as f:
        assert f.read(8) == b"B's data"


def test_a_loop_attached_through_a_symlink_after_the_probe_started_is_caught(backed, tmp_path):
    a, attach = backed
    link = tmp_path / "by-id" / "nvme-Spare"
    link.parent.mkdir()
    link.symlink_to(a)
    assert devmod.in_use_reason(a) is None  # what the probe found when it started
    b = attach(str(link))
    # The per-cell re-check (MatrixRun's default device_check) now refuses it.
    reason = devmod.in_use_reason(a)
    assert reason and f"backing file of {b}" in reason, reason


def test_a_probe_stops_when_a_loop_device_is_stacked_on_its_device_mid_matrix(tmp_path):
    """End to end: a real scratch probe of two cells; after the first, someone attaches a
    loop device on top of the probe's device. The check before the second cell stops the
    matrix (resumable), the first cell stays stored, and nothing is formatted again."""
    from fsadvisor.probe.run import DeviceTaken
    from fsadvisor.service import probing

    if os.geteuid() != 0:
        pytest.skip("needs root")
    plan = probing.plan_probe(
        probing.ProbeRequest.make(
            scratch="512M",
            scratch_dir=tmp_path,
            filesystems=["ext4"],
            schedulers=["none"],
            quick=True,
            baseline=False,
            workloads=["4k-randread-qd32", "4k-randwrite-qd32"],
            runtime_s=1,
            cooldown_s=0,
            energy="estimate",
            db=tmp_path / "p.db",
        )
    )
    assert len(plan.cells()) == 2
    stacked: list[str] = []

    def on_progress(e):
        if e.kind == "cell-end" and not stacked:
            loop = json.loads(Path(f"{tmp_path / 'p.db'}.probe-state.json").read_text())["device"]
            stacked.append(
                subprocess.run(
                    ["losetup", "-f", "--show", loop], check=True, capture_output=True, text=True
                ).stdout.strip()
            )

    try:
        with pytest.raises(DeviceTaken) as err:
            probing.run_probe(plan, on_progress=on_progress)
        msg = str(err.value)
        assert f"backing file of {stacked[0]}" in msg and "--resume continues" in msg, msg
        assert "1 cell done so far is stored" in msg
    finally:
        for b in stacked:
            subprocess.run(["losetup", "-d", b], capture_output=True, timeout=60)
