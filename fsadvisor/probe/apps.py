"""Application cells: RocksDB's db_bench for key-value profiles and sysbench fileio for
profiles tagged ``sysbench``, as prepare/measure argument lists and parsed metrics.

Seed 000 §III-B checked its fio findings with RocksDB under YCSB; a profile whose operation
is a key-value request (``op = "db_op"``) is measured the same way here, with the YCSB mix
taken from the profile's name (``...-ycsb-a`` ... ``-f``) or, failing that, from its read
share. The load phase (fillrandom) is the cell's preparation and is not measured, like a
fio fill. Sizes follow the plan's data-set budget so a 50 GB profile fits a small device.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fsadvisor.tools import appbench
from fsadvisor.errors import FsAdvisorError
from fsadvisor.probe.plan import KIND_DB_BENCH, KIND_SYSBENCH

if TYPE_CHECKING:
    from fsadvisor.probe.commands import CommandResult
    from fsadvisor.probe.plan import Cell, Plan

DB_SUBDIR = "rocksdb"
MIN_KEYS = 10_000
SYSBENCH_MODES = {"randrw": "rndrw", "randread": "rndrd", "randwrite": "rndwr",
                  "read": "seqrd", "write": "seqwr", "rw": "seqrewr"}


def ycsb_mix(profile_name: str, read_pct: int) -> str:
    m = re.search(r"ycsb[-_]?([a-f])\b", profile_name.lower())
    if m:
        return m.group(1).upper()
    # YCSB C is read-only, B read-mostly (95%), A update-heavy (50%).
    return "C" if read_pct >= 100 else "B" if read_pct >= 90 else "A"


def steps(plan: "Plan", cell: "Cell", mountpoint: str) -> tuple[list[list[str]], list[str], str, str | None]:
    """(prepare argvs, measured argv, tool, working directory)."""
    spec = cell.workload
    w = spec.workload
    runtime = max(1, int(round(plan.runtime_s)))
    if spec.kind == KIND_DB_BENCH:
        db_dir = f"{mountpoint.rstrip('/')}/{DB_SUBDIR}"
        value_size = max(100, min(w.bs_bytes, 64 << 10))
        num = max(MIN_KEYS, min(w.working_set_bytes, plan.size_bytes) // value_size)
        common = {"num": num, "value_size": value_size, "direct": w.direct}
        mix = ycsb_mix(str(spec.app.get("profile") or spec.name), w.read_pct)
        return ([appbench.db_bench_load_argv(db_dir, **common)],
                appbench.db_bench_run_argv(db_dir, mix, threads=max(1, w.numjobs),
                                           duration_s=runtime, **common),
                KIND_DB_BENCH, None)
    if spec.kind == KIND_SYSBENCH:
        files = max(1, min(w.nrfiles, 1024)) if w.nrfiles > 1 else 128
        kw = {"mode": SYSBENCH_MODES.get(w.rw, "rndrw"),
              "total_size_bytes": max(files * w.bs_bytes, min(w.working_set_bytes, plan.size_bytes)),
              "block_size_bytes": w.bs_bytes, "file_num": files}
        ratio = w.read_pct / (100 - w.read_pct) if 0 < w.read_pct < 100 else None
        return ([appbench.sysbench_fileio_argv("prepare", **kw)],
                appbench.sysbench_fileio_argv("run", time_s=runtime, direct=w.direct,
                                              fsync_freq=w.fsync_every, threads=max(1, w.numjobs),
                                              rw_ratio=ratio, **kw),
                KIND_SYSBENCH, mountpoint)
    raise FsAdvisorError(f"{spec.name}: {spec.kind} is not an application benchmark")


def parse(tool: str, result: "CommandResult") -> tuple[dict[str, float], str | None]:
    if not result.ok:
        return {}, result.one_line_error()
    try:
        if tool == KIND_DB_BENCH:
            metrics = appbench.parse_db_bench(result.stdout + "\n" + result.stderr).metrics()
        else:
            metrics = appbench.parse_sysbench_fileio(result.stdout)
    except FsAdvisorError as e:
        return {}, str(e)
    if not metrics.get("iops"):
        return {}, f"{tool} completed no operations"
    return metrics, None
