"""Writing the store out for other tools: CSV (one flat table) or one JSON document.

CSV is for spreadsheets and pandas: one row per run (or summary, or seed measurement),
nested values flattened to dotted columns (``workload.bs_bytes``, ``iops.ci95_low``). JSON is
the archive: ``{"schema_version", "runs", "summaries", "measurements"}`` with the raw tool
output of every run kept verbatim.
"""

from __future__ import annotations

import csv
import json
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator

from fsadvisor.errors import StoreError
from fsadvisor.store import encoding

TABLES = ("runs", "summaries", "measurements")
FORMATS = ("csv", "json")


def flatten(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):  # an empty one adds no column
            out.update(flatten(v, name + "."))
        elif isinstance(v, (dict, list, tuple)):
            out[name] = encoding.dumps(v)
        else:
            out[name] = v
    return out


def write_csv(rows: list[dict[str, Any]], out: IO[str]) -> None:
    flat = [flatten(r) for r in rows]
    columns: dict[str, None] = {}
    for r in flat:
        columns.update(dict.fromkeys(r))
    writer = csv.DictWriter(out, fieldnames=list(columns), restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(flat)


def write_json(document: dict[str, Any], out: IO[str]) -> None:
    json.dump(encoding.plain(document), out, indent=2, allow_nan=False, ensure_ascii=False)
    out.write("\n")


@contextmanager
def opened(out: str | Path | IO[str]) -> Iterator[IO[str]]:
    """A text stream for ``out``: the stream itself, or the file at that path."""
    if hasattr(out, "write"):
        yield out  # type: ignore[misc]
        return
    try:
        f = open(out, "w", encoding="utf-8", newline="")  # type: ignore[arg-type]
    except OSError as e:
        raise StoreError(f"cannot write export to {out}: {e.strerror or e}") from e
    with f:
        yield f


def check(fmt: str, table: str | None) -> None:
    if fmt not in FORMATS:
        raise StoreError(f"unknown export format {fmt!r} (csv or json)")
    if table is not None and table not in TABLES:
        raise StoreError(f"unknown export table {table!r} ({', '.join(TABLES)})")
