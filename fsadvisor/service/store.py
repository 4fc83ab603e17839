"""Service functions over the results store: what is in it, export it, past probes.

Both front ends call these. Each opens the store (``db`` path, else $FSADVISOR_DB, else the
user data dir), makes sure the shipped seed data is loaded (first use of a new store), does
one thing and closes it again; they return plain dicts and raise StoreError (one line).
"""

from __future__ import annotations

import os
from typing import IO, Any

from fsadvisor.store import open_store
from fsadvisor.store.queries import plan_target

PathLike = str | os.PathLike[str]


def db_info(db: PathLike | None = None) -> dict[str, Any]:
    """Path, size, schema version, rows per table, loaded seed datasets, last probe."""
    with open_store(db) as store:
        store.ensure_seeded()
        return store.info()


def db_export(
    fmt: str, out: PathLike | IO[str], table: str | None = None, db: PathLike | None = None
) -> dict[str, Any]:
    """Write the store as ``fmt`` (csv|json) to a path or text stream.

    ``table`` (runs|summaries|measurements) picks what is written; None means runs for CSV
    (one flat table) and everything for JSON (one document). Returns rows written per table.
    """
    with open_store(db) as store:
        store.ensure_seeded()
        rows = store.export(fmt, out, table=table)
        return {
            "format": fmt,
            "tables": rows,
            "output": os.fspath(out) if isinstance(out, (str, os.PathLike)) else None,
            "store": store.label,
        }


def history(
    limit: int | None = 20, matrix_id: str | None = None, db: PathLike | None = None
) -> list[dict[str, Any]]:
    """Past probe matrices, newest first: id, status, start/finish times, runs per status,
    cells run, and the plan's reps and device. With ``matrix_id``: that matrix only, with
    its runs (without raw tool output) under ``runs``."""
    with open_store(db) as store:
        if matrix_id is not None:
            m = _brief(store.matrix(matrix_id))
            m["runs"] = store.runs(matrix_id=matrix_id)
            return [m]
        return [_brief(m) for m in store.matrices(limit=limit)]


def _brief(m: dict[str, Any]) -> dict[str, Any]:

    plan = m.pop("plan") or {}
    return {**m, "reps": plan.get("reps"), **plan_target(plan)}
