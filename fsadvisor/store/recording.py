"""Writing probe results: matrices and every repetition of every cell, the moment it ends.

A probe can take hours and the machine can crash or the user can press Ctrl-C; each
repetition is therefore committed on its own, with the host, device, configuration and
workload it ran on de-duplicated into their own tables (a 300-cell matrix on one device
has one device row). Failed and incomplete repetitions are stored with their error so a
report can say what went wrong; they never enter summaries.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from fsadvisor.domain import RUN_STATUSES, Device, FsConfig
from fsadvisor.errors import StoreError
from fsadvisor.store import encoding, schema
from fsadvisor.store.schema import METRIC_COLUMNS

if TYPE_CHECKING:
    # imported lazily, see schema.connect
    from sqlite_utils import Database

    # records.py: not built by a recommend from a cached fit
    from fsadvisor.records import EnergyReading, RunRecord

MATRIX_STATUSES = ("running", "done", "failed", "interrupted")
RUN_ORIGINS = ("probe", "imported")
_HOST_COLUMNS = ("hostname", "kernel", "cpu_model", "cores", "fio_version")


def start_matrix(db: Database, plan: Mapping[str, Any], matrix_id: str | None = None) -> str:
    try:
        plan_json = encoding.dumps(dict(plan))
    except TypeError as e:
        raise StoreError(f"matrix plan cannot be stored: {e}") from e
    if not matrix_id:
        import secrets  # lazily: it brings hmac and hashlib, and only a new matrix needs it

        matrix_id = time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
    with schema.write_transaction(db):
        if db["matrices"].count_where("id = ?", [matrix_id]):
            raise StoreError(f"matrix {matrix_id} already exists")
        db.table("matrices").insert(
            {
                "id": matrix_id,
                "plan": plan_json,
                "started_at": time.time(),
                "finished_at": None,
                "status": "running",
            }
        )
    return matrix_id


def finish_matrix(db: Database, matrix_id: str, status: str = "done") -> None:
    if status not in MATRIX_STATUSES:
        raise StoreError(f"unknown matrix status {status!r} (one of {', '.join(MATRIX_STATUSES)})")
    with schema.write_transaction(db):
        if not db["matrices"].count_where("id = ?", [matrix_id]):
            raise StoreError(f"no matrix {matrix_id!r} in the store")
        db.table("matrices").update(matrix_id, {"status": status, "finished_at": time.time()})


def record_run(
    db: Database,
    rec: RunRecord,
    samples: Iterable[Any] | None = None,
    origin: str = "probe",
    provenance: Mapping[str, Any] | None = None,
) -> int:
    """Insert one repetition (and its energy reading and power samples); commit; return its id.

    ``origin`` is "probe" (measured here) or "imported" (fio results measured elsewhere,
    ``provenance`` saying which file and who brought it in)."""
    if origin not in RUN_ORIGINS:
        raise StoreError(f"run origin {origin!r} is not one of {', '.join(RUN_ORIGINS)}")
    if rec.status not in RUN_STATUSES:
        raise StoreError(f"run status {rec.status!r} is not one of {', '.join(RUN_STATUSES)}")
    metrics = {str(k): v for k, v in dict(rec.metrics).items()}
    try:
        metrics_json = encoding.dumps(metrics)
    except TypeError as e:
        raise StoreError(f"run metrics cannot be stored: {e}") from e
    sample_rows = [_sample(s) for s in (samples or ())]
    with schema.write_transaction(db):
        if rec.matrix_id is not None and not db["matrices"].count_where("id = ?", [rec.matrix_id]):
            raise StoreError(f"run refers to matrix {rec.matrix_id!r}, which is not in the store")
        row: dict[str, Any] = {
            "matrix_id": rec.matrix_id,
            "cell_key": rec.cell_key,
            "device_id": _device_id(db, rec.device),
            "configuration_id": None if rec.config is None else _config_id(db, rec.config),
            "workload_id": _lookup(
                db,
                "workloads",
                {"name": rec.workload_name, "params": encoding.dumps(rec.workload)},
                key_of=("name", "params"),
            ),
            "host_id": _host_id(db, rec.host),
            "rep": int(rec.rep),
            "status": rec.status,
            "error": rec.error,
            "started_at": encoding.real_or_none(rec.started_at),
            "wall_s": encoding.real_or_none(rec.wall_s),
            "tool": rec.tool,
            "command": encoding.dumps(list(rec.command)),
            "flags": encoding.dumps(list(rec.flags)),
            "metrics": metrics_json,
            "raw_output": rec.raw_output,
            "origin": origin,
            "provenance": None if provenance is None else encoding.dumps(dict(provenance)),
            "profiles": encoding.dumps(list(rec.profiles)) if rec.profiles else None,
        }
        row.update({m: encoding.real_or_none(metrics.get(m)) for m in METRIC_COLUMNS})
        # A random id, stored with the run: every copy of this store, and every store it is
        # merged into, carries the same one (runs from before v4 got a content digest).
        row["uid"] = "run-" + uuid.uuid4().hex
        run_id = schema.insert_row(db, "runs", row)
        if rec.energy is not None:
            db.table("energy").insert(_energy_row(run_id, rec.energy))
        if sample_rows:
            db.table("energy_samples").insert_all({"run_id": run_id, **s} for s in sample_rows)
    return run_id


def _sample(s: Any) -> dict[str, float | None]:
    """A power sample as (t_s, watts) or a mapping with t_s (or t) and watts."""
    if isinstance(s, Mapping):
        t, w = s.get("t_s", s.get("t")), s.get("watts")
    else:
        try:
            t, w = s
        except (TypeError, ValueError) as e:
            raise StoreError(f"power sample {s!r} is not (t_s, watts)") from e
    t_s, watts = encoding.real_or_none(t), encoding.real_or_none(w)
    if t_s is None:
        raise StoreError(f"power sample {s!r} has no finite time")
    return {"t_s": t_s, "watts": watts}


def _energy_row(run_id: int, e: EnergyReading) -> dict[str, Any]:
    real = encoding.real_or_none
    return {
        "run_id": run_id,
        "source": e.source,
        "scope": e.scope,
        "energy_j": real(e.energy_j),
        "avg_watts": real(e.avg_watts),
        "duration_s": real(e.duration_s),
        "samples": int(e.samples),
        "accuracy": e.accuracy,
        "idle_watts": real(e.idle_watts),
        "active_energy_j": real(e.active_energy_j),
        "assumptions": encoding.dumps(dict(e.assumptions)),
        "missing": e.missing,
    }


def _lookup(
    db: Database, table: str, values: dict[str, Any], key_of: tuple[str, ...] | None = None
) -> int:
    """Id of the row whose identity (``key``) matches, inserting it when new."""
    key = encoding.digest([values[k] for k in key_of]) if key_of else values["key"]
    found = db.execute(f"SELECT id FROM [{table}] WHERE key = ?", [key]).fetchone()
    if found:
        return int(found[0])
    return schema.insert_row(db, table, {**values, "key": key})


def _device_id(db: Database, d: Device) -> int:
    # Identity is the whole description: the same path with another size or write-cache
    # setting is another device as far as its results are concerned.
    values = {
        "path": d.path,
        "kind": d.kind,
        "model": d.model,
        "serial": d.serial,
        "firmware": d.firmware,
        "size_bytes": int(d.size_bytes),
        "plp": d.plp,
        "write_cache": d.write_cache,
        "logical_block_size": int(d.logical_block_size),
        "rotational": int(bool(d.rotational)),
    }
    # The identity (device_params' key) is derived from these, not part of the row's key.
    return _lookup(db, "devices", {**values, "identity": d.identity}, key_of=tuple(values))


def _config_id(db: Database, c: FsConfig) -> int:
    return _lookup(
        db,
        "configurations",
        {
            "key": c.key(),
            "fs": c.fs,
            "mkfs": encoding.dumps(dict(c.mkfs)),
            "mount": encoding.dumps(list(c.mount)),
            "scheduler": c.scheduler,
            "ag_count": None if c.ag_count is None else int(c.ag_count),
        },
    )


def _host_id(db: Database, host: Mapping[str, Any]) -> int | None:
    if not host:
        return None
    values: dict[str, Any] = {k: host.get(k) for k in _HOST_COLUMNS}
    values = {
        k: (v if v is None or isinstance(v, (str, int)) else str(v)) for k, v in values.items()
    }
    cores = values["cores"]
    values["cores"] = cores if isinstance(cores, int) and not isinstance(cores, bool) else None
    info = encoding.dumps(dict(host))
    return _lookup(db, "hosts", {**values, "info": info}, key_of=("info",))


def set_energy(db: Database, run_id: int, reading: EnergyReading) -> None:
    """Replace the energy reading of a stored run (e.g. from a meter log imported after the
    probe); its power samples from an earlier meter are dropped with it."""
    if not db["runs"].count_where("id = ?", [run_id]):
        raise StoreError(f"no run {run_id} in the store")
    with schema.write_transaction(db):
        db.execute("DELETE FROM energy_samples WHERE run_id = ?", [run_id])
        db.execute("DELETE FROM energy WHERE run_id = ?", [run_id])
        db.table("energy").insert(_energy_row(run_id, reading))


def imported_run_id(db: Database, sha256: str) -> int | None:
    """The run an earlier import made from the file with this sha256, or None."""
    row = db.execute(
        "SELECT id FROM runs WHERE origin = 'imported' AND "
        "json_extract(provenance, '$.sha256') = ? ORDER BY id LIMIT 1",
        [sha256],
    ).fetchone()
    return None if row is None else int(row[0])


def record_imported(
    db: Database,
    items: Iterable[tuple[RunRecord, Mapping[str, Any]]],
) -> list[dict[str, Any]]:
    """Store fio results measured elsewhere, all or none (one transaction). Each item is a
    run and its provenance (with the file's ``sha256``); a file already imported (here or
    earlier in ``items``) is not stored again. Returns, per item, the sha256, the run id and
    whether it was new."""
    out: list[dict[str, Any]] = []
    with schema.write_transaction(db):
        for rec, prov in items:
            sha = str(prov["sha256"])
            existing = imported_run_id(db, sha)
            if existing is not None:
                out.append({"sha256": sha, "run_id": existing, "new": False})
                continue
            run_id = record_run(db, rec, origin="imported", provenance=prov)
            out.append({"sha256": sha, "run_id": run_id, "new": True})
    return out
