"""One check at every open: a store whose pages are damaged is refused in one line by
`recommend` (even with a cached model), `db info` and `import`, and a store of a future or
invalid schema version by every command; a store exactly as fsadvisor left it is not checked
again (its size and mtime are remembered at close)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from fsadvisor.store import integrity, open_store
from fsadvisor.store.schema import SCHEMA_VERSION

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "fio"


@pytest.fixture
def store_file(tmp_db, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from fsadvisor.service import advice

    advice._cache.clear()
    with open_store(str(tmp_db)) as s:
        s.ensure_seeded()
    cli.register_all()
    return tmp_db


def _run(*args: str):
    return CliRunner().invoke(cli.app, list(args))


def _damage(path) -> None:
    """Overwrite the b-tree header of a page in the middle of the file."""
    con = sqlite3.connect(path)
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    assert pages > 4
    with open(path, "r+b") as f:
        f.seek((pages // 2) * page_size)
        f.write(b"\xff" * 64)


def test_a_damaged_store_is_refused_by_every_command_in_one_line(store_file, tmp_path):
    assert _run("recommend", "-p", "oltp").exit_code == 0  # a cached model exists now
    _damage(store_file)
    fio_json = FIXTURES / "fio-3.33-randread-json-plus.json"
    for args in (
        ["recommend", "-p", "oltp"],
        ["db", "info"],
        [
            "import",
            "fio-json",
            str(fio_json),
            "--device",
            "nvme:1T",
            "--config",
            '{"filesystem": "xfs"}',
            "--profile",
            "fio-randread-4k-j1",
        ],
    ):
        r = _run(*args)
        assert r.exit_code == 2, (args, r.output)
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and "is damaged" in lines[0], (args, r.output)


@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, -1, -2, -5])
def test_a_future_or_invalid_schema_version_is_refused_by_recommend_too(store_file, version):
    assert _run("recommend", "-p", "oltp").exit_code == 0  # the fast path has a model
    con = sqlite3.connect(store_file)
    con.execute(f"PRAGMA user_version = {version}")
    con.close()
    for args in (["recommend", "-p", "oltp"], ["db", "info"]):
        r = _run(*args)
        assert r.exit_code == 2, (args, r.output)
        want = "newer than this fsadvisor" if version > 0 else "invalid store schema version"
        assert want in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_a_store_as_fsadvisor_left_it_is_not_checked_again(store_file, monkeypatch):
    assert integrity.known_intact(store_file)
    calls = []
    monkeypatch.setattr(integrity, "check", lambda *a, **k: calls.append(a))
    with open_store(str(store_file)):
        pass
    assert calls == []
    os.utime(store_file, ns=(1, 1))  # changed behind fsadvisor's back
    assert not integrity.known_intact(store_file)
    with open_store(str(store_file)):
        pass
    assert len(calls) == 1


def _index_out_of_step(path) -> None:
    """An index whose entries no longer match its table (the kind of damage a torn write
    leaves in an index page): quick_check passes it, only integrity_check finds it."""
    con = sqlite3.connect(path)
    assert con.execute("SELECT count(*) FROM configurations").fetchone()[0] > 0
    con.execute("PRAGMA writable_schema=ON")
    con.execute(
        'UPDATE sqlite_master SET sql=\'CREATE UNIQUE INDEX "idx_configurations_key" '
        'ON "configurations" ("id")\' WHERE name=\'idx_configurations_key\''
    )
    con.commit()
    con.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    assert con.execute("PRAGMA integrity_check").fetchall() != [("ok",)]
    con.close()


def test_a_probe_runs_the_full_check_before_it_attaches_anything(store_file, tmp_path):
    from fsadvisor.errors import StoreError
    from fsadvisor.service import probing

    fio_json = FIXTURES / "fio-3.33-randread-json-plus.json"
    r = _run(
        "import",
        "fio-json",
        str(fio_json),
        "--device",
        "nvme:1T",
        "--config",
        '{"filesystem": "xfs"}',
        "--profile",
        "fio-randread-4k-j1",
    )
    assert r.exit_code == 0, r.output
    _index_out_of_step(store_file)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    plan = probing.plan_probe(
        probing.ProbeRequest.make(
            scratch="512M",
            scratch_dir=scratch,
            filesystems="ext4",
            workloads="4k-randread-qd32",
            variants=False,
            baseline=False,
            reps=1,
            runtime_s=1,
            cooldown_s=0,
            db=store_file,
        )
    )
    with pytest.raises(StoreError, match="is damaged .*integrity_check"):
        probing.run_probe(plan)
    assert list(scratch.iterdir()) == []  # no backing file, so no loop device either
    with sqlite3.connect(store_file) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
