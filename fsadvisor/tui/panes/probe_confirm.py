"""The confirmation before a real probe: it names the device, its size and model and what
formatting it destroys, and starts only once the device path is typed back exactly (the
CLI's rule, service.probing.device_confirmed). A scratch loop device holds nothing of the
user's, so it needs no typing (as ``fsadvisor probe --scratch``)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from fsadvisor.tui import calls


def format_bytes(n: int) -> str:
    """1.0 GiB, 256.0 GiB, 0 B: binary units, as lsblk shows sizes."""
    for unit, mult in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult:
            return f"{n / mult:.1f} {unit}"
    return f"{n} B"


def warning_text(
    target: str, preview: calls.ProbePreview, device: calls.BlockDevice | None, force: bool = False
) -> str:
    plan = preview.plan_text
    if device is None:
        return (
            f"Probe a scratch loop device ({target.partition(':')[2]}): a file in $TMPDIR "
            f"attached as a loop device, formatted and detached again; nothing of yours "
            f"is touched. {plan}."
        )
    what = ", ".join(x for x in (format_bytes(device.size_bytes), device.kind, device.model) if x)
    forced = ""
    if force:
        found = ", ".join(
            dict.fromkeys([*device.signatures, *([device.fstype] if device.fstype else [])])
        )
        forced = (
            f" FORCE: the {found} signature on it is overridden and will be destroyed "
            "with the filesystem it marks."
            if found
            else " FORCE: any filesystem or RAID signature on it will be destroyed "
            "(none was found)."
        )
    return (
        f"This DESTROYS all data on {device.path} ({what}): {device.contents}.{forced} "
        f"{plan}. Type the device path to continue."
    )


class ConfirmProbeScreen(ModalScreen[str | None]):
    """Dismissed with what was typed (the device path, or "" for scratch) or None."""

    BINDINGS = [Binding("escape", "back", "Do not probe")]

    def __init__(
        self,
        target: str,
        preview: calls.ProbePreview,
        device: calls.BlockDevice | None,
        force: bool = False,
    ) -> None:
        super().__init__()
        self.target, self.preview, self.device = target, preview, device
        self.force = force

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(
                Text(warning_text(self.target, self.preview, self.device, self.force)),
                id="confirm-text",
                classes="warning",
            )
            if self.device is not None:
                yield Input(placeholder=self.device.path, id="confirm-device")
            yield Static("", id="confirm-error")
            with Horizontal(id="confirm-buttons"):
                yield Button(
                    "Wipe and probe" if self.device else "Probe", id="confirm-ok", variant="error"
                )
                yield Button("Do not probe", id="confirm-cancel")

    def on_mount(self) -> None:
        self.query_one("#confirm-device" if self.device else "#confirm-cancel").focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._confirm()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "confirm-ok":
            self._confirm()
        else:
            self.dismiss(None)

    def _confirm(self) -> None:
        if self.device is None:
            self.dismiss("")
            return
        typed = self.query_one("#confirm-device", Input).value
        if not calls.device_confirmed(self.device.path, typed):
            msg = f"not confirmed ({typed!r} is not {self.device.path}); nothing was touched"
            self.query_one("#confirm-error", Static).update(Text(msg, style="bold red"))
            self.notify(msg, title="probe", severity="error", markup=False)
            return
        self.dismiss(typed)

    def action_back(self) -> None:
        self.dismiss(None)


class QuitWhileProbingScreen(ModalScreen[bool]):
    """``q`` while a probe runs: quitting cancels it (the same cleanup as Ctrl-C in the CLI:
    unmounted, a scratch device detached, the matrix left resumable), so ask first."""

    BINDINGS = [
        Binding("escape", "stay", "Keep probing"),
        Binding("n", "stay", show=False),
        Binding("y", "leave", show=False),
    ]

    def __init__(self, device: str | None) -> None:
        super().__init__()
        self.device = device

    def compose(self) -> ComposeResult:
        on = f" on {self.device}" if self.device else ""
        with Vertical(id="confirm-box"):
            yield Static(
                Text(
                    f"A probe is running{on}. Quitting cancels it: the running "
                    "command is stopped, the device unmounted (a scratch device "
                    "detached) and the matrix left for --resume. Quit? (y/n)"
                ),
                id="quit-text",
                classes="warning",
            )
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel the probe and quit", id="quit-ok", variant="error")
                yield Button("Keep probing", id="quit-stay")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "quit-ok")

    def action_stay(self) -> None:
        self.dismiss(False)

    def action_leave(self) -> None:
        self.dismiss(True)
