"""Fleets: results from many hosts in one store (`fsadvisor db merge`), and the
recommendation per device model that the Ansible playbook (runner/ansible/) prints.

Every run has a stable id (store schema v4), so merging the same host's store twice, or two
stores that share history, adds each run once; each run keeps the host and device it was
measured on.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from fsadvisor.errors import StoreError
from fsadvisor.store import check_store_file, open_store
from fsadvisor.domain import Device

# The model, the ranking and the device fit are imported where a fleet recommendation is
# built (start-up): db merge imports this module without them.

PathLike = str | os.PathLike[str]


def merge_stores(others: Iterable[PathLike], db: PathLike | None = None) -> dict[str, Any]:
    """Merge every store file in ``others`` into ``db``, one transaction per file. Every file
    is checked (an fsadvisor store of a version this code knows) before any is merged, so a
    bad one in the list stops the merge before anything changes."""
    files = list(others)
    if not files:
        raise StoreError("name at least one store file to merge")
    for f in files:
        check_store_file(f)
    with open_store(db) as store:
        store.ensure_seeded()
        merged = [store.merge_from(f) for f in files]
        return {"store": store.label, "merged": merged, "runs": store.info()["tables"]["runs"]}


def _model_key(run: dict[str, Any]) -> tuple[str, str]:
    # Drives of one model behave alike whichever host holds them; devices without a model
    # (loop, zram) are grouped by their identity, i.e. their backing class.
    return (run["device_kind"] or "unknown", run["device_model"] or run["device_identity"] or "?")


def recommend_per_model(
    profile: str, db: PathLike | None = None, top: int = 1, scope: str = "system"
) -> dict[str, Any]:
    """For every device model in the (merged) store: the hosts and devices measured, the
    device parameters fitted from the raw-device runs of *all* its drives across hosts (a
    calibration per model; the kind's prior when none was run), and the recommendation for
    ``profile`` on it."""
    # the model (numpy) and its ranking: not for db merge (see the top)
    from fsadvisor.predict.rank import rank
    from fsadvisor.service.advice import get_model, get_profile
    from fsadvisor.service.answer import headline, write_why

    # the device fit and the device figures: not for db merge either
    from fsadvisor.predict.device_fit import RawRun, fit_device_params
    from fsadvisor.catalog.device_params import prior_params
    from fsadvisor.service.device_figures import describe, devices_table

    prof = get_profile(profile)
    with open_store(db) as store:
        store.ensure_seeded()
        runs = store.runs(status="ok")
    if not runs:
        raise StoreError("the store holds no successful run: merge the hosts' stores first")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault(_model_key(r), []).append(r)
    model = get_model(str(db) if db is not None else None)
    table = devices_table()
    out = []
    for (kind, name), members in sorted(groups.items()):
        identity = f"model:{kind}:{name}"
        raw_rows = [r for r in members if r["configuration_id"] is None]
        raw = [x for x in (RawRun.from_store_row(r) for r in raw_rows) if x is not None]
        params, note = None, None
        if raw:
            try:
                params = fit_device_params(raw, kind, table, device_id=identity)
            except (ArithmeticError, ValueError) as e:
                note = f"fit from {len(raw)} raw run(s) failed ({e}); kind prior used"
            if params is not None and not params.measured:
                params, note = None, "the raw runs determined no parameter; kind prior used"
        if params is None:
            params = prior_params(kind, table, device_id=identity)
        size = min(int(r["device_size_bytes"] or 0) for r in members) or 1 << 40
        dev = Device(
            path=None,
            size_bytes=size,
            kind=kind,
            model="" if name == members[0]["device_identity"] else name,
        )
        rec = rank(model, prof, dev, top=top, scope=scope, device_params=params)
        write_why(rec)
        rec.summary = headline(rec)
        best = rec.ranked[0] if rec.ranked else None
        out.append(
            {
                "kind": kind,
                "model": name,
                "hosts": sorted({r["hostname"] or "?" for r in members}),
                "devices": sorted({r["device_identity"] for r in members}),
                "runs": len(members),
                "imported_runs": sum(r["origin"] == "imported" for r in members),
                "raw_runs_fitted": len(raw),
                "device_parameters": describe(params),
                "note": note,
                "headline": (
                    f"{best.config.label()} (predicted {_fmt(best, rec.rank_by)})"
                    if best
                    else "no configuration meets the profile's constraints"
                ),
                "recommendation": rec.to_dict(),
            }
        )
    return {"profile": prof.name, "store": str(db) if db is not None else None, "devices": out}


def _fmt(best: Any, metric: str) -> str:
    """The ranked figure with its unit, as recommend prints a score ("200 ops/J")."""
    v = best.prediction.to_dict().get(metric)
    unit = "bytes/J" if metric == "bytes_per_joule" else "ops/J"
    return f"{v:,.0f} {unit}" if isinstance(v, (int, float)) else "?"
