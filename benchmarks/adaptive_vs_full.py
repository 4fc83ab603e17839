"""Benchmark: `probe --adaptive` against the exhaustive matrix (the adaptive probe's targets).

For each scratch device class (a direct-I/O loop device over a file on the VM's disk, one
over a file in RAM under /dev/shm, a zram device this script adds and removes) and each
profile (4K random write with fsync per write, a metadata-heavy create of 50,000 small
files, a 128K sequential scan; build-unpack mixes data I/O with file create/stat and fio
cannot run it from one command line, so the probe refuses it), run

  * the exhaustive matrix: every configuration x the profile's workload, >= 3 reps, made a
    precise reference: while its winner's 95% interval is wider than --precision (+-2%) of
    its mean, another round of --round-reps repetitions of every configuration whose
    interval reaches the winner's (the contenders; the probe runs a round's repetitions
    interleaved, so a drift of the host shows in all of them alike), up to --max-reps
    each; a class that cannot get there is reported as such, with the precision it got;
  * `probe --adaptive` (calibrating the device class first when its store has none),

side by side, and print for each: both winners, the exhaustive matrix's measured regret of
the adaptive winner (goal <= 3%, beside the matrix's own noise: the 95% half-interval of
its winner), the adaptive device time as a share of the exhaustive one's (goal <= 20%; also
without the one-off calibration), and whether the stated confidence was borne out (the
adaptive winner is the exhaustive winner, or within 1% of it — the ranking's tie tolerance).
Finally the stated confidences against the hit rate.

Device time and the calibration: the adaptive probe calibrates a device (its short raw
matrix) the first time it meets its identity; the calibration is stored and every later
profile on that device reuses it (adding only the workloads a later profile needs that the
first did not). The 20% goal counts it where it ran, as the device's first profile pays for
it; the share without it (what a further profile costs) is printed beside, and each class's total — all its adaptive runs plus the
one calibration against all its exhaustive matrices — shows what it costs amortised over
the profiles measured here. The 1-minute load is read before every case: above 0.5 per
CPU the case's figures are marked as measured on a loaded machine (never targets).
Not a timed test; it runs for long:
with the defaults (30 s runs, 30 s cooldown, the probe's default configuration set) about
an hour per class and profile. Each class has two stores: the exhaustive runs never reach
the adaptive probe's fit.

Usage (root):
    python benchmarks/adaptive_vs_full.py [--classes disk,ram,zram] [--profiles A,B,C]
        [--runtime 30] [--cooldown 30] [--reps 3] [--fs ext4,xfs,btrfs] [--budget 1h]
        [--target 0.95] [--scratch 2G] [--workdir /var/tmp/fsadvisor-adaptive-bench] [--json]
        [--precision 0.02] [--round-reps 2] [--max-reps 12]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

PROFILES = ("fs-overhead-randwrite-4k-fsync1", "fs-overhead-metadata-create",
            "fio-read-128k-j1")
# disk: a file on the VM's root filesystem; ram: tmpfs (a RAM-backed loop device); zram: a
# compressed RAM block device (no I/O scheduler: only its "none" cells run)
CLASSES = {"disk": "/var/tmp", "ram": "/dev/shm", "zram": None}
ZRAM_CONTROL = Path("/sys/class/zram-control")
REGRET_GOAL, SHARE_GOAL, PRECISION_GOAL = 0.03, 0.20, 0.02
TIE = 0.01  # predict/rank.py TIE_TOLERANCE


@contextlib.contextmanager
def zram_device(size_bytes: int):
    """A fresh /dev/zramN of ``size_bytes`` (hot_add), reset and removed afterwards. Reading
    hot_add creates the device: only the number it returns is ever touched here."""
    if not (ZRAM_CONTROL / "hot_add").exists():
        raise SystemExit("zram is not available here (no /sys/class/zram-control)")
    n = int((ZRAM_CONTROL / "hot_add").read_text().strip())
    sysdir = Path(f"/sys/block/zram{n}")
    try:
        (sysdir / "disksize").write_text(f"{size_bytes}\n")
        dev = f"/dev/zram{n}"
        for _ in range(50):  # udev creates the node
            if os.path.exists(dev):
                break
            time.sleep(0.1)
        yield dev
    finally:
        with contextlib.suppress(OSError):
            (sysdir / "reset").write_text("1\n")
        with contextlib.suppress(OSError):
            (ZRAM_CONTROL / "hot_remove").write_text(f"{n}\n")


def size_bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    return int(float(t[:-1]) * units[t[-1]]) if t[-1] in units else int(t)


def loadavg() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


QUIET_LOAD_PER_CPU = 0.5


def loaded() -> float | None:
    """The 1-minute load per CPU when it is above QUIET_LOAD_PER_CPU (None: quiet)."""
    per_cpu = os.getloadavg()[0] / (os.cpu_count() or 1)
    return per_cpu if per_cpu > QUIET_LOAD_PER_CPU else None


def probe(args: list[str], db: Path, log: Path) -> dict:
    env = dict(os.environ, FSADVISOR_DB=str(db))
    with open(log, "a") as err:
        p = subprocess.run([sys.executable, "-m", "fsadvisor.cli", "probe", *args, "--json"],
                           stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"probe failed ({p.returncode}); see {log}")
    return json.loads(p.stdout)


def means(summary: dict) -> dict[str, tuple[float, float, int, float]]:
    """config -> (mean ops/J, 95% half-interval, n, sd) of the profile's cells."""
    out = {}
    for r in summary.get("results") or []:
        s = r.get("ops_per_joule") or {}
        if not r.get("ranked", True) or s.get("mean") is None:
            continue
        lo, hi = s.get("ci95_low"), s.get("ci95_high")
        half = (hi - lo) / 2 if lo is not None and hi is not None else float("nan")
        out[r["config"]] = (float(s["mean"]), half, int(r.get("n") or 0),
                            float(s.get("sd") or 0.0))
    return out


def reference(db: Path, prof: str) -> dict[str, tuple[float, float, int, float, dict]]:
    """config -> (mean ops/J, 95% half-interval, n, sd, configuration) over every run of
    the profile in the exhaustive store (the first matrix and the refining rounds), the
    probe's own summaries pooled per configuration; cells whose direct I/O the page cache
    served are left out, as the probe leaves them out of its ranking."""
    from fsadvisor.store import open_store
    from fsadvisor.store.intervals import t_quantile
    with open_store(db) as store:
        sums = store.summaries(profile=prof)
    groups: dict[str, list[tuple[int, float, float, dict]]] = {}
    for s in sums:
        o = s.get("ops_per_joule") or {}
        if s["config"] is None or o.get("mean") is None or "direct-io-not-honoured" in s["flags"]:
            continue
        groups.setdefault(s["config_key"], []).append(
            (int(o["n"]), float(o["mean"]), float(o["sd"] or 0.0), s["config"]))
    out = {}
    for key, gs in groups.items():
        n = sum(g[0] for g in gs)
        mean = sum(g[0] * g[1] for g in gs) / n
        ss = sum((g[0] - 1) * g[2] ** 2 + g[0] * (g[1] - mean) ** 2 for g in gs)
        sd = math.sqrt(ss / (n - 1)) if n > 1 else math.nan
        half = t_quantile(0.975, n - 1) * sd / math.sqrt(n) if n > 1 else math.nan
        out[key] = (mean, half, n, sd, gs[0][3])
    return out


def as_option(config: dict) -> str:
    """A stored configuration as probe's --config takes it (JSON)."""
    def decoded(v):
        return json.loads(v) if isinstance(v, str) and v[:1] in "[{" else v
    d = {"filesystem": config["filesystem"], "mkfs": decoded(config.get("mkfs")) or {},
         "mount": decoded(config.get("mount")) or [], "scheduler": config["scheduler"]}
    if config.get("ag_count") is not None:
        d["ag_count"] = int(config["ag_count"])
    return json.dumps(d)


def refine(a, prof: str, target: list[str], common: list[str], full_db: Path,
           log: Path) -> dict:
    """Rounds of repetitions of the contenders until the reference winner's 95% interval is
    within --precision of its mean, or each contender has --max-reps runs."""
    rounds = 0
    while True:
        ref = reference(full_db, prof)
        if not ref:
            return {"means": {}, "rounds": rounds, "precision": None, "reached": False}
        best = max(ref, key=lambda k: ref[k][0])
        mean, half, n = ref[best][:3]
        precision = half / mean if mean else math.nan
        if precision <= a.precision or n >= a.max_reps:
            return {"means": {k: v[:4] for k, v in ref.items()}, "rounds": rounds,
                    "precision": precision, "reached": precision <= a.precision, "n": n}
        contenders = [k for k, v in ref.items()
                      if v[0] + v[1] >= mean - half and v[2] < a.max_reps]
        args = target + common + ["--profile", prof, "--full", "--no-micro", "--no-baseline",
                                  "--reps", str(a.round_reps)]
        for k in contenders:
            args += ["--config", as_option(ref[k][4])]
        probe(args, full_db, log)
        rounds += 1


def device_time(summary: dict, db: Path, cooldown: float) -> tuple[float, float | None]:
    """Seconds the exhaustive matrix's runs took (the stored wall time of each run: what
    the adaptive probe's device time counts too), and their median overhead outside the
    measured window (what the adaptive probe's cell-time estimates are built from)."""
    from fsadvisor.store import open_store
    with open_store(db) as store:
        rows = store.runs(matrix_id=summary["matrix_id"])
    over = sorted(float(r["wall_s"]) - float(r["runtime_s"]) - cooldown for r in rows
                  if r.get("status") == "ok" and r.get("wall_s") and r.get("runtime_s"))
    return (sum(float(r.get("wall_s") or 0.0) for r in rows),
            over[len(over) // 2] if over else None)


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
    ap.add_argument("--precision", type=float, default=0.02,
                    help="the reference winner's 95%% half-interval to reach, relative to its "
                         "mean (default 0.02)")
    ap.add_argument("--round-reps", type=int, default=2,
                    help="repetitions of each contender per refining round (default 2)")
    ap.add_argument("--max-reps", type=int, default=12,
                    help="the most runs of one configuration in the reference (default 12)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--reread", action="store_true",
                    help="print the rows again from --workdir's saved probe outputs and stores "
                         "(runs nothing)")
    a = ap.parse_args(argv)
    if a.reps < 3:
        ap.error("--reps must be >= 3 (the exhaustive matrix is the reference)")
    unknown = [c for c in a.classes.split(",") if c not in CLASSES]
    if unknown:
        ap.error(f"unknown class {unknown[0]!r} (known: {', '.join(CLASSES)})")
    work = Path(a.workdir)
    if a.reread:
        rows = [reread(a, cls, prof, work) for cls in a.classes.split(",")
                for prof in a.profiles.split(",")
                if (work / f"{cls}-{prof}-full.json").exists()]
        for r in rows:
            print_row(r)
        print_totals(rows)
        return 0
    if os.geteuid() != 0:
        ap.error("run as root (it formats scratch loop devices)")
    work.mkdir(parents=True, exist_ok=True)
    common = ["--fs", a.fs, "--runtime", a.runtime, "--cooldown", a.cooldown]
    if not a.json:
        print(f"# {' '.join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])}")
        print(f"# load before: {loadavg()}", flush=True)
    rows = []
    for cls in a.classes.split(","):
        with contextlib.ExitStack() as stack:
            if CLASSES[cls] is None:  # zram: a real block device, wiped by each probe
                dev = stack.enter_context(zram_device(size_bytes(a.scratch)))
                target = [dev, "--yes-wipe", dev]
            else:
                target = ["--scratch", a.scratch, "--scratch-dir", CLASSES[cls]]
            for prof in a.profiles.split(","):
                try:
                    rows.append(one_case(a, cls, prof, target, common, work))
                except RuntimeError as e:  # one case's failure is reported, not the end
                    rows.append({"class": cls, "profile": prof, "error": str(e)})
                if not a.json:
                    print_row(rows[-1], flush=True)
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    print_totals(rows)
    print(f"# load after: {loadavg()}")
    return 0


def one_case(a, cls: str, prof: str, target: list[str], common: list[str], work: Path) -> dict:
    log = work / f"{cls}-{prof}.log"
    t0 = time.time()
    full_db = work / f"{cls}-full.db"
    load = loaded()
    # --full: with --profile the probe is adaptive unless told otherwise
    full = probe(target + common + ["--profile", prof, "--full", "--no-micro", "--no-baseline",
                                    "--reps", str(a.reps)], full_db, log)
    ref = refine(a, prof, target, common, full_db, log)
    # Read before the case only: during and after it the load is the case's own probes'.
    ref["loaded"] = load
    ada_args = target + common + ["--profile", prof, "--adaptive",
                                  "--target-confidence", a.target]
    if a.budget:
        ada_args += ["--budget", a.budget]
    ada = probe(ada_args, work / f"{cls}-adaptive.db", log)
    for kind, doc in (("full", full), ("adaptive", ada), ("reference", ref)):  # for --reread
        (work / f"{cls}-{prof}-{kind}.json").write_text(json.dumps(doc, indent=1))
    return summarise(a, cls, prof, full, ada, ref, full_db, log, t0)


def reread(a, cls: str, prof: str, work: Path) -> dict:
    """A case's row from the probe outputs and store one_case saved (--reread)."""
    docs = [json.loads(f.read_text()) if (f := work / f"{cls}-{prof}-{k}.json").exists()
            else {"means": {}} for k in ("full", "adaptive", "reference")]
    return summarise(a, cls, prof, docs[0], docs[1], docs[2], work / f"{cls}-full.db",
                     work / f"{cls}-{prof}.log", None)


def summarise(a, cls: str, prof: str, full: dict, ada: dict, ref: dict, full_db: Path,
              log: Path, t0: float | None) -> dict:
    m = {k: tuple(v) for k, v in ref["means"].items()} or means(full)
    row = {"class": cls, "profile": prof, "log": str(log), "wall_s": None}
    if not m:
        row["error"] = f"the exhaustive matrix produced no ranked cell; see {log}"
        return row
    fw = max(m, key=lambda k: m[k][0])
    d = ada.get("decision") or {}
    aw = d.get("leader")
    regret = 1 - m[aw][0] / m[fw][0] if aw in m else float("nan")
    # Can the exhaustive matrix itself tell the two winners apart? Welch's 95% interval of
    # (adaptive winner - exhaustive winner) from their runs (service/compare.welch): where it
    # holds 0, the regret is within the matrix's own noise ("within the matrix's noise").
    sep = None
    if aw in m and aw != fw and min(m[aw][2], m[fw][2]) >= 2:
        from fsadvisor.service.compare import welch
        wd = welch(m[fw][0], m[fw][3], m[fw][2], m[aw][0], m[aw][3], m[aw][2])
        sep = {"low_pct": wd["low_pct"], "high_pct": wd["high_pct"],
               "separable": wd["high_pct"] < 0}
    full_s, overhead = device_time(full, full_db, float(a.cooldown))
    ada_s = float(d.get("device_time_s") or 0.0)
    calib_s = float(d.get("calibration_s") or 0.0)
    row.update({
        "full_winner": fw, "adaptive_winner": aw, "regret": regret, "welch": sep,
        "full_noise": m[fw][1] / m[fw][0] if m[fw][0] else None,
        "full_cells": sum(v[2] for v in (means(full) or m).values()), "full_configs": len(m),
        "reference_runs": sum(v[2] for v in m.values()),
        "full_device_s": full_s, "full_overhead_s": overhead,
        "full_estimate_s": d.get("full_matrix_estimate_s"),
        "adaptive_device_s": ada_s, "calibration_s": calib_s, "adaptive_runs": d.get("runs"),
        "share": ada_s / full_s if full_s else None,
        "share_without_calibration": (ada_s - calib_s) / full_s if full_s else None,
        "stated_confidence": d.get("confidence"),
        "borne_out": bool(aw in m and m[aw][0] >= (1 - TIE) * m[fw][0]),
        "stop_reason": d.get("reason"), "wall_s": time.time() - t0 if t0 else None,
        "reference_precision": ref.get("precision"), "reference_reached": ref.get("reached"),
        "reference_rounds": ref.get("rounds"), "reference_runs_of_winner": m[fw][2],
        "loaded": ref.get("loaded")})
    return row


# A configuration's stored key (FsConfig.key(): "xfs [] (noatime,logbufs=8) none"), the
# identity the rows keep; a raw-device cell's is "raw-device <scheduler>".
_KEY = re.compile(r"(?P<fs>\S+) \[(?P<mkfs>.*)\] \((?P<mount>.*)\) (?P<sched>\S+)"
                  r"(?: agcount=(?P<ag>\d+))?")


def shown(key: str | None) -> str:
    """A configuration key as a person reads it: FsConfig.label(), the rendering recommend
    prints ("xfs, noatime,logbufs=8, sched none"); a key it cannot read, as it is."""
    from fsadvisor.domain import FsConfig
    from fsadvisor.probe.plan import cell_label
    if key and key.startswith("raw-device "):
        return cell_label(None, key.split()[-1])
    m = _KEY.fullmatch(key or "")
    if m is None:
        return str(key)
    # each mkfs setting as "k=v", its value as the key wrote it (a switch's True/False read
    # back, so the label says on/off)
    mkfs = dict(kv.split("=", 1) for kv in re.split(r",(?=[^,=]+=)", m["mkfs"]) if kv)
    return FsConfig.make(
        m["fs"], {k: {"True": True, "False": False}.get(v, v) for k, v in mkfs.items()},
        tuple(o for o in m["mount"].split(",") if o), m["sched"],
        int(m["ag"]) if m["ag"] else None).label()


def print_row(r: dict, flush: bool = False) -> None:
    if "error" in r:
        print(f"{r['class']:<5} {r['profile']}: {r['error']}", flush=flush)
        return
    ok_regret = "ok" if r["regret"] <= REGRET_GOAL else "MISS"
    # the goal counts a calibration where it ran: it is part of the device's first profile
    judged = r["share"] if r["calibration_s"] else r["share_without_calibration"]
    ok_share = "ok" if judged is not None and judged <= SHARE_GOAL else "MISS"
    print(f"{r['class']:<5} {r['profile']}")
    print(f"   exhaustive: {r['full_cells']} runs of {r['full_configs']} configurations, "
          f"{r['full_device_s']:.0f} s of device time (median per-run overhead outside the "
          f"window {r['full_overhead_s'] or math.nan:.1f} s; the adaptive probe estimated "
          f"the full matrix at {r['full_estimate_s'] or math.nan:.0f} s)")
    print(f"   exhaustive winner: {shown(r['full_winner'])}")
    if r.get("reference_precision") is not None:
        reached = r["reference_reached"]
        print(f"   reference: the winner's 95% interval +-{r['reference_precision']:.1%} after "
              f"{r['reference_runs_of_winner']} runs ({r['reference_rounds']} refining rounds, "
              f"{r.get('reference_runs', r['full_cells'])} runs in all): "
              + ("within the goal" if reached else "this class did not get within the goal")
              + f" of +-{PRECISION_GOAL:.0%}")
    if r.get("loaded"):
        print(f"   LOADED: {r['loaded']:.2f} load per CPU when the case started; its "
              "figures are not targets")
    print(f"   adaptive winner:   {shown(r['adaptive_winner'])}  after {r['adaptive_runs']} runs "
          f"(stated confidence {r['stated_confidence']}; stopped: {r['stop_reason']})")
    print(f"   regret {r['regret']:.1%} [{ok_regret}, goal <= {REGRET_GOAL:.0%}; matrix "
          f"noise +-{(r['full_noise'] or math.nan):.1%}]")
    sep = r.get("welch")
    if sep:
        print(f"   the exhaustive matrix {'tells' if sep['separable'] else 'cannot tell'} the two "
              f"winners apart: adaptive - exhaustive winner {sep['low_pct']:+.1f}% to "
              f"{sep['high_pct']:+.1f}% (Welch 95%)")
    if r["calibration_s"]:
        print(f"   device time with the calibration ({r['calibration_s']:.0f} s, run here) "
              f"{r['adaptive_device_s']:.0f} s of {r['full_device_s']:.0f} s = {r['share']:.0%} "
              f"[{ok_share}, goal <= {SHARE_GOAL:.0%}]; without it "
              f"{r['adaptive_device_s'] - r['calibration_s']:.0f} s = "
              f"{r['share_without_calibration']:.0%}")
    else:
        print(f"   device time {r['adaptive_device_s']:.0f} s of {r['full_device_s']:.0f} s = "
              f"{r['share_without_calibration']:.0%} [{ok_share}, goal <= {SHARE_GOAL:.0%}]; "
              "no calibration ran (the device's stored one was reused, or none was needed)")
    print(f"   confidence borne out: {'yes' if r['borne_out'] else 'NO'} (the adaptive winner "
          f"is {'' if r['borne_out'] else 'not '}within {TIE:.0%} of the exhaustive best)",
          flush=flush)


def print_totals(rows: list[dict]) -> None:
    rows = [r for r in rows if "error" not in r]
    for cls in dict.fromkeys(r["class"] for r in rows):
        rs = [r for r in rows if r["class"] == cls]
        full = sum(r["full_device_s"] for r in rs)
        ada = sum(r["adaptive_device_s"] for r in rs)
        cal = sum(r["calibration_s"] for r in rs)
        print(f"{cls} total over {len(rs)} profiles: adaptive {ada - cal:.0f} s + calibration "
              f"{cal:.0f} s = {ada:.0f} s of the exhaustive {full:.0f} s = "
              f"{ada / full if full else math.nan:.0%} ({(ada - cal) / full if full else math.nan:.0%}"
              " without the calibration)")
    if rows:
        apart = [r for r in rows if r["regret"] > REGRET_GOAL and (r.get("welch") or {}).get("separable")]
        print(f"regret <= {REGRET_GOAL:.0%} in {sum(r['regret'] <= REGRET_GOAL for r in rows)} of "
              f"{len(rows)} cases; of the others, the exhaustive matrix tells the winners apart "
              f"in {len(apart)}")
        stated = sum(r["stated_confidence"] or 0 for r in rows) / len(rows)
        hits = sum(r["borne_out"] for r in rows) / len(rows)
        print(f"mean stated confidence {stated:.2f} vs hit rate {hits:.2f} over {len(rows)} cases")


if __name__ == "__main__":
    raise SystemExit(main())
