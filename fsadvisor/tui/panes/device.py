"""Step 2: the target device: a spec such as nvme:1.92T, or a block device path that is
inspected read-only (never opened for writing), and how many configurations to show."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Label, Static
from textual.worker import get_current_worker

from fsadvisor.errors import FsAdvisorError
from fsadvisor.tui.panes import WorkerFailed
from fsadvisor.tui import calls, present
from fsadvisor.tui.calls import DEFAULT_DEVICE_SPEC
from fsadvisor.tui.widgets import NumberInput

DEFAULT_TOP = 5


class DevicePane(Vertical):
    class Inspected(Message):
        def __init__(self, text) -> None:
            super().__init__()
            self.text = text

    class Failed(WorkerFailed):
        pass

    def compose(self) -> ComposeResult:
        yield Label(
            "Target device: a library drive name (fsadvisor devices list, e.g. "
            "samsung-pm9a3-3.84tb-u2), a spec like nvme:1.92T or sata-ssd:480G, or a block "
            "device path (read-only inspection)",
            classes="section",
        )
        with Horizontal(classes="form-row"):
            yield Label("device", classes="field")
            yield Input(value=DEFAULT_DEVICE_SPEC, id="device-spec")
            yield Button("Inspect", id="inspect")
        with Horizontal(classes="form-row"):
            yield Label("top N", classes="field")
            yield NumberInput(value=str(DEFAULT_TOP), id="top", type="integer")
        yield Static("press Inspect (or Enter) to read the device", id="device-info")

    def choices(self) -> tuple[str, int]:
        """(device spec or path, top N) as typed; FsAdvisorError when N is not a number."""
        spec = self.query_one("#device-spec", Input).value.strip() or DEFAULT_DEVICE_SPEC
        text = self.query_one("#top", Input).value.strip()
        try:
            top = int(text) if text else DEFAULT_TOP
        except ValueError:
            raise FsAdvisorError(f"top N must be a whole number, not {text[:20]!r}") from None
        return spec, top

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.inspect_device()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.inspect_device()

    def inspect_device(self) -> None:
        spec = self.query_one("#device-spec", Input).value.strip() or DEFAULT_DEVICE_SPEC
        self.query_one("#device-info", Static).update(Text(f"reading {spec} ..."))
        self._inspect(spec)

    @work(thread=True, exclusive=True, group="device")
    def _inspect(self, spec: str) -> None:
        worker = get_current_worker()
        try:
            d = calls.device(spec)
        except calls.USER_ERRORS as e:
            self.post_message(self.Failed(str(e)))
            return
        if not worker.is_cancelled:
            self.post_message(
                self.Inspected(present.device_text(d.device, d.ag_range, d.ag_default))
            )

    def on_device_pane_inspected(self, event: Inspected) -> None:
        self.query_one("#device-info", Static).update(event.text)

    def on_device_pane_failed(self, event: Failed) -> None:
        self.query_one("#device-info", Static).update(Text(f"not usable: {event.error}"))
        self.notify(event.error, title="device", severity="error", markup=False)
