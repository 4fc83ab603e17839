"""A real probe from the TUI, driven with Textual's Pilot on a scratch loop device: the
device list, the confirmation, live progress, the stored runs and the ranking it updates;
and Cancel in the middle of a cell, which must leave what Ctrl-C in the CLI leaves: nothing
mounted, the scratch loop device detached and its file deleted, the cut cell stored as
incomplete (never as a result) and the matrix resumable.

Small on purpose (a 512M scratch device, ext4 only, scheduler none, no raw baseline, 1 s
runs or one long one for the cancel): each test takes well under a minute here."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from fsadvisor.store import open_store

pytestmark = [
    pytest.mark.device,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (loop devices, mkfs)"),
]

textual = pytest.importorskip("textual")

from textual.widgets import Button, Checkbox, DataTable, Input, Sparkline, Static  # noqa: E402

from _pilot import laid_out  # noqa: E402
from fsadvisor.tui.app import FsAdvisorApp  # noqa: E402
from fsadvisor.tui.panes.probe import ProbePane  # noqa: E402
from fsadvisor.tui.panes.probe_confirm import ConfirmProbeScreen  # noqa: E402
from fsadvisor.tui.panes.results import ResultsPane  # noqa: E402


def our_loops(tmp: Path) -> list[str]:
    out = subprocess.run(
        ["losetup", "-a", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True, check=True
    ).stdout
    return [ln.split()[0] for ln in out.splitlines() if str(tmp) in ln]


def mounted_from(devices: set[str]) -> list[str]:
    return [
        ln for ln in Path("/proc/self/mounts").read_text().splitlines() if ln.split()[0] in devices
    ]


def narrow(pane: ProbePane, tmp: Path, runtime_s: str) -> None:
    """One filesystem and one workload: 1 cell (the form's fs and runtime fields, and the
    request fields the form does not show)."""
    (tmp / "scratch").mkdir(exist_ok=True)
    pane.query_one("#probe-profile", Checkbox).value = False  # micro workloads only
    pane.query_one("#probe-fs", Input).value = "ext4"
    pane.query_one("#probe-runtime", Input).value = runtime_s
    pane.extra_options = {
        "scratch_dir": str(tmp / "scratch"),
        "schedulers": "none",
        "workloads": "4k-randwrite-qd32",
        "baseline": False,
        "variants": False,
        "cooldown_s": 0.0,
    }


async def settle(pilot, until, timeout_s: float = 90.0, explain=None) -> None:
    """Wait for until(); on timeout, say what the TUI shows (explain()) when given."""
    deadline = time.monotonic() + timeout_s
    while not until():
        if time.monotonic() >= deadline:
            shown = f": {explain()}" if explain is not None else ""
            raise AssertionError(f"timed out waiting for the TUI{shown}")
        await pilot.pause(0.1)


def pane_shows(pane: ProbePane) -> str:
    """The probe pane's status and log, for a failed wait's message."""
    status = str(pane.query_one("#probe-status", Static).content)
    return f"status {status!r}; log {list(pane.query_one('#probe-lines').lines)[-8:]}"


def confirm_ready(app) -> bool:
    """The confirmation is up with its buttons, laid out where a click lands on them: a
    container's children are mounted after the screen itself, and laid out after that, so on
    a busy machine its text can be there before "#confirm-ok" is, and the button before it
    has a place on the screen (a click then lands on whatever is under it)."""
    return isinstance(app.screen, ConfirmProbeScreen) and laid_out(app, "#confirm-ok")


async def click_confirm(pilot) -> None:
    """Press the confirmation's OK as a person would, and fail here, not in a later wait for
    the probe, if the click did not land on it."""
    assert await pilot.click("#confirm-ok"), "the click missed the confirmation's OK button"


async def start_scratch_probe(pilot, tmp: Path, runtime_s: str) -> ProbePane:
    app = pilot.app
    await app.workers.wait_for_complete()
    await pilot.pause()
    app.action_show_tab("probe")
    pane = app.query_one(ProbePane)
    await settle(pilot, lambda: pane.query_one("#probe-devices", DataTable).row_count > 0)
    narrow(pane, tmp, runtime_s)
    pane.query_one("#probe-target", Input).value = "scratch:512M"
    table = pane.query_one("#probe-devices", DataTable)
    table.focus()
    table.move_cursor(row=0)  # the scratch loop device
    await pilot.press("enter")
    assert pane.query_one("#probe-target", Input).value == "scratch:512M"
    await pilot.click("#probe-start")
    await settle(pilot, lambda: confirm_ready(app))
    text = str(app.screen.query_one("#confirm-text", Static).content)
    assert "scratch loop device (512M)" in text and "1 cells" in text
    await click_confirm(pilot)
    await settle(pilot, lambda: pane.running, explain=lambda: pane_shows(pane))
    return pane


@pytest.mark.asyncio
async def test_a_real_probe_from_the_tui_stores_its_runs_and_reranks(tmp_path, monkeypatch):
    db = tmp_path / "probe.db"
    monkeypatch.setenv("FSADVISOR_DB", str(db))
    app = FsAdvisorApp(db=str(db))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await start_scratch_probe(pilot, tmp_path, "1")
        assert pane.query_one("#probe-cancel", Button).disabled is False
        await settle(pilot, lambda: pane.summary is not None)
        await app.workers.wait_for_complete()
        await pilot.pause()
        s = pane.summary
        assert s.interrupted is None and s.count("ok") == 1 and s.total == 1, s.to_dict()
        kinds = [e.kind for e in pane.events]
        assert "cell-start" in kinds and "cell-end" in kinds and kinds[-1] == "done"
        end = next(e for e in pane.events if e.kind == "cell-end")
        assert end.status == "ok" and end.iops and end.iops > 0 and end.device
        assert end.energy_source  # the meter's name; its watts may be None (no meter)
        assert pane.iops_history == [end.iops]  # fio's, per measured cell
        # the sparkline is fed the live block-layer samples (a 1 s run may give none)
        assert pane.query_one("#probe-iops", Sparkline).data == pane.live_iops
        status = str(pane.query_one("#probe-status", Static).content)
        assert f"matrix {s.matrix_id}" in status and "1 ok" in status
        # the ranking was redone with the probed device after the measured cell
        rec = app.query_one(ResultsPane).recommendation
        assert rec is not None and rec.device.path == end.device
        assert pane.query_one("#probe-start", Button).disabled is False
    with open_store(db) as store:
        runs = store.runs(matrix_id=s.matrix_id)
    assert [r["status"] for r in runs] == ["ok"] and runs[0]["iops"] > 0
    assert our_loops(tmp_path) == [] and mounted_from({end.device}) == []
    assert list((tmp_path / "scratch").iterdir()) == []


@pytest.mark.asyncio
async def test_cancel_mid_cell_cleans_up_like_ctrl_c_and_leaves_it_resumable(tmp_path, monkeypatch):
    db = tmp_path / "probe.db"
    monkeypatch.setenv("FSADVISOR_DB", str(db))
    app = FsAdvisorApp(db=str(db))
    async with app.run_test(size=(120, 40)) as pilot:
        # a 60 s run: the cancel lands inside fio's run, and must not wait for its end
        pane = await start_scratch_probe(pilot, tmp_path, "60")
        state_path = Path(f"{db}.probe-state.json")
        await settle(
            pilot,
            lambda: (
                state_path.exists()
                and json.loads(state_path.read_text()).get("child") is not None
                and any(e.kind == "cell-start" for e in pane.events)
            ),
            timeout_s=60,
        )
        device = next(e.device for e in pane.events if e.kind == "cell-start")
        ours_mnt = json.loads(state_path.read_text())["mounts"][0]["mountpoint"]
        # mkfs done, the cell's filesystem mounted: the fill or the measurement runs next
        await settle(pilot, lambda: os.path.ismount(ours_mnt), timeout_s=30)
        assert our_loops(tmp_path) == [device]
        time.sleep(1.0)  # into the measurement
        t0 = time.monotonic()
        await pilot.click("#probe-cancel")
        await settle(pilot, lambda: pane.summary is not None, timeout_s=45)
        cancel_s = time.monotonic() - t0
        await app.workers.wait_for_complete()
        s = pane.summary
        assert s.interrupted == "cancelled from the TUI", s.to_dict()
        assert cancel_s < 30, f"cancel took {cancel_s:.1f} s: it waited for the 60 s run"
        status = str(pane.query_one("#probe-status", Static).content)
        assert "interrupted" in status and "--resume" in status
    # exactly what Ctrl-C leaves (tests/device/test_probe_resume.py checks the CLI's)
    assert our_loops(tmp_path) == []
    assert mounted_from({device}) == []
    assert list((tmp_path / "scratch").iterdir()) == []  # backing file deleted
    # the probe's own mount point (other helpers' probes may mount theirs meanwhile)
    assert ours_mnt and not os.path.ismount(ours_mnt) and not os.path.exists(ours_mnt)
    state = json.loads(state_path.read_text())
    assert not state.get("owner") and not state.get("mounts") and not state.get("scratch")
    assert state["matrices"]["scratch"]["matrix_id"] == s.matrix_id  # --resume continues it
    with open_store(db) as store:
        runs = store.runs(matrix_id=s.matrix_id)
    assert [r["status"] for r in runs] == ["incomplete"]
    assert "cancelled from the TUI" in runs[0]["error"]


async def probe_tab_listing(pilot, dev: str) -> ProbePane:
    """The Probe tab, once its device list shows ``dev``."""
    app = pilot.app
    await app.workers.wait_for_complete()
    app.action_show_tab("probe")
    await pilot.pause()
    pane = app.query_one(ProbePane)
    await settle(pilot, lambda: any(d.path == dev for d in pane.devices))
    return pane


def row_of(app, path: str) -> list[str]:
    table = app.query_one("#probe-devices", DataTable)
    return [str(c) for c in table.get_row(path)]


@pytest.mark.asyncio
async def test_a_labelled_filesystem_is_listed_refused_with_what_it_holds(
    loop_device, tmp_path, monkeypatch
):
    """The real device list: the root disk and a loop device holding an ext4 filesystem are
    refused with the safety verdict's reason; pressing Probe on the latter says it and
    never opens the confirmation."""
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "probe.db"))
    dev = loop_device(256 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "keepme", dev], check=True)
    root_src = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True, text=True
    ).stdout.strip()
    app = FsAdvisorApp(db=str(tmp_path / "probe.db"))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        pane = await probe_tab_listing(pilot, dev)
        ours = next(d for d in pane.devices if d.path == dev)
        assert not ours.allowed and "holds data: ext4 signature found" in ours.reason
        assert ours.label == "keepme" and "ext4 data labelled 'keepme'" in ours.contents
        assert row_of(app, dev)[1] == "256.0 MiB" and "holds data" in row_of(app, dev)[3]
        if root_src.startswith("/dev/") and root_src in {d.path for d in pane.devices}:
            assert not next(d for d in pane.devices if d.path == root_src).allowed
        narrow(pane, tmp_path, "1")  # ext4 only: xfs refuses a device below 300 MiB
        pane.query_one("#probe-target", Input).value = dev
        await pilot.pause()  # laid out: a click on a widget not yet placed hits (0, 0)
        await pilot.click("#probe-start")
        await settle(
            pilot, lambda: "holds data" in str(pane.query_one("#probe-command", Static).content)
        )
        assert not isinstance(app.screen, ConfirmProbeScreen)
        assert pane.cancel_token is None and pane.summary is None
        assert str(pane.query_one("#probe-status", Static).content).startswith(
            f"not started: {dev} holds data: ext4 signature found"
        )
    # untouched: still the user's filesystem
    out = subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True)
    assert "LABEL=keepme" in out.stdout


@pytest.mark.asyncio
async def test_another_users_loop_device_is_listed_refused_and_never_starts(tmp_path, monkeypatch):
    """A blank loop device on a file of uid 65534 (attached here, detached in the finally):
    nothing on it to refuse it by but whose file it is; the list and Probe say the CLI's
    one-line reason and the confirmation never opens."""
    from fsadvisor.host import loopdev

    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "probe.db"))
    monkeypatch.delenv("SUDO_UID", raising=False)
    img = tmp_path / "nobodys.img"
    loopdev.create_backing_file(img, 256 << 20)
    os.chown(img, 65534, 65534)
    dev = loopdev.attach(img, direct_io=False)
    try:
        app = FsAdvisorApp(db=str(tmp_path / "probe.db"))
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            pane = await probe_tab_listing(pilot, dev)
            why = f"{dev} is a loop device on {img}, a file of uid 65534, not yours"
            assert row_of(app, dev)[3].startswith(why)
            narrow(pane, tmp_path, "1")  # ext4 only: xfs refuses a device below 300 MiB
            pane.query_one("#probe-target", Input).value = dev
            await pilot.pause()  # laid out: a click on a widget not yet placed hits (0, 0)
            await pilot.click("#probe-start")
            status = pane.query_one("#probe-status", Static)
            await settle(pilot, lambda: str(status.content).startswith("not started"))
            assert str(status.content).startswith(f"not started: {why}")
            assert "--scratch SIZE" in str(status.content)
            assert not isinstance(app.screen, ConfirmProbeScreen) and pane.cancel_token is None
    finally:
        loopdev.detach(dev)


@pytest.mark.asyncio
async def test_a_blank_loop_device_needs_its_name_typed_then_is_probed(
    loop_device, tmp_path, monkeypatch
):
    """A device of the list (not scratch): the confirmation names it and its size, a wrong
    name is refused with nothing touched, the right one starts a real probe that ends with
    its run stored, nothing mounted, and the device left as empty as it was found."""
    db = tmp_path / "probe.db"
    monkeypatch.setenv("FSADVISOR_DB", str(db))
    dev = loop_device(512 << 20)
    app = FsAdvisorApp(db=str(db))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        pane = await probe_tab_listing(pilot, dev)
        assert row_of(app, dev)[3] == "allowed"
        narrow(pane, tmp_path, "1")
        table = pane.query_one("#probe-devices", DataTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(dev))
        await pilot.press("enter")
        assert pane.query_one("#probe-target", Input).value == dev
        await pilot.click("#probe-start")
        await settle(pilot, lambda: confirm_ready(app))
        text = str(app.screen.query_one("#confirm-text", Static).content)
        assert f"This DESTROYS all data on {dev} (512.0 MiB, loop)" in text
        assert "no filesystem, partition table or RAID signature found" in text
        await pilot.press(*"/dev/loop", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmProbeScreen) and not pane.running
        assert "nothing was touched" in str(app.screen.query_one("#confirm-error", Static).content)
        app.screen.query_one("#confirm-device", Input).value = dev
        await click_confirm(pilot)
        await settle(pilot, lambda: pane.summary is not None)
        await app.workers.wait_for_complete()
        s = pane.summary
        assert s.device == dev and s.count("ok") == 1 and s.interrupted is None, s.to_dict()
    with open_store(db) as store:
        runs = store.runs(matrix_id=s.matrix_id)
    assert [r["status"] for r in runs] == ["ok"]
    assert mounted_from({dev}) == []
    out = subprocess.run(["blkid", "-p", dev], capture_output=True, text=True)
    assert out.returncode == 2, out.stdout  # the probe wiped its own ext4 signature


@pytest.mark.asyncio
async def test_quitting_mid_probe_cancels_it_and_still_cleans_up(tmp_path, monkeypatch):
    """q (or any exit) during a probe: the pane cancels it on unmount and the worker thread
    finishes the cleanup before the process can go on."""
    db = tmp_path / "probe.db"
    monkeypatch.setenv("FSADVISOR_DB", str(db))
    app = FsAdvisorApp(db=str(db))
    state_path = Path(f"{db}.probe-state.json")
    async with app.run_test(size=(120, 40)) as pilot:
        await start_scratch_probe(pilot, tmp_path, "60")
        await settle(
            pilot,
            lambda: state_path.exists() and json.loads(state_path.read_text()).get("mounts"),
            timeout_s=60,
        )
        ours_mnt = json.loads(state_path.read_text())["mounts"][0]["mountpoint"]
        await settle(pilot, lambda: os.path.ismount(ours_mnt), timeout_s=30)
        t0 = time.monotonic()
        await pilot.press("q")
    # the default executor's threads are joined when the test's event loop closes; wait
    # for the state file to say the owner is gone instead of relying on that
    deadline = time.monotonic() + 45
    while json.loads(state_path.read_text()).get("owner") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert time.monotonic() - t0 < 45
    assert our_loops(tmp_path) == [] and not os.path.ismount(ours_mnt)
    state = json.loads(state_path.read_text())
    assert not state.get("owner") and not state.get("mounts") and not state.get("scratch")
    assert state["matrices"]["scratch"]["matrix_id"]
    with open_store(db) as store:
        assert [r["status"] for r in store.runs()] == ["incomplete"]


@pytest.mark.asyncio
async def test_an_adaptive_probe_from_the_tui_measures_and_reports_its_leader(
    tmp_path, monkeypatch
):
    """The form's adaptive probe, for real on a scratch loop device: the profile's matrix
    (ext4, xfs and their mount-option variants; scheduler none; 3 s runs) with a one-minute
    budget; it measures at least one
    cell, its progress counts device seconds against the budget, the status names the
    leader and its confidence, the live reading arrives while a cell runs, and it ends
    with its decision, nothing left attached.

    The store is given a calibration of the scratch device's class first (its kind's
    prior, saved under the identity the probe will key on): the real calibration takes
    ~2.5 min here at its own 4 s windows; tests/device/test_probe_adaptive.py runs it end
    to end with 1 s ones."""
    from fsadvisor.catalog.device_params import prior_params
    from fsadvisor.service import adaptive as ad
    from fsadvisor.service.device_figures import devices_table
    from fsadvisor.service.request import ProbeRequest

    db = tmp_path / "probe.db"
    monkeypatch.setenv("FSADVISOR_DB", str(db))
    (tmp_path / "scratch").mkdir()
    guess = ad.plan_adaptive(
        ProbeRequest.make(
            None,
            scratch="512M",
            scratch_dir=str(tmp_path / "scratch"),
            profile="oltp",
            filesystems="ext4,xfs",
            schedulers="none",
            runtime_s=3,
            db=str(db),
            dry_run=True,
        ),
        0.95,
        None,
    ).device
    with open_store(db) as store:
        store.save_device_params(
            prior_params(guess.kind, devices_table(), device_id=guess.identity)
        )
    app = FsAdvisorApp(db=str(db))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.action_show_tab("probe")
        pane = app.query_one(ProbePane)
        await settle(pilot, lambda: pane.query_one("#probe-devices", DataTable).row_count > 0)
        pane.query_one("#probe-target", Input).value = "scratch:512M"
        pane.query_one("#probe-fs", Input).value = "ext4,xfs"
        pane.query_one("#probe-runtime", Input).value = "3"
        pane.query_one("#probe-schedulers", Input).value = "none"
        pane.query_one("#probe-adaptive", Checkbox).value = True
        pane.query_one("#probe-budget", Input).value = "60s"
        # not --quick: its mount-option variants give the model something to choose between
        pane.query_one("#probe-quick", Checkbox).value = False
        pane.extra_options = {"scratch_dir": str(tmp_path / "scratch"), "cooldown_s": 0.0}
        await pilot.pause()
        await pilot.click("#probe-start")
        await settle(pilot, lambda: confirm_ready(app))
        text = str(app.screen.query_one("#confirm-text", Static).content)
        assert "adaptive among 5 configurations, at most 1 min of device time" in text
        await click_confirm(pilot)
        await settle(pilot, lambda: pane.running or pane.events, explain=lambda: pane_shows(pane))
        await settle(
            pilot, lambda: pane.summary is not None, timeout_s=240, explain=lambda: pane_shows(pane)
        )
        await app.workers.wait_for_complete()
        await pilot.pause()
        s, d = pane.summary, pane.decision
        assert s.interrupted is None and s.count("ok") >= 1, s.to_dict()
        assert d is not None and d.leader and 0.0 <= d.confidence <= 1.0 and d.runs >= 1
        counted = [e for e in pane.events if e.kind in ("cell-start", "cell-end")]
        assert counted and all(e.unit == "s" and e.total == 60 for e in counted)
        assert any(e.leader for e in pane.events if e.kind == "note")
        assert pane.live_iops and all(x >= 0 for x in pane.live_iops)
        status = str(pane.query_one("#probe-status", Static).content)
        assert f"matrix {s.matrix_id}" in status and f"leader {d.who}" in status
        lines = list(pane.query_one("#probe-lines").lines)
        assert any(ln.startswith(f"adaptive: {d.who} is best") for ln in lines)
    with open_store(db) as store:
        runs = store.runs(matrix_id=s.matrix_id)
    assert runs and all(r["status"] == "ok" for r in runs)
    assert our_loops(tmp_path) == [] and list((tmp_path / "scratch").iterdir()) == []


@pytest.mark.asyncio
async def test_force_from_the_form_probes_a_device_holding_a_filesystem(
    loop_device, tmp_path, monkeypatch
):
    """A loop device holding a labelled ext4 filesystem: without force it is refused; with
    the form's force box the confirmation says the ext4 signature will be destroyed and
    still needs the device typed back; then the probe runs its cell and the user's
    filesystem is gone (the probe wipes its own signature at the end)."""
    db = tmp_path / "probe.db"
    monkeypatch.setenv("FSADVISOR_DB", str(db))
    dev = loop_device(512 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "oldstuff", dev], check=True)
    app = FsAdvisorApp(db=str(db))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        pane = await probe_tab_listing(pilot, dev)
        narrow(pane, tmp_path, "1")
        pane.query_one("#probe-target", Input).value = dev
        pane.query_one("#probe-force", Checkbox).value = True
        await pilot.pause()
        await pilot.click("#probe-start")
        await settle(pilot, lambda: confirm_ready(app))
        text = str(app.screen.query_one("#confirm-text", Static).content)
        assert "ext4 data labelled 'oldstuff'" in text
        assert "FORCE: the ext4 signature on it is overridden and will be destroyed" in text
        await click_confirm(pilot)  # nothing typed: refused, nothing touched
        await pilot.pause()
        assert isinstance(app.screen, ConfirmProbeScreen) and not pane.running
        typed = app.screen.query_one("#confirm-device", Input)
        typed.value = dev
        typed.focus()
        await pilot.press("enter")  # (the refusal's toast may cover the button)
        await settle(pilot, lambda: pane.running, explain=lambda: pane_shows(pane))
        await settle(pilot, lambda: not pane.running)
        await app.workers.wait_for_complete()
        s = pane.summary
        assert s is not None, str(pane.query_one("#probe-command", Static).content)
        assert s.device == dev and s.count("ok") == 1 and s.interrupted is None, s.to_dict()
    assert mounted_from({dev}) == []
    out = subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True)
    assert "oldstuff" not in out.stdout
