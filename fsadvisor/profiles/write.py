"""Writing profiles back as TOML: the inverse of :mod:`fsadvisor.profiles.parse`
(``profiles show`` prints presets this way, and a profile edited in the TUI is saved this way)."""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from fsadvisor.domain import METADATA_MODES, Profile, Workload
from fsadvisor.sizes import format_size


def toml_string(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return toml_string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _workload_tables(w: Workload) -> tuple[dict[str, Any], dict[str, Any]]:
    """The descriptive [workload] table, plus a [fio] rw for metadata modes, which have
    no descriptive spelling."""
    desc: dict[str, Any] = {}
    fio: dict[str, Any] = {}
    if w.rw in METADATA_MODES:
        fio["rw"] = w.rw
    else:
        desc["pattern"] = "random" if w.random else "sequential"
        desc["read_pct"] = w.read_pct
    desc["request_size"] = format_size(w.bs_bytes)
    desc["jobs"] = w.numjobs
    desc["queue_depth"] = w.iodepth
    desc["fsync"] = w.fsync_mode
    if w.fsync_mode != "none":
        desc["fsync_every"] = w.fsync_every
    desc["direct"] = w.direct
    desc["ioengine"] = w.ioengine
    desc["working_set"] = format_size(w.working_set_bytes)
    desc["files"] = w.nrfiles
    desc["file_size"] = format_size(w.file_size_bytes)
    if w.file_size_max_bytes is not None:
        desc["file_size_max"] = format_size(w.file_size_max_bytes)
    if w.create_frac or w.stat_frac or w.delete_frac:
        desc["metadata"] = {"create": w.create_frac, "stat": w.stat_frac, "delete": w.delete_frac}
    desc["dir_shape"] = w.dir_shape
    desc["dir_depth"] = float(w.dir_depth)
    desc["op"] = w.op
    desc["rank_by"] = w.rank_by
    return desc, fio


def _profile_lines(p: Profile, prefix: str) -> list[str]:
    lines: list[str] = []
    head: dict[str, Any] = {"description": p.description, "source": p.source}
    if not prefix:
        head = {"name": p.name, **head}
    if p.fio_job is not None:
        head["fio_job"] = p.fio_job
    if p.tags:
        head["tags"] = list(p.tags)
    lines += [f"{k} = {_toml_value(v)}" for k, v in head.items()]
    desc, fio = _workload_tables(p.workload)
    c = p.constraints
    cons = {k: v for k, v in c.to_dict().items() if v is not None}
    for table, body in (("workload", desc), ("fio", fio), ("constraints", cons)):
        if body:
            lines += ["", f"[{prefix}{table}]"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in body.items()]
    return lines


def profile_to_toml(profile: Profile) -> str:
    """The profile as a one-profile TOML file that :func:`load_profile` reads back equal."""
    return "\n".join(_profile_lines(profile, "")) + "\n"


def profiles_to_toml(profiles: Iterable[Profile]) -> str:
    """Several profiles as one ``[profiles.<name>]`` preset file."""
    chunks = []
    for p in profiles:
        key = (
            p.name
            if p.name.replace("-", "").replace("_", "").isalnum() and p.name.isascii()
            else toml_string(p.name)
        )
        chunks.append("\n".join([f"[profiles.{key}]"] + _profile_lines(p, f"profiles.{key}.")))
    return "\n\n".join(chunks) + "\n"
