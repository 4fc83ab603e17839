"""fio in, measurements out: the command lines fsadvisor gives fio and the JSON it gets back.

fio is the load generator behind every probe (seed 000 used fio 3.36 with io_uring, iodepth 64,
direct I/O; seed 002 parses fio JSON the same way). Its JSON changed over the years, so the
parser reads it defensively and never makes up a number: a metric fio did not report is absent
from ``FioResult.metrics()``, not zero. Version landmarks (checked in fio's git history):
io_bytes in bytes and io_kbytes since 2.21 (KiB before), ``*_ns`` latency keys since 2.99/3.0
(µs ``clat``/``lat`` before), ``bw_bytes`` 3.2, ``sync`` 3.4, ``job_runtime`` 3.8, ``prios``
3.30, disk_util sectors 3.36.

Only argument lists are executed; running fio against a block device overwrites it, so
callers pass only targets the device-safety check cleared.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence, TypeGuard

from fsadvisor.domain import METADATA_MODES, Workload
from fsadvisor.errors import FsAdvisorError, NotSupported
from fsadvisor.host import run as hostrun

DIRECTIONS = ("read", "write", "trim")
# unified_rw_reporting=mixed folds every direction into "mixed" (2.x and 3.x alike).
# With unified_rw_reporting=both fio prints read/write/trim AND "mixed", their sum: counting
# all four doubled the IOPS of a real 3.33 run (fixture fio-3.33-unified-both.json).
MIXED = "mixed"
# fio's metadata engines report each create/stat/unlink under "read"; bw there is bytes of
# the nominal filesize, not data moved (domain notes §1). dir* engines arrived in 3.37.
METADATA_ENGINES = frozenset(METADATA_MODES) | {"dircreate", "dirstat", "dirdelete"}
ASYNC_ENGINES = frozenset({"io_uring", "libaio", "posixaio", "windowsaio", "solarisaio"})
# Includes the three the model uses (50, 99, 99.9); the extra points tighten the combination
# of several distributions into one (see _mixture_quantile).
PERCENTILE_LIST = "1:10:50:90:95:99:99.5:99.9:99.99"
# Where a percentile in FioResult.metrics() comes from (FioResult.percentile_provenance):
# fio's own figure for one latency distribution, or a pooled estimate of several (the read
# and write sides of a randrw job, jobs without group_reporting, stonewalled groups), which
# fio never printed and which must not be shown as a measurement.
EXACT = "exact"
POOLED_ESTIMATE = "pooled-estimate"
_PERCENTILES = (("p50", 50.0), ("p99", 99.0), ("p999", 99.9))
_FIO_DOC_START = re.compile(r'\{\s*"fio version"')
_MAX_FALLBACK_TRIES = 64  # bounds the work on garbage input (each try may scan to the end)


class FioParseError(FsAdvisorError):
    """fio's output could not be read as fio JSON (one-line message)."""


class FioRunError(FsAdvisorError):
    """fio could not be started or produced no result (one-line message)."""


# ---------------------------------------------------------------- parsing


@dataclass
class FioResult:
    """One fio run's final JSON document. ``jobs`` are fio's own job dicts, untouched."""

    version: str | None
    jobs: list[dict]
    doc: dict
    command: tuple[str, ...] | None = None
    notes: str = ""  # whatever fio printed before the JSON (warnings, "fio: ..." errors)
    truncated: bool = False  # a later document was cut off: this is an interim snapshot
    exit_code: int | None = None
    error: str | None = field(default=None)

    def __post_init__(self) -> None:
        if self.error is None:
            self.error = _first_job_error(self.jobs)

    @property
    def version_tuple(self) -> tuple[int, ...] | None:
        m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", self.version or "")
        return tuple(int(g) for g in m.groups() if g is not None) if m else None

    @property
    def disk_util(self) -> list[dict]:
        du = self.doc.get("disk_util")
        return [d for d in du if isinstance(d, dict)] if isinstance(du, list) else []

    def groups(self) -> list[int]:
        return sorted({_groupid(j) for j in self.jobs})

    def metrics(self, groupid: int | None = None) -> dict[str, float]:
        """Aggregated figures over all jobs (or one stonewall group). Keys carry units;
        a key is present only when fio reported what it is computed from.

        ``p50/p99/p999_latency_us`` (and the ``fsync_`` ones) pool every latency
        distribution of the run and may be estimates: see :meth:`percentile_provenance`.
        ``read_/write_/trim_`` percentiles are present only when fio printed them for a
        single distribution, so they are always fio's own figures."""
        return self._aggregated(groupid)[0]

    def percentile_provenance(self, groupid: int | None = None) -> dict[str, str]:
        """For every percentile key of ``metrics(groupid)``: EXACT when it is the figure fio
        printed for one latency distribution, POOLED_ESTIMATE when it was combined from
        several (see _mixture_quantile). Means are never estimates: the pooled mean is the
        sample-weighted mean of fio's means, exactly."""
        return self._aggregated(groupid)[1]

    def _aggregated(self, groupid: int | None) -> tuple[dict[str, float], dict[str, str]]:
        jobs = self.jobs if groupid is None else [j for j in self.jobs if _groupid(j) == groupid]
        return _aggregate(jobs, self.doc)

    def missing(self) -> list[str]:
        """What a complete result needs and this one lacks, as ``"<job> <section>: <what>"``.

        Every section that did I/O must give its I/O count, rate, bandwidth, bytes and a
        latency block in some known layout (ns keys since 3.0, µs ``clat``/``lat`` before;
        a count from ``total_ios``, or, before fio had it, from ``iops`` x ``runtime``).
        A failed job is not judged here: ``error`` already says why."""
        out: list[str] = []
        for j in self.jobs:
            if _first_job_error([j]):
                continue
            name = str(j.get("jobname", "?"))[:40]
            for d in _data_sections(j):
                sec = j.get(d)
                if not _active(sec):
                    continue
                lacks = [
                    what
                    for what, ok in (
                        ("total_ios (or iops and runtime)", _section_ios(sec) is not None),
                        ("iops", _num(sec, "iops") is not None),
                        ("bw_bytes/bw", _bw_bytes(sec) is not None),
                        ("io_bytes/io_kbytes", _bytes(sec) is not None),
                        (
                            "latency (lat_ns/clat_ns, or µs lat/clat)",
                            _lat_block(sec)[0] is not None,
                        ),
                        ("latency percentiles 50/99/99.9", _has_model_percentiles(sec)),
                    )
                    if not ok
                ]
                out += [f"{name} {d}: {what}" for what in lacks]
        return out

    def require_complete(self) -> "FioResult":
        """This result, or FioParseError naming what is missing (never a half-read run)."""
        lacks = self.missing()
        if lacks:
            more = f" and {len(lacks) - 3} more" if len(lacks) > 3 else ""
            raise FioParseError(
                f"{self.version or 'fio'} JSON lacks {'; '.join(lacks[:3])}{more}: "
                "refusing a result with metrics missing"
            )
        return self

    def latency_basis(self) -> str | None:
        """ "lat" (submission+completion), "clat" (completion only), "mixed" or None."""
        bases = {
            b
            for j in self.jobs
            for d in _data_sections(j)
            if (b := _lat_block(j.get(d))[1]) is not None
        }
        return None if not bases else bases.pop() if len(bases) == 1 else "mixed"


def parse(text: str | bytes, command: Sequence[str] | None = None) -> FioResult:
    """Parse fio ``--output-format=json`` output (stdout, or an ``--output`` file).

    fio may print notes before the ``{`` and ``--status-interval`` prints several documents;
    the last complete one is the final result. Raises FioParseError for anything else."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise FioParseError(f"fio output must be text, got {type(text).__name__}")
    decoder = json.JSONDecoder()
    starts = [m.start() for m in _FIO_DOC_START.finditer(text)]
    if not starts and "{" in text:
        # Not fio's usual layout: try from each "{" as the domain notes prescribe.
        starts = [i for i, c in enumerate(text) if c == "{"][:_MAX_FALLBACK_TRIES]
    last: tuple[dict, int, int] | None = None
    client_stats: dict | None = None  # fio --client writes its jobs there (2.x and 3.x)
    failure: str | None = None
    truncated = False
    for pos in starts:
        if last is not None and pos < last[2]:
            continue  # inside the document already read
        try:
            obj, end = decoder.raw_decode(text, pos)
        except (json.JSONDecodeError, RecursionError) as exc:
            failure = getattr(exc, "msg", "nesting too deep")
            if last is not None:
                truncated = True
            continue
        if isinstance(obj, dict) and isinstance(obj.get("jobs"), list):
            last, truncated = (obj, pos, end), False
        elif isinstance(obj, dict) and isinstance(obj.get("client_stats"), list):
            client_stats = obj
    if last is None:
        if client_stats is not None:
            version = client_stats.get("fio version")
            raise FioParseError(
                f"{version if isinstance(version, str) else 'fio'} client/server "
                "output (client_stats, no jobs): run fio locally, not with "
                "--client"
            )
        if not text.strip():
            raise FioParseError("fio produced no output")
        if failure:
            raise FioParseError(
                f"fio output is not valid fio JSON ({failure}); first line: {_first_line(text)!r}"
            )
        raise FioParseError(
            f"fio output contains no fio JSON document; first line: {_first_line(text)!r}"
        )
    doc, pos, _ = last
    jobs = doc["jobs"]
    if not all(isinstance(j, dict) for j in jobs):
        raise FioParseError("fio JSON 'jobs' holds something other than job objects")
    # Client/server mode adds an "All clients" summary that would double count.
    jobs = [j for j in jobs if j.get("jobname") != "All clients"]
    version = doc.get("fio version")
    return FioResult(
        version=version if isinstance(version, str) else None,
        jobs=jobs,
        doc=doc,
        command=tuple(command) if command is not None else None,
        notes=text[: starts[0]].strip() if starts else "",
        truncated=truncated,
    )


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:120]
    return ""


def _first_job_error(jobs: Iterable[dict]) -> str | None:
    for j in jobs:
        err = j.get("error")
        if isinstance(err, int) and not isinstance(err, bool) and err != 0:
            try:
                why = os.strerror(err)
            except (ValueError, OverflowError):
                why = "unknown error"
            return f"fio job {str(j.get('jobname', '?'))[:60]!r} failed: error {err} ({why})"
    return None


def _num(d: Any, key: str) -> float | None:
    """A finite, non-negative number from fio's JSON, else None (never a guess)."""
    if not isinstance(d, Mapping):
        return None
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        v = float(v)
    except OverflowError:  # a JSON integer beyond float range
        return None
    return v if math.isfinite(v) and v >= 0 else None


def _section_ios(sec: Any) -> float | None:
    """How many I/Os a section did: ``total_ios``; before fio had it (2.1.x writes only
    ``iops`` and ``runtime``, both computed from the I/O count: stat.c iops = 1000 x ios /
    runtime_ms), the count back from them, exact to within one I/O per millisecond of
    runtime rounding."""
    if isinstance(sec, Mapping) and "total_ios" in sec:
        return _num(sec, "total_ios")
    iops, runtime_ms = _num(sec, "iops"), _num(sec, "runtime")
    if iops is None or runtime_ms is None:
        return None
    ios = iops * runtime_ms / 1000.0
    return float(round(ios)) if math.isfinite(ios) else None


def _has_model_percentiles(sec: Any) -> bool:
    blk, _, _ = _lat_block(sec)
    return blk is not None and all(p in _percentiles(blk, 1.0) for _, p in _PERCENTILES)


def _active(sec: Any) -> TypeGuard[Mapping[str, Any]]:
    """The section did I/O (an unused direction is all zeros, or absent): a count, rate or
    byte figure above zero or a latency sample says so, and so does a runtime in a section
    that gives no I/O figure at all (a layout that does not say what it did). fio sets a
    direction's runtime only when it moved bytes in it, so a zero-I/O section with a runtime
    is idle, not incomplete."""
    if not isinstance(sec, Mapping):
        return False
    io_keys = ("total_ios", "iops", "io_bytes", "io_kbytes", "bw_bytes", "bw")
    if any(_num(sec, k) for k in io_keys) or _lat_block(sec)[0] is not None:
        return True
    return bool(_num(sec, "runtime")) and not any(k in sec for k in io_keys)


def _groupid(job: dict) -> int:
    g = job.get("groupid")
    return g if isinstance(g, int) and not isinstance(g, bool) else 0


def _engine(job: dict, doc: dict) -> str | None:
    for opts in (job.get("job options"), doc.get("global options")):
        if isinstance(opts, Mapping) and isinstance(opts.get("ioengine"), str):
            return opts["ioengine"]
    return None


def _lat_block(section: Any) -> tuple[Mapping | None, str | None, float]:
    """The latency statistics of one direction, in µs, as (block, basis, scale_to_us).

    Total latency ``lat`` when it carries percentiles (lat_percentiles=1); else completion
    latency ``clat`` (fio's default percentiles) — mean and percentiles always come from the
    same block so they describe the same thing. Blocks without samples are skipped
    (metadata engines leave ``lat_ns`` empty, verified on 3.33)."""
    if not isinstance(section, Mapping):
        return None, None, 1.0
    cands = []
    for basis in ("lat", "clat"):
        for key, scale in ((f"{basis}_ns", 1e-3), (basis, 1.0)):  # µs keys before fio 3.0
            blk = section.get(key)
            if isinstance(blk, Mapping) and _has_samples(blk):
                cands.append((blk, basis, scale))
                break
    for blk, basis, scale in cands:
        if _percentiles(blk, 1.0):
            return blk, basis, scale
    return cands[0] if cands else (None, None, 1.0)


def _has_samples(blk: Mapping) -> bool:
    n = _num(blk, "N")
    if n is not None:
        return n > 0
    return bool(_num(blk, "mean")) or bool(_num(blk, "max"))  # fio 2.x has no N


def _percentiles(blk: Mapping, scale: float) -> dict[float, float]:
    """{percent: value_us}; fio 2.x pads unused slots with "0.00": 0, which are dropped."""
    raw = blk.get("percentile")
    out: dict[float, float] = {}
    if not isinstance(raw, Mapping):
        return out
    for k, v in raw.items():
        try:
            p = float(k)
        except (TypeError, ValueError):
            continue
        value = _num({"v": v}, "v")
        if value is not None and math.isfinite(p) and 0 < p <= 100:
            out[round(p, 6)] = value * scale
    # fio's percentiles are bin edges of one histogram, so they never decrease with p; a
    # list that does is not fio's (corrupt, edited): no percentile is read from it.
    values = [out[p] for p in sorted(out)]
    if any(b < a for a, b in zip(values, values[1:])):
        return {}
    return out


def max_cpu_pct() -> float:
    """A CPU percentage counts one CPU's time as 100: more than 100 x the CPUs is no
    measurement (fio's usr_cpu/sys_cpu are usr_time / runtime, stat.c)."""
    return 100.0 * (os.cpu_count() or 1)


@dataclass
class _LatComponent:
    weight: float
    mean_us: float | None
    min_us: float | None
    max_us: float | None
    pct: dict[float, float]


def _component(blk: Mapping, scale: float, fallback_weight: float | None) -> _LatComponent | None:
    w = _num(blk, "N") or fallback_weight
    if not w:
        return None
    mean, lo, hi = _num(blk, "mean"), _num(blk, "min"), _num(blk, "max")
    return _LatComponent(
        weight=w,
        mean_us=None if mean is None else mean * scale,
        min_us=None if lo is None else lo * scale,
        max_us=None if hi is None else hi * scale,
        pct=_percentiles(blk, scale),
    )


def _cdf_knots(c: _LatComponent) -> list[tuple[float, float]]:
    pts = sorted((v, p / 100.0) for p, v in c.pct.items())
    lo = pts[0][0] if c.min_us is None else min(c.min_us, pts[0][0])
    # fio's percentile values are bin edges and may exceed the recorded max.
    hi = pts[-1][0] if c.max_us is None else max(c.max_us, pts[-1][0])
    knots, best = [(lo, 0.0)], 0.0
    for v, p in pts:
        best = max(best, p)
        knots.append((v, best))
    knots.append((hi, 1.0))
    return knots


def _cdf(knots: list[tuple[float, float]], vs: list[float], x: float, left: bool) -> float:
    i = bisect.bisect_left(vs, x) if left else bisect.bisect_right(vs, x)
    if i == 0:
        return 0.0
    if i == len(vs):
        return 1.0
    (v0, p0), (v1, p1) = knots[i - 1], knots[i]
    return p1 if v1 == v0 else p0 + (p1 - p0) * (x - v0) / (v1 - v0)


def _mixture_quantile(comps: list[_LatComponent], q: float) -> float:
    """The q-quantile of several latency distributions pooled by sample count.

    Each component's CDF is taken as piecewise linear through the percentiles fio printed
    (plus min at 0 and max at 1); the pooled CDF is their weighted sum, inverted exactly.
    The result always lies between the smallest and the largest component quantile (the
    max of per-job quantiles would be the conservative upper bound; this is the estimate).
    With one component it returns fio's own value unchanged."""
    key = round(q * 100, 6)
    if len(comps) == 1:
        return comps[0].pct[key]
    total = sum(c.weight for c in comps)
    curves = []
    for c in comps:
        knots = _cdf_knots(c)
        curves.append((c.weight / total, knots, [v for v, _ in knots]))

    def pooled(x: float, left: bool) -> float:
        return math.fsum(w * _cdf(k, vs, x, left) for w, k, vs in curves)

    # Weights w/total summed back can miss 1 in the last bit: three equal components put
    # G(x) at 0.98999999... where each one is at 0.99 (found by hypothesis), which skipped
    # the knot at x. The tolerance is far below fio's 0.01-percent resolution.
    tol = 1e-12
    xs = sorted({v for _, _, vs in curves for v in vs})
    prev_x, prev_g = xs[0], 0.0
    for x in xs:
        g_left = pooled(x, left=True)
        if g_left >= q - tol and x > prev_x and g_left > prev_g:
            return min(x, prev_x + (q - prev_g) / (g_left - prev_g) * (x - prev_x))
        g = pooled(x, left=False)
        if g >= q - tol:
            return x
        prev_x, prev_g = x, g
    return xs[-1]


def _latency_metrics(
    comps: list[_LatComponent],
    prefix: str,
    pooled_ok: bool = True,
) -> tuple[dict[str, float], dict[str, str]]:
    """Mean and percentiles of ``comps`` pooled, with each percentile's provenance.
    ``pooled_ok`` False leaves out percentiles that would be pooled estimates."""
    out: dict[str, float] = {}
    kinds: dict[str, str] = {}
    if not comps:
        return out, kinds
    means = _complete([c.mean_us for c in comps])
    if means is not None:
        out[f"{prefix}mean_latency_us"] = sum(
            c.weight * mean for c, mean in zip(comps, means)
        ) / sum(c.weight for c in comps)
    exact = len(comps) == 1
    if not (exact or pooled_ok):
        return out, kinds
    for name, p in _PERCENTILES:
        # Only when every component printed this exact percentile: never interpolate one.
        if all(p in c.pct for c in comps):
            key = f"{prefix}{name}_latency_us"
            out[key] = _mixture_quantile(comps, p / 100.0)
            kinds[key] = EXACT if exact else POOLED_ESTIMATE
    return out, kinds


def _bytes(section: Mapping) -> float | None:
    b = _num(section, "io_bytes")
    if b is None:
        kb = _num(section, "io_kbytes")
        return None if kb is None else kb * 1024
    # Before fio 2.21 "io_bytes" was KiB and io_kbytes did not exist (commit c12d597a).
    return b if "io_kbytes" in section else b * 1024


def _bw_bytes(section: Mapping) -> float | None:
    b = _num(section, "bw_bytes")
    if b is not None:
        return b
    kib = _num(section, "bw")  # KiB/s before 3.2
    return None if kib is None else kib * 1024


def _wall_ms(job: dict) -> float | None:
    """How long the job ran. The per-direction runtimes come first: with group_reporting,
    ``job_runtime`` is the SUM over the clones (verified: 2007 ms for numjobs=2, 1 s)."""
    rts = [r for d in (*DIRECTIONS, MIXED) if (r := _num(job.get(d), "runtime"))]
    return max(rts) if rts else _num(job, "job_runtime") or None


def _data_sections(job: Mapping) -> tuple[str, ...]:
    """The sections holding a job's I/O once each: "mixed" only when no direction section is
    there (unified_rw_reporting=mixed); with =both it repeats read+write+trim."""
    if any(isinstance(job.get(d), Mapping) for d in DIRECTIONS):
        return DIRECTIONS
    return (MIXED,)


def _cpu_weight_ms(job: dict) -> float:
    return _num(job, "job_runtime") or _wall_ms(job) or 1.0


def _per_s(count: float, ms: float) -> float | None:
    seconds = ms / 1000.0
    return count / seconds if seconds > 0 else None


def _plus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


@dataclass
class _Tally:
    """One kind of operation (read, write, trim, mixed or metadata) within one group.
    A field becomes None as soon as one job lacks it: a partial sum is no sum."""

    ios: float = 0.0
    iops: float | None = 0.0
    bytes: float | None = 0.0
    bw_bytes: float | None = 0.0
    runtime_ms: float | None = 0.0

    def add(self, sec: Mapping, ios: float) -> None:
        self.ios += ios
        self.iops = _plus(self.iops, _num(sec, "iops"))
        self.bytes = _plus(self.bytes, _bytes(sec))
        self.bw_bytes = _plus(self.bw_bytes, _bw_bytes(sec))
        rt = _num(sec, "runtime")  # jobs of a group run together: the longest one
        self.runtime_ms = (
            None if self.runtime_ms is None or rt is None else max(self.runtime_ms, rt)
        )


def _over_groups(tallies: list[_Tally], count: str, rate: str) -> float | None:
    """fio's own rate for one group; across groups, which run one after another, total
    work over total time."""
    if len(tallies) == 1:
        return getattr(tallies[0], rate)
    counts = [getattr(t, count) for t in tallies]
    runtimes = [t.runtime_ms for t in tallies if t.runtime_ms]
    if None in counts or len(runtimes) != len(tallies):
        return None
    return _per_s(sum(counts), sum(runtimes))


def _complete(values: list[float | None]) -> list[float] | None:
    """``values`` when every one is known, else None (a partial sum is no sum)."""
    known = [v for v in values if v is not None]
    return known if len(known) == len(values) else None


def _aggregate(jobs: list[dict], doc: dict) -> tuple[dict[str, float], dict[str, str]]:
    """Sum rates over jobs running together (one stonewall group); across groups, rates are
    total work over total group time. Returns the metrics and the percentiles' provenance."""
    by_group: dict[int, list[dict]] = {}
    for j in jobs:
        by_group.setdefault(_groupid(j), []).append(j)
    tallies: dict[str, list[_Tally]] = {}  # kind -> one tally per group
    lat: list[_LatComponent] = []
    lat_by_dir: dict[str, list[_LatComponent]] = {}  # data directions only
    sync_lat: list[_LatComponent] = []
    sync_ops = 0.0
    group_ms: list[float | None] = []
    cpu: dict[str, list[tuple[float, float]]] = {"usr": [], "sys": []}
    for gjobs in by_group.values():
        walls = [w for j in gjobs if (w := _wall_ms(j))]
        group_ms.append(max(walls) if walls else None)
        group: dict[str, _Tally] = {}
        for j in gjobs:
            meta = _engine(j, doc) in METADATA_ENGINES
            for d in _data_sections(j):
                sec = j.get(d)
                ios = _section_ios(sec)
                if not ios or not isinstance(sec, Mapping):  # no I/O: no section to add
                    continue
                group.setdefault("meta" if meta else d, _Tally()).add(sec, ios)
                blk, _, scale = _lat_block(sec)
                if blk is not None and (c := _component(blk, scale, ios)):
                    lat.append(c)
                    if not meta and d in DIRECTIONS:
                        lat_by_dir.setdefault(d, []).append(c)
            sync = j.get("sync")
            if n := _num(sync, "total_ios"):
                sync_ops += n
                blk, _, scale = _lat_block(sync)
                if blk is not None and (c := _component(blk, scale, n)):
                    sync_lat.append(c)
            for k in ("usr", "sys"):
                if (v := _num(j, f"{k}_cpu")) is not None and v <= max_cpu_pct():
                    cpu[k].append((v, _cpu_weight_ms(j)))
        for kind, t in group.items():
            tallies.setdefault(kind, []).append(t)

    m: dict[str, float] = {}
    data_kinds = [k for k in (*DIRECTIONS, MIXED) if k in tallies]
    for kind in data_kinds:
        ts = tallies[kind]
        if kind == MIXED:
            continue  # counted in the totals only: it has no direction
        if (iops := _over_groups(ts, "ios", "iops")) is not None:
            m[f"{kind}_iops"] = iops
        if (bw := _over_groups(ts, "bytes", "bw_bytes")) is not None:
            m[f"{kind}_mb_s"] = bw / 1e6
        if kind != "trim" and (byts := _complete([t.bytes for t in ts])) is not None:
            m[f"app_{kind}_bytes"] = float(sum(byts))
    if "meta" in tallies and (iops := _over_groups(tallies["meta"], "ios", "iops")) is not None:
        m["metadata_iops"] = iops

    kinds = data_kinds + (["meta"] if "meta" in tallies else [])
    walls_ms = _complete(group_ms)
    timed_ms = sum(walls_ms) if group_ms and walls_ms is not None else None
    if kinds:
        m["ops"] = float(sum(t.ios for k in kinds for t in tallies[k]))
        if len(by_group) == 1:
            rates = _complete([tallies[k][0].iops for k in kinds])
            if rates is not None:
                m["iops"] = float(sum(rates))
        elif timed_ms is not None and (iops := _per_s(m["ops"], timed_ms)) is not None:
            m["iops"] = iops
    if data_kinds:
        byts = _complete([t.bytes for k in data_kinds for t in tallies[k]])
        if len(by_group) == 1:
            bws = _complete([tallies[k][0].bw_bytes for k in data_kinds])
            if bws is not None:
                m["mb_s"] = sum(bws) / 1e6
        elif (
            timed_ms is not None
            and byts is not None
            and (bw := _per_s(sum(byts), timed_ms)) is not None
        ):
            m["mb_s"] = bw / 1e6
        if byts is not None:
            m["bytes"] = float(sum(byts))
    if timed_ms is not None:
        m["runtime_s"] = timed_ms / 1000.0

    latencies = [(lat, "", True)]
    if sync_ops:
        m["fsync_ops"] = sync_ops
        latencies.append((sync_lat, "fsync_", True))
    # Per direction only what fio itself printed: the mean is exact whatever the number of
    # jobs, percentiles only for one distribution (several would be estimates again).
    latencies += [(comps, f"{d}_", False) for d, comps in lat_by_dir.items()]
    how: dict[str, str] = {}
    for comps, prefix, pooled_ok in latencies:
        values, provenance = _latency_metrics(comps, prefix, pooled_ok)
        m.update(values)
        how.update(provenance)
    for k, vals in cpu.items():
        if vals:
            # Runtime-weighted mean of per-job CPU%, which is what fio's group_reporting
            # prints (it sums usr_time and total_run_time over the group; stat.c).
            m[f"{k}_cpu_pct"] = sum(v * w for v, w in vals) / sum(w for _, w in vals)
    # Absurd inputs can overflow a sum; an infinite figure is no figure.
    m = {k: v for k, v in m.items() if math.isfinite(v)}
    return m, {k: v for k, v in how.items() if k in m}


# ---------------------------------------------------------------- command lines


def workload_argv(
    workload: Workload,
    target: str,
    runtime_s: float,
    name: str = "job",
    size_bytes: int | None = None,
    ioengine: str | None = None,
) -> list[str]:
    """The fio command line that reproduces ``workload`` on ``target``.

    ``target`` is a block device or file (data workloads), or a directory on the mounted
    filesystem (metadata workloads, many-file workloads; a single-file data workload then
    uses ``<target>/<name>.dat``). Writing to a block device destroys its contents."""
    if runtime_s <= 0:
        raise FsAdvisorError(f"fio runtime must be positive, got {runtime_s}")
    is_dir = os.path.isdir(target)
    is_meta = workload.rw in METADATA_ENGINES
    if workload.metadata_frac > 0 and not is_meta:
        # fio cannot hold a data job and metadata jobs at a set ratio (flow= starved a
        # filecreate job to 1 op in 2 s here, fio 3.33): use the profile's runner job file.
        raise NotSupported(
            "workloads that mix data I/O with file create/stat/delete run "
            "from their runner/*.fio job file, not a single fio command line"
        )
    argv = [
        "fio",
        "--output-format=json",
        f"--name={name}",
        # ETA lines only clutter captured output.
        "--eta=never",
    ]
    bs = workload.bs_bytes
    if is_meta:
        if _is_block_device(target):
            raise NotSupported(
                f"{workload.rw} needs a directory on a mounted filesystem, "
                f"not the block device {target}"
            )
        engine = workload.rw
        argv += [
            f"--directory={target}",
            f"--ioengine={engine}",
            # No $jobname: a later filestat/filedelete run with another job name must find
            # the files filecreate made (verified: the chain needs a shared format).
            "--filename_format=fsadv.$jobnum.$filenum",
            f"--nrfiles={max(1, workload.nrfiles)}",
            # The engines move no data; a small size keeps the layout that filestat and
            # filedelete do at setup fast.
            f"--filesize={max(4096, bs)}",
            # Files are created inside the timed run, not during setup (fio's example).
            "--create_on_open=1",
            "--fallocate=none",
            # Keep one file open at a time: the open/close is part of the operation.
            "--openfiles=1",
            # runtime is only a cap here: the job ends after nrfiles operations.
            f"--runtime={_secs(runtime_s)}",
        ]
        if engine == "filedelete":
            # The engine's unlink is the measured operation; fio's own unlink at job end
            # would find nothing to delete (fio's examples/filedelete-ioengine.fio).
            argv.append("--unlink=0")
    else:
        engine = ioengine or workload.ioengine
        if workload.nrfiles > 1:
            lo = max(workload.file_size_bytes, bs)  # verified: lo < bs drops files
            hi = workload.file_size_max_bytes
            fsize = f"{lo}-{max(hi, lo)}" if hi and hi > lo else str(lo)
            argv += [
                f"--directory={target}",
                f"--nrfiles={workload.nrfiles}",
                f"--filesize={fsize}",
                # fio holds every file open otherwise (seed 002 used 64).
                f"--openfiles={min(workload.nrfiles, 64)}",
                "--file_service_type=random",
            ]
            if size_bytes:
                argv.append(f"--size={size_bytes}")
            elif hi and hi > lo:
                # fio refuses a filesize range without size= (verified: "you need to
                # specify size="); the mean file size times the file count covers the set.
                argv.append(f"--size={workload.nrfiles * ((lo + hi) // 2)}")
        else:
            path = os.path.join(target, f"{name}.dat") if is_dir else target
            argv += [f"--filename={path}", f"--size={size_bytes or workload.working_set_bytes}"]
        argv += [f"--rw={workload.rw}", f"--bs={bs}", f"--ioengine={engine}"]
        if engine in ASYNC_ENGINES:
            argv.append(f"--iodepth={workload.iodepth}")
        if workload.rw in ("rw", "randrw", "readwrite"):
            argv.append(f"--rwmixread={workload.rwmixread}")
        fsync = workload.fsync_every or (1 if workload.fsync_mode == "per_transaction" else 0)
        if fsync:
            argv.append(f"--fsync={fsync}")
        argv += [
            f"--direct={int(workload.direct)}",
            "--time_based=1",
            f"--runtime={_secs(runtime_s)}",
        ]
    argv += [
        f"--numjobs={workload.numjobs}",
        # One result per group: fio pools the clones' histograms, so percentiles are exact.
        "--group_reporting=1",
        # Total latency (submit + complete) is what the application waits for.
        "--lat_percentiles=1",
        f"--percentile_list={PERCENTILE_LIST}",
    ]
    return argv


def _secs(runtime_s: float) -> str:
    return f"{int(runtime_s)}s" if float(runtime_s).is_integer() else f"{int(runtime_s * 1000)}ms"


def _is_block_device(path: str) -> bool:
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def jobfile_argv(jobfile_path: str | os.PathLike, extra_args: Sequence[str] = ()) -> list[str]:
    """Run a runner/*.fio job file; the file reads its target from TARGET, RUNTIME, SIZE,
    NUMJOBS, NRFILES in the environment (see runner/README.md)."""
    return ["fio", "--output-format=json", *extra_args, str(jobfile_path)]


def run(
    argv: Sequence[str], timeout_s: float | None = None, env: Mapping[str, str] | None = None
) -> FioResult:
    """Run fio and parse what it printed. A non-zero exit is kept in ``exit_code`` and
    ``error`` when fio still produced JSON; FioRunError when it produced none."""
    try:
        proc = hostrun.run(argv, timeout_s=timeout_s, env=env)
    except hostrun.CommandNotFound:
        raise NotSupported("fio is not installed (Debian package 'fio')") from None
    except hostrun.CommandTimedOut:
        raise FioRunError(f"fio did not finish within {timeout_s} s") from None
    try:
        res = parse(proc.stdout, command=argv)
    except FioParseError:
        why = _first_line(proc.stderr) or _first_line(proc.stdout) or "no output"
        raise FioRunError(f"fio exited {proc.returncode}: {why}") from None
    res.exit_code = proc.returncode
    if proc.stderr.strip():
        res.notes = "\n".join(x for x in (res.notes, proc.stderr.strip()) if x)
    if proc.returncode != 0 and res.error is None:
        res.error = f"fio exited {proc.returncode}: {_first_line(proc.stderr) or 'see output'}"
    return res


# The commands run besides the measured jobs, named once so that --dry-run shows exactly these.
FIO_VERSION_ARGV = ("fio", "--version")
VERSION_TIMEOUT_S = 30.0  # `fio --version` answers at once; this only stops a hang
# A tiny io_uring job in a temporary directory ({tmpdir}): does io_uring work on this kernel?
IO_URING_SELFTEST_ARGV = (
    "fio",
    "--output-format=json",
    "--name=probe",
    "--filename={tmpdir}/probe",
    "--size=64k",
    "--bs=4k",
    "--rw=randread",
    "--ioengine=io_uring",
    "--iodepth=4",
    "--number_ios=8",
)


def fio_version() -> str:
    """``fio --version`` as printed, e.g. "fio-3.33"."""
    if not shutil.which("fio"):
        raise NotSupported("fio is not installed (Debian package 'fio')")
    out = hostrun.run(FIO_VERSION_ARGV, timeout_s=VERSION_TIMEOUT_S)
    ver = out.stdout.strip()
    if out.returncode != 0 or not ver:
        raise FioRunError(f"fio --version failed: {_first_line(out.stderr) or 'no output'}")
    return ver


@functools.lru_cache(maxsize=1)
def best_ioengine() -> str:
    """io_uring when fio can use it on this kernel (it can be compiled out or disabled by
    sysctl kernel.io_uring_disabled), else libaio. Probed once with a tiny job."""
    if not shutil.which("fio"):
        raise NotSupported("fio is not installed (Debian package 'fio')")
    with tempfile.TemporaryDirectory(prefix="fsadvisor-fio-") as d:
        argv = [a.format(tmpdir=d) for a in IO_URING_SELFTEST_ARGV]
        try:
            res = run(argv, timeout_s=30)
        except FsAdvisorError:
            return "libaio"
        ok = res.exit_code == 0 and res.error is None and res.metrics().get("ops", 0) > 0
        return "io_uring" if ok else "libaio"
