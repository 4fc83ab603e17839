"""Benchmark: `probe --adaptive` against the exhaustive matrix (issue 11 targets).

For each scratch device class (a direct-I/O loop device over a file on the VM's disk, one
over a file in RAM under /dev/shm) and each profile (4K random write with fsync per write,
a metadata-heavy build tree, a 128K sequential scan), run

  * the exhaustive matrix: every configuration x the profile's workload, >= 3 reps, and
  * `probe --adaptive` (calibrating the device class first when its store has none),

side by side, and print for each: both winners, the exhaustive matrix's measured regret of
the adaptive winner (goal <= 3%, beside the matrix's own noise: the 95% half-interval of
its winner), the adaptive device time as a share of the exhaustive one's (goal <= 20%; also
without the one-off calibration), and whether the stated confidence was borne out (the
adaptive winner is the exhaustive winner, or within 1% of it — the ranking's tie tolerance).
Finally the stated confidences against the hit rate. Not a timed test; it runs for long:
with the defaults (30 s runs, 30 s cooldown, the probe's default configuration set) about
an hour per class and profile. Each class has two stores: the exhaustive runs never reach
the adaptive probe's fit.

Usage (root):
    python benchmarks/adaptive_vs_full.py [--classes disk,ram] [--profiles A,B,C]
        [--runtime 30] [--cooldown 30] [--reps 3] [--fs ext4,xfs,btrfs] [--budget 1h]
        [--target 0.95] [--scratch 2G] [--workdir /var/tmp/fsadvisor-adaptive-bench] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

PROFILES = ("fs-overhead-randwrite-4k-fsync1", "build-unpack", "fio-read-128k-j1")
# disk: a file on the VM's root filesystem; ram: tmpfs (a RAM-backed loop device)
CLASSES = {"disk": "/var/tmp", "ram": "/dev/shm"}
REGRET_GOAL, SHARE_GOAL = 0.03, 0.20
TIE = 0.01  # predict/rank.py TIE_TOLERANCE


def probe(args: list[str], db: Path, log: Path) -> dict:
    env = dict(os.environ, FSADVISOR_DB=str(db))
    with open(log, "a") as err:
        p = subprocess.run([sys.executable, "-m", "fsadvisor.cli", "probe", *args, "--json"],
                           stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    if p.returncode not in (0, 1):
        raise SystemExit(f"probe failed ({p.returncode}); see {log}")
    return json.loads(p.stdout)


def means(summary: dict) -> dict[str, tuple[float, float, int]]:
    """config -> (mean ops/J, 95% half-interval, n) of the profile's cells."""
    out = {}
    for r in summary.get("results") or []:
        s = r.get("ops_per_joule") or {}
        if not r.get("ranked", True) or s.get("mean") is None:
            continue
        lo, hi = s.get("ci95_low"), s.get("ci95_high")
        half = (hi - lo) / 2 if lo is not None and hi is not None else float("nan")
        out[r["config"]] = (float(s["mean"]), half, int(r.get("n") or 0))
    return out


def device_time(summary: dict, db: Path) -> float:
    """Seconds the exhaustive matrix's runs took (the stored wall time of each run: what
    the adaptive probe's device time counts too)."""
    from fsadvisor.store import open_store
    with open_store(db) as store:
        return sum(float(r.get("wall_s") or 0.0)
                   for r in store.runs(matrix_id=summary["matrix_id"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--classes", default="disk,ram")
    ap.add_argument("--profiles", default=",".join(PROFILES))
    ap.add_argument("--runtime", default="30")
    ap.add_argument("--cooldown", default="30")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--fs", default="ext4,xfs,btrfs")
    ap.add_argument("--budget", default=None)
    ap.add_argument("--target", default="0.95")
    ap.add_argument("--scratch", default="2G")
    ap.add_argument("--workdir", default="/var/tmp/fsadvisor-adaptive-bench")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.reps < 3:
        ap.error("--reps must be >= 3 (the exhaustive matrix is the reference)")
    if os.geteuid() != 0:
        ap.error("run as root (it formats scratch loop devices)")
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    common = ["--fs", a.fs, "--runtime", a.runtime, "--cooldown", a.cooldown,
              "--scratch", a.scratch]
    rows = []
    for cls in a.classes.split(","):
        sdir = CLASSES[cls]
        for prof in a.profiles.split(","):
            log = work / f"{cls}-{prof}.log"
            t0 = time.time()
            full = probe(common + ["--scratch-dir", sdir, "--profile", prof, "--no-micro",
                                   "--no-baseline", "--reps", str(a.reps)],
                         work / f"{cls}-full.db", log)
            ada_args = common + ["--scratch-dir", sdir, "--profile", prof, "--adaptive",
                                 "--target-confidence", a.target]
            if a.budget:
                ada_args += ["--budget", a.budget]
            ada = probe(ada_args, work / f"{cls}-adaptive.db", log)
            m = means(full)
            if not m:
                print(f"{cls} {prof}: the exhaustive matrix produced no ranked cell; see {log}")
                continue
            fw = max(m, key=lambda k: m[k][0])
            d = ada.get("decision") or {}
            aw = d.get("leader")
            regret = 1 - m[aw][0] / m[fw][0] if aw in m else float("nan")
            full_s = device_time(full, work / f"{cls}-full.db")
            ada_s = float(d.get("device_time_s") or 0.0)
            calib_s = float(d.get("calibration_s") or 0.0)
            rows.append({
                "class": cls, "profile": prof, "full_winner": fw, "adaptive_winner": aw,
                "regret": regret, "full_noise": m[fw][1] / m[fw][0] if m[fw][0] else None,
                "full_device_s": full_s, "adaptive_device_s": ada_s, "calibration_s": calib_s,
                "share": ada_s / full_s if full_s else None,
                "share_without_calibration": (ada_s - calib_s) / full_s if full_s else None,
                "stated_confidence": d.get("confidence"),
                "borne_out": bool(aw in m and m[aw][0] >= (1 - TIE) * m[fw][0]),
                "stop_reason": d.get("reason"), "wall_s": time.time() - t0})
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        ok_regret = "ok" if r["regret"] <= REGRET_GOAL else "MISS"
        ok_share = "ok" if r["share"] is not None and r["share"] <= SHARE_GOAL else "MISS"
        print(f"{r['class']:<5} {r['profile']}")
        print(f"   exhaustive winner: {r['full_winner']}")
        print(f"   adaptive winner:   {r['adaptive_winner']}  (stated confidence "
              f"{r['stated_confidence']}; stopped: {r['stop_reason']})")
        print(f"   regret {r['regret']:.1%} [{ok_regret}, goal <= {REGRET_GOAL:.0%}; matrix "
              f"noise +-{(r['full_noise'] or math.nan):.1%}]  device time "
              f"{r['adaptive_device_s']:.0f} s of {r['full_device_s']:.0f} s = "
              f"{r['share']:.0%} [{ok_share}, goal <= {SHARE_GOAL:.0%}; "
              f"{r['share_without_calibration']:.0%} without the calibration]  "
              f"confidence borne out: {'yes' if r['borne_out'] else 'NO'}")
    if rows:
        stated = sum(r["stated_confidence"] or 0 for r in rows) / len(rows)
        hits = sum(r["borne_out"] for r in rows) / len(rows)
        print(f"mean stated confidence {stated:.2f} vs hit rate {hits:.2f} over {len(rows)} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
