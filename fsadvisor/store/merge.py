"""Merging stores from many hosts into one: `fsadvisor db merge OTHER.db...`.

Every run has a stable ``uid`` (schema v4, schema.stored_run_uid), so a run already in the
target (merged before, or copied from the same file) is recognised and not added twice. A
run keeps its host, device, configuration, workload and matrix: those rows are matched on
their ``key`` (the same digest of their content in every store) and added when new. Energy
readings and power samples come along with their run; a device calibration the target lacks
is copied, with its run ids translated.

The other file is never written: it is opened read-only, checked (an SQLite file of ours,
of a version this code knows), copied with SQLite's backup API (which includes what is
still in its WAL) into a temporary file, and that copy is migrated and read.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from fsadvisor.errors import StoreError
from fsadvisor.store import encoding, schema

if TYPE_CHECKING:
    from sqlite_utils import Database

_KEYED = ("hosts", "devices", "configurations", "workloads")


def _open_checked(path: Path) -> sqlite3.Connection:
    """A read-only connection to ``path`` once it is known to be a store of ours of a version
    this code knows; StoreError in one line otherwise."""
    label = str(path)
    if not path.is_file():
        raise StoreError(f"{label}: no such store file")
    try:
        src = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)
    except sqlite3.Error as e:
        raise StoreError(f"{label} is not a readable fsadvisor store ({schema.one_line(e)})") from e
    try:
        version = int(src.execute("PRAGMA user_version").fetchone()[0])
        app_id = int(src.execute("PRAGMA application_id").fetchone()[0])
        if app_id != schema.APPLICATION_ID:
            raise StoreError(f"{label} is not an fsadvisor store")
        if version > schema.SCHEMA_VERSION:
            raise StoreError(
                f"{label} has store schema version {version}, newer than this "
                f"fsadvisor understands ({schema.SCHEMA_VERSION}); upgrade "
                "fsadvisor before merging it"
            )
    except sqlite3.DatabaseError as e:
        src.close()
        raise StoreError(f"{label} is not an fsadvisor store ({schema.one_line(e)})") from e
    except StoreError:
        src.close()
        raise
    return src


def check_file(path: Path) -> None:
    """StoreError unless ``path`` is a store this code can merge (it is only read)."""
    _open_checked(path).close()


def readable_copy(path: Path, into: Path) -> Database:
    """A migrated private copy of the store at ``path`` (which is only read), or StoreError
    in one line: not a file, not SQLite, not an fsadvisor store, or a newer schema."""
    src = _open_checked(path)
    try:
        dst = sqlite3.connect(str(into))
        try:
            src.backup(dst)
        finally:
            dst.close()
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{path} cannot be read ({schema.one_line(e)})") from e
    finally:
        src.close()
    try:
        return schema.connect(into)
    except StoreError as e:
        raise StoreError(str(e).replace(str(into), str(path))) from None


def merge(dst: Database, src: Database) -> dict[str, int]:
    """Add ``src``'s runs that ``dst`` lacks (by uid), with what they refer to; one
    transaction. Returns counts: runs_added, runs_present, and new rows per keyed table."""
    ids: dict[str, dict[int, int]] = {t: {} for t in _KEYED}
    counts = {
        "runs_added": 0,
        "runs_present": 0,
        "matrices_added": 0,
        "device_params_added": 0,
        **{f"{t}_added": 0 for t in _KEYED},
    }
    run_map: dict[int, int] = {}
    with schema.write_transaction(dst):
        for run in src.execute_returning_dicts("SELECT * FROM runs ORDER BY id"):
            found = dst.execute("SELECT id FROM runs WHERE uid = ?", [run["uid"]]).fetchone()
            if found:
                counts["runs_present"] += 1
                run_map[run["id"]] = int(found[0])
                continue
            row = dict(run)
            old_id = row.pop("id")
            for table, col in (
                ("hosts", "host_id"),
                ("devices", "device_id"),
                ("configurations", "configuration_id"),
                ("workloads", "workload_id"),
            ):
                if row[col] is not None:
                    row[col] = _keyed_id(dst, src, table, row[col], ids[table], counts)
            if row["matrix_id"] is not None and not dst["matrices"].count_where(
                "id = ?", [row["matrix_id"]]
            ):
                m = src.execute_returning_dicts(
                    "SELECT * FROM matrices WHERE id = ?", [row["matrix_id"]]
                )
                dst.table("matrices").insert(m[0])
                counts["matrices_added"] += 1
            new_id = schema.insert_row(dst, "runs", row)
            run_map[old_id] = new_id
            counts["runs_added"] += 1
            for e in src.execute_returning_dicts("SELECT * FROM energy WHERE run_id = ?", [old_id]):
                e.pop("id")
                dst.table("energy").insert({**e, "run_id": new_id})
            samples = [
                {"run_id": new_id, "t_s": s["t_s"], "watts": s["watts"]}
                for s in src.execute_returning_dicts(
                    "SELECT t_s, watts FROM energy_samples WHERE run_id = ? ORDER BY t_s, id",
                    [old_id],
                )
            ]
            if samples:
                dst.table("energy_samples").insert_all(samples)
        for p in src.execute_returning_dicts("SELECT * FROM device_params"):
            if dst["device_params"].count_where("identity = ?", [p["identity"]]):
                continue  # the target's own calibration of that device stays
            run_ids = encoding.loads(p["run_ids"]) or []
            p["run_ids"] = encoding.dumps([run_map[i] for i in run_ids if i in run_map])
            if p["device_id"] is not None:
                p["device_id"] = _keyed_id(
                    dst, src, "devices", p["device_id"], ids["devices"], counts
                )
            dst.table("device_params").insert(p)
            counts["device_params_added"] += 1
    return counts


def _keyed_id(
    dst: Database,
    src: Database,
    table: str,
    src_id: int,
    cache: dict[int, int],
    counts: dict[str, int],
) -> int:
    if src_id in cache:
        return cache[src_id]
    rows = src.execute_returning_dicts(f"SELECT * FROM [{table}] WHERE id = ?", [src_id])
    if not rows:
        raise StoreError(f"merged store is inconsistent: {table} row {src_id} is missing")
    row = rows[0]
    row.pop("id")
    found = dst.execute(f"SELECT id FROM [{table}] WHERE key = ?", [row["key"]]).fetchone()
    if found:
        new = int(found[0])
    else:
        new = schema.insert_row(dst, table, row)
        counts[f"{table}_added"] += 1
    cache[src_id] = new
    return new
