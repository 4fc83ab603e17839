"""The device library: named drives with their datasheet figures, each figure with its source.

Think of it as a shelf of spec sheets, one binder per vendor (``datasets/devices/*.toml``):
every number on a page carries the document it was copied from, and a page with a number but
no document is torn out — here, it is a load error. The library gives ``--device
samsung-990-pro-2tb`` a prior that is better than "some NVMe drive", and ``devices list|show``
something to read. It never measures anything: datasheets quote best cases, and the output
says so (``fsadvisor.predict.datasheet``).

Schema, source kinds and rules: ``datasets/devices/README.md``. Pure: tomllib and difflib only.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from fsadvisor.errors import FsAdvisorError
from fsadvisor.sizes import parse_size

# How much a kind of source is trusted, best first: where sources disagree the better kind
# wins (README "Rules"); a figure from the last three is marked as not the manufacturer's.
SOURCE_KINDS = (
    "manufacturer-datasheet",
    "manufacturer-product-brief",
    "oem-product-guide",
    "device-identify-log",
    "review",
    "retailer",
    "seed",
)
MANUFACTURER_KINDS = ("manufacturer-datasheet", "manufacturer-product-brief")

NUMERIC_FIGURES = {
    "seq_read_mb_s": "sequential read, MB/s (10^6 bytes/s)",
    "seq_write_mb_s": "sequential write, MB/s",
    "rand_read_iops": "4K random read IOPS (queue depth as the datasheet states)",
    "rand_write_iops": "4K random write IOPS",
    "rand_read_iops_qd1": "4K random read IOPS at QD1",
    "rand_write_iops_qd1": "4K random write IOPS at QD1",
    "read_latency_us": "read latency, us (typical / QD1 where stated)",
    "write_latency_us": "write latency, us",
    "active_power_w": "average active power, W",
    "max_power_w": "maximum power, W",
    "idle_power_w": "idle power, W",
    "low_power_w": "lowest low-power state, W",
    "endurance_tbw": "endurance, TB written",
    "dwpd": "drive writes per day",
}
TEXT_FIGURES = {"interface": "host interface", "form_factor": "form factor"}
OTHER_FIGURES = {
    "plp": "power-loss protection (true/false)",
    "power_states": "NVMe power states [{ps, max_w, op}]",
}
FIGURE_KEYS = {**NUMERIC_FIGURES, **TEXT_FIGURES, **OTHER_FIGURES}
META_KEYS = {
    "name",
    "family",
    "model",
    "kind",
    "class",
    "capacity_gb",
    "part_numbers",
    "notes",
    "measured_as",
}
DRIVE_KINDS = ("nvme", "sata-ssd")
DRIVE_CLASSES = ("consumer", "data-center", "industrial")
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]*[a-z0-9]$")
_FIGURE_FIELDS = {"v", "src", "note", "qd", "also", "disagrees"}


class DeviceLibraryError(FsAdvisorError):
    """A library file breaks the rules, or a name matches no drive (or several)."""


@dataclass(frozen=True)
class Source:
    id: str
    title: str
    date: str
    url: str
    kind: str

    @property
    def manufacturer(self) -> bool:
        return self.kind in MANUFACTURER_KINDS

    def cite(self) -> str:
        return f"{self.title} ({self.date}; {self.kind}) {self.url}"

    def to_dict(self) -> dict[str, str]:
        return {
            "id": self.id,
            "title": self.title,
            "date": self.date,
            "url": self.url,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class Figure:
    key: str
    value: Any
    source: Source
    note: str = ""
    qd: int | None = None
    also: tuple[Source, ...] = ()
    disagrees: tuple[tuple[Any, Source, str], ...] = ()  # (value, source, note)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "value": self.value,
            "source": self.source.id,
            "source_kind": self.source.kind,
        }
        if not self.source.manufacturer:
            d["not_manufacturer"] = True
        if self.note:
            d["note"] = self.note
        if self.qd is not None:
            d["queue_depth"] = self.qd
        if self.also:
            d["also"] = [s.id for s in self.also]
        if self.disagrees:
            d["disagrees"] = [
                {"value": v, "source": s.id, "source_kind": s.kind, "note": n}
                for v, s, n in self.disagrees
            ]
        return d


@dataclass(frozen=True)
class LibraryDrive:
    name: str
    vendor: str
    model: str
    kind: str  # nvme | sata-ssd: the fsadvisor device kind its prior starts from
    drive_class: str
    capacity_gb: float
    figures: dict[str, Figure]
    file: str
    part_numbers: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    family: str = ""
    # Names this drive goes by where it was measured: the ``device`` column of datasets/*.csv
    # and the model string a probe records (NVMe Identify "Model Number").
    measured_as: tuple[str, ...] = ()

    @property
    def size_bytes(self) -> int:
        return int(round(self.capacity_gb * 1e9))  # datasheet capacity: decimal GB

    @property
    def plp(self) -> str:
        f = self.figures.get("plp")
        return "unknown" if f is None else ("yes" if f.value else "no")

    def value(self, key: str, default: Any = None) -> Any:
        f = self.figures.get(key)
        return default if f is None else f.value

    def sources(self) -> list[Source]:
        seen: dict[str, Source] = {}
        for f in self.figures.values():
            for s in (f.source, *f.also, *(d[1] for d in f.disagrees)):
                seen.setdefault(s.id, s)
        return sorted(seen.values(), key=lambda s: (SOURCE_KINDS.index(s.kind), s.id))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "vendor": self.vendor,
            "model": self.model,
            "kind": self.kind,
            "class": self.drive_class,
            "capacity_gb": self.capacity_gb,
            "part_numbers": list(self.part_numbers),
            "plp": self.plp,
            "figures": {k: f.to_dict() for k, f in sorted(self.figures.items())},
            "sources": [s.to_dict() for s in self.sources()],
            "notes": list(self.notes),
            "measured_as": list(self.measured_as),
            "file": self.file,
        }


# --------------------------------------------------------------------------- validation


def _err(where: str, msg: str) -> DeviceLibraryError:
    return DeviceLibraryError(f"{where}: {msg}")


def _number(where: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise _err(where, f"must be a positive finite number, not {v!r}")
    return v


def _check_value(where: str, key: str, v: Any) -> Any:
    if key in NUMERIC_FIGURES:
        return _number(where, v)
    if key in TEXT_FIGURES:
        if not isinstance(v, str) or not v.strip():
            raise _err(where, f"must be non-empty text, not {v!r}")
        return v
    if key == "plp":
        if not isinstance(v, bool):
            raise _err(where, f"must be true or false, not {v!r}")
        return v
    # power_states: a list of {ps, max_w, op}
    if not isinstance(v, list) or not v:
        raise _err(where, "must be a non-empty list of {ps, max_w, op}")
    out = []
    for i, ps in enumerate(v):
        if (
            not isinstance(ps, dict)
            or set(ps) - {"ps", "max_w", "op"}
            or not {"ps", "max_w"} <= set(ps)
        ):
            raise _err(f"{where}[{i}]", "needs ps and max_w (and optionally op)")
        if isinstance(ps["ps"], bool) or not isinstance(ps["ps"], int) or ps["ps"] < 0:
            raise _err(f"{where}[{i}].ps", f"must be a state number >= 0, not {ps['ps']!r}")
        out.append(
            {
                "ps": ps["ps"],
                "max_w": _number(f"{where}[{i}].max_w", ps["max_w"]),
                "op": bool(ps.get("op", True)),
            }
        )
    return out


def _figure(where: str, key: str, raw: Any, sources: dict[str, Source]) -> Figure:
    if key not in FIGURE_KEYS:
        close = difflib.get_close_matches(key, list(FIGURE_KEYS) + list(META_KEYS), n=1)
        raise _err(
            where, f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
        )
    if not isinstance(raw, dict) or "v" not in raw:
        raise _err(where, "a figure is a table {v = VALUE, src = SOURCE-ID}")
    if "src" not in raw or not isinstance(raw["src"], str) or not raw["src"]:
        raise _err(where, "has no source (src): every figure cites its source")
    unknown = set(raw) - _FIGURE_FIELDS
    if unknown:
        raise _err(where, f"unknown field(s) {sorted(unknown)}; allowed: {sorted(_FIGURE_FIELDS)}")

    def src(sid: Any, at: str) -> Source:
        if not isinstance(sid, str) or sid not in sources:
            raise _err(at, f"source {sid!r} is not defined in this file's [sources]")
        return sources[sid]

    value = _check_value(where, key, raw["v"])
    source = src(raw["src"], where)
    qd = raw.get("qd")
    if qd is not None and (isinstance(qd, bool) or not isinstance(qd, int) or qd < 1):
        raise _err(f"{where}.qd", f"must be a queue depth >= 1, not {qd!r}")
    also = tuple(src(s, f"{where}.also") for s in raw.get("also", []))
    dis = []
    for i, d in enumerate(raw.get("disagrees", [])):
        at = f"{where}.disagrees[{i}]"
        if (
            not isinstance(d, dict)
            or "v" not in d
            or "src" not in d
            or set(d) - {"v", "src", "note"}
        ):
            raise _err(at, "needs v and src (and optionally note)")
        dsrc = src(d["src"], at)
        # Where sources disagree the manufacturer wins: a figure from a lesser source may not
        # stand against a manufacturer's disagreeing one.
        if dsrc.manufacturer and not source.manufacturer:
            raise _err(
                at,
                f"a manufacturer source ({dsrc.id}) disagrees with a {source.kind} "
                "figure: the manufacturer's figure must be the value",
            )
        dis.append((_check_value(at, key, d["v"]), dsrc, str(d.get("note", ""))))
    return Figure(
        key=key,
        value=value,
        source=source,
        note=str(raw.get("note", "")),
        qd=qd,
        also=also,
        disagrees=tuple(dis),
    )


def _sources(fname: str, doc: dict) -> dict[str, Source]:
    out = {}
    for sid, s in (doc.get("sources") or {}).items():
        where = f"{fname} [sources.{sid}]"
        if not isinstance(s, dict):
            raise _err(where, "must be a table")
        missing = [k for k in ("title", "date", "url", "kind") if not str(s.get(k, "")).strip()]
        if missing:
            raise _err(where, f"missing {', '.join(missing)}")
        if s["kind"] not in SOURCE_KINDS:
            raise _err(where, f"kind {s['kind']!r} is not one of {', '.join(SOURCE_KINDS)}")
        extra = set(s) - {"title", "date", "url", "kind"}
        if extra:
            raise _err(where, f"unknown field(s) {sorted(extra)}")
        out[sid] = Source(
            id=sid, title=s["title"], date=str(s["date"]), url=s["url"], kind=s["kind"]
        )
    return out


def parse_file(fname: str, doc: dict) -> list[LibraryDrive]:
    """Validate one vendor file (already parsed TOML) and return its drives."""
    vendor = doc.get("vendor")
    if not isinstance(vendor, str) or not vendor.strip():
        raise _err(fname, 'needs vendor = "..."')
    extra = set(doc) - {"vendor", "sources", "family", "drive"}
    if extra:
        raise _err(fname, f"unknown top-level key(s) {sorted(extra)}")
    sources = _sources(fname, doc)
    families = doc.get("family") or {}
    drives = doc.get("drive") or []
    if not isinstance(drives, list) or not drives:
        raise _err(fname, "has no [[drive]] entries")
    used: set[str] = set()
    out = []
    for i, raw in enumerate(drives):
        name = raw.get("name", f"#{i + 1}")
        where = f"{fname} drive {name}"
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise _err(where, "name must be lower-case letters, digits, '.', '-'")
        fam_name = raw.get("family", "")
        if fam_name and fam_name not in families:
            raise _err(where, f"family {fam_name!r} is not defined in this file")
        merged = {**(families.get(fam_name) or {}), **raw}
        figures: dict[str, Figure] = {}
        for key, val in merged.items():
            if key in META_KEYS:
                continue
            figures[key] = _figure(f"{where}.{key}", key, val, sources)
        for k in ("model", "kind", "class", "capacity_gb"):
            if k not in merged:
                raise _err(where, f"missing {k}")
        if merged["kind"] not in DRIVE_KINDS:
            raise _err(where, f"kind must be one of {', '.join(DRIVE_KINDS)}")
        if merged["class"] not in DRIVE_CLASSES:
            raise _err(where, f"class must be one of {', '.join(DRIVE_CLASSES)}")
        cap = _number(f"{where}.capacity_gb", merged["capacity_gb"])
        if not any(k in NUMERIC_FIGURES or k == "power_states" for k in figures):
            raise _err(where, "has no cited performance, power or endurance figure")
        used.update(f.source.id for f in figures.values())
        used.update(s.id for f in figures.values() for s in f.also)
        used.update(d[1].id for f in figures.values() for d in f.disagrees)
        out.append(
            LibraryDrive(
                name=name,
                vendor=vendor,
                model=str(merged["model"]),
                kind=merged["kind"],
                drive_class=merged["class"],
                capacity_gb=float(cap),
                figures=figures,
                file=fname,
                part_numbers=tuple(str(p) for p in merged.get("part_numbers", ())),
                notes=tuple(str(n) for n in merged.get("notes", ())),
                family=fam_name,
                measured_as=tuple(str(n) for n in merged.get("measured_as", ())),
            )
        )
    unused = set(sources) - used
    if unused:
        raise _err(fname, f"source(s) cited by no figure: {sorted(unused)}")
    return out


def library_dir() -> Path:
    # the data directory is resolved when the library is first read, not at import
    from fsadvisor.infra.resources import data_dir

    return data_dir("datasets") / "devices"


def load_library(root: Path | None = None) -> dict[str, LibraryDrive]:
    """Every drive in ``root`` (default: the shipped datasets/devices), validated."""
    root = Path(root) if root is not None else library_dir()
    return dict(_load(str(root)))


@lru_cache(maxsize=4)
def _load(root: str) -> tuple[tuple[str, LibraryDrive], ...]:
    # the TOML reader only when the library file is read (once: cached)
    import tomllib

    drives: dict[str, LibraryDrive] = {}
    files = sorted(Path(root).glob("*.toml"))
    if not files:
        raise DeviceLibraryError(f"no device library files in {root}")
    for path in files:
        try:
            with open(path, "rb") as f:
                doc = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise DeviceLibraryError(f"{path.name}: not valid TOML: {e}") from None
        for d in parse_file(path.name, doc):
            if d.name in drives:
                raise DeviceLibraryError(
                    f"{path.name}: drive {d.name} is also in {drives[d.name].file}"
                )
            drives[d.name] = d
    return tuple(sorted(drives.items()))


# --------------------------------------------------------------------------- lookup


def find(name: str, library: dict[str, LibraryDrive] | None = None) -> LibraryDrive:
    """The drive called ``name`` (case-insensitive), or the one drive whose name starts with
    it. An unknown or ambiguous name is an error naming the closest names."""
    lib = library if library is not None else load_library()
    key = str(name).strip().lower()
    if key in lib:
        return lib[key]
    starts = [n for n in lib if n.startswith(key)] if key else []
    if len(starts) == 1:
        return lib[starts[0]]
    if len(starts) > 1:
        shown = ", ".join(starts[:6]) + (" ..." if len(starts) > 6 else "")
        raise DeviceLibraryError(
            f"{name!r} matches {len(starts)} drives ({shown}); give more of the name"
        )
    close = closest_names(key, lib)
    hint = f"; closest: {', '.join(close)}" if close else ""
    raise DeviceLibraryError(
        f"no drive {name!r} in the device library{hint} (fsadvisor devices list shows them all)"
    )


def closest_names(key: str, names, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The names most like ``key``, as a whole or as the prefix a user abbreviates to
    ("samsng-pm9a3" is close to the start of "samsung-pm9a3-3.84tb-u2", not to all of it)."""

    def score(name: str) -> float:
        whole = difflib.SequenceMatcher(None, key, name).ratio()
        head = difflib.SequenceMatcher(None, key, name[: len(key) + 1]).ratio()
        return max(whole, head)

    scored = sorted(((score(nm), nm) for nm in names), key=lambda t: (-t[0], t[1]))
    return [nm for s, nm in scored[:n] if s >= cutoff]


def looks_like_name(spec: str) -> bool:
    """A ``--device`` value that is neither a path nor a ``kind:size`` spec nor a bare size:
    the library is asked for it (so a typo gets the closest names, not 'not a size')."""
    s = str(spec).strip()
    if not s or s.startswith(("/", ".")) or "/" in s or ":" in s:
        return False

    try:
        parse_size(s)
        return False
    except (ValueError, OverflowError):
        return True
