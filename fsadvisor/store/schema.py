"""The store's tables and how a file gets from whatever version it has to the current one.

``PRAGMA user_version`` holds the schema version and ``PRAGMA application_id`` marks the file
as ours, so another program's SQLite file is refused instead of being "migrated".
``MIGRATIONS[i]`` takes a version-i file to version i+1; each runs in its own transaction
together with the version bump, so a crash mid-migration leaves the previous version intact.
A file newer than this code is refused: guessing at a future schema could lose measurements.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from fsadvisor.errors import FsAdvisorError, StoreError, one_line
from fsadvisor.store import encoding, integrity
from fsadvisor.domain import device_identity

if TYPE_CHECKING:
    # sqlite_utils is imported when a store is opened: it pulls in click, and the core
    # must import without front-end packages (tests/unit/test_core_imports.py).
    # sqlite_utils (and click) only when a store is opened (see TYPE_CHECKING above)
    from sqlite_utils import Database

APPLICATION_ID = 0x46534144  # "FSAD"

# Metrics common enough to be columns (queryable, indexable); every metric, these included,
# is also kept in runs.metrics as JSON. Names follow records.RunRecord.
METRIC_COLUMNS = (
    "iops",
    "read_iops",
    "write_iops",
    "mb_s",
    "read_mb_s",
    "write_mb_s",
    "mean_latency_us",
    "p50_latency_us",
    "p99_latency_us",
    "p999_latency_us",
    "usr_cpu_pct",
    "sys_cpu_pct",
    "host_cpu_busy_pct",
    "runtime_s",
    "ops",
    "bytes",
    "write_amplification",
)

# The tidy seed rows as fsadvisor.store.datasets.load_rows() returns them.
MEASUREMENT_COLUMNS = {
    "id": str,
    "source": str,
    "citation": str,
    "device": str,
    "device_kind": str,
    "kernel": str,
    "filesystem": str,
    "mkfs_options": str,
    "mount_options": str,
    "scheduler": str,
    "ag_count": int,
    "workload": str,
    "metric": str,
    "value": float,
    "unit": str,
    "sd": float,
    "n": int,
    "relative_to": str,
    "power_scope": str,
    "energy_source": str,
    "cv_over_40pct": int,
    "note": str,
}


def _v1_results(db: Database) -> None:
    """Every repetition of a probe with what it ran on and what it measured."""
    db.table("hosts").create(
        {
            "id": int,
            "key": str,
            "hostname": str,
            "kernel": str,
            "cpu_model": str,
            "cores": int,
            "fio_version": str,
            "info": str,
        },
        pk="id",
        not_null={"key"},
    )
    db.table("hosts").create_index(["key"], unique=True)
    db.table("devices").create(
        {
            "id": int,
            "key": str,
            "path": str,
            "kind": str,
            "model": str,
            "serial": str,
            "firmware": str,
            "size_bytes": int,
            "plp": str,
            "write_cache": str,
            "logical_block_size": int,
            "rotational": int,
        },
        pk="id",
        not_null={"key"},
    )
    db.table("devices").create_index(["key"], unique=True)
    db.table("configurations").create(
        {
            "id": int,
            "key": str,
            "fs": str,
            "mkfs": str,
            "mount": str,
            "scheduler": str,
            "ag_count": int,
        },
        pk="id",
        not_null={"key", "fs"},
    )
    db.table("configurations").create_index(["key"], unique=True)
    db.table("workloads").create(
        {"id": int, "key": str, "name": str, "params": str}, pk="id", not_null={"key", "name"}
    )
    db.table("workloads").create_index(["key"], unique=True)
    db.table("matrices").create(
        {"id": str, "plan": str, "started_at": float, "finished_at": float, "status": str}, pk="id"
    )
    columns: dict = {
        "id": int,
        "matrix_id": str,
        "cell_key": str,
        "device_id": int,
        "configuration_id": int,
        "workload_id": int,
        "host_id": int,
        "rep": int,
        "status": str,
        "error": str,
        "started_at": float,
        "wall_s": float,
        "tool": str,
        "command": str,
        "flags": str,
    }
    columns.update({m: float for m in METRIC_COLUMNS})
    columns.update({"metrics": str, "raw_output": str})
    db.table("runs").create(
        columns,
        pk="id",
        not_null={"cell_key", "status", "device_id", "workload_id"},
        foreign_keys=[
            ("matrix_id", "matrices", "id"),
            ("device_id", "devices", "id"),
            ("configuration_id", "configurations", "id"),
            ("workload_id", "workloads", "id"),
            ("host_id", "hosts", "id"),
        ],
    )
    db.table("energy").create(
        {
            "id": int,
            "run_id": int,
            "source": str,
            "scope": str,
            "energy_j": float,
            "avg_watts": float,
            "duration_s": float,
            "samples": int,
            "accuracy": str,
            "idle_watts": float,
            "active_energy_j": float,
            "assumptions": str,
            "missing": str,
        },
        pk="id",
        not_null={"run_id", "source", "scope"},
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("energy").create_index(["run_id"], unique=True)


def _v2_series_and_seeds(db: Database) -> None:
    """Power time series per run, the shipped seed measurements, and lookups for --resume."""
    db.table("energy_samples").create(
        {"id": int, "run_id": int, "t_s": float, "watts": float},
        pk="id",
        not_null={"run_id"},
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("energy_samples").create_index(["run_id"])
    db.table("measurements").create({"seq": int, **MEASUREMENT_COLUMNS, "extra": str}, pk="seq")
    db.table("meta").create({"key": str, "value": str}, pk="key")
    db.table("runs").create_index(["matrix_id", "cell_key", "status"])
    db.table("runs").create_index(["device_id", "configuration_id", "workload_id"])


def _v3_device_params(db: Database) -> None:
    """Per-device calibration: each device row gets its identity (model + serial for a
    drive, the backing class for loop/zram: fsadvisor.domain.device_identity), and
    ``device_params`` holds the parameters fitted from that identity's raw-device runs, with
    their log-scale sd, provenance and the run ids they were fitted on. Calibration lives in
    the store, so ``--db A`` and ``--db B`` never see each other's."""

    db.table("devices").add_column("identity", str)
    for row in list(
        db.execute_returning_dicts("SELECT id, kind, model, serial, path FROM devices")
    ):
        db.table("devices").update(
            row["id"],
            {
                "identity": device_identity(
                    row["kind"] or "unknown", row["model"] or "", row["serial"] or "", row["path"]
                )
            },
        )
    db.table("devices").create_index(["identity"])
    db.table("device_params").create(
        {
            "identity": str,
            "kind": str,
            "device_id": int,
            "params": str,
            "log_sd": str,
            "n_runs": int,
            "source": str,
            "fitted_at": float,
            "run_ids": str,
            "details": str,
        },
        pk="identity",
        not_null={"kind", "params", "log_sd", "source"},
        foreign_keys=[("device_id", "devices", "id")],
    )


def stored_run_uid(db: Database, run_id: int) -> str:
    """The stable id schema v4 gives a run stored before it: a digest of what it is (host, device, configuration, workload,
    matrix, cell, repetition, start time, outcome, figures and tool output), not of its row
    number, so the same run has the same uid in every store it was copied or merged into."""
    row = db.execute(
        "SELECT h.key, d.key, c.key, w.key, r.matrix_id, r.cell_key, r.rep, r.status, "
        "r.error, r.started_at, r.tool, r.command, r.metrics, r.raw_output, r.origin "
        "FROM runs r JOIN devices d ON d.id = r.device_id "
        "LEFT JOIN configurations c ON c.id = r.configuration_id "
        "JOIN workloads w ON w.id = r.workload_id LEFT JOIN hosts h ON h.id = r.host_id "
        "WHERE r.id = ?",
        [run_id],
    ).fetchone()
    if row is None:
        raise StoreError(f"no run {run_id} in the store")
    fields = list(row)
    # repr keeps the float's every bit: equal start times, equal text, equal digest
    fields[9] = None if fields[9] is None else repr(float(fields[9]))
    fields[14] = fields[14] or "probe"
    return "run-" + encoding.digest(fields)[:32]


def _v4_run_uids_and_origin(db: Database) -> None:
    """Fleets and imports: every run gets a stable id (``uid``) so stores from many hosts
    merge without duplicates, and says where it came from (``origin``: "probe", or
    "imported" for fio results measured elsewhere, with their ``provenance`` as JSON: file
    sha256, fio version, host, who imported it and when). Existing runs are probe runs; their
    uid is the digest of their content (stored_run_uid), so two copies of one v3 store
    migrated apart still agree on every run's uid."""
    db.table("runs").add_column("uid", str)
    db.table("runs").add_column("origin", str)
    db.table("runs").add_column("provenance", str)
    seen: set[str] = set()
    for (run_id,) in list(db.execute("SELECT id FROM runs ORDER BY id").fetchall()):
        uid = stored_run_uid(db, run_id)
        # Two rows alike in every field (no store written by fsadvisor has them) still get
        # distinct ids, numbered in row order, which every copy of the file shares.
        n, base = 1, uid
        while uid in seen:
            n, uid = n + 1, f"{base}-{n + 1}"
        seen.add(uid)
        db.execute("UPDATE runs SET uid = ?, origin = 'probe' WHERE id = ?", [uid, run_id])
    db.table("runs").create_index(["uid"], unique=True)


def _v5_run_profiles(db: Database) -> None:
    """Joint probes: a run measured once for several profiles (their workloads are the same
    measurement) names them all in ``profiles`` (a JSON list), so every one of them finds it;
    its workload keeps the first profile's name. NULL: the run belongs to its workload's
    profile only. Runs of the joint probes stored before this get the set their matrix's plan
    recorded (the adaptive plan's profiles and the workload each was measured with)."""

    db.table("runs").add_column("profiles", str)
    joint = db.execute(
        "SELECT id, plan FROM matrices WHERE json_extract(plan, "
        "'$.adaptive.profiles[1]') IS NOT NULL"
    ).fetchall()
    for matrix_id, plan_json in joint:
        served = _workload_profiles(encoding.loads(plan_json) or {})
        for workload, profiles in served.items():
            db.execute(
                "UPDATE runs SET profiles = ? WHERE matrix_id = ? AND workload_id IN "
                "(SELECT id FROM workloads WHERE name = ?)",
                [encoding.dumps(profiles), matrix_id, workload],
            )


def _workload_profiles(plan: dict) -> dict[str, list[str]]:
    """Per workload name of a stored joint adaptive plan: the names of the profiles measured
    with it, in the plan's order (empty for any other plan). The plan holds them as they were
    given: a preset's name, "file.toml:NAME" (its NAME), or a file's path (see
    :func:`_name_of_file`), and lookups go by name."""
    a = plan.get("adaptive") or {}
    out: dict[str, list[str]] = {}
    for ref, workload in zip(a.get("profiles") or [], a.get("profile_workloads") or []):
        ref = str(ref)
        if ".toml:" in ref:
            name = ref.rpartition(":")[2]
        elif ref.endswith(".toml") or "/" in ref:
            name = _name_of_file(ref)
        else:
            name = ref
        out.setdefault(str(workload), []).append(name)
    return out if len(a.get("profiles") or []) > 1 else {}


def _name_of_file(path: str) -> str:
    """The name a profile file given by path holds, as the probe stored its runs under it:
    read from the file while it is there and still a profile, else its stem (the name of a
    file that names no profile, and the best a migration can do for one that is gone)."""
    # Deferred: only a migration of an old joint probe's plan reads a profile.
    from fsadvisor.profiles import load_profile

    try:
        return load_profile(path).name
    except (OSError, FsAdvisorError):
        return Path(path).stem


MIGRATIONS: list[Callable[[Database], None]] = [
    _v1_results,
    _v2_series_and_seeds,
    _v3_device_params,
    _v4_run_uids_and_origin,
    _v5_run_profiles,
]
SCHEMA_VERSION = len(MIGRATIONS)


def insert_row(db: Database, table: str, row: dict[str, Any]) -> int:
    """Insert ``row`` into ``table`` and return its id (every table here has an integer
    primary key, which sqlite-utils reports as the insert's last_pk)."""
    pk = db.table(table).insert(row).last_pk
    if pk is None:
        raise StoreError(f"the store gave no id to a row inserted into {table}")
    return int(pk)


def _pragma(db: Database, name: str) -> int:
    return int(db.execute(f"PRAGMA {name}").fetchone()[0])


def connect(path: Path | None) -> Database:
    """Open (creating if needed) and migrate the store at ``path``; None means in memory.

    Raises StoreError, in one line, for a file that is not SQLite, not ours, or newer than
    this code.
    """
    # sqlite_utils (and click) only when a store is opened (see TYPE_CHECKING above)
    from sqlite_utils import Database

    label = ":memory:" if path is None else str(path)
    conn: sqlite3.Connection | None = None
    try:
        if path is None:
            db = Database(memory=True, execute_plugins=False)
            conn = db.conn
        else:
            # check_same_thread=False: the TUI reads from worker threads; Store serialises
            # access with its own lock.
            conn = sqlite3.connect(str(path), timeout=10.0, check_same_thread=False)
            db = Database(conn, execute_plugins=False)
        db.execute("PRAGMA foreign_keys = ON")
        # One read transaction, so the three reads see one snapshot: read one by one, another
        # process's first migration can commit in between and make our own new store look
        # like a foreign file (version 0 read before the commit, tables after it).
        db.conn.execute("BEGIN")
        try:
            version = _pragma(db, "user_version")
            app_id = _pragma(db, "application_id")
            foreign = app_id not in (0, APPLICATION_ID) or (
                app_id == 0 and version == 0 and bool(db.table_names())
            )
        finally:
            # A failed read (disk full: no room for the WAL index) has already ended the
            # transaction; a COMMIT then would replace the real error with its own.
            if db.conn.in_transaction:
                db.conn.execute("COMMIT")
        if foreign:
            raise StoreError(f"{label} is an SQLite file but not an fsadvisor store")
        _refuse_newer(version, label)
        if path is not None and version > 0 and not integrity.known_intact(path):
            integrity.check(db.conn, label)  # a damaged file is neither read nor written
        if path is not None:
            # WAL: a probe appending runs and a TUI/CLI reading them do not block each other.
            _enable_wal(db)
            # FULL: a commit is on disk before record_run returns (NORMAL could lose the last
            # repetitions on power loss, exactly when a probe of a risky mount is running).
            db.execute("PRAGMA synchronous = FULL")
        migrate(db, label)
    except sqlite3.DatabaseError as e:
        _close(conn)
        if disk_full(path, e):
            raise StoreError(disk_full_message(label, path, e)) from e
        if read_only_fs(path):
            raise StoreError(
                f"{label} is on a read-only filesystem ({one_line(e)}); use a "
                "store on a writable one"
            ) from e
        raise StoreError(f"{label} is not a readable fsadvisor store ({one_line(e)})") from e
    except StoreError:
        _close(conn)
        raise
    return db


def _close(conn: sqlite3.Connection | None) -> None:
    if conn is not None:
        conn.close()


def _enable_wal(db: Database, timeout_s: float = 10.0) -> None:
    """Switch to WAL, waiting out other processes doing the same.

    Changing the journal mode needs an exclusive lock and SQLite answers "database is
    locked" at once instead of calling the busy handler (seen here: three processes opening
    one new store under load), so the wait is ours."""

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            db.enable_wal()
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _refuse_newer(version: int, label: str) -> None:
    if version < 0:
        # no migration starts below 0 (MIGRATIONS[-1] would run the newest step on an
        # unknown file)
        raise StoreError(
            f"{label} has an invalid store schema version ({version}); it was "
            "not written by fsadvisor"
        )
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{label} has store schema version {version}, newer than this "
            f"fsadvisor understands ({SCHEMA_VERSION}); upgrade fsadvisor"
        )


# How long a writer waits for another process's write transaction before it gives up (the
# connection's busy handler waits within each attempt; locked answers SQLite gives without
# calling it -- an upgrade of a read lock -- are retried here until then).
WRITE_LOCK_WAIT_S = 60.0


@contextlib.contextmanager
def write_transaction(db: Database) -> Iterator[Database]:
    """One write transaction that takes SQLite's write lock *before* it reads (BEGIN
    IMMEDIATE): a deferred one that reads first and then writes is refused "database is
    locked" at once when another process committed meanwhile, which lost imports when two
    streams wrote at once. Nested in a transaction: a savepoint of it (sqlite-utils)."""

    if db.conn.in_transaction:
        with db.atomic():
            yield db
        return
    deadline = time.monotonic() + WRITE_LOCK_WAIT_S
    while True:
        try:
            db.conn.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError as e:
            retryable = "locked" in str(e) or "busy" in str(e)
            if not retryable or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    try:
        yield db
    except BaseException:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    db.conn.execute("COMMIT")


def migrate(db: Database, label: str = "store") -> None:
    """Bring the file to SCHEMA_VERSION, one transaction per step.

    BEGIN IMMEDIATE takes the write lock *before* the version is read: two processes creating
    the same new store (a probe and a TUI started together) then serialise, and the second
    one finds the version the first wrote instead of failing on a deadlocked upgrade."""
    while True:
        with write_transaction(db):
            version = _pragma(db, "user_version")
            _refuse_newer(version, label)
            if version == SCHEMA_VERSION:
                return
            MIGRATIONS[version](db)
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            db.execute(f"PRAGMA user_version = {version + 1}")


# Less free space than this beside a store that just failed, and the failure is the full
# disk: SQLite needs 32 KiB for its WAL index alone (SQLITE_IOERR_SHMSIZE when it cannot
# have them, seen on a full tmpfs), and pages and WAL frames of 4 KiB on top.
DISK_FULL_BELOW_BYTES = 1 << 20
_FULL_ERRORS = frozenset({"SQLITE_FULL", "SQLITE_IOERR_SHMSIZE"})


def read_only_fs(path: Path | None) -> bool:
    if path is None:
        return False
    try:
        return bool(os.statvfs(Path(path).parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def free_bytes(path: Path | None) -> int | None:
    if path is None:
        return None
    try:
        st = os.statvfs(Path(path).parent)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def disk_full(path: Path | None, e: BaseException) -> bool:
    """Did ``e`` happen because the store's filesystem is full? SQLite says so itself
    (SQLITE_FULL), or says "disk I/O error" while almost nothing is free."""
    if getattr(e, "sqlite_errorname", None) in _FULL_ERRORS or "disk is full" in str(e):
        return True
    free = free_bytes(path)
    return (
        free is not None
        and free < DISK_FULL_BELOW_BYTES
        and isinstance(e, sqlite3.OperationalError)
    )


def disk_full_message(label: str, path: Path | None, e: BaseException) -> str:
    free = free_bytes(path)
    left = f" ({free:,} bytes free)" if free is not None else ""
    return (
        f"{label}: disk full{left}: free some space on the store's filesystem and retry "
        f"(SQLite said: {one_line(e)})"
    )
