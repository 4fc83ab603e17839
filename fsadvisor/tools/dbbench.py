"""RocksDB's db_bench as a YCSB stand-in: command lines, output parser, and the
:class:`DbBench` adapter a probe cell runs key-value profiles with.

fio measures what the filesystem does with I/O patterns; seed 000 checked its findings with
a real application (RocksDB under the six YCSB workloads) and found they hold (f2fs's poor
scaling under concurrent writes shows up in both). Here db_bench (Debian rocksdb-tools)
stands in for YCSB: each YCSB mix A-F is mapped onto the db_bench benchmark closest to it,
and the mapping says where it differs.

Metric names follow fsadvisor.tools.fio (iops, mean_latency_us, p99_latency_us, ops, mb_s ...);
what the tool did not print is absent, never estimated.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

from fsadvisor.errors import FsAdvisorError
from fsadvisor.tools import KIND_DB_BENCH
from fsadvisor.tools.benchmark import (
    MIB_TO_MB,
    AppBenchParseError,
    AppBenchRunError,
    Benchmark,
    BenchJob,
    Invocation,
    Invocations,
    Measurement,
    app_measurement,
    finite_float,
    run_checked,
)
from fsadvisor.host.run import CommandResult

DB_BENCH = KIND_DB_BENCH
DB_SUBDIR = "rocksdb"  # the database directory inside the filesystem under test
MIN_KEYS = 10_000


@dataclass(frozen=True)
class YcsbMix:
    name: str
    ycsb: str  # what YCSB's workload does
    benchmark: str  # db_bench --benchmarks value
    flags: tuple[str, ...]
    deviation: str  # where the db_bench stand-in differs from YCSB


# YCSB core workloads as described in seed 000 §III-B; db_bench 7.8.3 benchmarks
# (db_bench --help).
YCSB_MIXES: dict[str, YcsbMix] = {
    "A": YcsbMix(
        "A",
        "50% reads, 50% updates (session store)",
        "readrandomwriterandom",
        ("--readwritepercent=50",),
        "uniform keys instead of YCSB's zipfian",
    ),
    "B": YcsbMix(
        "B",
        "95% reads, 5% updates (photo tagging)",
        "readrandomwriterandom",
        ("--readwritepercent=95",),
        "uniform keys instead of YCSB's zipfian",
    ),
    "C": YcsbMix(
        "C",
        "100% reads (user profile cache)",
        "readrandom",
        (),
        "uniform keys instead of YCSB's zipfian",
    ),
    "D": YcsbMix(
        "D",
        "95% reads of recent records, 5% inserts (status updates)",
        "readwhilewriting",
        (),
        "one unthrottled writer overwrites random keys while the threads read "
        "uniformly; YCSB inserts new keys and favours the latest",
    ),
    "E": YcsbMix(
        "E",
        "95% short range scans, 5% inserts (threaded conversations)",
        "seekrandom",
        ("--seek_nexts=50",),
        "scans of 50 keys (YCSB: uniform 1-100, mean 50), no inserts",
    ),
    "F": YcsbMix(
        "F",
        "50% reads, 50% read-modify-writes (user database)",
        "updaterandom",
        (),
        "every operation is a read-modify-write; YCSB mixes in plain reads",
    ),
}


def _common_db_flags(db_dir: str, num: int, value_size: int, seed: int, direct: bool) -> list[str]:
    flags = [
        f"--db={db_dir}",
        f"--num={num}",
        f"--value_size={value_size}",
        # Compression would add CPU work that depends on the data, not the filesystem.
        "--compression_type=none",
        # A fixed seed makes repetitions issue the same keys (0 means "from the clock").
        f"--seed={seed}",
        # Per-operation latency histograms: the source of the percentiles.
        "--histogram=1",
        # "... finished N ops" progress lines only clutter the captured output.
        "--progress_reports=0",
    ]
    if direct:
        # Seed 000 kept RocksDB out of the page cache with a data set far above RAM;
        # direct I/O does it with a small one.
        flags += ["--use_direct_reads=1", "--use_direct_io_for_flush_and_compaction=1"]
    return flags


def db_bench_load_argv(
    db_dir: str, num: int = 100_000, value_size: int = 1000, seed: int = 42, direct: bool = False
) -> list[str]:
    """Fill a fresh database with ``num`` keys in random order (YCSB's load phase).

    One thread: with --threads=T every thread writes ``num`` keys (verified: 40,000 ops for
    num=20,000 with 2 threads). Seed 000 loaded 12 M records of 4 KB; defaults here are small."""
    return [
        DB_BENCH,
        "--benchmarks=fillrandom",
        "--threads=1",
        *_common_db_flags(db_dir, num, value_size, seed, direct),
    ]


def db_bench_run_argv(
    db_dir: str,
    mix: str,
    num: int = 100_000,
    value_size: int = 1000,
    threads: int = 1,
    duration_s: int | None = 10,
    ops: int | None = None,
    seed: int = 42,
    direct: bool = False,
) -> list[str]:
    """Run YCSB-like mix ``mix`` (A-F) on a database made by db_bench_load_argv with the
    same ``num``/``value_size``. Time-bound (``duration_s``) or, with ``ops``, count-bound
    (operations per thread)."""
    m = YCSB_MIXES.get(str(mix).upper())
    if m is None:
        raise FsAdvisorError(f"unknown YCSB mix {mix!r}; choose one of {', '.join(YCSB_MIXES)}")
    if threads < 1:
        raise FsAdvisorError(f"db_bench needs at least one thread, got {threads}")
    argv = [
        DB_BENCH,
        f"--benchmarks={m.benchmark}",
        *m.flags,
        "--use_existing_db=1",
        f"--threads={threads}",
        *_common_db_flags(db_dir, num, value_size, seed, direct),
    ]
    if ops is not None:
        argv.append(f"--reads={ops}")  # per thread, for every random-op benchmark
        if m.benchmark in ("readrandomwriterandom", "updaterandom", "readwhilewriting"):
            argv.append(f"--writes={ops}")
    elif duration_s:
        argv.append(f"--duration={int(duration_s)}")
    return argv


@dataclass
class Histogram:
    """One "Microseconds per <op>:" block of db_bench --histogram=1."""

    op: str
    count: float | None = None
    average_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    printed: dict[float, float] = field(default_factory=dict)  # {50.0: P50, 99.0: P99, ...}
    buckets: list[tuple[float, float, float]] = field(default_factory=list)  # (left, right, n)


@dataclass
class DbBenchRun:
    """One benchmark's summary line and the histograms printed under it."""

    name: str
    micros_per_op: float
    ops_per_sec: float
    seconds: float | None = None
    operations: float | None = None
    mb_s: float | None = None
    histograms: list[Histogram] = field(default_factory=list)

    def metrics(self) -> dict[str, float]:
        m: dict[str, float] = {"iops": self.ops_per_sec}
        if self.operations is not None:
            m["ops"] = self.operations
        if self.seconds is not None:
            m["runtime_s"] = self.seconds
        if self.mb_s is not None:
            m["mb_s"] = self.mb_s * MIB_TO_MB
        hists = [h for h in self.histograms if h.count]
        weighted = [
            (h.count, h.average_us)
            for h in hists
            if h.count is not None and h.average_us is not None
        ]
        if hists and len(weighted) == len(hists):
            total = sum(n for n, _ in weighted)
            m["mean_latency_us"] = sum(n * avg for n, avg in weighted) / total
        else:
            # micros/op is each thread's elapsed time per operation: the mean latency as
            # the application saw it (2 threads: 9.2 micros/op at 212k ops/s, verified).
            m["mean_latency_us"] = self.micros_per_op
        for key, p in (("p50", 50.0), ("p99", 99.0), ("p999", 99.9)):
            v = _pooled_percentile(hists, p)
            if v is not None:
                m[f"{key}_latency_us"] = v
        return {k: v for k, v in m.items() if math.isfinite(v) and v >= 0}


@dataclass
class DbBenchResult:
    runs: list[DbBenchRun]
    version: str | None = None

    def run(self, name: str | None = None) -> DbBenchRun:
        """The named benchmark's result, or the last one printed."""
        if name is None:
            return self.runs[-1]
        for r in reversed(self.runs):
            if r.name == name:
                return r
        raise AppBenchParseError(f"db_bench output has no result for benchmark {name!r}")

    def metrics(self, name: str | None = None) -> dict[str, float]:
        return self.run(name).metrics()


def _pooled_percentile(hists: list[Histogram], p: float) -> float | None:
    """The percentile db_bench prints, for one histogram; for several (reads and writes of
    readrandomwriterandom) the same computation over the summed buckets: RocksDB's
    HistogramStat::Percentile interpolates linearly inside the bucket that crosses the
    threshold and clamps to [min, max]. Verified: recomputing a single histogram's P50
    from its printed buckets gives the printed value."""
    if not hists:
        return None
    if len(hists) == 1:
        return hists[0].printed.get(p)
    if any(not h.buckets or p not in h.printed for h in hists):
        return None
    counts: dict[tuple[float, float], float] = {}
    for h in hists:
        for left, right, n in h.buckets:
            counts[(left, right)] = counts.get((left, right), 0.0) + n
    total = sum(counts.values())
    if total <= 0:
        return None
    lo = min((h.min_us for h in hists if h.min_us is not None), default=None)
    hi = max((h.max_us for h in hists if h.max_us is not None), default=None)
    threshold = total * p / 100.0
    cum = 0.0
    for (left, right), n in sorted(counts.items(), key=lambda kv: kv[0][1]):
        cum += n
        if cum >= threshold:
            pos = (threshold - (cum - n)) / n if n else 0.0
            r = left + (right - left) * pos
            if lo is not None:
                r = max(r, lo)
            if hi is not None:
                r = min(r, hi)
            return r
    return hi


_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_SUMMARY = re.compile(
    rf"^([A-Za-z][\w-]*)\s*:\s*{_NUM} micros/op\s+{_NUM} ops/sec"
    rf"(?:\s+{_NUM} seconds\s+{_NUM} operations;)?(.*)$"
)
_MBS = re.compile(rf"{_NUM} MB/s")
_HIST_HEAD = re.compile(r"^Microseconds per (\w[\w ]*?):\s*$")
_COUNT = re.compile(rf"^Count:\s*{_NUM}\s+Average:\s*{_NUM}")
_MINMAX = re.compile(rf"^Min:\s*{_NUM}.*?Max:\s*{_NUM}")
_PCTS = re.compile(rf"P([0-9.]+):\s*{_NUM}")
_BUCKET = re.compile(rf"^[\[(]\s*{_NUM},\s*{_NUM}\s*\]\s+([0-9]+)\s")
_VERSION = re.compile(r"^RocksDB:\s+version\s+(\S+)")


def parse_db_bench(text: str | bytes) -> DbBenchResult:
    """Parse db_bench's output (stdout; stderr may be appended). Raises AppBenchParseError
    when no "<name> : X micros/op Y ops/sec" line is present."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise AppBenchParseError(f"db_bench output must be text, got {type(text).__name__}")
    runs: list[DbBenchRun] = []
    version = None
    hist: Histogram | None = None
    # Progress reports end in "\r", so a result can share a physical line with them.
    for raw in re.split(r"[\r\n]+", text):
        line = raw.strip()
        if not line:
            continue
        try:
            if (mv := _VERSION.match(line)) and version is None:
                version = mv.group(1)
            elif m := _SUMMARY.match(line):
                mbs = _MBS.search(m.group(6) or "")
                runs.append(
                    DbBenchRun(
                        name=m.group(1),
                        micros_per_op=finite_float(m.group(2)),
                        ops_per_sec=finite_float(m.group(3)),
                        seconds=finite_float(m.group(4)) if m.group(4) else None,
                        operations=finite_float(m.group(5)) if m.group(5) else None,
                        mb_s=finite_float(mbs.group(1)) if mbs else None,
                    )
                )
                hist = None
            elif (mh := _HIST_HEAD.match(line)) and runs:
                hist = Histogram(op=mh.group(1))
                runs[-1].histograms.append(hist)
            elif hist is not None and (mc := _COUNT.match(line)):
                hist.count, hist.average_us = finite_float(mc.group(1)), finite_float(mc.group(2))
            elif hist is not None and (mm := _MINMAX.match(line)):
                hist.min_us, hist.max_us = finite_float(mm.group(1)), finite_float(mm.group(2))
            elif hist is not None and line.startswith("Percentiles:"):
                hist.printed = {
                    round(finite_float(p), 6): finite_float(v) for p, v in _PCTS.findall(line)
                }
            elif hist is not None and (mb := _BUCKET.match(line)):
                left, right, n = (
                    finite_float(mb.group(1)),
                    finite_float(mb.group(2)),
                    finite_float(mb.group(3)),
                )
                if right >= left:
                    hist.buckets.append((left, right, n))
        except (ValueError, OverflowError):
            continue  # a mangled number: that line says nothing
    if not runs:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise AppBenchParseError(
            "db_bench output has no benchmark result line"
            + (f"; first line: {first[:120]!r}" if first else "")
        )
    return DbBenchResult(runs=runs, version=version)


def run_db_bench(
    db_dir: str, mix: str, load: bool = True, timeout_s: float | None = None, **kw
) -> tuple[DbBenchResult, str, list[list[str]]]:
    """Load (unless ``load`` is False) and run one YCSB-like mix. Returns the parsed run,
    its raw output, and the commands executed (load first)."""
    keys = {k: kw[k] for k in ("num", "value_size", "seed", "direct") if k in kw}
    commands = []
    if not load and not os.path.exists(os.path.join(db_dir, "CURRENT")):
        # db_bench would create an empty database and "read" nothing (verified: found:0).
        raise AppBenchRunError(f"no RocksDB database at {db_dir}; load it first")
    if load:
        commands.append(db_bench_load_argv(db_dir, **keys))
        run_checked(commands[-1], None, timeout_s, DB_BENCH)
    commands.append(db_bench_run_argv(db_dir, mix, **kw))
    proc = run_checked(commands[-1], None, timeout_s, DB_BENCH)
    # The "RocksDB: version" header goes to stderr, the results to stdout.
    output = proc.stdout + ("\n" + proc.stderr if proc.stderr else "")
    return parse_db_bench(output), output, commands


# ---------------------------------------------------------------- the probe's adapter


def ycsb_mix(profile_name: str, read_pct: int) -> str:
    m = re.search(r"ycsb[-_]?([a-f])\b", profile_name.lower())
    if m:
        return m.group(1).upper()
    # YCSB C is read-only, B read-mostly (95%), A update-heavy (50%).
    return "C" if read_pct >= 100 else "B" if read_pct >= 90 else "A"


class DbBench(Benchmark):
    """Key-value profiles (``op = "db_op"``). Seed 000 §III-B checked its fio findings with
    RocksDB under YCSB; the mix comes from the profile's name (``...-ycsb-a`` ... ``-f``) or,
    failing that, its read share. The load phase (fillrandom) is the preparation and is not
    measured, like a fio fill. Sizes follow the data-set budget so a 50 GB profile fits a
    small device."""

    tool = DB_BENCH

    def invocations(self, job: BenchJob) -> Invocations:
        if job.target_dir is None:
            raise FsAdvisorError(f"{job.name}: db_bench needs a filesystem, not a raw device")
        w = job.workload
        db_dir = f"{job.target_dir.rstrip('/')}/{DB_SUBDIR}"
        value_size = max(100, min(w.bs_bytes, 64 << 10))
        num = max(MIN_KEYS, min(w.working_set_bytes, job.budget_bytes) // value_size)
        mix = ycsb_mix(str(job.app.get("profile") or job.name), w.read_pct)
        runtime = max(1, int(round(job.runtime_s)))
        return Invocations(
            prepare=(
                Invocation(
                    tuple(
                        db_bench_load_argv(db_dir, num=num, value_size=value_size, direct=w.direct)
                    ),
                    note="load (not measured)",
                ),
            ),
            measure=Invocation(
                tuple(
                    db_bench_run_argv(
                        db_dir,
                        mix,
                        num=num,
                        value_size=value_size,
                        threads=max(1, w.numjobs),
                        duration_s=runtime,
                        direct=w.direct,
                    )
                ),
                note="measured",
            ),
        )

    def parse(self, result: CommandResult) -> Measurement:
        # The "RocksDB: version" header goes to stderr, the results to stdout.
        return app_measurement(
            self.tool, result, lambda r: parse_db_bench(r.stdout + "\n" + r.stderr).metrics()
        )
