"""One probe matrix, opened: its measured results per cell, and the same as CSV or JSON.

A cell is one (configuration, workload, meter) of the matrix; its figures are the store's
summaries over the cell's ok runs (store.queries.summaries: mean and 95% Student-t interval
of the mean, n repetitions). Nothing here predicts: these are measurements only. The HTML
report of a matrix (measured next to predicted) is service.report.write(matrix=...).
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from fsadvisor.errors import FsAdvisorError
from fsadvisor.service.report import config_label
from fsadvisor.store import open_store

# What a cell row shows, in this order: the figures a user compares configurations by.
CELL_METRICS = ("ops_per_joule", "bytes_per_joule", "iops", "mb_s", "p99_latency_us", "watts")
EXPORT_FORMATS = ("csv", "json")


def matrix_cells(matrix_id: str, db: str | None = None) -> dict[str, Any]:
    """The matrix (id, status, plan's device/profile/reps) and one row per cell, best
    ops/J first: ``label``, ``workload``, ``energy``, ``n`` and, per CELL_METRICS, the
    store's {n, mean, sd, ci95_low, ci95_high}. StoreError for an unknown matrix."""
    with open_store(db) as store:
        m = store.matrix(matrix_id)
        summaries = store.summaries(matrix_id=matrix_id)
    plan = m.get("plan") or {}
    cells = []
    for s in summaries:
        cells.append({
            "label": config_label(s["config"], s.get("cell_key")),
            "config_key": s["config_key"],
            "workload": s["workload_name"],
            "energy": f"{s['energy_source']}, {s['power_scope']}" if s["energy_source"] else "none",
            "n": s["n"],
            **{k: s.get(k) or {"n": 0, "mean": None, "sd": None, "ci95_low": None,
                               "ci95_high": None} for k in CELL_METRICS},
        })
    cells.sort(key=lambda c: -(c["ops_per_joule"]["mean"] or 0.0))
    return {"matrix": {"id": m["id"], "status": m.get("status"), "device": plan.get("device"),
                       "profile": plan.get("profile"), "reps": plan.get("reps")},
            "cells": cells}


def _csv(doc: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    stats = ("mean", "ci95_low", "ci95_high", "n")
    w.writerow(["matrix", "configuration", "config_key", "workload", "energy", "n"]
               + [f"{k}_{s}" for k in CELL_METRICS for s in stats])
    for c in doc["cells"]:
        w.writerow([doc["matrix"]["id"], c["label"], c["config_key"], c["workload"],
                    c["energy"], c["n"]]
                   + ["" if c[k][s] is None else c[k][s] for k in CELL_METRICS for s in stats])
    return buf.getvalue()


def export_matrix(matrix_id: str, fmt: str, out: str | os.PathLike[str],
                  db: str | None = None) -> Path:
    """Write the matrix's cells as ``fmt`` (csv: one row per cell, mean/ci95_low/ci95_high/n
    per metric; json: what matrix_cells returns) to ``out``; returns the path written."""
    if fmt not in EXPORT_FORMATS:
        raise FsAdvisorError(f"export format must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}")
    doc = matrix_cells(matrix_id, db)
    text = _csv(doc) if fmt == "csv" else json.dumps(doc, indent=2) + "\n"
    path = Path(out)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise FsAdvisorError(f"{path}: {e.strerror or e}") from None
    return path


def export_report(matrix_id: str, out: str | os.PathLike[str], db: str | None = None) -> Path:
    """The HTML report (service.report) of this matrix for the profile its plan names."""
    from fsadvisor.service import report

    doc = matrix_cells(matrix_id, db)
    profile = doc["matrix"]["profile"]
    if not profile:
        raise FsAdvisorError(f"matrix {matrix_id!r} names no profile: use `fsadvisor report "
                             f"--profile NAME --matrix {matrix_id}`")
    report.write(profile, out=out, matrix=matrix_id, db=db)
    return Path(out)
