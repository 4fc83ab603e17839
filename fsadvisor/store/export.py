"""Writing the store out for other tools: CSV (one flat table) or one JSON document.

CSV is for spreadsheets and pandas: one row per run (or summary, or seed measurement),
nested values flattened to dotted columns (``workload.bs_bytes``, ``iops.ci95_low``). JSON is
the archive: ``{"schema_version", "runs", "summaries", "measurements"}`` with the raw tool
output of every run kept verbatim.
"""

from __future__ import annotations

import csv
import json
import os
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, Iterator, Sequence

from fsadvisor.errors import StoreError
from fsadvisor.store import encoding, queries
from fsadvisor.store.schema import METRIC_COLUMNS

if TYPE_CHECKING:
    from sqlite_utils import Database

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


def empty_columns(db: "Database", table: str) -> list[str]:
    """The header of ``table`` when it has no rows: the columns the query would return
    (JSON-valued ones unflattened, as there is no row to flatten), so a script reading the
    export still finds its columns. Summaries are computed per row: none without rows."""
    if table == "runs":
        sql = queries.RUNS_SELECT.format(
            metric_columns=", ".join(f"r.{m}" for m in METRIC_COLUMNS), raw=""
        )
        return [d[0] for d in db.execute(sql + " LIMIT 0").description]
    if table == "measurements":
        return list(db["measurements"].columns_dict)
    return []


def write_csv(rows: list[dict[str, Any]], out: IO[str], empty_header: Sequence[str] = ()) -> None:
    """One flat table; ``empty_header`` is the header written when there are no rows (csv's
    DictWriter would write a blank line). Nothing at all when there are no columns either."""
    flat = [flatten(r) for r in rows]
    columns: dict[str, None] = {} if flat else dict.fromkeys(empty_header)
    for r in flat:
        columns.update(dict.fromkeys(r))
    if not columns:
        return
    writer = csv.DictWriter(out, fieldnames=list(columns), restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(flat)


def write_json(document: dict[str, Any], out: IO[str]) -> None:
    json.dump(encoding.plain(document), out, indent=2, allow_nan=False, ensure_ascii=False)
    out.write("\n")


@contextmanager
def opened(out: str | os.PathLike[str] | IO[str]) -> Iterator[IO[str]]:
    """A text stream for ``out``: the stream itself, or the file at that path. A path that
    cannot be opened, written or closed is one StoreError line: /proc/version opens for
    writing as root and fails only on the write (EIO, verified here)."""
    if not isinstance(out, (str, os.PathLike)):
        yield out
        return
    try:
        f = open(out, "w", encoding="utf-8", newline="")
    except OSError as e:
        raise StoreError(f"cannot write export to {out}: {e.strerror or e}") from e
    try:
        with f:
            yield f
    except OSError as e:
        raise StoreError(f"cannot write export to {out}: {e.strerror or e}") from e


def check(fmt: str, table: str | None) -> None:
    if fmt not in FORMATS:
        raise StoreError(f"unknown export format {fmt!r} (csv or json)")
    if table is not None and table not in TABLES:
        raise StoreError(f"unknown export table {table!r} ({', '.join(TABLES)})")
