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
        return {"store": store.label, "merged": merged,
                "runs": store.info()["tables"]["runs"]}
