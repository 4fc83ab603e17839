"""The probe tab's flows with Pilot: the device list and its verdicts, the confirmation
(a wrong device name is refused and nothing starts, the right one starts), the non-root
refusal, progress messages and Cancel; and snapshots of those screens at 120x40 and 80x24.

The service calls are replaced here by fakes with fixed answers (the device list must not
depend on this machine's disks, and nothing here may format anything); the real calls,
a real probe and a real cancel are in tests/device/test_tui_probe.py."""

from __future__ import annotations

from dataclasses import replace
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import textual
from textual.widgets import Button, DataTable, Input, Sparkline, Static

from fsadvisor.probe.report import CellOutcome, ProbeSummary, ProgressEvent
from fsadvisor.service.probing import BlockDevice, ProbePreview
from fsadvisor.tui import calls
from fsadvisor.tui.app import FsAdvisorApp
from fsadvisor.tui.panes.probe import ProbePane, progress_text
from fsadvisor.tui.panes.probe_confirm import ConfirmProbeScreen, warning_text
from _screen import click_landed, driven, screen_lines, screen_text, toasts


SIZE = (120, 40)
SMALL = (80, 24)
FAKE_OK = BlockDevice(
    path="/dev/fsadvisor-fake0",
    size_bytes=512 << 30,
    kind="nvme",
    model="Fake NVMe 512",
    allowed=True,
    reason=None,
    signatures=("xfs",),
    fstype="xfs",
    label="scratchdata",
)
FAKE_REFUSED = BlockDevice(
    path="/dev/fsadvisor-fake1",
    size_bytes=256 << 30,
    kind="unknown",
    model="",
    allowed=False,
    reason="/dev/fsadvisor-fake1 holds /; never probed",
)
PREVIEW = ProbePreview(
    command="fsadvisor probe /dev/fsadvisor-fake0 --quick",
    lines=["# fsadvisor probe --dry-run: 2 cells (2 runnable), about 1 min"],
    cells=2,
    estimated_s=50.0,
)
SAMPLE = ProgressEvent(
    "sample",
    1,
    2,
    cell="xfs none | 4k-randread | rep 1",
    device=FAKE_OK.path,
    iops=39876.0,
    bw_bytes_s=163.3e6,
    sample_source="/sys/block/fsadvisor-fake0/stat",
    energy_source="estimate",
)
ROOT_HINT = "probing needs root (run with sudo); --dry-run works without it"
# The dry run of one session for two profiles, as service.adaptive.adaptive_preview words it.
JOINT_PREVIEW = ProbePreview(
    command="fsadvisor probe --scratch 1G --profile oltp --profile fio-randwrite-4k-j1 "
    "--profile-weights 2,1 --budget 6m",
    lines=[
        "# fsadvisor probe --adaptive --dry-run: one session for profiles oltp (weight 2), "
        "fio-randwrite-4k-j1 (weight 1), 4 configurations x 2 workloads; target confidence "
        "0.95, budget 360 s; their full matrices (3 reps) are about 610 s. Nothing below is "
        "executed.",
        "# first: calibrate the device once for every profile (9 raw runs, about 52 s): the "
        "QD1 write latency, the random-write ceiling, the random-read ceiling, what these "
        "profiles' decisions rest on; the rest stays at its prior",
        "# now: oltp: leader xfs defaults, sched none, confidence 0.61",
        "# now: fio-randwrite-4k-j1: leader ext4 defaults, sched none, confidence 0.55",
        "# first cells across the profiles if every run came out as predicted (each choice "
        "is recomputed from the real result):",
        "#   1. for oltp: xfs defaults, sched none: a first run of a leading filesystem's "
        "defaults, for about 13 s of device time",
        "#   2. for fio-randwrite-4k-j1: ext4 defaults, sched none: a first run of a leading "
        "filesystem's defaults, for about 13 s of device time",
        "# expected split of the device time between the profiles:",
        "#   oltp: 5 cells, about 70 s (62%)",
        "#   fio-randwrite-4k-j1: 3 cells, about 42 s (38%)",
    ],
    cells=4,
    estimated_s=360.0,
    adaptive=True,
)


class FakeService:
    """Stands in for the service calls the probe tab makes; records what it was asked."""

    def __init__(self) -> None:
        self.runs: list[tuple] = []
        self.may_finish = threading.Event()

    def install(self, monkeypatch, root: str | None = None) -> "FakeService":
        monkeypatch.setattr(calls, "block_devices", lambda: [FAKE_OK, FAKE_REFUSED])
        monkeypatch.setattr(
            calls, "block_device", lambda p: {d.path: d for d in (FAKE_OK, FAKE_REFUSED)}[p]
        )
        monkeypatch.setattr(calls, "probe_preview", self.preview)
        monkeypatch.setattr(calls, "root_problem", lambda: root)
        monkeypatch.setattr(calls, "run_probe", self.run_probe)
        monkeypatch.setattr(calls, "probe_request", self.request)
        return self

    def request(self, target, **options):
        """What calls.probe_request builds, without inspecting the (nonexistent) device."""
        self.options = options
        scratch = target.partition(":")[2] if target.startswith("scratch:") else None
        return SimpleNamespace(
            device=None if scratch else target,
            scratch=scratch,
            resume=bool(options.get("resume")),
            db=options.get("db"),
            profile=options.get("profile"),
        )

    def preview(self, target, **kw):
        self.previewed = kw
        if target.strip() == FAKE_REFUSED.path:
            raise calls.FsAdvisorError(FAKE_REFUSED.reason)
        if (kw.get("adaptive") or {}).get("profiles"):
            return JOINT_PREVIEW
        if (kw.get("adaptive") or {}).get("on"):
            return replace(
                PREVIEW,
                command=f"fsadvisor probe {target.strip()} --adaptive",
                cells=3,
                estimated_s=180.0,
                adaptive=True,
            )
        return replace(PREVIEW, command=f"fsadvisor probe {target.strip()} --quick")

    def run_probe(self, request, confirm, on_progress, cancel):
        """Two cells: the first measured, then the second runs until Cancel (or the test
        lets it finish), as MatrixRun reports them."""
        self.runs.append((request.device, request.scratch, confirm))
        on_progress(
            ProgressEvent(
                "cell-start",
                0,
                2,
                cell="ext4 none | 4k-randread | rep 1",
                eta_s=50.0,
                device=FAKE_OK.path,
            )
        )
        on_progress(
            ProgressEvent(
                "cell-end",
                1,
                2,
                cell="ext4 none | 4k-randread | rep 1",
                status="ok",
                eta_s=25.0,
                device=FAKE_OK.path,
                iops=41234.0,
                watts=6.25,
                energy_source="estimate",
            )
        )
        on_progress(
            ProgressEvent(
                "cell-start",
                1,
                2,
                cell="xfs none | 4k-randread | rep 1",
                eta_s=25.0,
                device=FAKE_OK.path,
            )
        )
        on_progress(SAMPLE)  # the running cell, a second into its measurement
        s = ProbeSummary(matrix_id="m-fake", device=FAKE_OK.path, total=2, wall_s=30.0)
        s.outcomes.append(CellOutcome("c1", 1, "ext4", "ok"))
        while not self.may_finish.wait(0.02):
            if cancel.received:
                s.interrupted = cancel.received
                s.outcomes.append(CellOutcome("c2", 1, "xfs", "incomplete"))
                on_progress(ProgressEvent("cleanup", 2, 2, message="unmounted /tmp/x"))
                on_progress(ProgressEvent("done", 2, 2, status="interrupted"))
                return s
        s.outcomes.append(CellOutcome("c2", 1, "xfs", "ok"))
        on_progress(ProgressEvent("done", 2, 2, status="done"))
        return s


async def settle(pilot) -> None:
    app = pilot.app
    for _ in range(100):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not app._live_busy and not app._live_wanted:
            break
    await pilot.pause()


async def open_probe_tab(pilot) -> ProbePane:
    await settle(pilot)
    await pilot.press("f6")
    await settle(pilot)
    return pilot.app.query_one(ProbePane)


async def choose(pilot, row: int) -> None:
    table = pilot.app.query_one("#probe-devices", DataTable)
    table.focus()
    table.move_cursor(row=row)
    await pilot.press("enter")
    await pilot.pause()


def rows(app) -> list[list[str]]:
    table = app.query_one("#probe-devices", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


# ---------------------------------------------------------------------- flows


@pytest.mark.asyncio
async def test_the_device_list_shows_each_verdict_and_scratch_first(monkeypatch):
    FakeService().install(monkeypatch)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await open_probe_tab(pilot)
        got = rows(app)
        assert got[0][0] == "scratch loop device" and got[0][1] == "1G"
        assert got[1] == ["/dev/fsadvisor-fake0", "512.0 GiB", "nvme Fake NVMe 512", "allowed"]
        assert got[2][0] == "/dev/fsadvisor-fake1" and got[2][3] == FAKE_REFUSED.reason
        await choose(pilot, 1)
        assert app.query_one("#probe-target", Input).value == FAKE_OK.path
        assert toasts(app) == []
        await choose(pilot, 2)  # refused: the reason is said at once
        assert app.query_one("#probe-target", Input).value == FAKE_REFUSED.path
        assert any("holds /; never probed" in t for t in toasts(app))
        await choose(pilot, 0)
        assert app.query_one("#probe-target", Input).value == "scratch:1G"


@pytest.mark.asyncio
async def test_a_refused_device_never_reaches_the_confirmation(monkeypatch):
    fake = FakeService().install(monkeypatch)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await open_probe_tab(pilot)
        await choose(pilot, 2)
        await pilot.click("#probe-start")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmProbeScreen)
        assert any("holds /; never probed" in t for t in toasts(app))
        assert fake.runs == []


@pytest.mark.asyncio
async def test_not_root_is_one_line_and_nothing_starts(monkeypatch):
    fake = FakeService().install(monkeypatch, root=ROOT_HINT)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await open_probe_tab(pilot)
        await pilot.click("#probe-start")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmProbeScreen)
        assert any("probing needs root" in t for t in toasts(app))
        status = str(app.query_one("#probe-status", Static).content)
        assert status == f"not started: {ROOT_HINT}"
        assert fake.runs == []


@pytest.mark.asyncio
async def test_the_confirmation_refuses_a_wrong_name_and_starts_on_the_right_one(monkeypatch):
    fake = FakeService().install(monkeypatch)
    fake.may_finish.set()
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        pane = await open_probe_tab(pilot)
        await choose(pilot, 1)
        await pilot.click("#probe-start")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmProbeScreen)
        text = str(app.screen.query_one("#confirm-text", Static).content)
        # names the device, its size and model, what is lost and the plan's size
        assert "DESTROYS all data on /dev/fsadvisor-fake0 (512.0 GiB, nvme, Fake NVMe 512)" in text
        assert "xfs data labelled 'scratchdata'" in text and "2 cells" in text
        await pilot.press(*"/dev/fsadvisor-fake", "enter")  # one character short
        await settle(pilot)
        assert isinstance(app.screen, ConfirmProbeScreen) and fake.runs == []
        assert "('/dev/fsadvisor-fake' is not /dev/fsadvisor-fake0); nothing was touched" in str(
            app.screen.query_one("#confirm-error", Static).content
        )
        typed = app.screen.query_one("#confirm-device", Input)
        typed.value = ""
        await pilot.press(*"/dev/fsadvisor-fake0")
        await click_landed(pilot, "#confirm-ok")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmProbeScreen)
        assert fake.runs == [("/dev/fsadvisor-fake0", None, "/dev/fsadvisor-fake0")]
        # the profile chosen on the first tab, as the preview and `fsadvisor probe` take it
        assert fake.options["profile"] == "oltp" and fake.options["quick"] is True
        assert pane.summary is not None and pane.summary.interrupted is None
        assert pane.query_one("#probe-start", Button).disabled is False


@pytest.mark.asyncio
async def test_escape_in_the_confirmation_starts_nothing(monkeypatch):
    fake = FakeService().install(monkeypatch)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await open_probe_tab(pilot)
        await choose(pilot, 1)
        await pilot.click("#probe-start")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmProbeScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert fake.runs == []
        assert str(app.query_one("#probe-status", Static).content) == "not started: cancelled"


@pytest.mark.asyncio
async def test_progress_is_shown_and_cancel_stops_the_probe(monkeypatch):
    fake = FakeService().install(monkeypatch)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        pane = await open_probe_tab(pilot)
        await choose(pilot, 0)  # scratch: confirmed without typing
        await pilot.click("#probe-start")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmProbeScreen)
        assert "nothing of yours is touched" in str(
            app.screen.query_one("#confirm-text", Static).content
        )
        await click_landed(pilot, "#confirm-ok")
        for _ in range(200):
            await pilot.pause(0.02)
            if len(pane.events) >= 3:
                break
        assert pane.running and fake.runs == [(None, "1G", None)]
        status = str(pane.query_one("#probe-status", Static).content)
        assert status.startswith("1/2 cells  ETA 25s  running xfs none | 4k-randread | rep 1")
        assert "last cell 41,234 IOPS, 6.2 W (estimate)" in status
        # the running cell's live reading, labelled as the block layer's, not fio's
        assert (
            "now: 39.9k IOPS, 163 MB/s (block layer, /sys/block/fsadvisor-fake0/stat), no meter"
        ) in status
        assert pane.query_one("#probe-iops", Sparkline).data == [39876.0]  # fed live
        assert pane.iops_history == [41234.0]  # fio's, per measured cell
        assert pane.query_one("#probe-start", Button).disabled
        await pilot.click("#probe-cancel")
        await settle(pilot)
        assert not pane.running and pane.summary.interrupted == "cancelled from the TUI"
        status = str(pane.query_one("#probe-status", Static).content)
        assert "interrupted (cancelled from the TUI): cleaned up, --resume continues it" in status
        assert "cleanup: unmounted /tmp/x" in list(pane.query_one("#probe-lines").lines)
        assert any("interrupted" in t for t in toasts(app))


def test_progress_text_says_no_meter_when_a_measured_cell_had_no_energy_source():
    e = ProgressEvent("cell-start", 0, 3, cell="ext4", eta_s=75.0)
    assert (
        progress_text(e, None, None, None, "ext4", measured=False)
        == "0/3 cells  ETA 1m15s  running ext4  |  no cell measured yet"
    )
    assert progress_text(e, 900.0, None, None, None).endswith(
        "between cells  |  last cell 900 IOPS, no meter"
    )
    assert progress_text(e, 900.0, None, "rapl", None).endswith(
        "last cell 900 IOPS, no watts (rapl)"
    )
    note = ProgressEvent("note", 0, 0, message="energy: ESTIMATE from a power model")
    assert (
        progress_text(note, None, None, None, None, measured=False)
        == "preparing: energy: ESTIMATE from a power model"
    )


def test_warning_text_for_a_blank_device_says_other_data_is_lost_too():
    blank = BlockDevice(
        path="/dev/loop9", size_bytes=256 << 20, kind="loop", model="", allowed=True, reason=None
    )
    text = warning_text("/dev/loop9", PREVIEW, blank)
    assert text.startswith("This DESTROYS all data on /dev/loop9 (256.0 MiB, loop): no filesystem")
    assert "any other data on it is lost too" in text


# ---------------------------------------------------------------------- snapshots
# Each SVG snapshot has a behavioural Pilot test beside it (``*_pilot``), driven by the same
# steps: a rendering change in a new Textual fails only the snapshot, to be reviewed.


RECORDED_WITH = (
    (Path(__file__).parent / "__snapshots__" / "textual-version.txt").read_text().strip()
)
snapshots = pytest.mark.skipif(
    textual.__version__ != RECORDED_WITH,
    reason=f"snapshots recorded with Textual {RECORDED_WITH}, this is {textual.__version__}",
)


async def steady(pilot) -> None:
    """No blinking cursor in a screenshot: a focused Input would otherwise be drawn with
    or without its cursor depending on the moment."""
    for w in pilot.app.screen.query(Input):
        w.cursor_blink = False
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


async def _probe_tab(pilot) -> None:
    await open_probe_tab(pilot)
    await steady(pilot)


async def _confirm(pilot) -> None:
    await open_probe_tab(pilot)
    await choose(pilot, 1)
    await pilot.click("#probe-start")
    await settle(pilot)
    await steady(pilot)


async def _refused_toast(pilot) -> None:
    await open_probe_tab(pilot)
    await choose(pilot, 2)
    await settle(pilot)
    await steady(pilot)


async def _start(pilot) -> None:
    await open_probe_tab(pilot)
    await pilot.click("#probe-start")
    await settle(pilot)
    await steady(pilot)


@snapshots
@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
def test_probe_tab_screen(snap_compare, monkeypatch, size):
    """The device list (scratch first, an allowed and a refused device), the form, the
    buttons, the empty progress and the log."""
    FakeService().install(monkeypatch)
    assert snap_compare(FsAdvisorApp(), terminal_size=size, run_before=_probe_tab)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
async def test_probe_tab_screen_pilot(monkeypatch, size):
    """Beside test_probe_tab_screen: scratch first, then each device with its verdict; the
    target is scratch, Probe and Preview enabled, Cancel not, nothing logged yet."""
    FakeService().install(monkeypatch)
    async with driven(_probe_tab, size) as app:
        table = rows(app)
        assert [r[0] for r in table] == ["scratch loop device", FAKE_OK.path, FAKE_REFUSED.path]
        assert table[1][3] == "allowed" and table[2][3] == FAKE_REFUSED.reason
        assert app.query_one("#probe-target", Input).value == "scratch:1G"
        assert not app.query_one("#probe-start", Button).disabled
        assert app.query_one("#probe-cancel", Button).disabled
        assert "Probing FORMATS the device" in screen_text(app)
        assert list(app.query_one("#probe-lines").lines) == []


@snapshots
@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
def test_probe_confirmation_screen(snap_compare, monkeypatch, size):
    FakeService().install(monkeypatch)
    assert snap_compare(FsAdvisorApp(), terminal_size=size, run_before=_confirm)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
async def test_probe_confirmation_screen_pilot(monkeypatch, size):
    """Beside test_probe_confirmation_screen: Probe on the allowed device asks for its path,
    naming the signature it destroys and the cells' time; nothing has run."""
    fake = FakeService().install(monkeypatch)
    async with driven(_confirm, size) as app:
        assert isinstance(app.screen, ConfirmProbeScreen)
        text = screen_text(app)
        assert f"This DESTROYS all data on {FAKE_OK.path}" in text
        assert "'scratchdata'" in text and "Type the device path" in text
        assert "2 cells, about 1 min" in str(app.screen.query_one("#confirm-text", Static).content)
        assert app.focused is app.screen.query_one("#confirm-device", Input)
        assert fake.runs == []


@snapshots
def test_probe_refused_device_toast(snap_compare, monkeypatch):
    FakeService().install(monkeypatch)
    assert snap_compare(FsAdvisorApp(), terminal_size=SIZE, run_before=_refused_toast)


@pytest.mark.asyncio
async def test_probe_refused_device_toast_pilot(monkeypatch):
    """Beside test_probe_refused_device_toast: choosing the refused device is one toast with
    the reason; it becomes the target but no confirmation opens and nothing runs."""
    fake = FakeService().install(monkeypatch)
    async with driven(_refused_toast, SIZE) as app:
        assert toasts(app) == [f"probe: refused {FAKE_REFUSED.reason}"]
        assert app.query_one("#probe-target", Input).value == FAKE_REFUSED.path
        assert not isinstance(app.screen, ConfirmProbeScreen) and fake.runs == []


@snapshots
def test_probe_not_root_toast_80x24(snap_compare, monkeypatch):
    FakeService().install(monkeypatch, root=ROOT_HINT)
    assert snap_compare(FsAdvisorApp(), terminal_size=SMALL, run_before=_start)


@pytest.mark.asyncio
async def test_probe_not_root_toast_80x24_pilot(monkeypatch):
    """Beside test_probe_not_root_toast_80x24: without root, Probe says why in the status
    line and one toast, and starts nothing."""
    fake = FakeService().install(monkeypatch, root=ROOT_HINT)
    async with driven(_start, SMALL) as app:
        assert str(app.query_one("#probe-status", Static).content) == f"not started: {ROOT_HINT}"
        assert toasts(app) == [f"probe: not started {ROOT_HINT}"]
        assert fake.runs == []


async def _running(pilot) -> None:
    pane = await open_probe_tab(pilot)
    await choose(pilot, 0)
    await pilot.click("#probe-start")
    await settle(pilot)
    await click_landed(pilot, "#confirm-ok")
    for _ in range(200):  # the fake probe now waits in its second cell until Cancel
        await pilot.pause(0.02)
        if len(pane.events) >= 3:
            break
    await steady(pilot)


@snapshots
@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
def test_probe_running_screen(snap_compare, monkeypatch, size):
    """Mid-probe: the status line (n/N, ETA, the running cell, the last cell's IOPS and
    watts with their source), the bar at 1/2, the IOPS sparkline and Cancel enabled."""
    FakeService().install(monkeypatch)
    assert snap_compare(FsAdvisorApp(), terminal_size=size, run_before=_running)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
async def test_probe_running_screen_pilot(monkeypatch, size):
    """Beside test_probe_running_screen: mid-probe the status names n/N, the running cell,
    the live block-layer IOPS and the last cell's IOPS and watts with their source; the bar
    is at 1 of 2, Cancel is enabled and the finished cell is logged."""
    fake = FakeService().install(monkeypatch)
    async with driven(_running, size) as app:
        status = " ".join(str(app.query_one("#probe-status", Static).content).split())
        for part in (
            "1/2 cells",
            "running xfs none | 4k-randread | rep 1",
            "now: 39.9k IOPS",
            "last cell 41,234 IOPS, 6.2 W (estimate)",
        ):
            assert part in status, (part, status)
        bar = app.query_one("#probe-progress")
        assert (bar.progress, bar.total) == (1, 2)
        assert app.query_one("#probe-iops", Sparkline).data == [SAMPLE.iops]
        assert not app.query_one("#probe-cancel", Button).disabled
        log = [ln.strip("│ ") for ln in screen_lines(app)]
        assert "ok          ext4 none | 4k-randread | rep 1" in log
        fake.may_finish.set()


@pytest.mark.asyncio
async def test_q_while_probing_asks_first_and_quitting_cancels_the_probe(monkeypatch):
    from fsadvisor.tui.panes.probe_confirm import QuitWhileProbingScreen

    fake = FakeService().install(monkeypatch)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        pane = await open_probe_tab(pilot)
        await choose(pilot, 0)
        await pilot.click("#probe-start")
        await settle(pilot)
        await click_landed(pilot, "#confirm-ok")
        for _ in range(200):
            await pilot.pause(0.02)
            if len(pane.events) >= 3:
                break
        assert pane.running
        pane.query_one("#probe-devices", DataTable).focus()
        await pilot.pause()  # its focus messages first (test_tui.py's _in_jobs)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, QuitWhileProbingScreen)
        assert FAKE_OK.path in str(app.screen.query_one("#quit-text", Static).content)
        await pilot.press("n")  # keep probing: nothing was cancelled
        await pilot.pause()
        assert not isinstance(app.screen, QuitWhileProbingScreen) and pane.running
        assert not pane.cancel_token.received
        await pilot.press("q")
        await pilot.pause()
        token = pane.cancel_token
        await pilot.press("y")
        await pilot.pause()
    assert app.return_code == 0 or app.return_code is None
    assert token.received == "cancelled: the TUI quit"  # on_unmount's cleanup path
    fake.may_finish.set()


@pytest.mark.asyncio
async def test_q_without_a_probe_quits_at_once(monkeypatch):
    FakeService().install(monkeypatch)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


# ---------------------------------------------------------------------- the form's options


async def fill(pilot, **fields) -> None:
    """Type into the form's inputs (``probe_schedulers="none"``) and tick its boxes."""
    from textual.widgets import Checkbox

    for key, value in fields.items():
        widget = pilot.app.query_one("#" + key.replace("_", "-"))
        if isinstance(widget, Checkbox):
            widget.value = value
        else:
            widget.value = ""
            widget.focus()
            await pilot.pause()  # its focus messages first (test_tui.py's _in_jobs)
            await pilot.press(*value)
    await pilot.pause()


@pytest.mark.asyncio
async def test_schedulers_micro_workloads_and_resume_reach_the_request_and_the_preview(monkeypatch):
    fake = FakeService().install(monkeypatch)
    fake.may_finish.set()
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await open_probe_tab(pilot)
        await fill(
            pilot,
            probe_schedulers="none,kyber",
            probe_workloads="4k-randread-qd32",
            probe_resume=True,
        )
        await pilot.click("#probe-preview")
        await settle(pilot)
        assert fake.previewed["schedulers"] == "none,kyber"
        assert fake.previewed["workloads"] == "4k-randread-qd32"
        assert fake.previewed["resume"] is True and "force" not in fake.previewed
        await choose(pilot, 0)
        await pilot.click("#probe-start")
        await settle(pilot)
        await click_landed(pilot, "#confirm-ok")
        await settle(pilot)
        assert fake.runs == [(None, "1G", None)]
        assert (fake.options["schedulers"], fake.options["workloads"], fake.options["resume"]) == (
            "none,kyber",
            "4k-randread-qd32",
            True,
        )
        assert "adaptive" not in fake.options  # not a ProbeRequest field


def test_the_real_request_takes_the_forms_options():
    """calls.probe_request builds the same ProbeRequest ``fsadvisor probe`` does."""
    r = calls.probe_request(
        "scratch:1G",
        None,
        True,
        "unknown",
        None,
        "ext4",
        "2",
        schedulers="none,kyber",
        workloads="4k-randread-qd32",
    )
    assert r.schedulers == ("none", "kyber") and r.workloads == ("4k-randread-qd32",)
    assert r.command_line() == (
        "fsadvisor probe --scratch 1G --fs ext4 --schedulers "
        "none,kyber --workloads 4k-randread-qd32 --runtime 2 --quick"
    )
    assert calls.probe_request("scratch:1G", resume=True).resume is True
    with pytest.raises(calls.FsAdvisorError, match="deadline"):  # planning checks the names
        calls.probe_preview("scratch:1G", schedulers="deadline")


def test_the_adaptive_fields_are_checked_as_the_cli_checks_them():
    assert calls.adaptive_choice({"on": True, "budget": "3m", "target": "0.9"}) == (True, 0.9, "3m")
    assert calls.adaptive_choice(None) == (False, 0.95, None)
    assert calls.adaptive_choice({"on": True, "budget": " ", "target": ""}) == (True, 0.95, None)
    for bad in ({"target": "1.0"}, {"target": "high"}, {"budget": "soon"}, {"budget": "0s"}):
        with pytest.raises(calls.FsAdvisorError):
            calls.adaptive_choice({"on": True, **bad})


@pytest.mark.asyncio
async def test_an_adaptive_probe_shows_device_seconds_the_leader_and_its_confidence(monkeypatch):
    fake = FakeService().install(monkeypatch)
    asked = {}

    def run_adaptive(request, adaptive, confirm, on_progress, cancel):
        asked.update(adaptive=adaptive, confirm=confirm, device=request.device)
        on_progress(
            ProgressEvent(
                "note",
                1,
                0,
                message="leader xfs, confidence 0.41; ...",
                leader="xfs [noatime] none",
                confidence=0.41,
            )
        )
        on_progress(
            ProgressEvent(
                "cell-start",
                12,
                180,
                cell="xfs | profile:oltp | rep 1",
                eta_s=168.0,
                unit="s",
                device="/dev/loop7",
            )
        )
        on_progress(
            ProgressEvent(
                "sample",
                0,
                36,
                cell="xfs | profile:oltp | rep 1",
                iops=1500.0,
                bw_bytes_s=6.1e6,
                sample_source="/sys/block/loop7/stat",
                energy_source="estimate",
            )
        )
        assert gate.wait(30)  # the test reads the status line mid-cell
        on_progress(
            ProgressEvent(
                "cell-end",
                20,
                180,
                cell="xfs | profile:oltp | rep 1",
                status="ok",
                eta_s=160.0,
                unit="s",
                iops=1450.0,
                energy_source="estimate",
            )
        )
        on_progress(
            ProgressEvent(
                "note",
                2,
                0,
                message="leader xfs, confidence 0.96; ...",
                leader="xfs [noatime] none",
                confidence=0.96,
            )
        )
        s = ProbeSummary(matrix_id="m-ad", device="/dev/loop7", total=1, wall_s=30.0)
        s.outcomes.append(CellOutcome("c1", 1, "xfs", "ok"))
        on_progress(ProgressEvent("done", 20, 180, status="done", unit="s"))
        from fsadvisor.service.adaptive import Decision

        return SimpleNamespace(
            probe=s,
            decision=Decision(
                leader="xfs [noatime] none",
                confidence=0.96,
                p_best={},
                runs=1,
                spent_s=20.0,
                full_estimate_s=400.0,
                reason="reached the target confidence",
            ),
        )

    gate = threading.Event()
    monkeypatch.setattr(calls, "run_adaptive_probe", run_adaptive)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        pane = await open_probe_tab(pilot)
        await fill(pilot, probe_adaptive=True, probe_budget="3m", probe_confidence="0.9")
        await choose(pilot, 0)
        await pilot.click("#probe-start")
        await settle(pilot)
        text = str(app.screen.query_one("#confirm-text", Static).content)
        assert "adaptive among 3 configurations, at most 3 min of device time" in text
        await click_landed(pilot, "#confirm-ok")
        for _ in range(300):
            await pilot.pause(0.02)
            if pane.live_iops:
                break
        at_sample = str(pane.query_one("#probe-status", Static).content)
        gate.set()
        await settle(pilot)
        assert fake.runs == []  # the adaptive service call, not the full matrix's
        assert asked["adaptive"] == {"on": True, "budget": "3m", "target": "0.9"}
        # mid-run: seconds of device time against the budget, the live reading, the leader
        assert at_sample.startswith("12/180 s device time  at most ETA 2m48s  running xfs")
        assert "now: 1.50k IOPS" in at_sample
        assert "leader xfs [noatime] none, P(best within 1%) 0.41" in at_sample
        status = str(pane.query_one("#probe-status", Static).content)
        assert (
            "matrix m-ad" in status
            and "leader xfs [noatime] none, P(best within 1%) 0.96" in status
        )
        lines = list(pane.query_one("#probe-lines").lines)
        assert (
            "adaptive: xfs [noatime] none is best (within 1%) with probability 0.96 after "
            "1 runs; device time 20s = 5% of the full matrix's ~6m40s"
        ) in lines
        assert "adaptive: stopped: reached the target confidence" in lines
        assert pane.query_one("#probe-progress").total == 180


@pytest.mark.asyncio
async def test_force_needs_the_typed_name_and_says_the_signature_is_destroyed(monkeypatch):
    fake = FakeService().install(monkeypatch)
    fake.may_finish.set()
    forced = []
    monkeypatch.setattr(
        calls, "block_device", lambda p, force=False: forced.append(force) or FAKE_OK
    )
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await open_probe_tab(pilot)
        await fill(pilot, probe_force=True)
        await choose(pilot, 0)  # scratch: nothing to force, refused before anything
        await pilot.click("#probe-start")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmProbeScreen) and fake.runs == []
        assert any("scratch loop device is new" in t for t in toasts(app))
        await choose(pilot, 1)
        await pilot.click("#probe-start")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmProbeScreen) and forced == [True]
        text = str(app.screen.query_one("#confirm-text", Static).content)
        assert "FORCE: the xfs signature on it is overridden and will be destroyed" in text
        assert "Type the device path to continue" in text
        await click_landed(pilot, "#confirm-ok")  # nothing typed: refused
        await settle(pilot)
        assert isinstance(app.screen, ConfirmProbeScreen) and fake.runs == []
        app.screen.query_one("#confirm-device", Input).focus()
        await pilot.pause()  # its focus messages first (test_tui.py's _in_jobs)
        await pilot.press(*FAKE_OK.path)
        await click_landed(pilot, "#confirm-ok")
        await settle(pilot)
        assert fake.runs == [(FAKE_OK.path, None, FAKE_OK.path)]
        assert fake.options["force"] is True


def test_warning_text_under_force_without_a_signature_still_says_so():
    blank = BlockDevice(
        path="/dev/loop9", size_bytes=256 << 20, kind="loop", model="", allowed=True, reason=None
    )
    assert (
        "FORCE: any filesystem or RAID signature on it will be destroyed (none was found)"
        in warning_text("/dev/loop9", PREVIEW, blank, force=True)
    )
    assert "FORCE" not in warning_text("/dev/loop9", PREVIEW, blank)


async def _filled(pilot) -> None:
    await open_probe_tab(pilot)
    await fill(
        pilot,
        probe_schedulers="none,mq-deadline",
        probe_workloads="4k-randread-qd32",
        probe_adaptive=True,
        probe_budget="3m",
        probe_confidence="0.9",
        probe_resume=True,
    )
    await pilot.click("#probe-preview")
    await settle(pilot)
    await steady(pilot)


@snapshots
@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
def test_probe_form_filled_adaptive(snap_compare, monkeypatch, size):
    """The form with every option set: schedulers, a micro workload, adaptive with budget
    and target, resume."""
    FakeService().install(monkeypatch)
    assert snap_compare(FsAdvisorApp(), terminal_size=size, run_before=_filled)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
async def test_probe_form_filled_adaptive_pilot(monkeypatch, size):
    """Beside test_probe_form_filled_adaptive: the typed options reach the preview, which
    states the adaptive budget and the command that runs it."""
    fake = FakeService().install(monkeypatch)
    async with driven(_filled, size) as app:
        assert fake.previewed["schedulers"] == "none,mq-deadline"
        assert fake.previewed["workloads"] == "4k-randread-qd32" and fake.previewed["resume"]
        assert fake.previewed["adaptive"] == {"on": True, "budget": "3m", "target": "0.9"}
        text = screen_text(app)
        assert "adaptive among 3 configurations, at most 3 min of device time" in text
        assert "fsadvisor probe scratch:1G --adaptive" in text


@pytest.mark.asyncio
async def test_the_with_profile_box_names_the_profile_the_probe_adds(monkeypatch):
    from textual.widgets import Checkbox, OptionList

    FakeService().install(monkeypatch)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        box = app.query_one("#probe-profile", Checkbox)
        assert "oltp" in str(box.label)  # the default preset
        options = app.query_one("#presets", OptionList)
        options.focus()
        target = options.get_option_index("rocksdb-ycsb-a")
        step = "down" if target > options.highlighted else "up"
        await pilot.press(*[step] * abs(target - options.highlighted))
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert str(box.label) == "with rocksdb-ycsb-a"
        long = "fs-overhead-randwrite-4k-fsync1"
        app.query_one(ProbePane).show_profile(long)
        assert str(box.label) == "with fs-overhead-ran…" and long in str(box.tooltip)


# ---------------------------------------------------------------------- stale lines


@pytest.mark.asyncio
async def test_a_preview_replaces_an_earlier_not_started_line_and_the_log_follows(monkeypatch):
    FakeService().install(monkeypatch, root=ROOT_HINT)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        pane = await open_probe_tab(pilot)
        await pilot.click("#probe-start")
        await settle(pilot)
        status = app.query_one("#probe-status", Static)
        assert str(status.content).startswith("not started")
        await pilot.click("#probe-preview")
        await settle(pilot)
        assert str(status.content) == "previewed: nothing run"
        log = app.query_one("#probe-lines")
        assert log.scroll_y == 0 and log.auto_scroll  # read from the top, then it follows
        for i in range(60):
            log.write_line(f"line {i}")
        await pilot.pause()
        assert log.scroll_y == log.max_scroll_y > 0
        assert pane.running is False


# ---------------------------------------------------------------------- several profiles


def test_the_forms_more_profiles_join_the_with_profile_one_and_weights_are_checked():
    assert calls.joint_choice("oltp", None) == (["oltp"], None)
    assert calls.joint_choice(None, {"profiles": " "}) == ([], None)
    assert calls.joint_choice("oltp", {"profiles": "a.toml, fio-randwrite-4k-j1,"}) == (
        ["oltp", "a.toml", "fio-randwrite-4k-j1"],
        None,
    )
    assert calls.joint_choice(None, {"profiles": "a,b", "weights": "2, 1"}) == (
        ["a", "b"],
        [2.0, 1.0],
    )
    for profile, bad in (
        ("oltp", {"weights": "2"}),
        ("oltp", {"profiles": "b", "weights": "2"}),
        ("oltp", {"profiles": "b", "weights": "2,x"}),
        ("oltp", {"profiles": "b", "weights": "2,0"}),
    ):
        with pytest.raises(calls.FsAdvisorError):
            calls.joint_choice(profile, bad)


def test_the_real_joint_preview_is_the_clis_dry_run_of_one_session(tmp_path):
    """calls.probe_preview with more profiles: the one session's budget, the calibration
    once for all, the first cells across the profiles, and the command that runs it."""
    p = calls.probe_preview(
        "scratch:1G",
        profile="fio-randread-4k-j1",
        db=str(tmp_path / "s.db"),
        filesystems="ext4,xfs",
        schedulers="none",
        adaptive={"budget": "4m", "profiles": "fio-randwrite-4k-j1", "weights": "2,1"},
    )
    assert p.adaptive and p.estimated_s == 240.0 and p.cells == 2
    assert p.command.startswith(
        "fsadvisor probe --scratch 1G --fs ext4,xfs --schedulers none "
        "--profile fio-randread-4k-j1 --profile fio-randwrite-4k-j1 "
        "--profile-weights 2,1 "
    )
    assert "--budget 4m" in p.command
    # the first comment, folded over its first lines up to "... nothing below is executed"
    end = next(i for i, ln in enumerate(p.lines) if ln.rstrip(".").endswith("executed"))
    head = " ".join(ln.removeprefix("# ") for ln in p.lines[: end + 1])
    assert head.startswith(
        "fsadvisor probe --adaptive --dry-run: one session for "
        "profiles fio-randread-4k-j1 (weight 2), fio-randwrite-4k-j1 "
        "(weight 1), 2 configurations x 2 workloads"
    )
    assert "budget 240 s" in head
    assert any(
        ln.startswith("# first: calibrate the device once for every profile") for ln in p.lines
    )
    assert any(ln.startswith("#   1. for fio-") for ln in p.lines)
    assert "# expected split of the device time between the profiles:" in p.lines
    with pytest.raises(calls.FsAdvisorError, match="resume alone"):
        calls.probe_preview(
            "scratch:1G", profile="oltp", resume=True, adaptive={"profiles": "fio-randwrite-4k-j1"}
        )


def _joint_answer():
    from fsadvisor.service.adaptive import Decision, JointDecision

    answers = [
        Decision(
            leader="xfs-key",
            leader_name="xfs defaults, sched none",
            confidence=0.97,
            p_best={},
            spent_s=120.0,
            full_estimate_s=610.0,
            runs=5,
            own_s=70.0,
            reason="reached the target confidence",
        ),
        Decision(
            leader="ext4-key",
            leader_name="ext4 defaults, sched none",
            confidence=0.81,
            p_best={},
            spent_s=120.0,
            full_estimate_s=610.0,
            runs=3,
            own_s=42.0,
        ),
    ]
    return JointDecision(
        profiles=["oltp", "fio-randwrite-4k-j1"],
        weights=[2.0, 1.0],
        answers=answers,
        spent_s=120.0,
        budget_s=360.0,
        full_estimate_s=610.0,
        runs=8,
        reason="the budget is spent",
    )


async def _joint_filled(pilot) -> None:
    await open_probe_tab(pilot)
    await fill(
        pilot, probe_budget="6m", probe_profiles="fio-randwrite-4k-j1", probe_profile_weights="2,1"
    )
    await pilot.click("#probe-preview")
    await settle(pilot)
    await steady(pilot)


@snapshots
@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
def test_probe_joint_preview(snap_compare, monkeypatch, size):
    """Two profiles with weights previewed as one session: its budget, the calibration
    once, the first cells across the profiles, the split of device time."""
    FakeService().install(monkeypatch)
    assert snap_compare(FsAdvisorApp(), terminal_size=size, run_before=_joint_filled)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
async def test_probe_joint_preview_pilot(monkeypatch, size):
    """Beside test_probe_joint_preview: the more profiles and the weights reach the preview
    beside the adaptive fields, which shows the session's plan and command."""
    fake = FakeService().install(monkeypatch)
    async with driven(_joint_filled, size) as app:
        assert fake.previewed["profile"] == "oltp"  # the "with profile" one, first
        assert fake.previewed["adaptive"] == {
            "on": False,
            "budget": "6m",
            "target": "0.95",
            "profiles": "fio-randwrite-4k-j1",
            "weights": "2,1",
        }
        text = screen_text(app)
        assert "adaptive among 4 configurations, at most 6 min of device time" in text
        assert "--profile oltp --profile fio-randwrite-4k-j1 --profile-weights 2,1" in text
        assert "one session for profiles oltp" in text
        log = list(app.query_one("#probe-lines").lines)
        assert log == JOINT_PREVIEW.lines


@pytest.mark.asyncio
async def test_several_profiles_run_as_one_session_with_an_answer_per_profile(monkeypatch):
    fake = FakeService().install(monkeypatch)
    asked = {}

    def run_adaptive(request, adaptive, confirm, on_progress, cancel, profiles=None, weights=None):
        asked.update(profile=request.profile, profiles=profiles, weights=weights, adaptive=adaptive)
        s = ProbeSummary(matrix_id="m-joint", device="/dev/loop7", total=1, wall_s=130.0)
        s.outcomes.append(CellOutcome("c1", 1, "xfs", "ok"))
        on_progress(ProgressEvent("done", 120, 360, status="done", unit="s"))
        return SimpleNamespace(probe=s, decision=None, joint=_joint_answer())

    monkeypatch.setattr(calls, "run_adaptive_probe", run_adaptive)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        pane = await open_probe_tab(pilot)
        await fill(pilot, probe_profiles="fio-randwrite-4k-j1", probe_profile_weights="2,1")
        await choose(pilot, 0)
        await pilot.click("#probe-start")
        await settle(pilot)
        text = str(app.screen.query_one("#confirm-text", Static).content)
        assert "adaptive among 4 configurations, at most 6 min of device time" in text
        await click_landed(pilot, "#confirm-ok")
        await settle(pilot)
        assert fake.runs == []  # one adaptive session, not a full matrix
        assert asked["profile"] == "oltp"
        assert (asked["profiles"], asked["weights"]) == (
            ["oltp", "fio-randwrite-4k-j1"],
            [2.0, 1.0],
        )
        lines = list(pane.query_one("#probe-lines").lines)
        for line in _joint_answer().outcome_lines():  # the CLI's summary, per profile
            assert line in lines
        assert any(
            ln.startswith(
                "adaptive: profile oltp (weight 2): xfs defaults, sched none "
                "is best (within 1%) with probability 0.97"
            )
            for ln in lines
        )
        status = str(pane.query_one("#probe-status", Static).content)
        assert "matrix m-joint" in status
        assert (
            "oltp: leader xfs defaults, sched none, P(best within 1%) 0.97; "
            "fio-randwrite-4k-j1: leader ext4 defaults, sched none, P(best within 1%) 0.81"
            in status
        )
