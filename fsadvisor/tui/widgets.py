"""Small variants of Textual's own widgets the forms use, so that what a field shows is what it
holds, and the app's character keys still act from a field that could never hold that character."""

from __future__ import annotations

from textual import events
from textual.widgets import Checkbox, Input

# Characters no number, size (4k, 1M, 2GiB), duration (90s, 3m, 1h) or probability contains:
# typed in a numeric field each is the app's key (r recommends, ? shows the help), not text.
# (q is not one: a slip of the finger in a field must not quit.)
ACTION_CHARACTERS = frozenset("r?")


class NumberInput(Input):
    """An Input for a number, size or duration. ``r`` and ``?`` typed into it act as the
    app's keys (recommend, help) instead of being inserted, since neither can be part of the
    value."""

    def check_consume_key(self, key: str, character: str | None) -> bool:
        if character in ACTION_CHARACTERS:
            return False
        return super().check_consume_key(key, character)

    async def _on_key(self, event: events.Key) -> None:
        # Textual calls each class's _on_key along the MRO: for any other key Input's own
        # (after this one) inserts it. For an action character, Input's is skipped
        # (prevent_default) and the binding the screen has for the key runs, as it would
        # outside a field.
        if event.character not in ACTION_CHARACTERS:
            return
        event.stop()
        event.prevent_default()
        active = self.screen.active_bindings.get(event.key)
        if active is not None and active.enabled:
            await self.app.run_action(active.binding.action, active.node)


class Box(Checkbox):
    """Textual's Checkbox, with the X drawn only when the box is ticked. Textual tells on from
    off by colour alone, which a monochrome terminal (or tmux capture) loses: ``▐X▌`` either
    way."""

    BUTTON_INNER = " "

    def watch_value(self) -> None:
        self.BUTTON_INNER = "X" if self.value else " "
        super().watch_value()  # the -on class and the Changed message

    def on_mount(self) -> None:
        # value is not reactive at construction (init=False): a box built ticked shows it
        self.BUTTON_INNER = "X" if self.value else " "
        self.refresh()
