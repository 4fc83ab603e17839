"""Benchmark: how well the model predicts a device it has not seen (issue 10 targets).

For every held-out device in STORE (default: each device with raw-device runs and at least 4
filesystem cells), fit on everything else -- the shipped seeds, the reference matrix, the other
devices -- plus only that device's raw-device runs, and score its filesystem cells; then again
with 10% and 20% of its cells given to the fit (scored on the rest only). Prints the figures
beside the device's own rep-to-rep noise and the issue's targets. Not a timed test.

This script does not measure: give it a store holding the held-out device's runs, e.g. a
direct-I/O loop device backed by a file on the VM's disk probed with >= 3 repetitions:

    fsadvisor probe --scratch 2G --scratch-dir /var/tmp --reps 3 ... --db /tmp/disk.db
    python benchmarks/fidelity.py --db /tmp/disk.db [--reference datasets/reference/runs.csv]

Usage:
    python benchmarks/fidelity.py --db STORE [--device ID ...] [--reference CSV] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys

# issue 10, "Targets": (share of the device's cells given, metric, bound, higher is better)
TARGETS = {
    0.0: [("median_abs_error", 0.25, False), ("ordered_right", 0.80, True)],
    0.2: [("median_abs_error", 0.10, False), ("ordered_right", 0.95, True),
          ("max_regret", 0.03, False)],
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="store with the held-out device's runs")
    ap.add_argument("--device", action="append", help="device identity to hold out")
    ap.add_argument("--reference", help="a reference runs.csv beyond the shipped one")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from fsadvisor.predict import validate
    from fsadvisor.predict.settings import ModelSettings
    from fsadvisor.store import open_store, reference

    store = open_store(args.db)
    store.ensure_seeded()
    obs = store.observations()  # seeds (with bounds), shipped reference matrix, probe cells
    if args.reference:
        obs += reference.load_observations(args.reference)
    devices = args.device or [d for d in validate.eligible_devices(obs)
                              if not d.startswith(("ram-loop:", "zram:"))
                              and any(o.device_id == d and o.source.startswith("probe ")
                                      for o in obs)]
    if not devices:
        print("no held-out device: the store has no probed device with raw-device runs and "
              "filesystem cells", file=sys.stderr)
        return 2
    reports = validate.leave_devices_out(obs, devices, ModelSettings.load(db=args.db))
    if args.json:
        json.dump(reports, sys.stdout, indent=1)
        print()
        return 0
    for r in reports:
        f = r.get("iops") or {}
        share = r["share_of_cells_given"]
        print(f"{r['device']}: {share:.0%} of its cells given, {r['cells_held_out']} held out")
        if not f.get("n"):
            print("  no IOPS cells held out")
            continue
        noise = f.get("rep_to_rep_cv_median")
        print(f"  IOPS median |error| {f['median_abs_error']:.1%}, p90 {f['p90_abs_error']:.1%}"
              f" (rep-to-rep cv {noise:.1%})" if noise is not None else "")
        if f["separable_pairs"]:
            print(f"  separable pairs ordered right: {f['ordered_right']:.1%} of "
                  f"{f['separable_pairs']}")
        if f["max_regret"] is not None:
            print(f"  worst per-workload regret: {f['max_regret']:.1%}")
        for key, bound, higher in TARGETS.get(share, []):
            got = f.get(key)
            if got is None:
                print(f"  target {key} {'>=' if higher else '<='} {bound:.0%}: no figure")
                continue
            ok = got >= bound if higher else got <= bound
            print(f"  target {key} {'>=' if higher else '<='} {bound:.0%}: "
                  f"{'met' if ok else 'MISSED'} ({got:.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
