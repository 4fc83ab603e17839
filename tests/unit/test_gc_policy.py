"""The console script (fsadvisor/cli/entry.py) leaves Python's cyclic garbage collector alone:
every command runs with it, as the interpreter starts; only the process's very end hands
the objects still alive to gc.freeze (cli._exiting), so shutdown does not walk them again."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import fsadvisor.cli.app as cli

ROOT = Path(__file__).resolve().parents[2]

# What the console script does, with a report of the collector's state as the process ends
# (after the command has run, before interpreter shutdown).
ENTRY = """
import atexit, gc, sys
atexit.register(lambda: print("COLLECTOR", "on" if gc.isenabled() else "off"))
sys.argv = ["fsadvisor"] + {argv!r}
from fsadvisor.cli.entry import main
main()
"""

CONFIG = '{"filesystem": "xfs"}'


def _run(code: str, tmp_path: Path, monkeypatch, stdin: str | None = None) -> str:
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "fsadvisor.db"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, input=stdin, cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_console_script_is_the_entry_module():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"fsadvisor": "fsadvisor.cli.entry:main"}


@pytest.mark.parametrize(
    "argv",
    [
        ["recommend", "--profile", "oltp", "--json"],
        ["predict", "--profile", "oltp", "--config", CONFIG, "--json"],
        ["predict", "--batch"],
        ["profiles", "list"],
    ],
)
def test_every_command_runs_with_the_collector(argv, tmp_path, monkeypatch):
    stdin = f'{{"profile": "oltp", "config": {CONFIG}}}\n' if "--batch" in argv else None
    out = _run(ENTRY.format(argv=argv), tmp_path, monkeypatch, stdin)
    assert out.splitlines()[-1] == "COLLECTOR on", out[-300:]


def test_an_in_process_caller_keeps_its_collector(tmp_path, monkeypatch):
    import gc

    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "fsadvisor.db"))
    assert gc.isenabled()
    with pytest.raises(SystemExit):
        cli.main(["recommend", "--profile", "oltp", "--json"])
    assert gc.isenabled()
