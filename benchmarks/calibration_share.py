"""Benchmark: what the adaptive probe's default budget spends on a device's first profile,
the calibration included, at the probe's default settings (30 s runs, 30 s cool-downs, the
default configurations, --scratch SIZE), as planned: every profile fio can run from one
command line, its exhaustive matrix's estimated device time, the calibration the probe
plans for it (only the workloads its decision depends on) against the whole calibration,
the default budget and its share of the exhaustive matrix (goal <= 20%, the calibration
included). A second row per profile shows the rule it replaced: a fifth of the matrix plus
the whole calibration.

Estimates from the plan (its fixed per-run overhead, the calibration's planned windows),
no device touched: `benchmarks/adaptive_vs_full.py` measures them. Nothing here depends on
the machine's load. A fresh store in a temporary directory: the device is uncalibrated.

Usage:  python benchmarks/calibration_share.py [--scratch 8G] [--profiles A,B] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

SHARE_GOAL = 0.2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scratch", default="8G")
    ap.add_argument("--profiles", default="")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="fsadvisor-calshare-")
    os.environ["FSADVISOR_DB"] = os.path.join(tmp, "s.db")
    os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
    from fsadvisor.errors import FsAdvisorError
    from fsadvisor.profiles import list_presets
    from fsadvisor.service import adaptive as ad, calibration, probing

    names = [p for p in a.profiles.split(",") if p] or [p.name for p in list_presets()]
    whole = calibration.plan_calibration(scratch=a.scratch, dry_run=True)
    whole_s = whole.estimated_seconds()
    rows = []
    for name in names:
        req = probing.ProbeRequest.make(None, scratch=a.scratch, profile=name, dry_run=True)
        try:
            setup = ad.plan_adaptive(req)
        except FsAdvisorError as e:
            rows.append({"profile": name, "refused": str(e)})
            continue
        full = setup.plan.full_estimate_s
        calib = setup.calibration
        rows.append({
            "profile": name,
            "full_s": full,
            "calibration_runs": len(calib.cells()) if calib else 0,
            "calibration_s": setup.calibration_estimate_s,
            "calibration_workloads": [w.name for w in calib.workloads] if calib else [],
            "budget_s": setup.plan.budget_s,
            "share": setup.plan.budget_s / full,
            "before_budget_s": ad.DEFAULT_BUDGET_SHARE * full + whole_s,
            "before_share": (ad.DEFAULT_BUDGET_SHARE * full + whole_s) / full,
        })
    ok = [r for r in rows if "refused" not in r]
    if a.json:
        print(json.dumps({"scratch": a.scratch, "whole_calibration_runs": len(whole.cells()),
                          "whole_calibration_s": whole_s, "rows": rows}, indent=1))
        return 0
    print(f"# the whole calibration: {len(whole.cells())} runs, about {whole_s:.0f} s; a "
          f"--scratch {a.scratch} device, the probe's defaults; estimates from the plan")
    print(f"{'profile':<40} {'full':>7} {'calib runs':>10} {'calib s':>8} {'budget':>7} "
          f"{'share':>6}  {'before':>6}")
    for r in rows:
        if "refused" in r:
            print(f"{r['profile']:<40} refused: {r['refused'][:70]}")
            continue
        mark = "ok" if r["share"] <= SHARE_GOAL + 1e-9 else "MISS"
        print(f"{r['profile']:<40} {r['full_s']:>6.0f}s {r['calibration_runs']:>10} "
              f"{r['calibration_s']:>7.0f}s {r['budget_s']:>6.0f}s {r['share']:>6.1%}  "
              f"{r['before_share']:>6.1%} {mark}")
    if ok:
        within = sum(r["share"] <= SHARE_GOAL + 1e-9 for r in ok)
        print(f"\n{len(ok)} profiles: the default budget, calibration included, is within "
              f"{SHARE_GOAL:.0%} of the exhaustive matrix for {within} (before: "
              f"{sum(r['before_share'] <= SHARE_GOAL + 1e-9 for r in ok)}); median share "
              f"{statistics.median(r['share'] for r in ok):.1%} (before "
              f"{statistics.median(r['before_share'] for r in ok):.1%}); calibration median "
              f"{statistics.median(r['calibration_runs'] for r in ok):.0f} runs of the whole "
              f"{len(whole.cells())}; no calibration for "
              f"{sum(r['calibration_runs'] == 0 for r in ok)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
