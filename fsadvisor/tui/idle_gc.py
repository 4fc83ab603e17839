"""Full garbage collections off the key path: the live what-if's p90 was Python's
generation-2 collections, each walking every long-lived object of the session.

Profiled with benchmarks/tui_latency.py on a 2-core machine: a full collection over the
loaded session (presets, the fitted model, the device context, the widgets: hundreds of
thousands of objects) took longer than the key-press target and landed inside key presses;
with those frozen, the collections of what a session adds afterwards (each workload's
predictions and rankings) still took a good part of it. So, once the first ranking is on screen,
everything is collected once and frozen out of later collections, automatic full
collections are switched off (generations 0 and 1 still run, and free most garbage), and a
full collection runs when the user has paused for ``IDLE_S``. ``stop()`` puts the
thresholds back and unfreezes, so an app run inside a longer process (the tests) leaves
nothing pinned.
"""

from __future__ import annotations

import gc
import time
from typing import Callable

IDLE_S = 1.0  # a pause in typing this long: a full collection is not in anyone's way
# Generation-1 collections before an automatic full one: never in a session's lifetime
# (CPython runs a full collection when this count is exceeded).
NEVER = 1 << 30


class IdleCollector:
    def __init__(self, idle_s: float = IDLE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_s = idle_s
        self.clock = clock
        self.active = False
        self.dirty = False  # something ran since the last full collection
        self.last_activity = 0.0
        self.collections = 0  # full collections run at idle
        self._saved: tuple[int, int, int] | None = None

    def start(self) -> None:
        """Collect once, freeze what survives, switch off automatic full collections."""
        if self.active:
            return
        gc.collect()
        gc.freeze()
        self._saved = gc.get_threshold()
        gc.set_threshold(self._saved[0], self._saved[1], NEVER)
        self.active = True

    def activity(self) -> None:
        """A ranking ran (garbage was made): collect at the next pause."""
        self.dirty = True
        self.last_activity = self.clock()

    def tick(self) -> bool:
        """Called periodically: a full collection if the user has paused; True if it ran."""
        if not (self.active and self.dirty) or self.clock() - self.last_activity < self.idle_s:
            return False
        gc.collect()
        self.dirty = False
        self.collections += 1
        return True

    def stop(self) -> None:
        if not self.active:
            return
        if self._saved is not None:
            gc.set_threshold(*self._saved)
        gc.unfreeze()
        self.active = False
