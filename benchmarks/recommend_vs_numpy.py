"""Benchmark: `fsadvisor recommend --json` over >= 1,000 candidates vs `python3 -c 'import numpy'`.

Covers: the whole offline path (start-up, store open, model fit, ranking, JSON out).
Scenario: both commands run alternately in one process tree, REPEATS pairs, on the same
machine (the order within a pair alternates too, so neither always runs second); printed: the
per-pair ratio's median and min-max (the measure the target is set in: a ratio of two medians hides how
much one pair varies) and, for comparison, the ratio of the medians. Target: a
per-pair median of at most TARGET x (the start-up policy: plain code over start-up tricks
worth a few milliseconds, within this bound).

    python benchmarks/recommend_vs_numpy.py [--repeats 7] [--profile oltp]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from _cli import fsadvisor_cmd, import_floor, remove_scratch, scratch_env

REPEATS = 11  # pairs; the median damps one-off scheduler noise on 2 cores
TARGET = 2.5


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - t0, out.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=REPEATS)
    ap.add_argument("--profile", default="oltp")
    args = ap.parse_args()
    env = scratch_env()
    rec = fsadvisor_cmd("recommend", "--profile", args.profile, "--json")
    numpy_cmd = [sys.executable, "-c", "import numpy"]
    try:
        _, first = timed(rec, env)  # seeds the store and fits once, like a user's first run
        considered = json.loads(first)["candidates_considered"]
        t_rec, t_np = [], []
        for i in range(args.repeats):
            if i % 2 == 0:
                t_np.append(timed(numpy_cmd, env)[0])
                t_rec.append(timed(rec, env)[0])
            else:
                t_rec.append(timed(rec, env)[0])
                t_np.append(timed(numpy_cmd, env)[0])
    finally:
        remove_scratch(env)
    m_rec, m_np = statistics.median(t_rec), statistics.median(t_np)
    ratios = [r / n for r, n in zip(t_rec, t_np)]
    # The machine is shared: how busy it was during the run belongs with the figures.
    print(f"load average (1/5/15 min) at the end: "
          f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"candidates considered:             {considered}")
    print(f"python3 -c 'import numpy' median:  {m_np * 1000:8.1f} ms "
          f"(min-max {min(t_np) * 1000:.1f}-{max(t_np) * 1000:.1f})")
    print(f"fsadvisor recommend --json median: {m_rec * 1000:8.1f} ms "
          f"(min-max {min(t_rec) * 1000:.1f}-{max(t_rec) * 1000:.1f})")
    print(f"per-pair ratio median:             {statistics.median(ratios):8.2f}x "
          f"(min-max {min(ratios):.2f}-{max(ratios):.2f}; {len(ratios)} pairs; target <= {TARGET:g}x)")
    print(f"ratio of medians:                  {m_rec / m_np:8.2f}x")
    if statistics.median(ratios) > TARGET:
        why_missed(statistics.median(ratios), args.repeats, m_np)


def why_missed(ratio: float, repeats: int, m_np: float) -> None:
    """The part of a missed target that is start-up fsadvisor does not control: numpy plus
    the CLI framework (typer) imported by themselves, timed against numpy alone in the same
    alternating pairs; the rest is fsadvisor's own imports and work."""
    floor = import_floor("numpy, typer", repeats)
    print(f"target missed: {ratio:.2f}x. numpy + typer alone: {floor:.2f}x numpy "
          f"(median of {repeats} alternating pairs); fsadvisor's own imports and work: "
          f"{ratio - floor:.2f}x, ~{(ratio - floor) * m_np * 1000:.0f} ms")


if __name__ == "__main__":
    main()
