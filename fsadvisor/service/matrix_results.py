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
import time
from pathlib import Path
from typing import Any

from fsadvisor.errors import FsAdvisorError
from fsadvisor.report.terminal import LineChart
from fsadvisor.service.compare import judged, welch
from fsadvisor.service.report import config_label
from fsadvisor.store import open_store
from fsadvisor.service import report

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
        cells.append(
            {
                "label": config_label(s["config"], s.get("cell_key")),
                "scheduler": _scheduler(s["config"], s.get("cell_key")),
                "config_key": s["config_key"],
                "workload": s["workload_name"],
                "energy": f"{s['energy_source']}, {s['power_scope']}"
                if s["energy_source"]
                else "none",
                "n": s["n"],
                **{
                    k: s.get(k)
                    or {"n": 0, "mean": None, "sd": None, "ci95_low": None, "ci95_high": None}
                    for k in CELL_METRICS
                },
            }
        )
    cells.sort(key=lambda c: -(c["ops_per_joule"]["mean"] or 0.0))
    return {
        "matrix": {
            "id": m["id"],
            "status": m.get("status"),
            "device": plan.get("device"),
            "profile": plan.get("profile"),
            "reps": plan.get("reps"),
        },
        "cells": cells,
    }


def _scheduler(cfg: Any, raw_cell: str | None) -> str:
    """The cell's I/O scheduler (a raw-device cell names it in its key, as config_label reads)."""
    if cfg is None:
        return ((raw_cell or "").split(" | ")[0].split()[-1:] or ["?"])[0]
    c = cfg.to_dict() if hasattr(cfg, "to_dict") else cfg
    return c.get("scheduler") or "none"


def _csv(doc: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    stats = ("mean", "ci95_low", "ci95_high", "n")
    w.writerow(
        ["matrix", "configuration", "config_key", "workload", "energy", "n"]
        + [f"{k}_{s}" for k in CELL_METRICS for s in stats]
    )
    for c in doc["cells"]:
        w.writerow(
            [doc["matrix"]["id"], c["label"], c["config_key"], c["workload"], c["energy"], c["n"]]
            + ["" if c[k][s] is None else c[k][s] for k in CELL_METRICS for s in stats]
        )
    return buf.getvalue()


def export_matrix(
    matrix_id: str, fmt: str, out: str | os.PathLike[str], db: str | None = None
) -> Path:
    """Write the matrix's cells as ``fmt`` (csv: one row per cell, mean/ci95_low/ci95_high/n
    per metric; json: what matrix_cells returns) to ``out``; returns the path written."""
    if fmt not in EXPORT_FORMATS:
        raise FsAdvisorError(
            f"export format must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}"
        )
    doc = matrix_cells(matrix_id, db)
    text = _csv(doc) if fmt == "csv" else json.dumps(doc, indent=2) + "\n"
    path = Path(out)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise FsAdvisorError(f"{path}: {e.strerror or e}") from None
    return path


def export_report(
    matrix_id: str, out: str | os.PathLike[str], db: str | None = None, profile: str | None = None
) -> Path:
    """The HTML report (service.report) of this matrix for the profile its plan names, or
    (a matrix of micro workloads only, which names none) for ``profile``."""

    doc = matrix_cells(matrix_id, db)
    profile = doc["matrix"]["profile"] or profile
    if not profile:
        raise FsAdvisorError(
            f"matrix {matrix_id!r} names no profile: use `fsadvisor report "
            f"--profile NAME --matrix {matrix_id}`"
        )
    report.write(profile, out=out, matrix=matrix_id, db=db)
    return Path(out)


def compare_cells(doc: dict[str, Any], a: int, b: int) -> dict[str, Any]:
    """Two cells of an opened matrix (``doc`` from matrix_cells; ``a``, ``b`` indexes of its
    cells) side by side: mean, 95% interval and n of each, and B − A with its 95% Welch
    interval and verdict (service.compare's, the one `fsadvisor compare` prints). ops/J when
    both cells have it from the same energy source and scope, else IOPS."""
    cells = doc["cells"]
    if not (0 <= a < len(cells) and 0 <= b < len(cells)) or a == b:
        raise FsAdvisorError("choose two different cells of the matrix to compare")
    ca, cb = cells[a], cells[b]
    metric = (
        "ops_per_joule"
        if ca["energy"] == cb["energy"] != "none"
        and ca["ops_per_joule"]["mean"]
        and cb["ops_per_joule"]["mean"]
        else "iops"
    )
    what = "ops/J" if metric == "ops_per_joule" else "IOPS"
    sa, sb = ca[metric], cb[metric]
    out: dict[str, Any] = {
        "matrix": doc["matrix"]["id"],
        "metric": metric,
        "unit": what,
        "a": {"label": ca["label"], "workload": ca["workload"], "energy": ca["energy"], **sa},
        "b": {"label": cb["label"], "workload": cb["workload"], "energy": cb["energy"], **sb},
        "same_workload": ca["workload"] == cb["workload"],
    }
    if (sa["n"] or 0) >= 2 and (sb["n"] or 0) >= 2 and sa["mean"]:
        out["difference"] = judged(
            welch(sa["mean"], sa["sd"] or 0.0, sa["n"], sb["mean"], sb["sd"] or 0.0, sb["n"]),
            "A",
            "B",
            what,
        )
    else:
        out["difference"] = None
        out["verdict"] = "cannot tell: fewer than 2 runs on a side"
    return out


def device_history(device: str, db: str | None = None, limit: int = 200) -> dict[str, Any]:
    """The history of one device: every stored matrix whose plan probed ``device``, oldest
    first, and per configuration its mean per matrix (ops/J when every cell of those
    matrices has an energy reading, else IOPS) — the points of the History tab's chart."""
    with open_store(db) as store:
        matrices = [
            m for m in store.matrices(limit=limit) if (m.get("plan") or {}).get("device") == device
        ]
        matrices.sort(key=lambda m: m.get("started_at") or 0.0)
        per = [(m, store.summaries(matrix_id=m["id"])) for m in matrices]
    every = [s for _, ss in per for s in ss]
    metric = (
        "ops_per_joule"
        if every and all((s.get("ops_per_joule") or {}).get("mean") for s in every)
        else "iops"
    )
    series: dict[str, list[list[Any]]] = {}
    for i, (_m, ss) in enumerate(per):
        for s in ss:
            mean = (s.get(metric) or {}).get("mean")
            if mean is None:
                continue
            label = f"{config_label(s['config'], s.get('cell_key'))} {s['workload_name']}"
            series.setdefault(label, []).append([i, mean])
    return {
        "device": device,
        "metric": metric,
        "unit": "ops/J" if metric == "ops_per_joule" else "IOPS",
        "matrices": [{"id": m["id"], "started_at": m.get("started_at")} for m, _ in per],
        "series": series,
    }


# The chart keeps this many configurations (the best by their latest mean): more lines than
# this share too few marker characters to tell apart in a terminal.
HISTORY_SERIES = 6
_MARKERS = ("●", "▲", "■", "◆", "x", "+")


def history_chart(doc: dict[str, Any]):
    """device_history as a line chart (report.terminal.LineChart): one line per
    configuration across the device's matrices, a legend line naming each marker. None when
    the device has no measured runs."""
    if not doc["series"]:
        return None
    best = sorted(doc["series"].items(), key=lambda kv: -kv[1][-1][1])[:HISTORY_SERIES]
    names = tuple(
        time.strftime("%m-%d %H:%M", time.localtime(m["started_at"]))
        if m["started_at"]
        else m["id"]
        for m in doc["matrices"]
    )
    legend = [
        f" {marker} {label}: last {pts[-1][1]:,.0f} {doc['unit']} "
        f"({len(pts)} {'matrices' if len(pts) != 1 else 'matrix'})"
        for (label, pts), marker in zip(best, _MARKERS)
    ]
    hidden = len(doc["series"]) - len(best)
    if hidden > 0:
        legend.append(f" ({hidden} more configuration(s) not drawn: export the matrices for all)")
    return LineChart(
        f"{doc['device']}: measured {{unit}} per matrix",
        doc["unit"],
        names,
        tuple(
            (label, tuple((x, y) for x, y in pts), marker)
            for (label, pts), marker in zip(best, _MARKERS)
        ),
        tuple(legend),
    )


def plot_device_history(doc: dict[str, Any], width: int | None = None, height: int = 14) -> str:
    """history_chart as plain text, at most ``width`` columns (the terminal's by default)."""
    chart = history_chart(doc)
    if chart is None:
        return f"no measured runs of {doc['device']} in the store"
    return chart.text(width, height)
