"""`fsadvisor import fio-json`: fio results measured elsewhere, brought into the store.

A file (or every ``*.json`` under a folder, as bench-fio writes them) is read with the same
parser the probe uses (fsadvisor.tools.fio: notes before the JSON, ``normal,json`` output,
``json+``, the 2.x layouts) and must be a complete result (FioResult.require_complete()).
Every file is read and checked before anything is written, and all runs are stored in one
transaction: a bad file leaves the store as it was. Each run keeps its provenance (file
path and sha256, fio version, host when the output names one, who imported it and when)
and is marked ``origin = imported``; a file whose sha256 is already in the store is
recognised and not stored twice. Imported runs become observations of the device they were
measured on exactly as probe runs do (store.observations).
"""

from __future__ import annotations

import errno
import getpass
import hashlib
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from fsadvisor import catalog
from fsadvisor.domain import Device, FsConfig, Workload
from fsadvisor.records import RunRecord
from fsadvisor.errors import ConfigError, FsAdvisorError, one_line
from fsadvisor.store import open_store
from fsadvisor.domain import FLAG_IMPORTED, FLAG_LOOP, FLAG_POOLED_PERCENTILES
from fsadvisor.infra.readfile import read_bounded
from fsadvisor.sizes import parse_size

# fio's parser, the profiles, the recommendation's helpers and the probe's cell keys are
# imported by the functions that use them, each saying so: apply reads a --config through
# parse_config and loads none of them.

# A fio JSON document of one run is kilobytes (json+ with its latency bins: ~100 KB); a
# multi-gigabyte "result" is something else and would only exhaust memory.
MAX_FILE_BYTES = 64 << 20
# fio's rw= spellings that mean the same pattern (fio's HOWTO: "rw" = "readwrite").
_RW_ALIASES = {"rw": "readwrite"}


class FioImportError(FsAdvisorError):
    """A file that cannot be imported (one line naming it)."""


@dataclass
class ReadResult:
    """One file read and checked, not yet stored."""

    path: str
    sha256: str
    fio_version: str | None
    host: str | None
    metrics: dict[str, float]
    pooled_percentiles: bool
    started_at: float
    text: str


def expand(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files as given; a folder stands for every ``*.json`` beneath it (bench-fio output)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(q for q in p.rglob("*.json") if q.is_file())
            if not found:
                raise FioImportError(f"{p}: folder holds no *.json fio results")
            out += found
        else:
            out.append(p)
    if not out:
        raise FioImportError("no fio result files given")
    return out


def read_result(path: Path, workload: Workload | None = None) -> ReadResult:
    """Read and check one file; FioImportError (one line naming the file) when it is not a
    complete fio result or does not match ``workload``."""
    from fsadvisor.tools import fio  # fio's parser: only for an import (see the top)

    try:
        data = read_bounded(path, MAX_FILE_BYTES)
    except OSError as e:
        what = " (not a fio result)" if e.errno == errno.EFBIG else ""
        raise FioImportError(one_line(f"{path}: {e.strerror or e}{what}")) from None
    text = data.decode("utf-8", errors="replace")
    try:
        res = fio.parse(text)
        if res.truncated:
            raise fio.FioParseError("the last fio document is cut off (an interrupted run)")
        if res.error:
            raise fio.FioParseError(res.error)
        res.require_complete()
    except fio.FioParseError as e:
        raise FioImportError(f"{path}: {_one_line(e)}") from None
    metrics = res.metrics()
    if not metrics.get("ops"):
        raise FioImportError(f"{path}: fio completed no I/O")
    if workload is not None:
        if why := mismatch(res.doc, res.jobs, workload):
            raise FioImportError(one_line(f"{path}: {why}"))  # a field may hold a newline
    return ReadResult(
        path=str(path),
        sha256=hashlib.sha256(data).hexdigest(),
        fio_version=res.version,
        host=_host_of(res.doc, res.jobs),
        metrics=metrics,
        pooled_percentiles=fio.POOLED_ESTIMATE in res.percentile_provenance().values(),
        started_at=_started_at(res.doc, path),
        text=text,
    )


def _options(doc: dict, job: dict) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    for src in (doc.get("global options"), job.get("job options")):
        if isinstance(src, dict):
            opts.update(src)
    return opts


def mismatch(doc: dict, jobs: list[dict], workload: Workload) -> str | None:
    """Why the file's own job options contradict the workload it is imported as (rw or
    block size), or None. fio 2.x without ``job options`` cannot be checked and passes."""

    want_rw = _RW_ALIASES.get(workload.rw, workload.rw)
    for job in jobs:
        opts = _options(doc, job)
        rw = opts.get("rw", opts.get("readwrite"))
        engine = opts.get("ioengine")
        if isinstance(rw, str):
            got = _RW_ALIASES.get(rw.split(":")[0], rw.split(":")[0])
            if engine in ("filecreate", "filestat", "filedelete"):
                got = engine
            if got != want_rw:
                return (
                    f"job {str(job.get('jobname', '?'))[:40]!r} ran rw={rw} but the workload "
                    f"is rw={workload.rw}: import it with the workload it ran"
                )
        bs = opts.get("bs", opts.get("blocksize"))
        if isinstance(bs, str) and "," not in bs and "-" not in bs and ":" not in bs:
            try:
                bs_bytes = parse_size(bs)
            except (ValueError, OverflowError):
                continue
            if bs_bytes != workload.bs_bytes:
                return (
                    f"job {str(job.get('jobname', '?'))[:40]!r} ran bs={bs} but the workload "
                    f"has bs_bytes={workload.bs_bytes}"
                )
    return None


def _host_of(doc: dict, jobs: list[dict]) -> str | None:
    # Plain fio JSON names no host; client/server output and some wrappers do.
    for src in (doc, *jobs):
        h = src.get("hostname") if isinstance(src, dict) else None
        if isinstance(h, str) and h.strip():
            return h.strip()[:255]
    return None


def _started_at(doc: dict, path: Path) -> float:
    """When fio ran: its ``timestamp`` (epoch seconds, fio 2.x and 3.x), else the file's
    modification time."""
    ts = doc.get("timestamp")
    if isinstance(ts, (int, float)) and not isinstance(ts, bool) and 0 < ts < 1e11:
        return float(ts)
    return path.stat().st_mtime


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


def parse_config(config: str | dict) -> FsConfig:
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError as e:
            raise ConfigError(f"--config is not valid JSON: {e.msg} at column {e.colno}") from None
    if not isinstance(config, dict):
        raise ConfigError('--config must be a JSON object like {"filesystem": "xfs"}')
    return catalog.config_from_dict(config)


def parse_workload(workload: str | dict | None, profile: str | None) -> tuple[str, Workload]:
    """The workload's name and value from ``--workload JSON`` or ``--profile NAME``."""
    # the profiles and the advice service (the model: numpy): only for an import
    from fsadvisor.profiles import workload_from_dict
    from fsadvisor.service.advice import get_profile

    if (workload is None) == (profile is None):
        raise ConfigError("give the workload the files ran: --workload JSON or --profile NAME")
    if profile is not None:
        p = get_profile(profile)
        return p.name, p.workload
    if isinstance(workload, str):
        try:
            workload = json.loads(workload)
        except json.JSONDecodeError as e:
            raise ConfigError(
                f"--workload is not valid JSON: {e.msg} at column {e.colno}"
            ) from None
    if not isinstance(workload, dict):
        raise ConfigError(
            '--workload must be a JSON object like {"rw": "randread", "bs_bytes": 4096}'
        )
    w = workload_from_dict(workload)
    return f"imported-{w.rw}-{w.bs_bytes}", w


def record_for(
    r: ReadResult, device: Device, config: FsConfig, name: str, workload: Workload, rep: int
) -> RunRecord:
    from fsadvisor.probe.plan import cell_key  # the probe's planning: only for an import

    flags = [FLAG_IMPORTED]
    if device.kind in ("loop", "ram-loop"):
        flags.append(FLAG_LOOP)  # as a probe of it would say
    if r.pooled_percentiles:
        flags.append(FLAG_POOLED_PERCENTILES)
    host = {"hostname": r.host, "fio_version": r.fio_version or ""} if r.host else {}
    return RunRecord(
        cell_key=cell_key(config, config.scheduler, name),
        device=device,
        config=config,
        workload_name=name,
        workload=workload,
        rep=rep,
        status="ok",
        started_at=r.started_at,
        wall_s=float(r.metrics.get("runtime_s") or 0.0),
        metrics=dict(r.metrics),
        flags=tuple(flags),
        tool="fio",
        command=(),
        raw_output=r.text,
        host=host,
    )


def provenance(r: ReadResult) -> dict[str, Any]:
    return {
        "file": os.path.abspath(r.path),
        "sha256": r.sha256,
        "fio_version": r.fio_version,
        "host": r.host,
        "imported_by": f"{_user()}@{socket.gethostname()}",
        "imported_at": time.time(),
        "importer": "fsadvisor import fio-json",
    }


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def import_fio_json(
    paths: Iterable[str | os.PathLike[str]],
    device: str,
    config: str | dict,
    workload: str | dict | None = None,
    profile: str | None = None,
    db: str | os.PathLike[str] | None = None,
    plp: str | None = None,
) -> dict[str, Any]:
    """Import fio results as runs of ``config`` x workload on ``device`` (a path, a
    ``kind:size`` spec or a library drive name). All or nothing; returns one entry per file
    with its run id and whether it was new or already imported."""
    from fsadvisor.service.advice import resolve_device  # the model (numpy): see the top

    cfg = parse_config(config)
    name, w = parse_workload(workload, profile)
    dev = resolve_device(device, plp)
    catalog.validate(cfg, dev.size_bytes)
    files = expand(paths)
    read = [read_result(p, w) for p in files]
    with open_store(db) as store:
        store.ensure_seeded()
        done = store.record_imported(
            (record_for(r, dev, cfg, name, w, rep), provenance(r))
            for rep, r in enumerate(read, start=1)
        )
        label = store.label
    return {
        "store": label,
        "device": dev.to_dict(),
        "config": cfg.to_dict(),
        "workload_name": name,
        "workload": w.to_dict(),
        "files": [
            {
                "file": r.path,
                "sha256": d["sha256"],
                "fio_version": r.fio_version,
                "host": r.host,
                "run_id": d["run_id"],
                "status": "imported" if d["new"] else "already imported",
            }
            for r, d in zip(read, done)
        ],
    }
