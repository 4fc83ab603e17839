"""Reading results back: runs, per-cell summaries with confidence intervals, probe progress.

Summaries are computed on read from the ``ok`` runs (never failed or incomplete ones), per
(device, configuration, workload) and per energy meter (source, scope): figures of different
power scopes are never averaged together. They are not a stored table, so they can never be
stale with respect to the runs they summarise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fsadvisor.errors import StoreError
from fsadvisor.store import encoding
from fsadvisor.store.intervals import describe
from fsadvisor.store.schema import METRIC_COLUMNS

if TYPE_CHECKING:
    # imported lazily, see schema.connect
    from sqlite_utils import Database

RUNS_SELECT = """
SELECT r.id AS run_id, r.matrix_id, r.cell_key, r.rep, r.status, r.error, r.started_at,
       r.wall_s, r.tool, r.command, r.flags, {metric_columns}, r.metrics, {raw}
       r.device_id, d.path AS device_path, d.kind AS device_kind, d.model AS device_model,
       d.serial AS device_serial, d.size_bytes AS device_size_bytes, d.plp AS device_plp,
       d.write_cache AS device_write_cache, d.identity AS device_identity,
       r.configuration_id, c.key AS config_key, c.fs AS filesystem, c.mkfs, c.mount,
       c.scheduler, c.ag_count,
       r.workload_id, w.name AS workload_name, w.params AS workload,
       e.source AS energy_source, e.scope AS power_scope, e.energy_j, e.avg_watts,
       e.duration_s AS energy_duration_s, e.samples AS energy_sample_count,
       e.accuracy AS energy_accuracy, e.idle_watts, e.active_energy_j,
       e.assumptions AS energy_assumptions, e.missing AS energy_missing,
       r.host_id, h.hostname, h.kernel, r.uid AS run_uid, r.origin, r.provenance, r.profiles
FROM runs r
JOIN devices d ON d.id = r.device_id
LEFT JOIN configurations c ON c.id = r.configuration_id
JOIN workloads w ON w.id = r.workload_id
LEFT JOIN energy e ON e.run_id = r.id
LEFT JOIN hosts h ON h.id = r.host_id
"""

# filter name -> SQL expression it compares with
RUN_FILTERS = {
    "run_id": "r.id",
    "matrix_id": "r.matrix_id",
    "cell_key": "r.cell_key",
    "rep": "r.rep",
    "status": "r.status",
    "tool": "r.tool",
    "device_id": "r.device_id",
    "device_path": "d.path",
    "device_kind": "d.kind",
    "device_identity": "d.identity",
    "configuration_id": "r.configuration_id",
    "config_key": "c.key",
    "filesystem": "c.fs",
    "scheduler": "c.scheduler",
    "workload_id": "r.workload_id",
    "workload_name": "w.name",
    "energy_source": "e.source",
    "power_scope": "e.scope",
    "origin": "r.origin",
    "run_uid": "r.uid",
}
# A run counts for profile P when its workload is P's ("profile:P", probe/plan.profile_workload)
# or a joint probe measured it for P too (runs.profiles).
_PROFILE_CLAUSE = (
    "(w.name = ? OR EXISTS (SELECT 1 FROM json_each(r.profiles) WHERE json_each.value = ?))"
)
_JSON_FIELDS = (
    "profiles",
    "provenance",
    "command",
    "flags",
    "metrics",
    "mkfs",
    "mount",
    "workload",
    "energy_assumptions",
)

# Summarised for every cell, {n: 0, ...} when its runs did not record them; the derived ones
# are computed per run (see _derived). Every other numeric metric the runs recorded is
# summarised as well (read_p99_latency_us, dev_write_bytes, a db_bench figure, ...).
SUMMARY_METRICS = (
    "iops",
    "mb_s",
    "mean_latency_us",
    "p50_latency_us",
    "p99_latency_us",
    "p999_latency_us",
    "write_amplification",
    "usr_cpu_pct",
    "sys_cpu_pct",
    "host_cpu_busy_pct",
    "host_cpu_usr_pct",
    "host_cpu_sys_pct",
    "host_cpu_iowait_pct",
    "energy_j",
    "watts",
    "ops_per_joule",
    "bytes_per_joule",
)
# Summary figures that are columns of the joined row rather than keys of runs.metrics.
_ROW_METRICS = frozenset(METRIC_COLUMNS) | {"energy_j", "watts", "ops_per_joule", "bytes_per_joule"}
# Recorded with every run but no property of the cell: when its measured window was.
NOT_SUMMARISED = frozenset({"window_start_epoch_s", "window_end_epoch_s"})


def runs(
    db: Database, include_raw: bool = False, limit: int | None = None, **filters: Any
) -> list[dict[str, Any]]:
    """Runs joined with their device, configuration, workload and energy, oldest first.
    ``profile=P``: the runs that count for profile P (_PROFILE_CLAUSE)."""
    clauses, params = [], []
    for name, value in filters.items():
        if name == "profile":
            clauses.append(_PROFILE_CLAUSE)
            params += [f"profile:{value}", str(value)]
            continue
        if name not in RUN_FILTERS:
            known = ", ".join(sorted([*RUN_FILTERS, "profile"]))
            raise StoreError(f"unknown run filter {name!r} (known: {known})")
        if value is None:
            clauses.append(f"{RUN_FILTERS[name]} IS NULL")
        else:
            clauses.append(f"{RUN_FILTERS[name]} = ?")
            params.append(value)
    sql = RUNS_SELECT.format(
        metric_columns=", ".join(f"r.{m}" for m in METRIC_COLUMNS),
        raw="r.raw_output," if include_raw else "",
    )
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += " ORDER BY r.id"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    out = []
    for row in db.execute_returning_dicts(sql, params):
        for f in _JSON_FIELDS:
            row[f] = encoding.loads(row[f])
        out.append(row)
    return out


def energy_samples(db: Database, run_id: int) -> list[tuple[float, float | None]]:
    return [
        (r["t_s"], r["watts"])
        for r in db["energy_samples"].rows_where("run_id = ?", [run_id], order_by="t_s, id")
    ]


def _derived(run: dict[str, Any]) -> dict[str, float | None]:
    """Per-run watts, ops/J and bytes/J.

    ops/J is taken as the ratio of rates (IOPS / average watts) rather than total ops over
    total joules: the meter's window can include setup around the fio run (layout, sync),
    while both rates describe the steady part of the same run.
    """
    watts = run["avg_watts"]
    if watts is None and run["energy_j"] is not None and run["energy_duration_s"]:
        watts = run["energy_j"] / run["energy_duration_s"]
    if not watts or watts <= 0:
        return {"watts": watts, "ops_per_joule": None, "bytes_per_joule": None}
    iops, mb_s = run["iops"], run["mb_s"]
    return {
        "watts": watts,
        "ops_per_joule": None if iops is None else iops / watts,
        # mb_s is in 10^6 bytes/s, as fio.py reports it
        "bytes_per_joule": None if mb_s is None else mb_s * 1e6 / watts,
    }


def summaries(db: Database, **filters: Any) -> list[dict[str, Any]]:
    if filters.get("status", "ok") != "ok":
        raise StoreError("summaries cover ok runs only; drop the status filter")
    filters.pop("status", None)
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for run in runs(db, status="ok", **filters):
        # Raw-device baselines have no configuration row; their cell key carries the
        # scheduler they ran under, so baselines under different schedulers stay apart.
        raw_cell = run["cell_key"] if run["configuration_id"] is None else None
        # Imported runs (measured elsewhere) are summarised apart from this host's probe
        # runs of the same cell, so every figure says where it came from.
        key = (
            run["device_id"],
            run["configuration_id"],
            raw_cell,
            run["workload_id"],
            run["energy_source"],
            run["power_scope"],
            run["origin"],
        )
        groups.setdefault(key, []).append({**run, **_derived(run)})
    out = []
    for members in groups.values():
        first = members[0]
        s: dict[str, Any] = {
            "device_id": first["device_id"],
            "device_path": first["device_path"],
            "device_kind": first["device_kind"],
            "device_model": first["device_model"],
            "device_serial": first["device_serial"],
            "device_size_bytes": first["device_size_bytes"],
            "configuration_id": first["configuration_id"],
            "config_key": first["config_key"],
            "filesystem": first["filesystem"],
            "cell_key": first["cell_key"] if first["configuration_id"] is None else None,
            "config": None
            if first["configuration_id"] is None
            else {
                "filesystem": first["filesystem"],
                "mkfs": first["mkfs"],
                "mount": first["mount"],
                "scheduler": first["scheduler"],
                "ag_count": first["ag_count"],
            },
            "workload_id": first["workload_id"],
            "workload_name": first["workload_name"],
            "workload": first["workload"],
            "profiles": profiles_of(members),
            "energy_source": first["energy_source"],
            "power_scope": first["power_scope"],
            "n": len(members),
            "run_ids": [m["run_id"] for m in members],
            "matrix_ids": sorted({m["matrix_id"] for m in members if m["matrix_id"]}),
            "flags": sorted({f for m in members for f in (m["flags"] or [])}),
            "origin": first["origin"] or "probe",
            "imported_from": [
                _import_ref(m["provenance"]) for m in members if m["origin"] == "imported"
            ],
        }
        for metric in SUMMARY_METRICS:
            s[metric] = describe(_value(m, metric) for m in members)
        for metric in _recorded_metrics(members):
            # A metric named like a summary field (never one fsadvisor records) cannot
            # take that field's place.
            if metric not in s:
                s[metric] = describe(_value(m, metric) for m in members)
        out.append(s)
    return out


def profiles_of(runs: list[dict[str, Any]]) -> list[str]:
    """The profiles ``runs`` count for, sorted: those a joint probe named and the profile
    whose workload they ran ("profile:P")."""
    out: set[str] = set()
    for r in runs:
        out.update(r.get("profiles") or [])
        name = r.get("workload_name") or ""
        if name.startswith("profile:"):
            out.add(name[len("profile:") :])
    return sorted(out)


def _import_ref(provenance: Any) -> dict[str, Any]:
    p = provenance if isinstance(provenance, dict) else {}
    return {
        "file": p.get("file"),
        "sha256": p.get("sha256"),
        "fio_version": p.get("fio_version"),
        "host": p.get("host"),
    }


def _value(run: dict[str, Any], metric: str) -> float | None:
    if metric in _ROW_METRICS:
        return run[metric]
    recorded = run["metrics"] if isinstance(run["metrics"], dict) else {}
    return encoding.real_or_none(recorded.get(metric))


def _recorded_metrics(members: list[dict[str, Any]]) -> list[str]:
    """Numeric metrics some of ``members`` recorded beyond SUMMARY_METRICS, sorted."""
    names: set[str] = set()
    for m in members:
        if isinstance(m["metrics"], dict):
            names.update(k for k, v in m["metrics"].items() if encoding.real_or_none(v) is not None)
    return sorted(names - NOT_SUMMARISED - set(SUMMARY_METRICS))


def completed_cells(db: Database, matrix_id: str, reps: int | None = None) -> set[str]:
    """Cells of the matrix with ok runs for ``reps`` distinct repetitions (default: the
    plan's ``reps``; pass 1 when a cell key already names a single repetition)."""
    row = db.execute("SELECT plan FROM matrices WHERE id = ?", [matrix_id]).fetchone()
    if row is None:
        raise StoreError(f"no matrix {matrix_id!r} in the store")
    if reps is None:
        reps = int((encoding.loads(row[0]) or {}).get("reps") or 1)
    rows = db.execute(
        "SELECT cell_key FROM runs WHERE matrix_id = ? AND status = 'ok' "
        "GROUP BY cell_key HAVING COUNT(DISTINCT rep) >= ?",
        [matrix_id, int(reps)],
    ).fetchall()
    return {r[0] for r in rows}


def matrix(db: Database, matrix_id: str) -> dict[str, Any]:
    found = [m for m in matrices(db, matrix_id=matrix_id)]
    if not found:
        raise StoreError(f"no matrix {matrix_id!r} in the store")
    return found[0]


def plan_target(plan: dict[str, Any] | None) -> dict[str, str]:
    """What a probe matrix ran on and what it ran, in words, from its stored plan: the device
    path (or the scratch file's directory) and the profile (several joined by " + ", or
    "micro benchmarks")."""
    plan = plan or {}
    device = plan.get("device") or (
        f"scratch file in {plan['scratch_dir']}" if plan.get("scratch_dir") else "scratch file"
    )
    names = [w.get("name") for w in plan.get("workloads") or [] if isinstance(w, dict)]
    joint = (plan.get("adaptive") or {}).get("profiles") or []
    # a joint probe names every profile it decided for (its plan's "profile" is the first)
    profile = (" + ".join(map(str, joint)) if len(joint) > 1 else plan.get("profile")) or (
        "micro benchmarks" if names else "-"
    )
    return {"device": str(device), "profile": str(profile)}


def matrices(
    db: Database, limit: int | None = None, matrix_id: str | None = None
) -> list[dict[str, Any]]:
    """Probe matrices, newest first, with their run counts per status and their plan."""
    sql = (
        "SELECT m.id, m.status, m.started_at, m.finished_at, m.plan, "
        "SUM(r.status = 'ok') AS runs_ok, SUM(r.status = 'failed') AS runs_failed, "
        "SUM(r.status = 'incomplete') AS runs_incomplete, "
        "COUNT(DISTINCT r.cell_key) AS cells_run "
        "FROM matrices m LEFT JOIN runs r ON r.matrix_id = m.id"
    )
    params: list[Any] = []
    if matrix_id is not None:
        sql += " WHERE m.id = ?"
        params.append(matrix_id)
    sql += " GROUP BY m.id ORDER BY m.started_at DESC, m.id DESC"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    out = []
    for row in db.execute_returning_dicts(sql, params):
        row["plan"] = encoding.loads(row["plan"])
        for k in ("runs_ok", "runs_failed", "runs_incomplete"):
            row[k] = int(row[k] or 0)
        out.append(row)
    return out
