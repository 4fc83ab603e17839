"""Real application benchmarks: RocksDB's db_bench and sysbench fileio, as command lines and
output parsers.

fio measures what the filesystem does with I/O patterns; seed 000 checked its findings with
a real application (RocksDB under the six YCSB workloads) and found they hold (f2fs's poor
scaling under concurrent writes shows up in both). Here db_bench (Debian rocksdb-tools)
stands in for YCSB: each YCSB mix A-F is mapped onto the db_bench benchmark closest to it,
and the mapping says where it differs. sysbench fileio is a second, simpler file workload.

Metric names follow fsadvisor.tools.fio (iops, mean_latency_us, p99_latency_us, ops, mb_s ...);
what a tool did not print is absent, never estimated.
"""

from __future__ import annotations

import math
import os
import re
import shutil
from dataclasses import dataclass, field
from typing import Sequence

from fsadvisor.errors import FsAdvisorError, NotSupported
from fsadvisor.host import run as hostrun

DB_BENCH = "db_bench"
SYSBENCH = "sysbench"
MIB_TO_MB = 1.048576  # both tools print MiB/s as "MB/s"/"MiB/s"; fsadvisor uses 10^6 bytes


class AppBenchParseError(FsAdvisorError):
    """Benchmark output could not be read (one-line message)."""


class AppBenchRunError(FsAdvisorError):
    """A benchmark could not be run or failed (one-line message)."""


# ---------------------------------------------------------------- db_bench (YCSB-like)

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
    "A": YcsbMix("A", "50% reads, 50% updates (session store)", "readrandomwriterandom",
                 ("--readwritepercent=50",), "uniform keys instead of YCSB's zipfian"),
    "B": YcsbMix("B", "95% reads, 5% updates (photo tagging)", "readrandomwriterandom",
                 ("--readwritepercent=95",), "uniform keys instead of YCSB's zipfian"),
    "C": YcsbMix("C", "100% reads (user profile cache)", "readrandom", (),
                 "uniform keys instead of YCSB's zipfian"),
    "D": YcsbMix("D", "95% reads of recent records, 5% inserts (status updates)",
                 "readwhilewriting", (),
                 "one unthrottled writer overwrites random keys while the threads read "
                 "uniformly; YCSB inserts new keys and favours the latest"),
    "E": YcsbMix("E", "95% short range scans, 5% inserts (threaded conversations)",
                 "seekrandom", ("--seek_nexts=50",),
                 "scans of 50 keys (YCSB: uniform 1-100, mean 50), no inserts"),
    "F": YcsbMix("F", "50% reads, 50% read-modify-writes (user database)", "updaterandom",
                 (), "every operation is a read-modify-write; YCSB mixes in plain reads"),
}


def _common_db_flags(db_dir: str, num: int, value_size: int, seed: int,
                     direct: bool) -> list[str]:
    flags = [
        f"--db={db_dir}", f"--num={num}", f"--value_size={value_size}",
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


def db_bench_load_argv(db_dir: str, num: int = 100_000, value_size: int = 1000,
                       seed: int = 42, direct: bool = False) -> list[str]:
    """Fill a fresh database with ``num`` keys in random order (YCSB's load phase).

    One thread: with --threads=T every thread writes ``num`` keys (verified: 40,000 ops for
    num=20,000 with 2 threads). Seed 000 loaded 12 M records of 4 KB; defaults here are small."""
    return [DB_BENCH, "--benchmarks=fillrandom", "--threads=1",
            *_common_db_flags(db_dir, num, value_size, seed, direct)]


def db_bench_run_argv(db_dir: str, mix: str, num: int = 100_000, value_size: int = 1000,
                      threads: int = 1, duration_s: int | None = 10, ops: int | None = None,
                      seed: int = 42, direct: bool = False) -> list[str]:
    """Run YCSB-like mix ``mix`` (A-F) on a database made by db_bench_load_argv with the
    same ``num``/``value_size``. Time-bound (``duration_s``) or, with ``ops``, count-bound
    (operations per thread)."""
    m = YCSB_MIXES.get(str(mix).upper())
    if m is None:
        raise FsAdvisorError(f"unknown YCSB mix {mix!r}; choose one of {', '.join(YCSB_MIXES)}")
    if threads < 1:
        raise FsAdvisorError(f"db_bench needs at least one thread, got {threads}")
    argv = [DB_BENCH, f"--benchmarks={m.benchmark}", *m.flags, "--use_existing_db=1",
            f"--threads={threads}", *_common_db_flags(db_dir, num, value_size, seed, direct)]
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
        if hists and all(h.average_us is not None for h in hists):
            total = sum(h.count for h in hists)
            m["mean_latency_us"] = sum(h.count * h.average_us for h in hists) / total
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
    rf"(?:\s+{_NUM} seconds\s+{_NUM} operations;)?(.*)$")
_MBS = re.compile(rf"{_NUM} MB/s")
_HIST_HEAD = re.compile(r"^Microseconds per (\w[\w ]*?):\s*$")
_COUNT = re.compile(rf"^Count:\s*{_NUM}\s+Average:\s*{_NUM}")
_MINMAX = re.compile(rf"^Min:\s*{_NUM}.*?Max:\s*{_NUM}")
_PCTS = re.compile(rf"P([0-9.]+):\s*{_NUM}")
_BUCKET = re.compile(rf"^[\[(]\s*{_NUM},\s*{_NUM}\s*\]\s+([0-9]+)\s")
_VERSION = re.compile(r"^RocksDB:\s+version\s+(\S+)")


def _float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(text)
    return v


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
                runs.append(DbBenchRun(
                    name=m.group(1), micros_per_op=_float(m.group(2)),
                    ops_per_sec=_float(m.group(3)),
                    seconds=_float(m.group(4)) if m.group(4) else None,
                    operations=_float(m.group(5)) if m.group(5) else None,
                    mb_s=_float(mbs.group(1)) if mbs else None))
                hist = None
            elif (mh := _HIST_HEAD.match(line)) and runs:
                hist = Histogram(op=mh.group(1))
                runs[-1].histograms.append(hist)
            elif hist is not None and (mc := _COUNT.match(line)):
                hist.count, hist.average_us = _float(mc.group(1)), _float(mc.group(2))
            elif hist is not None and (mm := _MINMAX.match(line)):
                hist.min_us, hist.max_us = _float(mm.group(1)), _float(mm.group(2))
            elif hist is not None and line.startswith("Percentiles:"):
                hist.printed = {round(_float(p), 6): _float(v) for p, v in _PCTS.findall(line)}
            elif hist is not None and (mb := _BUCKET.match(line)):
                left, right, n = _float(mb.group(1)), _float(mb.group(2)), _float(mb.group(3))
                if right >= left:
                    hist.buckets.append((left, right, n))
        except (ValueError, OverflowError):
            continue  # a mangled number: that line says nothing
    if not runs:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise AppBenchParseError("db_bench output has no benchmark result line"
                                 + (f"; first line: {first[:120]!r}" if first else ""))
    return DbBenchResult(runs=runs, version=version)


# ---------------------------------------------------------------- sysbench fileio

SYSBENCH_MODES = ("seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw")


def sysbench_fileio_argv(phase: str, mode: str = "rndrw", total_size_bytes: int = 1 << 30,
                         time_s: int = 10, direct: bool = True, fsync_freq: int = 100,
                         threads: int = 1, block_size_bytes: int = 16384,
                         file_num: int = 128, percentile: int = 99,
                         rw_ratio: float | None = None) -> list[str]:
    """``sysbench fileio`` for ``phase`` in prepare | run | cleanup.

    sysbench creates test_file.N in its working directory: run every phase with
    cwd = a directory on the filesystem under test. prepare and cleanup need the same
    --file-num/--file-total-size as run, so all phases get them."""
    if phase not in ("prepare", "run", "cleanup"):
        raise FsAdvisorError(f"sysbench fileio phase must be prepare, run or cleanup, not {phase!r}")
    if mode not in SYSBENCH_MODES:
        raise FsAdvisorError(f"unknown sysbench --file-test-mode {mode!r}; "
                             f"choose one of {', '.join(SYSBENCH_MODES)}")
    argv = [SYSBENCH, "fileio", f"--file-total-size={total_size_bytes}",
            f"--file-num={file_num}", f"--file-test-mode={mode}",
            f"--file-block-size={block_size_bytes}"]
    if phase == "run":
        argv += [f"--time={int(time_s)}", f"--threads={threads}",
                 # 0 disables periodic fsync; sysbench's default is every 100 requests.
                 f"--file-fsync-freq={fsync_freq}",
                 # Percentile to report (default 95); 99 matches p99_latency_us.
                 f"--percentile={percentile}", "--histogram=off"]
        if direct:
            argv.append("--file-extra-flags=direct")
        if rw_ratio is not None and mode in ("rndrw", "seqrewr"):
            # reads per write in the combined modes (sysbench's default 1.5 is 60% reads)
            argv.append(f"--file-rw-ratio={rw_ratio:g}")
    argv.append(phase)
    return argv


_SB = {
    "reads/s": "reads_s", "writes/s": "writes_s", "fsyncs/s": "fsyncs_s",
    "read, MiB/s": "read_mib_s", "written, MiB/s": "written_mib_s",
    "total time": "total_s", "total number of events": "events",
}
_SB_LINE = re.compile(r"^\s*([A-Za-z][\w ,/]*?):\s*([0-9]+(?:\.[0-9]+)?)s?\s*$")
_SB_PCT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)(?:st|nd|rd|th) percentile:\s*([0-9]+(?:\.[0-9]+)?)\s*$")


def parse_sysbench_fileio(text: str | bytes) -> dict[str, float]:
    """Metrics from ``sysbench fileio ... run`` output (sysbench 1.0).

    read_iops/write_iops/fsyncs_per_s are sysbench's per-second rates; iops counts reads
    and writes (fsyncs are not data operations, as in fio); ops is that rate times the
    total time, since sysbench prints only rates. Latency is per sysbench event (an event
    is one read, write or fsync), printed in ms with two decimals."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise AppBenchParseError(f"sysbench output must be text, got {type(text).__name__}")
    raw: dict[str, float] = {}
    lat: dict[str, float] = {}
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.endswith(":") and not line.startswith(" "):
            section = stripped[:-1]
            continue
        try:
            if section.startswith("Latency") and (mp := _SB_PCT.match(line)):
                lat[f"p{mp.group(1)}"] = _float(mp.group(2))
                continue
            m = _SB_LINE.match(line)
            if not m:
                continue
            key, value = m.group(1).strip(), _float(m.group(2))
        except (ValueError, OverflowError):
            continue
        if section.startswith("Latency") and key in ("min", "avg", "max", "sum"):
            lat[key] = value
        elif key in _SB:
            raw[_SB[key]] = value
    if "reads_s" not in raw or "writes_s" not in raw:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise AppBenchParseError("sysbench output has no 'File operations' results"
                                 + (f"; first line: {first[:120]!r}" if first else ""))
    m: dict[str, float] = {
        "read_iops": raw["reads_s"], "write_iops": raw["writes_s"],
        "iops": raw["reads_s"] + raw["writes_s"],
    }
    if "fsyncs_s" in raw:
        m["fsyncs_per_s"] = raw["fsyncs_s"]
    if "read_mib_s" in raw:
        m["read_mb_s"] = raw["read_mib_s"] * MIB_TO_MB
    if "written_mib_s" in raw:
        m["write_mb_s"] = raw["written_mib_s"] * MIB_TO_MB
    if "read_mb_s" in m and "write_mb_s" in m:
        m["mb_s"] = m["read_mb_s"] + m["write_mb_s"]
    if "total_s" in raw:
        m["runtime_s"] = raw["total_s"]
        m["ops"] = float(round(m["iops"] * raw["total_s"]))
    if "events" in raw:
        m["events"] = raw["events"]
    if "avg" in lat:
        m["mean_latency_us"] = lat["avg"] * 1000.0
    if "max" in lat:
        m["max_latency_us"] = lat["max"] * 1000.0
    for key, value in lat.items():
        if key.startswith("p"):
            name = key[1:].replace(".", "")
            m[f"p{name}_latency_us"] = value * 1000.0
    return {k: v for k, v in m.items() if math.isfinite(v)}


# ---------------------------------------------------------------- running

def _run(argv: Sequence[str], cwd: str | None, timeout_s: float | None,
         tool: str) -> hostrun.CommandResult:
    if not shutil.which(argv[0]):
        pkg = "rocksdb-tools" if tool == DB_BENCH else tool
        raise NotSupported(f"{tool} is not installed (Debian package '{pkg}')")
    try:
        proc = hostrun.run(argv, cwd=cwd, timeout_s=timeout_s)
    except hostrun.CommandTimedOut:
        raise AppBenchRunError(f"{tool} did not finish within {timeout_s} s") from None
    if proc.returncode != 0:
        raise AppBenchRunError(f"{tool} exited {proc.returncode}: {_why(proc)[:200]}")
    return proc


def _why(proc: hostrun.CommandResult) -> str:
    """The line that explains a failure: the last one mentioning an error (db_bench prints
    its version banner first and "open error: ..." last), else the last line."""
    lines = [ln.strip() for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"error|fatal|invalid", ln, re.IGNORECASE)]
    return (errors or lines or ["no output"])[-1]


def run_db_bench(db_dir: str, mix: str, load: bool = True, timeout_s: float | None = None,
                 **kw) -> tuple[DbBenchResult, str, list[list[str]]]:
    """Load (unless ``load`` is False) and run one YCSB-like mix. Returns the parsed run,
    its raw output, and the commands executed (load first)."""
    keys = {k: kw[k] for k in ("num", "value_size", "seed", "direct") if k in kw}
    commands = []
    if not load and not os.path.exists(os.path.join(db_dir, "CURRENT")):
        # db_bench would create an empty database and "read" nothing (verified: found:0).
        raise AppBenchRunError(f"no RocksDB database at {db_dir}; load it first")
    if load:
        commands.append(db_bench_load_argv(db_dir, **keys))
        _run(commands[-1], None, timeout_s, DB_BENCH)
    commands.append(db_bench_run_argv(db_dir, mix, **kw))
    proc = _run(commands[-1], None, timeout_s, DB_BENCH)
    # The "RocksDB: version" header goes to stderr, the results to stdout.
    output = proc.stdout + ("\n" + proc.stderr if proc.stderr else "")
    return parse_db_bench(output), output, commands


def run_sysbench_fileio(directory: str, timeout_s: float | None = None,
                        **kw) -> tuple[dict[str, float], str, list[list[str]]]:
    """prepare, run, cleanup in ``directory``; cleanup runs even when run fails."""
    if not os.path.isdir(directory):
        raise AppBenchRunError(f"sysbench directory {directory} does not exist")
    if not shutil.which(SYSBENCH):
        raise NotSupported("sysbench is not installed (Debian package 'sysbench')")
    prep_kw = {k: v for k, v in kw.items()
               if k in ("mode", "total_size_bytes", "block_size_bytes", "file_num")}
    commands = [sysbench_fileio_argv("prepare", **prep_kw)]
    try:
        _run(commands[0], directory, timeout_s, SYSBENCH)
        commands.append(sysbench_fileio_argv("run", **kw))
        proc = _run(commands[-1], directory, timeout_s, SYSBENCH)
    finally:
        commands.append(sysbench_fileio_argv("cleanup", **prep_kw))
        hostrun.run(commands[-1], cwd=directory, timeout_s=timeout_s)
    return parse_sysbench_fileio(proc.stdout), proc.stdout, commands
