#!/usr/bin/env python3
"""Export the reference matrix from the fsadvisor store to datasets/reference/runs.csv.

Part of datasets/reference/collect.sh (which runs the probes); this step only reads.

- One row per stored repetition (every status: ok, failed, incomplete), taken from the
  store's ``runs`` rows, their ``metrics`` JSON and their ``energy`` row, joined with the
  configuration, workload, device and host the store recorded.
- ``device_class`` comes from the probe's own JSON summaries (matrix id -> class), so a
  store holding other matrices exports only these two.
- ``ag_count`` is the AG count mkfs.xfs applies: the probe does not store mkfs.xfs's
  geometry, so ``--xfs-geometry TARGET`` runs ``mkfs.xfs -N`` (prints the geometry, writes
  nothing) with the probe's own mkfs argv on TARGET and saves agcount per configuration.
- ``--summary`` prints the rep-to-rep spread and headline ratios used in README.md.

Usage:
  export.py --db STORE --out runs.csv --shm-log shm-loop.json --zram-log zram.json
            (--shm-log/--zram-log repeat for a class measured by several probes)
            [--shm-geometry FILE.json] [--zram-geometry FILE.json]
  export.py --xfs-geometry /dev/zramN --size-bytes N --geometry-out zram.xfs_geometry.json
  export.py --summary runs.csv
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import os
import re
import shlex
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

CLASSES = ("shm-loop", "zram")

COLUMNS = [
    "run_id", "matrix_id", "device_class", "device", "device_path", "device_kind",
    "device_size_bytes", "logical_block_size", "write_cache",
    "host", "cpu_model", "cores", "kernel", "fio_version", "date",
    "filesystem", "mkfs_options", "mount_options", "scheduler", "ag_count",
    "workload", "workload_params", "data_set_bytes", "runtime_s_planned",
    "rep", "status", "error", "flags",
    "iops", "read_iops", "write_iops", "mb_s", "read_mb_s", "write_mb_s",
    "mean_latency_us", "p50_latency_us", "p99_latency_us", "p999_latency_us",
    "read_p99_latency_us", "write_p99_latency_us",
    "cpu_usr_pct", "cpu_sys_pct", "host_cpu_busy_pct", "host_cpu_usr_pct",
    "host_cpu_sys_pct", "host_cpu_iowait_pct", "host_loadavg_1m",
    "runtime_s", "ops", "bytes", "dev_read_bytes", "dev_write_bytes", "dev_flush_ios",
    "write_amplification", "wall_s",
    "energy_source", "power_scope", "watts", "energy_j", "idle_watts", "energy_note",
    "command",
]

# Columns that are numbers measured by fio in an ok row (the test checks them).
FIO_NUMBERS = ("iops", "mean_latency_us", "p50_latency_us", "p99_latency_us",
               "cpu_usr_pct", "cpu_sys_pct")


def _num(v):
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return ""  # never write NaN; an absent value is empty
        return f"{v:.6g}" if abs(v) < 1e15 else repr(v)
    return str(v)


def device_identity(device_class: str, size_bytes: int, comp: str | None) -> str:
    gib = size_bytes / (1 << 30)
    size = f"{gib:g} GiB"
    if device_class == "shm-loop":
        return f"loop on tmpfs (/dev/shm), direct I/O, {size}"
    return f"zram {comp or '?'} {size}"


def mkfs_options(fs: str, mkfs: dict) -> str:
    """datasets/README.md: ';'-separated key=value, booleans as true/false."""
    parts = []
    for k, v in sorted(mkfs.items()):
        if isinstance(v, bool):
            v = "true" if v else "false"
        parts.append(f"{k}={v}")
    return ";".join(parts)


# ------------------------------------------------------------------ xfs geometry

def _xfs_configs(db: str) -> list[tuple[str, list]]:
    from fsadvisor.domain import FsConfig

    con = sqlite3.connect(db)
    out = []
    for key, mkfs, mount, sched, ag in con.execute(
            "select key, mkfs, mount, scheduler, ag_count from configurations where fs='xfs'"):
        out.append((key, FsConfig.make("xfs", json.loads(mkfs or "{}"),
                                       json.loads(mount or "[]"), sched or "none", ag)))
    return out


def xfs_geometry(target: str, configs, size_bytes: int | None = None) -> dict[str, int]:
    """agcount mkfs.xfs applies for each configuration on ``target`` (-N: writes nothing).
    ``target`` may be a block device or a directory, where a sparse file of ``size_bytes``
    stands in for a file-backed loop device of that size."""
    from fsadvisor.catalog.commands import mkfs_argv

    out: dict[str, int] = {}
    tmp = None
    if os.path.isdir(target):
        fd, tmp = tempfile.mkstemp(prefix="xfs-geometry-", suffix=".img", dir=target)
        os.close(fd)
        os.truncate(tmp, int(size_bytes))
        target = tmp
    try:
        for key, cfg in configs:
            argv = mkfs_argv(cfg, target)
            argv.insert(1, "-N")
            proc = subprocess.run(argv, capture_output=True, text=True, check=False)
            m = re.search(r"agcount=(\d+)", proc.stdout)
            if proc.returncode != 0 or not m:
                raise SystemExit(f"{shlex.join(argv)}: exit {proc.returncode}: "
                                 f"{proc.stderr.strip()[:200]}")
            out[key] = int(m.group(1))
    finally:
        if tmp:
            os.unlink(tmp)
    return out


# ------------------------------------------------------------------ export

def matrices_from_logs(logs: dict[str, list[str]]) -> dict[str, str]:
    """matrix id -> device class, from each class's probe summaries (one per probe: the
    mechanisms matrix runs several probes on one device)."""
    out = {}
    for cls, paths in logs.items():
        for path in paths or ():
            if not os.path.exists(path):
                print(f"export: no probe summary {path} for {cls}", file=sys.stderr)
                continue
            with open(path) as f:
                text = f.read()
            d = json.JSONDecoder().raw_decode(text[text.index("{"):])[0]
            out[d["matrix_id"]] = cls
    return out


def read_load_log(paths) -> list[tuple[float, float]]:
    """``epoch load1 load5 load15 ...`` lines (collect.sh samples /proc/loadavg every 5 s)."""
    out = []
    for path in paths:
        if path and os.path.exists(path):
            with open(path) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) >= 2:
                        out.append((float(parts[0]), float(parts[1])))
    return sorted(out)


def _load_at(samples, t, within_s: float = 10.0):
    if not samples or t is None:
        return None
    best = min(samples, key=lambda s: abs(s[0] - t))
    return best[1] if abs(best[0] - t) <= within_s else None


def export(db: str, out_path: str, matrix_class: dict[str, str],
           geometry: dict[str, dict[str, int]], comp: dict[str, str],
           load_samples=()) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    plans = {r["id"]: json.loads(r["plan"] or "{}") for r in con.execute("select * from matrices")}
    q = """select r.*, c.fs, c.mkfs as c_mkfs, c.mount as c_mount, c.scheduler as c_sched,
                  c.ag_count as c_ag, c.key as c_key, w.name as w_name, w.params as w_params,
                  d.path as d_path, d.kind as d_kind, d.size_bytes as d_size,
                  d.logical_block_size as d_lbs, d.write_cache as d_wc,
                  h.hostname, h.kernel, h.fio_version, h.cpu_model, h.cores,
                  e.source as e_source, e.scope as e_scope, e.avg_watts, e.energy_j,
                  e.idle_watts, e.accuracy, e.missing
           from runs r
           left join configurations c on c.id = r.configuration_id
           join workloads w on w.id = r.workload_id
           join devices d on d.id = r.device_id
           left join hosts h on h.id = r.host_id
           left join energy e on e.run_id = r.id
           order by r.id"""
    rows = []
    for r in con.execute(q):
        cls = matrix_class.get(r["matrix_id"])
        if cls is None:
            continue
        plan = plans.get(r["matrix_id"], {})
        metrics = json.loads(r["metrics"] or "{}")
        fs = r["fs"] or "raw"
        mkfs = json.loads(r["c_mkfs"] or "{}") if r["fs"] else {}
        mount = json.loads(r["c_mount"] or "[]") if r["fs"] else []
        ag = ""
        if fs == "xfs":
            ag = r["c_ag"] if r["c_ag"] is not None else geometry.get(cls, {}).get(r["c_key"], "")
        try:
            command = shlex.join(json.loads(r["command"])) if r["command"] else ""
        except (ValueError, TypeError):
            command = r["command"] or ""
        started = r["started_at"]
        date = (dt.datetime.fromtimestamp(started, dt.timezone.utc).isoformat(timespec="seconds")
                .replace("+00:00", "Z") if started else "")
        note = r["accuracy"] or ""
        if r["missing"]:
            note = f"missing: {r['missing']}"
        row = {
            "run_id": r["id"], "matrix_id": r["matrix_id"], "device_class": cls,
            "device": device_identity(cls, r["d_size"] or plan.get("device_size_bytes", 0),
                                      comp.get(cls)),
            "device_path": r["d_path"], "device_kind": r["d_kind"] or "",
            "device_size_bytes": r["d_size"], "logical_block_size": r["d_lbs"],
            "write_cache": r["d_wc"] or "",
            "host": r["hostname"] or "", "cpu_model": r["cpu_model"] or "",
            "cores": r["cores"], "kernel": r["kernel"] or "", "fio_version": r["fio_version"] or "",
            "date": date, "filesystem": fs, "mkfs_options": mkfs_options(fs, mkfs),
            "mount_options": ",".join(mount),
            "scheduler": r["c_sched"] or (r["cell_key"].split(" | ")[0].split()[-1]
                                          if r["cell_key"].startswith("raw-device") else ""),
            "ag_count": ag, "workload": r["w_name"],
            "workload_params": json.dumps(json.loads(r["w_params"] or "{}"), sort_keys=True),
            "data_set_bytes": plan.get("size_bytes", ""),
            "runtime_s_planned": plan.get("runtime_s", ""),
            "rep": r["rep"], "status": r["status"], "error": (r["error"] or "").replace("\n", " "),
            "flags": ";".join(json.loads(r["flags"] or "[]")),
            "iops": r["iops"], "read_iops": r["read_iops"], "write_iops": r["write_iops"],
            "mb_s": r["mb_s"], "read_mb_s": r["read_mb_s"], "write_mb_s": r["write_mb_s"],
            "mean_latency_us": r["mean_latency_us"], "p50_latency_us": r["p50_latency_us"],
            "p99_latency_us": r["p99_latency_us"], "p999_latency_us": r["p999_latency_us"],
            "read_p99_latency_us": metrics.get("read_p99_latency_us"),
            "write_p99_latency_us": metrics.get("write_p99_latency_us"),
            "cpu_usr_pct": r["usr_cpu_pct"], "cpu_sys_pct": r["sys_cpu_pct"],
            "host_cpu_busy_pct": r["host_cpu_busy_pct"],
            "host_cpu_usr_pct": metrics.get("host_cpu_usr_pct"),
            "host_cpu_sys_pct": metrics.get("host_cpu_sys_pct"),
            "host_cpu_iowait_pct": metrics.get("host_cpu_iowait_pct"),
            "host_loadavg_1m": _load_at(load_samples, metrics.get("window_end_epoch_s")),
            "runtime_s": r["runtime_s"], "ops": r["ops"], "bytes": r["bytes"],
            "dev_read_bytes": metrics.get("dev_read_bytes"),
            "dev_write_bytes": metrics.get("dev_write_bytes"),
            "dev_flush_ios": metrics.get("dev_flush_ios"),
            "write_amplification": r["write_amplification"], "wall_s": r["wall_s"],
            "energy_source": r["e_source"] or "", "power_scope": r["e_scope"] or "",
            "watts": r["avg_watts"], "energy_j": r["energy_j"], "idle_watts": r["idle_watts"],
            "energy_note": note, "command": command,
        }
        rows.append({k: (_num(v) if not isinstance(v, str) else v) for k, v in row.items()})
    with open(out_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return len(rows)


# ------------------------------------------------------------------ summary

def config_label(row) -> str:
    if row["filesystem"] == "raw":
        return "raw"
    parts = [row["filesystem"]]
    if row["mkfs_options"]:
        parts.append(f"[{row['mkfs_options']}]")
    if row["mount_options"]:
        parts.append(f"({row['mount_options']})")
    if row["filesystem"] == "xfs" and row["ag_count"]:
        parts.append(f"ag{row['ag_count']}")
    return " ".join(parts)


def metric_of(row) -> tuple[str, float | None]:
    params = json.loads(row["workload_params"])
    key = "mb_s" if params.get("rank_by") == "bytes" else "iops"
    v = row[key]
    return key, float(v) if v not in ("", None) else None


def summary(csv_path: str) -> None:
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    cells = defaultdict(list)
    status = defaultdict(lambda: defaultdict(int))
    flags = defaultdict(set)
    for r in rows:
        status[r["device_class"]][r["status"]] += 1
        key = (r["device_class"], config_label(r), r["workload"])
        if r["flags"]:
            flags[key].update(f for f in r["flags"].split(";")
                              if f not in ("loop-device", "energy-estimate"))
        if r["status"] == "ok":
            _, v = metric_of(r)
            if v is not None:
                cells[key].append(v)
    print("## status counts")
    for cls in CLASSES:
        print(cls, dict(status[cls]))
    print("\n## median rep-to-rep CV (sd/mean over the reps of a cell, median over configs)")
    wls = sorted({k[2] for k in cells}, key=lambda w: [r["workload"] for r in rows].index(w))
    print("| workload | metric | " + " | ".join(CLASSES) + " |")
    print("|---|---|" + "---|" * len(CLASSES))
    for wl in wls:
        vals = []
        for cls in CLASSES:
            cvs = [statistics.stdev(v) / statistics.mean(v) for (c, _, w), v in cells.items()
                   if c == cls and w == wl and len(v) >= 2 and statistics.mean(v) > 0]
            vals.append(f"{statistics.median(cvs) * 100:.1f}% (max {max(cvs) * 100:.0f}%)"
                        if cvs else "-")
        metric = "MB/s" if wl.startswith("128k") else ("files/s" if wl.startswith("meta") else "IOPS")
        print(f"| {wl} | {metric} | " + " | ".join(vals) + " |")
    print("\n## mean per cell (IOPS, MB/s for 128k, files/s for meta)")
    configs = []
    for (_, cfg, _) in cells:
        if cfg not in configs:
            configs.append(cfg)
    for cls in CLASSES:
        print(f"\n### {cls}")
        print("| configuration | " + " | ".join(wls) + " |")
        print("|---|" + "---|" * len(wls))
        for cfg in configs:
            line = []
            for wl in wls:
                v = cells.get((cls, cfg, wl))
                fl = flags.get((cls, cfg, wl), set()) - {"latency-percentiles-pooled-estimate"}
                mark = "*" if fl else ""
                line.append(f"{statistics.mean(v):.0f}{mark} (n={len(v)})" if v else "-")
            print(f"| {cfg} | " + " | ".join(line) + " |")
        marked = sorted({f for (c, _, _), fl in flags.items() if c == cls for f in fl}
                        - {"latency-percentiles-pooled-estimate"})
        print(f"\n`*` = flagged: {', '.join(marked) or 'none'}")
    paired_ratios(rows)
    amplification(rows)


# Headline ratios: (workload, numerator configuration, denominator configuration), labels
# as config_label() writes them. Paired by repetition: the two cells of one rep ran minutes
# apart, the same rep of another configuration ran under the same host load more often than
# not, so the ratio is taken per rep and the median (min-max) of the reps is reported.
RATIOS = (
    ("4k-randwrite-qd32", "btrfs (nodiscard)", "ext4"),
    ("4k-randwrite-qd32", "xfs ag4", "ext4"),
    ("4k-randwrite-qd32", "btrfs (nodiscard,nodatacow)", "btrfs (nodiscard)"),
    ("128k-write-qd8", "btrfs (nodiscard)", "ext4"),
    ("128k-write-qd8", "btrfs (nodiscard,nodatacow)", "btrfs (nodiscard)"),
    ("128k-write-qd8", "btrfs (nodiscard,compress=zstd:1)", "btrfs (nodiscard)"),
    ("128k-write-qd8", "ext4 (data=journal)", "ext4"),
    ("4k-randwrite-qd32", "ext4 (data=journal)", "ext4"),
    ("4k-randwrite-fsync1", "ext4 (data=journal)", "ext4"),
    ("4k-randwrite-fsync1", "ext4 (data=writeback)", "ext4"),
    ("4k-randwrite-fsync1", "ext4 [journal=false]", "ext4"),
    ("4k-randwrite-fsync1", "ext4", "raw"),
    ("4k-randwrite-fsync1", "xfs ag4", "raw"),
    ("4k-randwrite-fsync1", "btrfs (nodiscard)", "raw"),
    ("4k-randwrite-fsync1", "btrfs (nodiscard,nodatacow)", "btrfs (nodiscard)"),
    ("4k-randwrite-fsync1", "xfs (logbufs=8,logbsize=256k) ag4", "xfs ag4"),
    ("4k-randread-qd32", "ext4", "raw"),
    ("4k-randread-qd32", "xfs ag4", "raw"),
    ("4k-randread-qd32", "btrfs (nodiscard)", "raw"),
    ("meta-create", "xfs ag4", "ext4"),
    ("meta-create", "btrfs (nodiscard)", "ext4"),
    ("meta-create", "ext4 [journal=false]", "ext4"),
    ("meta-create", "xfs ag16", "xfs ag2"),
    ("meta-create", "xfs (logbufs=8,logbsize=256k) ag4", "xfs ag4"),
    ("meta-stat", "ext4 (noatime)", "ext4"),
    ("meta-delete", "btrfs (nodiscard)", "ext4"),
    ("4k-randwrite-qd32", "ext4 (commit=60)", "ext4"),
)


def paired_ratios(rows) -> None:
    per = defaultdict(dict)  # (class, config, workload) -> rep -> value
    for r in rows:
        if r["status"] == "ok":
            _, v = metric_of(r)
            if v is not None:
                per[(r["device_class"], config_label(r), r["workload"])][int(r["rep"])] = v
    print("\n## headline ratios (per-rep paired; median, min-max over reps)")
    print("| workload | numerator / denominator | " + " | ".join(CLASSES) + " |")
    print("|---|---|" + "---|" * len(CLASSES))
    for wl, a, b in RATIOS:
        cols = []
        for cls in CLASSES:
            na, nb = per.get((cls, a, wl), {}), per.get((cls, b, wl), {})
            q = [na[k] / nb[k] for k in sorted(set(na) & set(nb)) if nb[k] > 0]
            cols.append(f"{statistics.median(q):.2f} ({min(q):.2f}-{max(q):.2f})" if q else "-")
        print(f"| {wl} | {a} / {b} | " + " | ".join(cols) + " |")


def amplification(rows) -> None:
    """Device-level mechanisms, far steadier than throughput on a shared host: bytes the
    block device wrote per byte fio wrote, and device flushes per fio operation."""
    wa, fl = defaultdict(list), defaultdict(list)
    for r in rows:
        if r["status"] != "ok" or r["workload"] not in WRITE_WORKLOADS:
            continue
        key = (r["device_class"], config_label(r), r["workload"])
        if r["write_amplification"]:
            wa[key].append(float(r["write_amplification"]))
        if r["dev_flush_ios"] and r["ops"] and float(r["ops"]) > 0:
            fl[key].append(float(r["dev_flush_ios"]) / float(r["ops"]))
    configs = []
    for (_, cfg, _) in wa:
        if cfg not in configs:
            configs.append(cfg)
    print("\n## write amplification (device bytes written / fio bytes written; median of reps)"
          " [device flushes per fio op]")
    head = [f"{cls} {wl}" for cls in CLASSES for wl in WRITE_WORKLOADS]
    print("| configuration | " + " | ".join(head) + " |")
    print("|---|" + "---|" * len(head))
    for cfg in configs:
        cells = []
        for cls in CLASSES:
            for wl in WRITE_WORKLOADS:
                a, f = wa.get((cls, cfg, wl)), fl.get((cls, cfg, wl))
                cells.append((f"{statistics.median(a):.2f}" if a else "-")
                             + (f" [{statistics.median(f):.1f}]" if f else ""))
        print(f"| {cfg} | " + " | ".join(cells) + " |")


WRITE_WORKLOADS = ("4k-randwrite-qd32", "4k-randwrite-fsync1", "128k-write-qd8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db")
    ap.add_argument("--out")
    ap.add_argument("--shm-log", action="append", default=[],
                    help="a shm-loop probe's JSON summary (repeatable)")
    ap.add_argument("--zram-log", action="append", default=[],
                    help="a zram probe's JSON summary (repeatable)")
    ap.add_argument("--shm-geometry")
    ap.add_argument("--zram-geometry")
    ap.add_argument("--zram-comp", help="file holding the zram comp_algorithm line")
    ap.add_argument("--load-log", action="append", default=[],
                    help="/proc/loadavg samples (epoch load1 ...), repeatable")
    ap.add_argument("--xfs-geometry", metavar="TARGET")
    ap.add_argument("--size-bytes", type=int)
    ap.add_argument("--geometry-out")
    ap.add_argument("--summary", metavar="CSV")
    a = ap.parse_args(argv)
    if a.summary:
        summary(a.summary)
        return 0
    if a.xfs_geometry:
        geo = xfs_geometry(a.xfs_geometry, _xfs_configs(a.db), a.size_bytes)
        with open(a.geometry_out, "w") as f:
            json.dump(geo, f, indent=1, sort_keys=True)
        print(f"export: xfs agcount on {a.xfs_geometry}: {geo}", file=sys.stderr)
        return 0
    classes = matrices_from_logs({"shm-loop": a.shm_log, "zram": a.zram_log})
    geometry = {}
    for cls, path in (("shm-loop", a.shm_geometry), ("zram", a.zram_geometry)):
        if path and os.path.exists(path):
            with open(path) as f:
                geometry[cls] = json.load(f)
    comp = {}
    if a.zram_comp and os.path.exists(a.zram_comp):
        with open(a.zram_comp) as f:
            m = re.search(r"\[([^\]]+)\]", f.read())
            comp["zram"] = m.group(1) if m else "?"
    n = export(a.db, a.out, classes, geometry, comp, read_load_log(a.load_log))
    print(f"export: {n} rows -> {a.out} ({os.path.getsize(a.out) / 1e6:.2f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
