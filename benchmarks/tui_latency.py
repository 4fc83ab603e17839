"""Key press -> live table redrawn, in the TUI's what-if form (target <= 100 ms).

Drives the real app headless with Textual's Pilot against a fresh store in a temp dir (so
the fit is the shipped data's, cached once like a user's second start). For each shipped
preset (or those named with --presets) it measures two kinds of edit:

* constraint: a digit typed into "min IOPS" (refilters the cached predictions), and
  taken back again (constraint-back);
* workload:   a digit typed into "jobs", a job count not asked before (predicts again,
  never refits); taking it back (workload-back) finds that workload's predictions kept.

A sample runs from just before the key is pressed until the screen refresh after the live
table was filled (the app stamps ``live_drawn_at`` in a call_after_refresh of that
update). Pilot's own ``press`` returns later than that (it waits for the app to go idle),
so its return is not the end of a sample. Prints median and p90 per kind, in ms, and the
load average before and after (other work on the machine moves these figures).

    python benchmarks/tui_latency.py [--presets oltp,web-static] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time


def _p90(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]


async def _wait_live(app, pilot, generation: int, timeout_s: float = 30.0) -> None:
    deadline = time.perf_counter() + timeout_s
    while app.live_generation <= generation or app._live_busy or app._live_wanted:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the live re-rank did not finish: gen {app.live_generation} <= {generation}, busy {app._live_busy}, wanted {app._live_wanted}, focus {app.focused}")
        await asyncio.sleep(0.001)
    await pilot.pause()  # the handler's table update is rendered on the next refresh


async def _measure(presets: list[str] | None, rounds: int) -> dict[str, list[float]]:
    from textual.widgets import Input, OptionList

    from fsadvisor.tui.app import FsAdvisorApp

    samples: dict[str, list[float]] = {}
    app = FsAdvisorApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await _wait_live(app, pilot, -1)
        options = app.query_one("#presets", OptionList)
        names = [options.get_option_at_index(i).id for i in range(options.option_count)]
        for name in (presets or names):
            options.highlighted = options.get_option_index(name)
            await _wait_live(app, pilot, app.live_generation - 1)
            await pilot.pause()
            await _wait_live(app, pilot, app.live_generation - 1)
            # constraint: a digit typed and taken back (both refilter cached predictions);
            # workload: jobs "16" -> "161", "162", ... each a workload not seen before (the
            # session keeps a few workloads' predictions, so taking a digit back is a cache
            # hit: those presses are reported apart as "workload-back").
            for kind, wid in (("constraint", "#min-iops"), ("workload", "#wl-jobs")):
                box = app.query_one(wid, Input)
                box.focus()
                await pilot.pause()
                box.selection = type(box.selection).cursor(len(box.value))  # append, not replace
                for i in range(rounds):
                    digit = str(1 + i % 9)
                    for key, label in ((digit, kind), ("backspace", f"{kind}-back")):
                        gen = app.live_generation
                        t0 = time.perf_counter()
                        await pilot.press(key)
                        await _wait_live(app, pilot, gen)
                        while app.live_drawn_at < t0:  # this press's redraw, not the last one
                            await asyncio.sleep(0.001)
                        samples.setdefault(label, []).append((app.live_drawn_at - t0) * 1000)
    return samples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", help="comma-separated preset names (default: all shipped)")
    ap.add_argument("--rounds", type=int, default=2, help="key pairs per preset and kind")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fsadvisor-tui-latency-")
    os.environ["FSADVISOR_DB"] = os.path.join(tmp, "fsadvisor.db")
    os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
    load_before = os.getloadavg()
    samples = asyncio.run(_measure(args.presets.split(",") if args.presets else None,
                                   args.rounds))
    load_after = os.getloadavg()
    for kind, xs in samples.items():
        print(f"{kind:>15}: n={len(xs)} median {statistics.median(xs):.0f} ms, "
              f"p90 {_p90(xs):.0f} ms, max {max(xs):.0f} ms")
    print(f"load average (1/5/15 min): before {' '.join(f'{x:.2f}' for x in load_before)}, "
          f"after {' '.join(f'{x:.2f}' for x in load_after)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
