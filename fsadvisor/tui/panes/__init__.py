"""One module per tab of the TUI: profile, device, results, energy, history, probe."""

from textual.message import Message


class WorkerFailed(Message):
    """A pane's worker hit a domain error: the pane shows it as a one-line notification.
    Each pane subclasses it as ``Failed`` so its handler stays ``on_<pane>_failed``."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error
