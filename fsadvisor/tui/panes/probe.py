"""A dry run of a probe: the commands ``fsadvisor probe`` would execute, and the command
line to run it for real. The TUI never formats anything; a real probe needs root and the
device typed back, which the CLI asks for."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Checkbox, Input, Label, Log, Static

from fsadvisor.tui.panes import WorkerFailed
from fsadvisor.tui import calls

NOTE = ("Preview only: nothing below is executed. A real probe FORMATS the device; run the "
        "command shown in a root shell, which asks you to type the device path before "
        "wiping it.")


class ProbePane(Vertical):
    class PreviewRequested(Message):
        def __init__(self, target: str, quick: bool, with_profile: bool) -> None:
            super().__init__()
            self.target, self.quick, self.with_profile = target, quick, with_profile

    class Previewed(Message):
        def __init__(self, preview: calls.ProbePreview) -> None:
            super().__init__()
            self.preview = preview

    class Failed(WorkerFailed):
        pass

    def compose(self) -> ComposeResult:
        yield Static(NOTE, id="probe-note", classes="warning")
        with Horizontal(classes="form-row"):
            yield Label("target", classes="field")
            yield Input(value="scratch:1G", placeholder="/dev/nvme1n1 or scratch:2G",
                        id="probe-target")
            yield Checkbox("quick", value=True, id="probe-quick")
            yield Checkbox("with profile", value=True, id="probe-profile")
            yield Button("Preview", id="probe-preview")
        yield Static("", id="probe-command")
        yield Log(id="probe-lines", highlight=False, auto_scroll=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._request()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self._request()

    def request_preview(self) -> None:
        """Preview with what the form holds (the command palette's "Probe preview")."""
        self._request()

    def _request(self) -> None:
        self.post_message(self.PreviewRequested(
            self.query_one("#probe-target", Input).value,
            self.query_one("#probe-quick", Checkbox).value,
            self.query_one("#probe-profile", Checkbox).value))

    def start(self, target: str, profile: str | None, quick: bool, plp: str,
              db: str | None) -> None:
        self.query_one("#probe-command", Static).update(Text(f"planning {target} ..."))
        self._preview(target, profile, quick, plp, db)

    @work(thread=True, exclusive=True, group="probe")
    def _preview(self, target: str, profile: str | None, quick: bool, plp: str,
                 db: str | None) -> None:
        try:
            preview = calls.probe_preview(target, profile=profile, quick=quick, plp=plp, db=db)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        self.post_message(self.Previewed(preview))

    def on_probe_pane_previewed(self, event: Previewed) -> None:
        p = event.preview
        self.query_one("#probe-command", Static).update(
            Text(f"{p.cells} cells, about {p.estimated_s / 60:.0f} min. To run it: {p.command}"))
        log = self.query_one("#probe-lines", Log)
        log.clear()
        log.write_lines(p.lines)
        log.scroll_home(animate=False)

    def on_probe_pane_failed(self, event: Failed) -> None:
        self.query_one("#probe-command", Static).update(Text(f"cannot plan: {event.error}"))
        self.notify(event.error, title="probe", severity="error", markup=False)
