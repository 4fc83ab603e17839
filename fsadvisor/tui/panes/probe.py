"""The probe tab: choose a device from the machine's block devices (each with the probe's
safety verdict), preview the commands, or run the probe for real after a confirmation that
names the device and needs it typed back. Progress (cell, n/N, ETA, IOPS, watts and their
energy source, an IOPS sparkline) arrives from the thread worker as messages; Cancel stops
the probe with the cleanup Ctrl-C gets in the CLI; every measured cell re-ranks.

Nothing here formats anything itself: the worker calls service.probing.run_request (through
calls.run_probe), which refuses without root and repeats the safety verdict."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import (
    Button,
    Checkbox,
    DataTable,
    Input,
    Label,
    Log,
    ProgressBar,
    Sparkline,
    Static,
)

from fsadvisor.domain import Device, Profile
from fsadvisor.service.probe_options import ProbeOptions, RunChoices, declared
from fsadvisor.tui import calls
from fsadvisor.tui.panes import WorkerFailed
from fsadvisor.tui.panes.probe_confirm import ConfirmProbeScreen, format_bytes
from fsadvisor.tui.widgets import Box, NumberInput
from fsadvisor.service.probing import device_time_line

NOTE = "Probing FORMATS the device: pick one (Enter) or scratch; Preview runs nothing."

SCRATCH_KEY = "scratch"


DEFAULT_SCRATCH = "scratch:1G"


duration = calls.clock  # the CLI's too (service.probing.clock)


# Live samples kept for the sparkline: ten minutes at one a second is wider than any screen.
LIVE_POINTS = 600


def progress_text(
    e: calls.ProgressEvent,
    iops: float | None,
    watts: float | None,
    source: str | None,
    running: str | None,
    measured: bool = True,
    now: calls.ProgressEvent | None = None,
    leader: tuple[str, float | None] | None = None,
) -> str:
    """The status: what runs, n/N cells (an adaptive probe: device seconds against its
    budget, the ETA an upper bound: it stops once settled), the live reading of the running
    cell (``now``: block-layer completions, not fio's count), the last measured cell's IOPS
    and watts (with the energy source; "no meter" when that cell had none) and, adaptive,
    the leader and its confidence."""
    if not e.total:
        return "preparing: " + (e.message or "attaching, checking, choosing the energy meter")
    energy = (
        f"{watts:.1f} W ({source})"
        if watts is not None
        else f"no watts ({source})"
        if source
        else "no meter"
    )
    last = (
        (f"last cell {iops:,.0f} IOPS, {energy}" if iops is not None else f"last cell: {energy}")
        if measured
        else "no cell measured yet"
    )
    cell = f"running {running}" if running else "between cells"
    if e.unit == "s":
        head = f"{e.done}/{e.total} s device time  at most ETA {duration(e.eta_s)}"
    else:
        head = f"{e.done}/{e.total} cells  ETA {duration(e.eta_s)}"
    text = f"{head}  {cell}  |  "
    if now is not None and running:
        text += f"now: {calls.live_text(now)}  |  "
    text += last
    if leader is not None:
        conf = f", P(best within 1%) {leader[1]:.2f}" if leader[1] is not None else ""
        text += f"  |  leader {leader[0]}{conf}"
    return text


def leaders_text(decision) -> str:
    """Where an adaptive probe ended, for the status line: the leader and its confidence, or
    for several profiles (a JointDecision) each profile's."""
    answers = getattr(decision, "answers", None)
    if answers is None:
        return f"leader {decision.who}, P(best within 1%) {decision.confidence:.2f}"
    return "; ".join(
        f"{p}: leader {a.who}, P(best within 1%) {a.confidence:.2f}"
        for p, a in zip(decision.profiles, answers)
    )


# The probe options the form offers besides target, quick and profile (the rest take their
# defaults, or ``extra_options``), by their declared names (service.probe_options): each
# one's widget is "probe-" and its flag, and a blank field or an unticked box is the
# option's default. The adaptive probe's three are RunChoices, kept apart as the CLI keeps
# them (the request does not carry them).
FORM_OPTIONS = ("filesystems", "runtime_s", "schedulers", "workloads", "resume", "force")
ADAPTIVE_FORM = {"on": "adaptive", "budget": "budget", "target": "target_confidence"}
# Several profiles in one adaptive session (the CLI's repeated --profile): the form's more
# profiles join the "with profile" one, weighed by --profile-weights; blank: one profile.
JOINT_FORM = {"profiles": "probe-profiles", "weights": "probe-profile-weights"}
DECLARED = {d.name: d for d in declared(ProbeOptions) + declared(RunChoices)}


# The P(best) field's id is shorter than its flag (the stylesheet sizes it by that id).
FIELD_IDS = {"target_confidence": "probe-confidence"}


def field_id(name: str) -> str:
    """The id of the form's widget for the declared option ``name`` (``--fs`` ->
    ``probe-fs``)."""
    return FIELD_IDS.get(name) or "probe-" + DECLARED[name].flags[0].removeprefix("--")


# The profile's name in the "with profile" box, cut to what the form's row has room for at 80
# columns: the practical presets' names fit (rocksdb-ycsb-a: 14 characters); the long
# fio-*/fs-overhead-* ones are cut, and the box's tooltip gives them whole.
PROFILE_LABEL_MAX = 16


class ProbePane(Vertical):
    class PreviewRequested(Message):
        def __init__(self, target: str, quick: bool, with_profile: bool) -> None:
            super().__init__()
            self.target, self.quick, self.with_profile = target, quick, with_profile

    class ProbeRequested(Message):
        """The Probe button: the app adds the profile (and its PLP answer) and calls
        ``prepare``."""

        def __init__(self, target: str, quick: bool, with_profile: bool) -> None:
            super().__init__()
            self.target, self.quick, self.with_profile = target, quick, with_profile

    class Previewed(Message):
        def __init__(self, preview: calls.ProbePreview) -> None:
            super().__init__()
            self.preview = preview

    class DevicesListed(Message):
        def __init__(self, devices: list[calls.BlockDevice]) -> None:
            super().__init__()
            self.devices = devices

    class Prepared(Message):
        """The dry run of the chosen probe passed the safety verdict: ask for confirmation."""

        def __init__(
            self, job: dict, preview: calls.ProbePreview, device: calls.BlockDevice | None
        ) -> None:
            super().__init__()
            self.job, self.preview, self.device = job, preview, device

    class Progress(Message):
        def __init__(self, event: calls.ProgressEvent) -> None:
            super().__init__()
            self.event = event

    class Decided(Message):
        """An adaptive probe ended: where it stopped (service.adaptive.Decision, or for
        several profiles their JointDecision: an answer per profile)."""

        def __init__(self, decision) -> None:
            super().__init__()
            self.decision = decision

    class Finished(Message):
        def __init__(self, summary: calls.ProbeSummary | None) -> None:
            super().__init__()
            self.summary = summary

    class Ranked(Message):
        """A ranking with the runs measured so far: the app shows it on the results tab."""

        def __init__(self, recommendation) -> None:
            super().__init__()
            self.recommendation = recommendation

    class Failed(WorkerFailed):
        pass

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.devices: list[calls.BlockDevice] = []
        self.cancel_token: calls.Interruptions | None = (
            None  # calls.new_cancel() while a probe runs
        )
        self.summary: calls.ProbeSummary | None = None  # the last finished probe
        self.events: list[calls.ProgressEvent] = []  # of the running/last probe
        self.iops_history: list[float] = []  # fio's IOPS of each measured cell
        self.live_iops: list[float] = []  # the block layer's, one a second (the sparkline)
        self.decision = None  # an adaptive probe's last Decision
        # Extra ProbeRequest fields for every run and preview (schedulers, baseline, ...):
        # the form shows the common choices only; tests narrow a real probe with these.
        self.extra_options: dict = {}
        self._running_cell: str | None = None
        self._count: calls.ProgressEvent | None = None  # the last event counting cells or s
        self._now: calls.ProgressEvent | None = None  # the running cell's latest sample
        self._leader: tuple[str, float | None] | None = None
        self._last: tuple[float | None, float | None, str | None] = (None, None, None)
        self._measured = False  # a cell of this probe has ended ok
        self._device: Device | None = None  # the probed Device, inspected while it exists
        self._rank_with: tuple[Profile, int, str | None] | None = None

    def compose(self) -> ComposeResult:
        yield Static(NOTE, id="probe-note", classes="warning")
        table: DataTable[str] = DataTable(id="probe-devices", cursor_type="row", zebra_stripes=True)
        table.add_columns("device", "size", "kind / model", "probe?")
        yield table
        with Horizontal(classes="form-row"):
            yield Label("target", classes="field")
            yield Input(
                value=DEFAULT_SCRATCH,
                placeholder="device or scratch:2G",
                id="probe-target",
                tooltip="a whole block device (/dev/nvme1n1), or scratch:SIZE for a "
                "loop device on a file made for the probe",
            )
            yield Box("quick", value=True, id="probe-quick")
            yield Box("with profile", value=True, id="probe-profile")
        with Horizontal(classes="form-row"):
            yield Label("fs", classes="field")
            yield Input(
                value="",
                placeholder="all",
                id=field_id("filesystems"),
                tooltip="comma-separated; blank: all of " + DECLARED["filesystems"].cli_default,
            )
            yield Label("secs", classes="field")
            yield NumberInput(
                value="",
                placeholder="auto",
                id=field_id("runtime_s"),
                classes="num",
                tooltip="seconds per run; blank: the plan's (10 with quick)",
            )
            yield Button("Preview", id="probe-preview")
            yield Button("Probe", id="probe-start", variant="error")
            yield Button("Cancel", id="probe-cancel", disabled=True)
        with Horizontal(classes="form-row"):
            yield Label("sched", classes="field")
            yield Input(
                value="",
                placeholder="all",
                id=field_id("schedulers"),
                tooltip="comma-separated; blank: all of none,mq-deadline,kyber,bfq "
                "(none only where the device has no scheduler)",
            )
            yield Label("micro", classes="field")
            yield Input(value="", placeholder="all micro workloads", id=field_id("workloads"))
        with Horizontal(classes="form-row"):
            yield Box("adaptive", value=DECLARED["adaptive"].default, id=field_id("adaptive"))
            yield Label("budget", classes="field")
            yield NumberInput(
                value="",
                placeholder="auto",
                id=field_id("budget"),
                classes="num",
                tooltip="most device time (90s, 3m, 1h); blank: a fifth of "
                "the full matrix's estimate, calibration included",
            )
            yield Label("P(best)", classes="field")
            yield NumberInput(
                value=f"{DECLARED['target_confidence'].default:g}",
                id=field_id("target_confidence"),
                classes="num",
            )
            yield Box("resume", value=DECLARED["resume"].default, id=field_id("resume"))
            yield Box("force", value=DECLARED["force"].default, id=field_id("force"))
        with Horizontal(classes="form-row"):
            yield Label("more", classes="field")
            yield Input(
                value="",
                placeholder="presets or files, comma-separated",
                id=JOINT_FORM["profiles"],
                tooltip='more profiles measured with the "with profile" one in one '
                "adaptive session: one "
                "calibration, one budget, a cell profiles share run once, "
                "an answer per profile",
            )
            yield Label("weights", classes="field")
            yield Input(
                value="",
                placeholder="all 1",
                id=JOINT_FORM["weights"],
                classes="num",
                tooltip="how much each profile's answer counts (2,1: one per "
                'profile, the "with profile" one first)',
            )
        yield Static("", id="probe-status")
        # total 1, not None: an indeterminate bar animates, even before any probe
        yield ProgressBar(id="probe-progress", total=1, show_eta=False)
        yield Sparkline([], id="probe-iops")
        yield Static("", id="probe-command")
        yield Log(id="probe-lines", highlight=False, auto_scroll=False)

    def on_mount(self) -> None:
        self.reload_devices()

    def show_profile(self, ref: str | None) -> None:
        """Name the profile a probe "with profile" measures (the Profile tab's, as saved:
        a preset's name or a file's path), so the box says what it adds."""
        name = ref.rsplit("/", 1)[-1] if ref else None
        if name and len(name) > PROFILE_LABEL_MAX:
            name = name[: PROFILE_LABEL_MAX - 1] + "…"
        box = self.query_one("#probe-profile", Checkbox)
        box.label = f"with {name}" if name else "with profile"
        box.tooltip = f"probe the workload of profile {ref}" if ref else None

    # ------------------------------------------------------------------ device list

    def reload_devices(self) -> None:
        self._list_devices()

    @work(thread=True, exclusive=True, group="probe-devices")
    def _list_devices(self) -> None:
        try:
            devices = calls.block_devices()
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(f"cannot list block devices: {e}"))
            return
        self.post_message(self.DevicesListed(devices))

    def on_probe_pane_devices_listed(self, event: DevicesListed) -> None:
        self.devices = event.devices
        table = self.query_one("#probe-devices", DataTable)
        table.clear()
        table.add_row(
            "scratch loop device",
            self._scratch_size(),
            "file-backed loop",
            "allowed (a new loop device)",
            key=SCRATCH_KEY,
        )
        for d in event.devices:
            kind = f"{d.kind} {d.model}".strip()
            why = self.refusal(d)
            verdict = Text("allowed", style="bold green") if why is None else Text(why, style="red")
            table.add_row(d.path, format_bytes(d.size_bytes), kind, verdict, key=d.path)

    def _scratch_size(self) -> str:
        target = self.query_one("#probe-target", Input).value.strip()
        return target.partition(":")[2] if target.startswith("scratch:") else "1G"

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id != "probe-devices":
            return
        event.stop()
        key = event.row_key.value
        target = self.query_one("#probe-target", Input)
        if key == SCRATCH_KEY:
            target.value = f"scratch:{self._scratch_size()}"
        else:
            target.value = str(key)
            chosen = next((d for d in self.devices if d.path == key), None)
            why = self.refusal(chosen) if chosen is not None else None
            if why is not None:
                self.notify(why, title="probe: refused", severity="error", markup=False)

    def refusal(self, d: calls.BlockDevice) -> str | None:
        """Why ``d`` is not offered for a probe, or None: the service's verdict alone (the
        CLI's), which also refuses a loop device on a file that is not the user's."""
        return None if d.allowed else d.reason or "refused"

    # ------------------------------------------------------------------ preview

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._request()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "probe-preview":
            self._request()
        elif event.button.id == "probe-start":
            self.request_probe()
        elif event.button.id == "probe-cancel":
            self.cancel()

    def request_preview(self) -> None:
        """Preview with what the form holds (the command palette's "Probe preview")."""
        self._request()

    def _form(self) -> tuple[str, bool, bool]:
        return (
            self.query_one("#probe-target", Input).value,
            self.query_one("#probe-quick", Checkbox).value,
            self.query_one("#probe-profile", Checkbox).value,
        )

    def _request(self) -> None:
        self.post_message(self.PreviewRequested(*self._form()))

    def _options(self) -> dict:
        """The form as ``fsadvisor probe``'s options (ProbeRequest fields; blank fields are
        the probe's defaults), and ``adaptive``: --adaptive, --budget, --target-confidence
        and, when given, more profiles and their weights (JOINT_FORM)."""
        opts: dict = {}
        for name in FORM_OPTIONS:
            value = self._field(name)
            if value:  # blank or unticked: the option's default
                opts[name] = value
        opts["adaptive"] = {key: self._field(name) for key, name in ADAPTIVE_FORM.items()}
        for key, wid in JOINT_FORM.items():
            if value := self.query_one("#" + wid, Input).value.strip():
                opts["adaptive"][key] = value
        return {**opts, **self.extra_options}

    def _field(self, name: str) -> str | bool:
        """The form's value of the declared option ``name``: a box ticked or not, a field's
        text without its surrounding blanks."""
        widget = self.query_one("#" + field_id(name))
        if isinstance(widget, Checkbox):
            return widget.value
        assert isinstance(widget, Input)
        return widget.value.strip()

    def start(
        self, target: str, profile: str | None, quick: bool, plp: str, db: str | None
    ) -> None:
        self.query_one("#probe-command", Static).update(Text(f"planning {target} ..."))
        self._preview(target, profile, quick, plp, db, self._options())

    @work(thread=True, exclusive=True, group="probe")
    def _preview(
        self, target: str, profile: str | None, quick: bool, plp: str, db: str | None, options: dict
    ) -> None:
        try:
            preview = calls.probe_preview(
                target, profile=profile, quick=quick, plp=plp, db=db, **options
            )
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        self.post_message(self.Previewed(preview))

    def on_probe_pane_previewed(self, event: Previewed) -> None:
        p = event.preview
        self.query_one("#probe-command", Static).update(
            Text(f"{p.plan_text}. To run it: {p.command}")
        )
        if not self.running:  # an earlier "not started: ..." is not about this plan
            self.query_one("#probe-status", Static).update(Text("previewed: nothing run"))
        log = self.query_one("#probe-lines", Log)
        log.clear()
        # The preview is read from its first command; the log then follows what is written
        # to it (a run's cells), as a log does.
        log.auto_scroll = False
        log.write_lines(p.lines)
        log.scroll_home(animate=False)
        log.auto_scroll = True

    def on_probe_pane_failed(self, event: Failed) -> None:
        self.query_one("#probe-command", Static).update(Text(f"cannot run: {event.error}"))
        if not self.running:
            self.query_one("#probe-status", Static).update(Text(f"not started: {event.error}"))
        self.notify(event.error, title="probe", severity="error", markup=False)

    # ------------------------------------------------------------------ a real probe

    @property
    def running(self) -> bool:
        return self.cancel_token is not None

    @property
    def probed_device(self) -> str | None:
        """The device the running probe reported (a scratch loop's /dev/loopN), if any yet."""
        return next((e.device for e in reversed(self.events) if e.device), None)

    def request_probe(self) -> None:
        if self.running:
            self.notify("a probe is running: cancel it first", title="probe", severity="warning")
            return
        self.post_message(self.ProbeRequested(*self._form()))

    def prepare(
        self,
        target: str,
        profile_ref: str | None,
        quick: bool,
        plp: str,
        db: str | None,
        rank_profile: Profile | None = None,
        top: int = 5,
    ) -> None:
        """Check everything a probe needs before asking for confirmation: root first (one
        line, nothing starts), then the dry run and the safety verdict, in a worker."""
        why = calls.root_problem()
        if why:
            self.query_one("#probe-status", Static).update(Text(f"not started: {why}"))
            self.notify(why, title="probe: not started", severity="error", markup=False)
            return
        self._rank_with = (rank_profile, top, db) if rank_profile is not None else None
        job = {
            "target": target,
            "profile": profile_ref,
            "quick": quick,
            "plp": plp,
            "db": db,
            **self._options(),
        }
        if job.get("force") and target.strip().startswith("scratch:"):
            why = (
                "force is for a device's leftover filesystem signature; a scratch loop "
                "device is new and has none"
            )
            self.query_one("#probe-status", Static).update(Text(f"not started: {why}"))
            self.notify(why, title="probe: not started", severity="error", markup=False)
            return
        self.query_one("#probe-status", Static).update(Text(f"checking {target} ..."))
        self._prepare(job)

    @work(thread=True, exclusive=True, group="probe")
    def _prepare(self, job: dict) -> None:
        try:
            preview = calls.probe_preview(**job)
            target = job["target"].strip()
            device = (
                None
                if target.startswith("scratch:")
                else calls.block_device(target, force=True)
                if job.get("force")
                else calls.block_device(target)
            )
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        self.post_message(self.Prepared(job, preview, device))

    def on_probe_pane_prepared(self, event: Prepared) -> None:
        self.query_one("#probe-status", Static).update(Text("waiting for confirmation"))
        self.on_probe_pane_previewed(self.Previewed(event.preview))

        def answered(typed: str | None) -> None:
            if typed is None:
                self.query_one("#probe-status", Static).update(Text("not started: cancelled"))
                return
            self.launch(event.job, None if event.device is None else typed)

        self.app.push_screen(
            ConfirmProbeScreen(
                event.job["target"].strip(),
                event.preview,
                event.device,
                force=bool(event.job.get("force")),
            ),
            answered,
        )

    def launch(self, job: dict, confirm: str | None) -> None:
        """Start the confirmed probe in a thread worker."""
        self.cancel_token = calls.new_cancel()
        self.events, self.iops_history, self.live_iops, self.summary = [], [], [], None
        self._running_cell, self._last, self._device = None, (None, None, None), None
        self._count = self._now = self._leader = self.decision = None
        self._measured = False
        self.query_one("#probe-iops", Sparkline).data = []
        self.query_one("#probe-progress", ProgressBar).update(total=1, progress=0)
        self.query_one("#probe-start", Button).disabled = True
        self.query_one("#probe-cancel", Button).disabled = False
        self.query_one("#probe-status", Static).update(Text(f"starting {job['target']} ..."))
        # The log now follows the run (the preview's commands were shown before the
        # confirmation): cells as they end, notes, the cleanup.
        log = self.query_one("#probe-lines", Log)
        log.clear()
        log.auto_scroll = True
        log.write_line(f"probe of {job['target']} (confirmed); cells as they end:")
        self._run(job, confirm, self.cancel_token)

    @work(thread=True, exclusive=True, group="probe-run")
    def _run(self, job: dict, confirm: str | None, token) -> None:
        job = dict(job)
        adaptive = job.pop("adaptive", None)
        try:
            profiles, weights = calls.joint_choice(job.get("profile"), adaptive)
            if profiles:
                job["profile"] = profiles[0]
            request = calls.probe_request(job.pop("target"), **job)
            if len(profiles) > 1:  # one session for all of them, adaptive as in the CLI
                result = calls.run_adaptive_probe(
                    request, adaptive, confirm, self._on_progress, token, profiles, weights
                )
                self.post_message(self.Decided(result.joint))
                summary = result.probe
            elif calls.runs_adaptively(request, adaptive):
                result = calls.run_adaptive_probe(
                    request, adaptive, confirm, self._on_progress, token
                )
                self.post_message(self.Decided(result.decision))
                summary = result.probe
            else:
                summary = calls.run_probe(request, confirm, self._on_progress, token)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            self.post_message(self.Finished(None))
            return
        self.post_message(self.Finished(summary))

    def _on_progress(self, e: calls.ProgressEvent) -> None:
        # In the probe's thread, between its steps: the device exists now (a scratch loop
        # device is detached at the end), so the ranking's device is inspected here, once.
        if e.device and self._device is None and self._rank_with is not None:
            try:
                self._device = calls.inspect(e.device)
            except calls.USER_ERRORS:
                self._device = None
        self.post_message(self.Progress(e))
        if e.kind == "cell-end" and e.status == "ok" and self._device is not None:
            self._rank(self._device)

    @work(thread=True, exclusive=True, group="probe-rank")
    def _rank(self, device) -> None:
        if self._rank_with is None:
            return
        profile, top, db = self._rank_with
        try:
            rec = calls.recommend(profile, device, top=top, db=db)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(f"re-ranking: {e}"))
            return
        self.post_message(self.Ranked(rec))

    def on_probe_pane_progress(self, event: Progress) -> None:
        e = event.event
        if e.kind == "sample":
            # once a second while a cell's benchmark runs: the sparkline and the "now"
            # reading; its counts are the matrix's cells, never an adaptive probe's seconds
            self._now = e
            self.live_iops.append(e.iops or 0.0)
            self.live_iops = self.live_iops[-LIVE_POINTS:]
            self.query_one("#probe-iops", Sparkline).data = list(self.live_iops)
            self._show_status(e)
            return
        self.events.append(e)
        log = self.query_one("#probe-lines", Log)
        if e.leader:
            self._leader = (e.leader, e.confidence)
        if e.kind == "cell-start":
            self._running_cell = e.cell
        elif e.kind == "cell-end":
            self._running_cell = None
            why = f": {e.message}" if e.message and e.status != "ok" else ""
            log.write_line(f"{e.status:<11} {e.cell}{why}")
            self._now = None  # that reading was of the cell that ended
            if e.iops is not None:
                self.iops_history.append(e.iops)
            if e.status == "ok":
                self._last, self._measured = (e.iops, e.watts, e.energy_source), True
        elif e.kind in ("note", "cleanup"):
            log.write_line(("cleanup: " if e.kind == "cleanup" else "") + e.message)
        if e.total:
            self._count = e
            self.query_one("#probe-progress", ProgressBar).update(total=e.total, progress=e.done)
        self._show_status(e)

    def _show_status(self, e: calls.ProgressEvent) -> None:
        # an adaptive probe's notes carry no counts: the last counting event stands
        self.query_one("#probe-status", Static).update(
            Text(
                progress_text(
                    self._count or e,
                    *self._last,
                    self._running_cell,
                    self._measured,
                    now=self._now,
                    leader=self._leader,
                )
            )
        )

    def on_probe_pane_decided(self, event: Decided) -> None:
        self.decision = d = event.decision
        if d is None:
            return
        for line in d.outcome_lines():
            self.query_one("#probe-lines", Log).write_line(line)

    def on_probe_pane_finished(self, event: Finished) -> None:
        self.cancel_token = None
        self.query_one("#probe-start", Button).disabled = False
        self.query_one("#probe-cancel", Button).disabled = True
        s = self.summary = event.summary
        if s is None:
            return
        ok = s.count("ok")
        text = (
            f"matrix {s.matrix_id} on {s.device}: {ok} ok, {s.count('failed')} failed, "
            f"{s.count('skipped')} skipped of {s.total} cells in {duration(s.wall_s)}"
        )
        if s.interrupted:
            text += f"; interrupted ({s.interrupted}): cleaned up, --resume continues it"
        if self.decision is not None:
            text += "; " + leaders_text(self.decision)
        self.query_one("#probe-status", Static).update(Text(text))
        self.query_one("#probe-lines", Log).write_line(text)
        # the CLI's own summary line
        if (used := device_time_line(s.to_dict())) is not None:
            self.query_one("#probe-lines", Log).write_line(used)
        self.notify(
            text,
            title="probe",
            severity="warning" if s.interrupted else "information",
            markup=False,
        )
        self.reload_devices()

    def cancel(self) -> None:
        """The Cancel button: the probe stops as on Ctrl-C in the CLI (same cleanup)."""
        if self.cancel_token is None:
            return
        self.cancel_token.cancel("cancelled from the TUI")
        self.query_one("#probe-cancel", Button).disabled = True
        self.query_one("#probe-status", Static).update(
            Text("cancelling: stopping the running command, then unmounting and detaching ...")
        )

    def on_unmount(self) -> None:
        # Quitting the app mid-probe cancels it: the worker thread still runs the cleanup.
        if self.cancel_token is not None:
            self.cancel_token.cancel("cancelled: the TUI quit")
