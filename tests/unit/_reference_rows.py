"""The shipped reference matrices' rows, read as their tests read them."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parents[2] / "datasets" / "reference"


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def cell_means(rows: list[dict[str, str]], *columns: str) -> dict[tuple, float]:
    """Mean IOPS per cell (the values of ``columns``) over its ok runs whose direct I/O was
    honoured, for cells with at least 3 such runs."""
    cells = defaultdict(list)
    for r in rows:
        if r["status"] == "ok" and "direct-io-not-honoured" not in r["flags"]:
            cells[tuple(r[c] for c in columns)].append(float(r["iops"]))
    return {k: statistics.fmean(v) for k, v in cells.items() if len(v) >= 3}


def assert_same_contract_as_the_first(path: Path, rows: list[dict[str, str]]) -> None:
    """A later matrix keeps the first's columns and device identities, under its own ids."""
    first = rows_of(HERE / "runs.csv")
    with path.open(newline="") as f:
        assert csv.DictReader(f).fieldnames == list(first[0].keys())
    assert {(r["device_class"], r["device"], r["host"]) for r in rows} == {
        (r["device_class"], r["device"], r["host"]) for r in first
    }
    assert {r["matrix_id"] for r in rows}.isdisjoint({r["matrix_id"] for r in first})
