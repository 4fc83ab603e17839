"""Two import streams into one store at once store every file: a write takes SQLite's write
lock before it reads (BEGIN IMMEDIATE), waits for the other stream within a bounded time, and
a retryable "database is locked" is retried, never turned into a lost file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fsadvisor.store import open_store

FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "fio" / "fio-3.33-randread-json-plus.json"
)
PER_STREAM = 60

STREAM = """
import sys
from fsadvisor.service.importing import import_fio_json
failed = 0
for path in sys.argv[2:]:
    try:
        import_fio_json([path], "nvme:1T", '{"filesystem": "xfs"}',
                        profile="fio-randread-4k-j1", db=sys.argv[1])
    except Exception as e:  # what the CLI would have printed and exited 2 on
        failed += 1
        print(f"{path}: {e}", file=sys.stderr)
print(failed)
"""


def test_two_import_streams_of_120_files_store_120(tmp_path):
    db = tmp_path / "s.db"
    with open_store(str(db)) as store:
        store.ensure_seeded()
    text = FIXTURE.read_text()
    files = []
    for i in range(2 * PER_STREAM):
        f = tmp_path / f"run{i:03d}.json"
        f.write_text(text + " " * (i + 1))  # distinct files (imports are keyed by content)
        files.append(str(f))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", STREAM, str(db), *files[k * PER_STREAM : (k + 1) * PER_STREAM]],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [o[0].strip() for o in outs] == ["0", "0"], [o[1][-2000:] for o in outs]
    with open_store(str(db)) as store:
        runs = store.runs()
    assert len([r for r in runs if r.get("origin") == "imported"]) == 2 * PER_STREAM, json.dumps(
        sorted({r.get("origin") for r in runs})
    )
