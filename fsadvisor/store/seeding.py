"""The shipped seed datasets inside the store, so they can be queried and exported with runs.

The rows come from :func:`fsadvisor.store.datasets.load_rows`; a hash of them is kept in ``meta``
so the table is reloaded exactly when the shipped data changed (a new fsadvisor version
with corrected transcriptions), and left alone otherwise.
"""

from __future__ import annotations

import importlib
import math
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any

from fsadvisor.errors import StoreError
from fsadvisor.infra.resources import data_dir
from fsadvisor.store import encoding, schema
from fsadvisor.store.schema import MEASUREMENT_COLUMNS

if TYPE_CHECKING:
    # imported lazily, see schema.connect
    from sqlite_utils import Database


def datasets_module() -> ModuleType:
    # Looked up at call time (through sys.modules) so tests can substitute the loader.
    try:
        return importlib.import_module("fsadvisor.store.datasets")
    except ModuleNotFoundError as e:
        if e.name != "fsadvisor.store.datasets":
            raise
        raise StoreError(
            "the seed datasets module (fsadvisor.store.datasets) is missing from this installation"
        ) from e


def _dataset_files() -> list[str]:
    # Only used when the rows do not say which file they came from.

    try:
        return sorted(p.name for p in data_dir("datasets").glob("*.csv"))
    except FileNotFoundError:
        return []


def _measurement_row(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, kind in MEASUREMENT_COLUMNS.items():
        v = row.get(name)
        if kind is float:
            v = encoding.real_or_none(v)
        elif kind is int:
            v = _int_or_none(v)
        elif v is not None and not isinstance(v, str):
            v = encoding.dumps(v)
        out[name] = v
    extra = {k: v for k, v in row.items() if k not in MEASUREMENT_COLUMNS}
    out["extra"] = encoding.dumps(extra) if extra else None
    return out


def _int_or_none(v: Any) -> int | None:
    if v is None or v == "":
        return None
    try:
        i = int(v)
    except (TypeError, ValueError, OverflowError):
        try:
            x = float(v)
        except (TypeError, ValueError):
            return None
        if not math.isfinite(x):
            return None
        i = int(x)
    return i if -(1 << 63) <= i < (1 << 63) else None


def ensure_seeded(db: Database) -> dict[str, Any]:
    """Load the seed rows unless the same rows are already loaded; say which happened."""
    mod = datasets_module()
    # The files' fingerprint answers "unchanged?" without parsing every row (the common case
    # on every `recommend`); the row digest stays the identity of what is loaded.
    quick = mod.fingerprint() if hasattr(mod, "fingerprint") else None
    state = seed_state(db)
    if quick is not None and state.get("fingerprint") == quick:
        return {"loaded": False, "rows": state["rows"], "hash": state["hash"]}
    rows = [dict(r) for r in mod.load_rows()]
    digest = encoding.digest(rows)
    if state.get("hash") == digest:
        if quick is not None:
            db.table("meta").upsert({"key": "datasets_fingerprint", "value": quick}, pk="key")
        return {"loaded": False, "rows": len(rows), "hash": digest}
    files = sorted({str(r["file"]) for r in rows if r.get("file")}) or _dataset_files()
    with schema.write_transaction(db):
        db.execute("DELETE FROM measurements")
        db.table("measurements").insert_all(_measurement_row(r) for r in rows)
        db.table("meta").upsert_all(
            [
                {"key": "datasets_hash", "value": digest},
                {"key": "datasets_rows", "value": str(len(rows))},
                {"key": "datasets_files", "value": encoding.dumps(files)},
                {"key": "datasets_loaded_at", "value": str(time.time())},
                {"key": "datasets_fingerprint", "value": quick or ""},
            ],
            pk="key",
        )
    return {"loaded": True, "rows": len(rows), "hash": digest}


def seed_state(db: Database) -> dict[str, Any]:
    """What seed data is loaded: {} when none, else files, rows, hash, loaded_at."""
    meta = {r["key"]: r["value"] for r in db["meta"].rows_where("key LIKE 'datasets_%'")}
    if "datasets_hash" not in meta:
        return {}
    return {
        "files": encoding.loads(meta.get("datasets_files")) or [],
        "rows": int(meta.get("datasets_rows", 0)),
        "hash": meta["datasets_hash"],
        "fingerprint": meta.get("datasets_fingerprint"),
        "loaded_at": float(meta["datasets_loaded_at"]) if "datasets_loaded_at" in meta else None,
    }


def measurements(db: Database) -> list[dict[str, Any]]:
    """The seed rows in load order; fields without a column of their own (the datasets'
    file and line, parsed mkfs/mount, tags) are under ``extra``."""
    out = []
    for row in db["measurements"].rows_where(order_by="seq"):
        row["extra"] = encoding.loads(row["extra"]) or {}
        out.append(row)
    return out
