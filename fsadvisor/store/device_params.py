"""The ``device_params`` table: one device's fitted parameters (fsadvisor.catalog.
device_params.DeviceParams) keyed by its identity, as ``fsadvisor calibrate DEVICE`` left
them. Saved in one transaction, after the fit: a calibration that failed has no row."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterable

from fsadvisor.catalog.device_params import PARAM_KEYS, DeviceParams, with_host_prior
from fsadvisor.errors import StoreError
from fsadvisor.store import encoding, schema

if TYPE_CHECKING:
    from sqlite_utils import Database


def save(
    db: Database, params: DeviceParams, run_ids: Iterable[int] = (), fitted_at: float | None = None
) -> None:
    """Replace the row of ``params.device_id`` (an identity, Device.identity)."""
    values, log_sd = dict(params.values), dict(params.log_sd)
    with_host_prior(values, log_sd)  # the host unmeasured: the reference machine's, as a prior
    missing = [k for k in PARAM_KEYS if k not in values or k not in log_sd]
    if missing:
        raise StoreError(f"device parameters for {params.device_id} lack {', '.join(missing)}")
    ids = sorted({int(i) for i in run_ids})
    with schema.write_transaction(db):
        dev = db.execute(
            "SELECT max(id) FROM devices WHERE identity = ?", [params.device_id]
        ).fetchone()
        if ids:
            known = db.execute(
                f"SELECT count(*) FROM runs WHERE id IN ({','.join('?' * len(ids))})", ids
            ).fetchone()[0]
            if known != len(ids):
                raise StoreError(
                    f"device parameters refer to {len(ids) - known} run(s) "
                    "that are not in the store"
                )
        db.table("device_params").upsert(
            {
                "identity": params.device_id,
                "kind": params.kind,
                "device_id": dev[0] if dev else None,
                "params": encoding.dumps(values),
                "log_sd": encoding.dumps(log_sd),
                "n_runs": int(params.n_runs),
                "source": params.source,
                "fitted_at": float(fitted_at if fitted_at is not None else time.time()),
                "run_ids": encoding.dumps(ids),
                "details": encoding.dumps(dict(params.details)),
            },
            pk="identity",
        )


def load(db: Database, identity: str) -> DeviceParams | None:
    rows = list(db["device_params"].rows_where("identity = ?", [identity]))
    if not rows:
        return None
    r = rows[0]
    details: dict[str, Any] = dict(encoding.loads(r["details"]) or {})
    details["fitted_at"] = r["fitted_at"]
    details["run_ids"] = encoding.loads(r["run_ids"]) or []
    values = {k: float(v) for k, v in encoding.loads(r["params"]).items()}
    log_sd = {k: float(v) for k, v in encoding.loads(r["log_sd"]).items()}
    with_host_prior(values, log_sd)  # a calibration stored before the host was measured
    return DeviceParams(
        device_id=r["identity"],
        kind=r["kind"],
        values=values,
        log_sd=log_sd,
        source=r["source"],
        n_runs=int(r["n_runs"] or 0),
        details=details,
    )


def identities(db: Database) -> list[str]:
    return [r[0] for r in db.execute("SELECT identity FROM device_params ORDER BY identity")]


# A host's measured CPU figures live in ``meta``, one row per host under this prefix: a
# store moved to another machine keeps them, read only on the host they describe.
_HOST_KEY = "host_cpu:"


def save_host(db: Database, doc: Any) -> None:
    host = doc.get("host")
    if not isinstance(host, str) or not host:
        raise StoreError("host figures without a host id")
    with schema.write_transaction(db):
        db.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
            [_HOST_KEY + host, encoding.dumps(dict(doc))],
        )


def load_host(db: Database, host: str) -> dict[str, Any] | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", [_HOST_KEY + host]).fetchone()
    doc = encoding.loads(row[0]) if row else None
    return doc if isinstance(doc, dict) else None
