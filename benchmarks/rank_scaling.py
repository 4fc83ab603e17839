"""Benchmark: in-process ranking time per candidate at 1k, 10k and 60k candidates.

Covers: fsadvisor.predict.rank.rank (filtering, predict_many, _order, building the top
results) with a fitted model already in memory (no start-up, no fit). Scenario: the oltp
preset on a 1 TB NVMe with PLP confirmed (so risky options are candidates too); the
candidate lists are the catalog's full space (~1,300 configurations), repeated or cut to
N; the copies beyond the catalog differ in a commit=SECONDS mount option, so every one is
a distinct configuration but the feature set stays the catalog's (see _grow). Alternating
sizes per round; the median and min-max of microseconds per candidate are printed, and
the ratio of per-candidate cost at the largest vs the smallest size (1.0 = linear).
Target: linear, <= 10 us per candidate at 10k.

    python benchmarks/rank_scaling.py [--rounds 5] [--sizes 1000,10000,60000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from fsadvisor import catalog
from fsadvisor.domain import FsConfig
from fsadvisor.predict.rank import rank
from fsadvisor.service import advice


def _grow(base: list[FsConfig], n: int) -> list[FsConfig]:
    """``n`` distinct configurations: the catalog's, then copies with a ``commit=SECONDS``
    mount option (6 s, 7 s, ...): distinct configurations (the ranking collapses equal
    ones) that all map to the one commit-interval feature, as a larger real candidate space
    would (more combinations of known options, not new feature names)."""
    # Below the catalog's size, an even stride through it: the same mix of filesystems at
    # every size (the catalog lists ext4 first; its first 1,000 would be a cheaper mix).
    out = [base[i * len(base) // n] for i in range(n)] if n < len(base) else list(base)
    k = 0
    while len(out) < n:
        for cfg in base:
            if len(out) >= n:
                break
            out.append(cfg.with_(mount=cfg.mount + (f"commit={6 + k}",)))
        k += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="1000,10000,60000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    model = advice.get_model()
    prof = advice.get_profile("oltp")
    dev = advice.resolve_device("nvme:1T", "yes")
    base = catalog.candidates(dev.size_bytes, sector_size=dev.logical_block_size)
    lists = {n: _grow(base, n) for n in sizes}
    rank(model, prof, dev, candidates=lists[sizes[0]])  # warm caches (mechanisms, priors)
    per: dict[int, list[float]] = {n: [] for n in sizes}
    for r in range(args.rounds):
        for n in (sizes if r % 2 == 0 else sizes[::-1]):
            t0 = time.perf_counter()
            rank(model, prof, dev, candidates=lists[n])
            per[n].append((time.perf_counter() - t0) / n * 1e6)
    # The machine is shared: how busy it was during the run belongs with the figures.
    print(f"load average (1/5/15 min) at the end: "
          f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"catalog space: {len(base)} configurations; rounds: {args.rounds}")
    print(f"{'candidates':>10} {'median us/cand':>15} {'min-max':>17}")
    for n in sizes:
        print(f"{n:>10} {statistics.median(per[n]):>15.2f} "
              f"{min(per[n]):>8.2f}-{max(per[n]):<8.2f}")
    lo, hi = sizes[0], sizes[-1]
    print(f"per-candidate cost at {hi} / at {lo}: "
          f"{statistics.median(per[hi]) / statistics.median(per[lo]):.2f} (1.0 = linear); "
          f"target <= 10 us/candidate at 10000")


if __name__ == "__main__":
    main()
