"""Seed data: numbers transcribed from the research seeds, as typed rows and Observations.

``datasets/`` holds one tidy CSV per seed (one stated number per row, with the
configuration, workload, unit and citation it belongs to) and ``workloads.toml``, which
defines every workload id the CSVs use. This module reads them, refuses anything it cannot
vouch for, and hands the model :class:`~fsadvisor.records.Observation` objects. A bad cell is
one :class:`DatasetError` line naming ``file:line``, the column and the problem, because a
silently mistyped figure would steer every recommendation built on it.

A row's ``note`` may open with bracketed tags that qualify the number (see datasets/README.md):
``[approx]``, ``[derived]``, ``[ambiguous]``, ``[indistinguishable]``, ``[comparable]``,
``[range=LO..HI]``
(the value is the midpoint of a stated range), and four that keep a row out of
:func:`load_observations` unless asked for: ``[upper-bound]``/``[lower-bound]`` (not a point
value), ``[illustrative]`` (the source says so), ``[spec]`` (a datasheet-style device figure)
and ``[context]`` (a machine or device fact, not a filesystem measurement).
"""

from __future__ import annotations

import csv
import io
import math
import re
import tomllib
from pathlib import Path
from typing import Any, Iterable, Mapping

from fsadvisor.domain import (
    ENERGY_SOURCES,
    FILESYSTEMS,
    HISTORIC_FILESYSTEMS,
    POWER_SCOPES,
    SCHEDULERS,
    FsConfig,
    Workload,
)
from fsadvisor.records import Observation
from fsadvisor.errors import FsAdvisorError
from fsadvisor.profiles import load_profile
from fsadvisor.profiles import workload_from_dict
from fsadvisor.infra.resources import data_dir

HEADER = (
    "id",
    "source",
    "citation",
    "device",
    "device_kind",
    "kernel",
    "filesystem",
    "mkfs_options",
    "mount_options",
    "scheduler",
    "ag_count",
    "workload",
    "metric",
    "value",
    "unit",
    "sd",
    "n",
    "relative_to",
    "power_scope",
    "energy_source",
    "cv_over_40pct",
    "note",
)
WORKLOADS_FILE = "workloads.toml"

DEVICE_KINDS = ("nvme", "sata-ssd", "hdd")
# "raw": the block device itself, no filesystem in the path (seed 002's nvme0n1 rows), or a
# device/machine figure that belongs to no filesystem (idle power).
DATASET_FILESYSTEMS = FILESYSTEMS + HISTORIC_FILESYSTEMS + ("raw",)
# Seed 003 ran kernel 2.6.35's single-queue schedulers; they map only loosely onto blk-mq's.
HISTORIC_SCHEDULERS = ("cfq", "deadline", "noop")
DATASET_SCHEDULERS = SCHEDULERS + HISTORIC_SCHEDULERS

# mkfs keys the seeds vary (seed 004 Sec. 3.4: block size, inode size, ext2/3 blocks per
# group); the XFS allocation-group count has its own column.
MKFS_INT_KEYS = ("block_size", "inode_size", "blocks_per_group")
MKFS_BOOL_KEYS = ("journal",)

# Absolute metrics and the units each may be stated in. Bandwidth keeps the unit the seed
# used: seed 002's harness prints MiB/s under a "MB/s" label, seed 000 writes "GB/s".
METRIC_UNITS: dict[str, tuple[str, ...]] = {
    "iops": ("IOPS",),
    "ops_per_s": ("ops/s",),
    "files_per_s": ("files/s",),
    "mb_s": ("MB/s", "MiB/s"),
    "gb_s": ("GB/s", "GiB/s"),
    "read_mb_s": ("MB/s",),
    "write_mb_s": ("MB/s",),
    "p99_latency_us": ("us",),
    "mean_latency_us": ("us",),
    "fsync_latency_us": ("us",),
    "fsync_journal_latency_us": ("us",),
    "watts": ("W",),
    "watts_min": ("W",),
    "watts_max": ("W",),
    "ops_per_joule": ("ops/J",),
    "ai_iops_per_watt": ("IOPS/W",),
    "write_bytes_per_4k_write": ("KB",),
}
# A relative row states metric(config) / metric(relative_to) as a factor ("ratio", 9.4x)
# or as a change ("ratio-1", +23% -> 0.23); Observations always carry "ratio-1".
RELATIVE_UNITS = ("ratio-1", "ratio")

PLAIN_TAGS = (
    "approx",
    "derived",
    "ambiguous",
    "indistinguishable",
    "comparable",
    "upper-bound",
    "lower-bound",
    "illustrative",
    "spec",
    "context",
)
EXCLUDED_BY_DEFAULT = frozenset({"upper-bound", "lower-bound", "illustrative", "spec", "context"})

_TAG_RE = re.compile(r"\s*\[([^\[\]]*)\]")
_RANGE_RE = re.compile(r"range=(.+?)\.\.(.+)")
_MOUNT_OPT_RE = re.compile(r"[A-Za-z0-9_.:=/+-]+")
_ID_RE = re.compile(r"[A-Za-z0-9_.:-]+")
# Plain decimal notation only: float() would also take "1_000", "nan" or "infinity".
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class DatasetError(FsAdvisorError):
    """A shipped or user-supplied dataset file is malformed; the message names file:line."""


def _show(value: Any) -> str:
    text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def _resolve(directory: str | Path | None) -> Path:
    if directory is not None:
        return Path(directory)
    try:
        return data_dir("datasets")
    except FileNotFoundError as e:
        raise DatasetError(" ".join(str(e).split())) from None


# ---------------------------------------------------------------- workloads


def load_workloads(directory: str | Path | None = None) -> dict[str, Workload]:
    """Every workload of ``workloads.toml``, by id, parsed by profile.workload_from_dict."""

    path = _resolve(directory) / WORKLOADS_FILE
    try:
        doc = tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as e:
        raise DatasetError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise DatasetError(f"{path.name}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise DatasetError(" ".join(f"{path.name}: malformed TOML: {e}".split())) from None
    workloads: dict[str, Workload] = {}
    for wid, table in doc.items():
        if not _ID_RE.fullmatch(wid):
            raise DatasetError(
                f"{path.name}: workload id {_show(wid)} has characters other "
                "than letters, digits and _.:-"
            )
        if not isinstance(table, Mapping):
            raise DatasetError(
                f"{path.name}: {wid} must be a table of workload keys, not {type(table).__name__}"
            )
        if "preset" in table:
            # One definition per workload: a dataset workload that a preset already
            # describes names it instead of repeating (and drifting from) its parameters.
            extra = set(table) - {"preset", "source", "description"}
            if extra:
                raise DatasetError(
                    f"{path.name}: {wid} names a preset and also sets {', '.join(sorted(extra))}"
                )
            try:
                workloads[wid] = load_profile(str(table["preset"])).workload
            except FsAdvisorError as e:
                raise DatasetError(f"{path.name}: {wid}: {e}") from None
            continue
        workloads[wid] = workload_from_dict(table, where=f"{path.name} [{wid}]")
    return workloads


# ---------------------------------------------------------------- rows


class _Cell:
    """Reads and checks the cells of one CSV row; every failure names file:line:column."""

    def __init__(self, where: str, raw: Mapping[str, str]):
        self.where = where
        self.raw = raw

    def fail(self, column: str, problem: str) -> DatasetError:
        return DatasetError(f"{self.where}: {column} = {_show(self.raw[column])} {problem}")

    def text(self, column: str, required: bool = False) -> str:
        v = self.raw[column]
        if any(c in v for c in "\r\n\x00"):
            raise self.fail(column, "must be one line of text")
        if required and not v.strip():
            raise DatasetError(f"{self.where}: {column} is empty; every row needs one")
        if v != v.strip():
            raise self.fail(column, "has leading or trailing spaces")
        return v

    def choice(self, column: str, choices: Iterable[str], allow_empty: bool) -> str:
        v = self.text(column)
        choices = tuple(choices)
        if (v == "" and allow_empty) or v in choices:
            return v
        raise self.fail(
            column, "must be one of " + ", ".join(choices) + (" (or empty)" if allow_empty else "")
        )

    def number(self, column: str, allow_empty: bool = False) -> float | None:
        v = self.text(column)
        if v == "" and allow_empty:
            return None
        if not _NUMBER_RE.fullmatch(v):
            raise self.fail(column, "is not a number")
        f = float(v)
        if not math.isfinite(f):
            raise self.fail(column, "is not a finite number")
        return f

    def integer(self, column: str, lo: int) -> int | None:
        v = self.text(column)
        if v == "":
            return None
        if not re.fullmatch(r"[0-9]+", v):
            raise self.fail(column, "is not a whole number")
        n = int(v)
        if n < lo:
            raise self.fail(column, f"must be at least {lo}")
        return n


def _mkfs(cell: _Cell) -> dict[str, Any]:
    text = cell.text("mkfs_options")
    out: dict[str, Any] = {}
    if not text:
        return out
    for item in text.split(";"):
        key, eq, value = item.partition("=")
        if not eq:
            raise cell.fail("mkfs_options", f"item {_show(item)} is not key=value")
        if key in out:
            raise cell.fail("mkfs_options", f"gives {key} twice")
        if key in MKFS_INT_KEYS:
            if not re.fullmatch(r"[1-9][0-9]{0,9}", value):
                raise cell.fail("mkfs_options", f"{key} must be a positive whole number of bytes")
            out[key] = int(value)
        elif key in MKFS_BOOL_KEYS:
            if value not in ("true", "false"):
                raise cell.fail("mkfs_options", f"{key} must be true or false")
            out[key] = value == "true"
        else:
            raise cell.fail(
                "mkfs_options",
                f"key {_show(key)} is not one of " + ", ".join(MKFS_INT_KEYS + MKFS_BOOL_KEYS),
            )
    return out


def _mount(cell: _Cell) -> tuple[str, ...]:
    text = cell.text("mount_options")
    if not text:
        return ()
    opts = tuple(text.split(","))
    for o in opts:
        if not _MOUNT_OPT_RE.fullmatch(o):
            raise cell.fail("mount_options", f"option {_show(o)} is not a mount option word")
    if len(set(opts)) != len(opts):
        raise cell.fail("mount_options", "repeats an option")
    return opts


def _tags(cell: _Cell, value: float) -> tuple[frozenset[str], tuple[float, float] | None]:
    note = cell.text("note")
    tags: set[str] = set()
    rng: tuple[float, float] | None = None
    pos = 0
    while (m := _TAG_RE.match(note, pos)) is not None:
        tag = m.group(1)
        pos = m.end()
        r = _RANGE_RE.fullmatch(tag)
        if r is not None:
            try:
                lo, hi = float(r.group(1)), float(r.group(2))
            except ValueError:
                raise cell.fail("note", f"tag [{tag}] needs numbers: [range=LO..HI]") from None
            if not (math.isfinite(lo) and math.isfinite(hi) and lo <= value <= hi):
                raise cell.fail("note", f"tag [{tag}] must hold the value {value:g}")
            rng = (lo, hi)
            tags.add("range")
        elif tag in PLAIN_TAGS:
            tags.add(tag)
        else:
            raise cell.fail(
                "note", f"tag [{tag}] is not one of " + ", ".join(PLAIN_TAGS + ("range=LO..HI",))
            )
    if {"upper-bound", "lower-bound"} <= tags:
        raise cell.fail("note", "cannot be both [upper-bound] and [lower-bound]")
    return frozenset(tags), rng


def _row(
    file: str, line: int, raw: Mapping[str, str], workloads: Mapping[str, Workload]
) -> dict[str, Any]:
    c = _Cell(f"{file}:{line}", raw)
    row: dict[str, Any] = {"file": file, "line": line}
    row["id"] = c.text("id", required=True)
    if not _ID_RE.fullmatch(row["id"]):
        raise c.fail("id", "may hold only letters, digits and _.:-")
    for col in ("source", "citation"):
        row[col] = c.text(col, required=True)
    row["device"] = c.text("device")
    row["device_kind"] = c.choice("device_kind", DEVICE_KINDS, allow_empty=False)
    row["kernel"] = c.text("kernel")
    row["filesystem"] = c.choice("filesystem", DATASET_FILESYSTEMS, allow_empty=False)
    row["mkfs"] = _mkfs(c)
    row["mkfs_options"] = raw["mkfs_options"]
    row["mount"] = _mount(c)
    row["mount_options"] = raw["mount_options"]
    if row["filesystem"] == "raw" and (row["mkfs"] or row["mount"]):
        raise c.fail("filesystem", "is raw (no filesystem) but the row has mkfs or mount options")
    row["scheduler"] = c.choice("scheduler", DATASET_SCHEDULERS, allow_empty=True)
    row["ag_count"] = c.integer("ag_count", 1)
    if row["ag_count"] is not None and row["filesystem"] != "xfs":
        raise c.fail(
            "ag_count",
            f"is an XFS allocation-group count but the filesystem is {row['filesystem']}",
        )
    row["workload"] = c.text("workload", required=True)
    if row["workload"] not in workloads:
        raise c.fail("workload", f"is not defined in {WORKLOADS_FILE}")

    row["value"] = c.number("value")
    row["metric"] = c.text("metric", required=True)
    row["unit"] = c.text("unit", required=True)
    row["relative_to"] = c.text("relative_to")
    if row["metric"] not in METRIC_UNITS:
        raise c.fail("metric", "is not one of " + ", ".join(METRIC_UNITS))
    relative = row["unit"] in RELATIVE_UNITS
    if relative:
        base = row["relative_to"]
        base_fs = row["filesystem"] if base == "default" else base.partition(":")[2]
        if (
            not (base == "default" or base.startswith(("default:", "same:")))
            or base_fs not in DATASET_FILESYSTEMS
            or base_fs == "raw"
        ):
            raise c.fail(
                "relative_to",
                f"must be 'default', 'default:<filesystem>' or 'same:<filesystem>' for a "
                f"{row['unit']} row",
            )
        if row["unit"] == "ratio" and row["value"] <= 0:
            raise c.fail("value", "must be above 0 for a ratio")
        if row["unit"] == "ratio-1" and row["value"] <= -1:
            raise c.fail("value", "must be above -1 for a ratio-1 change")
    else:
        if row["relative_to"]:
            raise c.fail(
                "relative_to",
                f"must be empty for an absolute row (unit "
                f"{row['unit']}); relative rows use unit " + " or ".join(RELATIVE_UNITS),
            )
        if row["unit"] not in METRIC_UNITS[row["metric"]]:
            raise c.fail(
                "unit",
                f"is not a unit of {row['metric']} (use "
                + " or ".join(METRIC_UNITS[row["metric"]] + RELATIVE_UNITS)
                + ")",
            )
        if row["value"] < 0:
            raise c.fail("value", f"must not be negative for {row['metric']}")

    row["sd"] = c.number("sd", allow_empty=True)
    if row["sd"] is not None and row["sd"] < 0:
        raise c.fail("sd", "must not be negative")
    row["n"] = c.integer("n", 1)
    row["power_scope"] = c.choice("power_scope", POWER_SCOPES, allow_empty=True)
    row["energy_source"] = c.choice("energy_source", ENERGY_SOURCES, allow_empty=True)
    cv = c.choice("cv_over_40pct", ("true", "false"), allow_empty=True)
    row["cv_over_40pct"] = None if cv == "" else cv == "true"
    row["note"] = raw["note"]
    row["tags"], row["range"] = _tags(c, row["value"])
    return row


def _read_csv(path: Path) -> Iterable[tuple[int, list[str]]]:
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise DatasetError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise DatasetError(f"{path.name}: not UTF-8 text (byte {e.start})") from None
    if "\x00" in text:
        raise DatasetError(f"{path.name}: holds a NUL byte; not a CSV text file")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        for cells in reader:
            yield reader.line_num, cells
    except csv.Error as e:
        raise DatasetError(
            " ".join(f"{path.name}:{reader.line_num}: malformed CSV: {e}".split())
        ) from None


def load_rows(directory: str | Path | None = None) -> list[dict[str, Any]]:
    """Every row of every ``*.csv`` in ``directory`` (default: the shipped datasets/), typed
    and validated. Besides the CSV columns (``value`` float, ``sd`` float|None, ``n`` and
    ``ag_count`` int|None, ``cv_over_40pct`` bool|None) a row carries ``mkfs`` (dict),
    ``mount`` (tuple), ``tags`` (frozenset), ``range`` ((lo, hi)|None), ``file``, ``line``."""
    base = _resolve(directory)
    return _load_rows(base, load_workloads(base))


def _load_rows(base: Path, workloads: Mapping[str, Workload]) -> list[dict[str, Any]]:
    csvs = sorted(base.glob("*.csv"))
    if not csvs:
        raise DatasetError(f"{base}: holds no *.csv dataset")
    rows: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for path in csvs:
        header_seen = False
        for line, cells in _read_csv(path):
            where = f"{path.name}:{line}"
            if not header_seen:
                if tuple(cells) != HEADER:
                    raise DatasetError(f"{where}: header must be exactly " + ",".join(HEADER))
                header_seen = True
                continue
            if not cells:
                continue
            if len(cells) != len(HEADER):
                raise DatasetError(f"{where}: has {len(cells)} cells, the header {len(HEADER)}")
            row = _row(path.name, line, dict(zip(HEADER, cells)), workloads)
            if row["id"] in seen:
                raise DatasetError(f"{where}: id {row['id']} is also used at {seen[row['id']]}")
            seen[row["id"]] = where
            rows.append(row)
        if not header_seen:
            raise DatasetError(f"{path.name}: empty file; the first line must be the header")
    return rows


# ---------------------------------------------------------------- observations


def _base_config(row: Mapping[str, Any], scheduler: str) -> FsConfig | None:
    base = row["relative_to"]
    if not base:
        return None
    fs = row["filesystem"] if base == "default" else base.partition(":")[2]
    # "same:<fs>": <fs> with this row's mount options (a study that mounted every
    # filesystem alike); "default:<fs>": <fs> as mkfs and mount make it.
    mount = row["mount"] if base.startswith("same:") else ()
    return FsConfig.make(fs, {}, mount, scheduler, None)


def observation(row: Mapping[str, Any], workloads: Mapping[str, Workload]) -> Observation:
    """One validated row as an Observation. A "ratio" (9.4x) becomes "ratio-1" (8.4); an
    unstated scheduler becomes "none", the FsConfig default."""
    scheduler = row["scheduler"] or "none"
    value, unit = row["value"], row["unit"]
    if unit == "ratio":
        value, unit = value - 1.0, "ratio-1"
    return Observation(
        source=f"{row['citation']} ({row['id']})",
        device_kind=row["device_kind"],
        config=FsConfig.make(
            row["filesystem"], row["mkfs"], row["mount"], scheduler, row["ag_count"]
        ),
        workload=workloads[row["workload"]],
        metric=row["metric"],
        value=value,
        unit=unit,
        relative_to=_base_config(row, scheduler),
        power_scope=row["power_scope"] or None,
        energy_source=row["energy_source"] or None,
        # The model down-weights rows the source itself flags as noisy (seed 004's dagger).
        note=row["note"] + (" [cv_over_40pct]" if row.get("cv_over_40pct") else ""),
        # Flush cost depends on power-loss protection; seed 002's PM9A3 states it.
        device_plp="yes" if "(PLP)" in (row.get("device") or "") else "unknown",
        # The cited drive: its rows set its own levels and inform the others only through
        # the shared configuration effects.
        device_id=(row.get("device") or "").strip() or f"{row['device_kind']}:unstated",
    )


def load_observations(
    directory: str | Path | None = None, *, include: Iterable[str] = ()
) -> list[Observation]:
    """The rows the model may learn from, as Observations (weight 1.0: the model decides).

    Rows tagged upper-bound, lower-bound, illustrative, spec or context are left out unless
    their tag is named in ``include`` (a bound is not a point value)."""
    include = set(include)
    unknown = include - EXCLUDED_BY_DEFAULT
    if unknown:
        raise DatasetError(
            f"include names {', '.join(sorted(unknown))}; only "
            + ", ".join(sorted(EXCLUDED_BY_DEFAULT))
            + " are left out by default"
        )
    excluded = EXCLUDED_BY_DEFAULT - include
    base = _resolve(directory)
    workloads = load_workloads(base)
    return [
        observation(r, workloads) for r in _load_rows(base, workloads) if not (r["tags"] & excluded)
    ]


def fingerprint(directory: str | Path | None = None) -> str:
    """A cheap identity of the shipped data (file names and bytes), so callers can tell
    whether anything changed without parsing and validating every row."""
    # hashlib (OpenSSL) only when the shipped data's fingerprint is taken (start-up)
    import hashlib

    base = _resolve(directory)
    h = hashlib.sha256()
    # The reference matrix (datasets/reference/runs.csv) is data the model learns from too.
    for p in sorted(
        [*base.glob("*.csv"), base / "workloads.toml", base / "reference" / "runs.csv"]
    ):
        if p.is_file():
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]
