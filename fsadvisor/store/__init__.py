"""The results store: every probe repetition, the seed datasets, and what the model learns from.

One SQLite file (sqlite-utils; the only place in fsadvisor that writes SQL), by default
``$FSADVISOR_DB`` or ``<user data dir>/fsadvisor/fsadvisor.db``. A probe appends a row per
repetition the moment it ends, so a crash loses at most the repetition in flight and
``probe --resume`` can ask which cells are complete. Readers get runs, per-cell summaries
with Student-t confidence intervals, and :class:`~fsadvisor.records.Observation` lists that
mix the shipped seed data with local probe results.

Layout: :mod:`.schema` (tables, migrations), :mod:`.recording` (writes), :mod:`.queries`
(runs, summaries, progress), :mod:`.observations`, :mod:`.seeding`, :mod:`.export`,
:mod:`.intervals` (statistics).
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, IO, Iterable, Mapping, TypeVar

from fsadvisor.errors import StoreError, one_line
from fsadvisor.store import device_params as _device_params
from fsadvisor.store import observations as _observations
from fsadvisor.store import integrity, queries, recording, schema, seeding
from fsadvisor.store.schema import SCHEMA_VERSION

if TYPE_CHECKING:  # records.py: not built by a recommend from a cached fit
    from fsadvisor.records import EnergyReading, Observation, RunRecord

__all__ = ["Store", "open_store", "check_store_file", "SCHEMA_VERSION"]

_F = TypeVar("_F", bound=Callable[..., Any])
_TABLES = (
    "hosts",
    "devices",
    "configurations",
    "workloads",
    "matrices",
    "runs",
    "energy",
    "energy_samples",
    "measurements",
    "device_params",
)


def quick_version(path: str | os.PathLike[str] | None = None) -> str | None:
    """What the model learns from, in one short string, read with plain sqlite3 in read-only
    mode so a cached model can be reused without opening the store properly: the resolved
    path, the seed fingerprint, the runs (count, last id), the energy rows (count, last id,
    sum, missing) — an imported meter log changes them — and the calibrations (count, when
    fitted). None when the store does not exist or cannot be read: the caller then takes the
    full path."""
    # the user directories (platformdirs) only for the default store path (start-up)
    from fsadvisor.infra import xdg

    p = Path(path).expanduser() if path is not None else xdg.default_store_path()
    if str(path) == ":memory:" or not p.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=2.0)
        try:
            # Only a store of this code's own schema may skip the proper open: a future,
            # invalid or foreign one goes the full way and is refused there in one line.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            if version != schema.SCHEMA_VERSION or app_id != schema.APPLICATION_ID:
                return None
            if not integrity.known_intact(p):
                return None  # changed by someone else since: the proper open checks it
            fp = conn.execute(
                "SELECT value FROM meta WHERE key = 'datasets_fingerprint'"
            ).fetchone()
            runs = conn.execute("SELECT count(*), max(id) FROM runs").fetchone()
            energy = conn.execute(
                "SELECT count(*), max(rowid), total(energy_j), total(energy_j IS NULL) FROM energy"
            ).fetchone()
            # a device's calibration keys its observations: a refit of one (same runs) too
            calibrations = conn.execute(
                "SELECT count(*), total(fitted_at) FROM device_params"
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    if not fp or not fp[0]:
        return None
    return f"{p.resolve()}|{fp[0]}|{runs}|{energy}|{calibrations}"


def check_store_file(path: str | os.PathLike[str]) -> None:
    """StoreError (one line) unless ``path`` is an fsadvisor store of a schema version this
    code knows; the file is only read."""
    # merging only for db merge (start-up of every other store user)
    from fsadvisor.store import merge as _merge

    _merge.check_file(Path(path).expanduser())


def open_store(path: str | os.PathLike[str] | None = None) -> "Store":
    """Open (creating and migrating as needed) the store at ``path`` (":memory:" for a
    throw-away one); None means :func:`fsadvisor.infra.xdg.default_store_path`."""
    if path is not None and str(path) == ":memory:":
        return Store(None)
    # the user directories (platformdirs) only for the default store path (start-up)
    from fsadvisor.infra import xdg

    p = Path(path).expanduser() if path is not None else xdg.default_store_path()
    if p.is_dir():
        raise StoreError(f"{p} is a directory, not a store file")
    if path is not None and not p.parent.is_dir():
        # A path the user typed (--db) into a directory that does not exist is a typo far
        # more often than a wish for a new directory tree: say so instead of creating it.
        raise StoreError(
            f"{p}: directory {p.parent} does not exist (create it first, or "
            "give a store file in an existing directory)"
        )
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create the store directory {p.parent}: {e.strerror or e}") from e
    return Store(p)


def _guarded(method: _F) -> _F:
    """Serialise access (one connection, several threads) and turn SQLite failures into one
    StoreError line naming the file."""

    @functools.wraps(method)
    def wrapper(self: "Store", *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            try:
                return method(self, *args, **kwargs)
            except (sqlite3.DatabaseError, UnicodeEncodeError, OverflowError) as e:
                if schema.disk_full(self.path, e):
                    raise StoreError(schema.disk_full_message(self.label, self.path, e)) from e
                raise StoreError(f"{self.label}: {one_line(e)}") from e

    return wrapper  # type: ignore[return-value]


class Store:
    """An open results store. Use :func:`open_store`; close it (or use ``with``) when done."""

    def __init__(self, path: Path | None):
        self.path = path
        self.label = ":memory:" if path is None else str(path)
        self._lock = threading.RLock()
        self._db = schema.connect(path)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._db.close()
            if self.path is not None:
                integrity.remember(self.path)  # as this process leaves it: no re-check

    @_guarded
    def require_intact(self) -> None:
        """The full PRAGMA integrity_check, before a probe writes its first run: a damaged
        store is refused in one line before a device is touched."""
        integrity.check(self._db.conn, self.label, full=True)

    # ------------------------------------------------------------------ writing
    @_guarded
    def require_writable(self) -> None:
        """StoreError now if nothing can be written here (a read-only file or filesystem,
        an immutable file: SQLite then opens it read-only and says so only at the first
        write), so a probe stops before it attaches or formats anything. A row is written
        and rolled back: BEGIN IMMEDIATE alone succeeds on such a file (seen: chattr +i)."""
        conn = self._db.conn
        conn.execute("SAVEPOINT fsadvisor_write_check")
        try:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('write_check', '1')")
        except sqlite3.OperationalError as e:
            if "readonly" in str(e) or getattr(e, "sqlite_errorname", "").startswith(
                "SQLITE_READONLY"
            ):
                raise StoreError(
                    f"{self.label} is read-only ({one_line(e)}): a probe "
                    "records every run there; use --db on a writable "
                    "filesystem"
                ) from e
            raise
        finally:
            conn.execute("ROLLBACK TO fsadvisor_write_check")
            conn.execute("RELEASE fsadvisor_write_check")

    @_guarded
    def start_matrix(self, plan: Mapping[str, Any], matrix_id: str | None = None) -> str:
        """Record a probe plan (``plan["reps"]`` repetitions per cell); return its id."""
        return recording.start_matrix(self._db, plan, matrix_id)

    @_guarded
    def finish_matrix(self, matrix_id: str, status: str = "done") -> None:
        recording.finish_matrix(self._db, matrix_id, status)

    @_guarded
    def record_run(self, record: RunRecord, samples: Iterable[Any] | None = None) -> int:
        """Store one repetition, its energy reading and optional (t_s, watts) samples; the
        row is committed before this returns."""
        return recording.record_run(self._db, record, samples)

    @_guarded
    def record_imported(
        self,
        items: Iterable[tuple[RunRecord, Mapping[str, Any]]],
    ) -> list[dict[str, Any]]:
        """Store imported fio results, all or none; files already imported are skipped
        (recording.record_imported)."""
        return recording.record_imported(self._db, items)

    @_guarded
    def merge_from(self, other: str | os.PathLike[str]) -> dict[str, Any]:
        """Add the runs of the store file ``other`` (only read) that this one lacks, with
        their hosts, devices, energy and calibrations; all or nothing (store.merge)."""
        # tempfile (random, shutil) only for a merge (start-up)
        import tempfile

        # merging only for db merge (start-up of every other store user)
        from fsadvisor.store import merge as _merge

        src_path = Path(other).expanduser()
        if (
            self.path is not None
            and src_path.exists()
            and src_path.resolve() == self.path.resolve()
        ):
            raise StoreError(f"{src_path} is the store being merged into")
        with tempfile.TemporaryDirectory(prefix="fsadvisor-merge-") as tmp:
            src = _merge.readable_copy(src_path, Path(tmp) / "copy.db")
            try:
                counts = _merge.merge(self._db, src)
            finally:
                src.close()
        return {"file": str(src_path), **counts}

    @_guarded
    def set_energy(self, run_id: int, reading: "EnergyReading") -> None:
        recording.set_energy(self._db, run_id, reading)

    @_guarded
    def ensure_seeded(self) -> dict[str, Any]:
        """Load the shipped seed rows on first use or when they changed."""
        return seeding.ensure_seeded(self._db)

    @_guarded
    def save_device_params(
        self, params: Any, run_ids: Iterable[int] = (), fitted_at: float | None = None
    ) -> None:
        """Store a device's fitted parameters (a catalog.device_params.DeviceParams whose
        ``device_id`` is the device's identity), replacing an earlier calibration of it."""
        _device_params.save(self._db, params, run_ids, fitted_at)

    @_guarded
    def device_params(self, identity: str) -> Any:
        """The DeviceParams fitted for ``identity`` (Device.identity), or None."""
        return _device_params.load(self._db, identity)

    @_guarded
    def calibrated_devices(self) -> list[str]:
        return _device_params.identities(self._db)

    @_guarded
    def save_host_figures(self, doc: Mapping[str, Any]) -> None:
        """Store a host's measured CPU figures (host/cpu.py measurement()), replacing its
        earlier ones: one entry per host, under its ``host`` id."""
        _device_params.save_host(self._db, doc)

    @_guarded
    def host_figures(self, host: str) -> dict[str, Any] | None:
        """The CPU figures last measured on ``host`` (host/cpu.py host_id()), or None."""
        return _device_params.load_host(self._db, host)

    # ------------------------------------------------------------------ reading
    @_guarded
    def runs(
        self, include_raw: bool = False, limit: int | None = None, **filters: Any
    ) -> list[dict[str, Any]]:
        """Runs, oldest first; filters: ``queries.RUN_FILTERS`` names, e.g. status="ok"."""
        return queries.runs(self._db, include_raw=include_raw, limit=limit, **filters)

    @_guarded
    def run(self, run_id: int) -> dict[str, Any]:
        """One run with its raw output and power samples."""
        found = queries.runs(self._db, include_raw=True, run_id=run_id)
        if not found:
            raise StoreError(f"no run {run_id} in {self.label}")
        return {**found[0], "power_samples": queries.energy_samples(self._db, run_id)}

    @_guarded
    def summaries(self, **filters: Any) -> list[dict[str, Any]]:
        """Per (device, configuration, workload, meter) over ok runs: ``n``, ``run_ids`` and,
        for each of ``queries.SUMMARY_METRICS``, {n, mean, sd, ci95_low, ci95_high}."""
        return queries.summaries(self._db, **filters)

    @_guarded
    def completed_cells(self, matrix_id: str, reps: int | None = None) -> set[str]:
        """Cell keys of the matrix with an ok run for each required repetition (the plan's
        ``reps`` unless given) — what ``probe --resume`` skips."""
        return queries.completed_cells(self._db, matrix_id, reps)

    @_guarded
    def matrix(self, matrix_id: str) -> dict[str, Any]:
        return queries.matrix(self._db, matrix_id)

    @_guarded
    def matrices(self, limit: int | None = None) -> list[dict[str, Any]]:
        return queries.matrices(self._db, limit=limit)

    @_guarded
    def measurements(self) -> list[dict[str, Any]]:
        return seeding.measurements(self._db)

    @_guarded
    def observations(self) -> list[Observation]:
        """Seed observations (fsadvisor.store.datasets), the reference matrix
        (fsadvisor.store.reference) and one per metric of each probe summary."""
        # the reference matrix's reader (csv, statistics) only when observations are built
        # (a warm recommend reads a cached fit: tests/unit/test_startup_imports.py)
        from fsadvisor.store import reference

        # Bounds too: the model treats them as censored (they bind only where it would
        # break them), never as point values.
        seeds = list(
            seeding.datasets_module().load_observations(include=("upper-bound", "lower-bound"))
        )
        # The shipped reference matrix (cell means of RAM-backed device classes), if shipped.
        seeds += reference.load_observations()
        return seeds + _observations.probe_observations(queries.summaries(self._db))

    @_guarded
    def info(self) -> dict[str, Any]:
        size = 0
        if self.path is not None:
            for p in (self.path, self.path.with_name(self.path.name + "-wal")):
                size += p.stat().st_size if p.exists() else 0
        counts = {t: self._db[t].count for t in _TABLES}
        last = queries.matrices(self._db, limit=1)
        if last:
            last[0].update(queries.plan_target(last[0].pop("plan")))
        return {
            "path": self.label,
            "size_bytes": size,
            "schema_version": int(self._db.execute("PRAGMA user_version").fetchone()[0]),
            "tables": counts,
            "runs_by_origin": {
                o or "probe": n
                for o, n in self._db.execute(
                    "SELECT origin, count(*) FROM runs GROUP BY origin ORDER BY origin"
                )
            },
            "datasets": seeding.seed_state(self._db) or None,
            "last_probe": last[0] if last else None,
        }

    @_guarded
    def export(
        self, fmt: str, out: str | os.PathLike[str] | IO[str], table: str | None = None
    ) -> dict[str, int]:
        """Write ``table`` (csv: default runs) or the whole document (json: default all of
        runs, summaries, measurements) to a path or text stream; return rows per table."""
        from fsadvisor.store import export as _export  # csv, only for an export

        _export.check(fmt, table)
        wanted = [table or "runs"] if fmt == "csv" else ([table] if table else list(_export.TABLES))
        data = {t: self._rows(t, include_raw=(fmt == "json")) for t in wanted}
        with _export.opened(out) as stream:
            if fmt == "csv":
                rows = data[wanted[0]]
                _export.write_csv(
                    rows, stream, () if rows else _export.empty_columns(self._db, wanted[0])
                )
            else:
                _export.write_json({"schema_version": SCHEMA_VERSION, **data}, stream)
        return {t: len(rows) for t, rows in data.items()}

    def _rows(self, table: str, include_raw: bool) -> list[dict[str, Any]]:
        if table == "runs":
            return queries.runs(self._db, include_raw=include_raw)
        if table == "summaries":
            return queries.summaries(self._db)
        return seeding.measurements(self._db)
