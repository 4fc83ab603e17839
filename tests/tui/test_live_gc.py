"""The live what-if's p90 was full garbage collections walking the session's long-lived
objects (100-200 ms each here, benchmarks/tui_latency.py): fsadvisor/tui/idle_gc.py
freezes the loaded session once the first ranking is on screen, switches off automatic
full collections and runs them in the user's pauses; quitting puts everything back, so
an app run inside a longer process (these tests) leaves nothing pinned."""

from __future__ import annotations

import gc
import time

import pytest

from fsadvisor.tui.app import FsAdvisorApp
from fsadvisor.tui.idle_gc import NEVER, IdleCollector


@pytest.fixture
def restore_gc():
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)
    gc.unfreeze()


def test_full_collections_run_only_after_a_pause(restore_gc, monkeypatch):
    now = {"t": 100.0}
    full = []
    real_collect = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *a: full.append(now["t"]) or real_collect(*a))
    saved = gc.get_threshold()
    c = IdleCollector(idle_s=1.0, clock=lambda: now["t"])
    assert not c.tick()  # not started: nothing
    c.start()
    assert gc.get_freeze_count() > 0 and gc.get_threshold() == (saved[0], saved[1], NEVER)
    assert full == [100.0]  # collected once before freezing
    c.activity()
    now["t"] = 100.5
    assert not c.tick()  # typing goes on: no full collection in its way
    now["t"] = 101.0
    assert c.tick() and full == [100.0, 101.0] and c.collections == 1
    now["t"] = 105.0
    assert not c.tick()  # nothing ran since: nothing to collect
    c.stop()
    assert gc.get_threshold() == saved and gc.get_freeze_count() == 0
    c.stop()  # idempotent


@pytest.mark.asyncio
async def test_the_app_freezes_once_after_the_first_ranking_and_gives_it_back():
    assert gc.get_freeze_count() == 0
    saved = gc.get_threshold()
    app = FsAdvisorApp()
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 60
        while app.live_drawn_at == 0.0:
            assert time.monotonic() < deadline, "no live ranking was drawn"
            await pilot.pause(0.05)
        await pilot.pause()
        assert app.collector.active and gc.get_freeze_count() > 10_000
        assert gc.get_threshold()[2] == NEVER
        gen = app.live_generation
        app.query_one("#min-iops").value = "5"
        while app.live_generation == gen:
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        # the pause after the edit gets its full collection (the interval timer's tick)
        while app.collector.collections == 0:
            assert time.monotonic() < deadline, "no full collection in the pause"
            await pilot.pause(0.1)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == saved
    assert not app.collector.active
