"""The live what-if's p90 was full garbage collections walking the session's long-lived
objects (100-200 ms each here, benchmarks/tui_latency.py): once the first ranking is on
screen they are collected once and frozen out of later collections; quitting unfreezes
them, so an app run inside a longer process (these tests) leaves nothing pinned."""

from __future__ import annotations

import gc
import time

import pytest

from fsadvisor.tui.app import FsAdvisorApp


@pytest.mark.asyncio
async def test_the_first_live_ranking_freezes_the_session_and_quitting_gives_it_back(monkeypatch):
    assert gc.get_freeze_count() == 0
    freezes = []
    real_freeze = gc.freeze
    monkeypatch.setattr(gc, "freeze", lambda: (freezes.append(time.monotonic()), real_freeze()))
    app = FsAdvisorApp()
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 60
        while app.live_drawn_at == 0.0:
            assert time.monotonic() < deadline, "no live ranking was drawn"
            await pilot.pause(0.05)
        await pilot.pause()
        assert app.gc_frozen and gc.get_freeze_count() > 10_000 and len(freezes) == 1
        # later rankings do not freeze again (that would pin their garbage cycles)
        gen = app.live_generation
        app.query_one("#min-iops").value = "5"
        while app.live_generation == gen:
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        await pilot.pause()
        assert len(freezes) == 1
    assert gc.get_freeze_count() == 0 and not app.gc_frozen
