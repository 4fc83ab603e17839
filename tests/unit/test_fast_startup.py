"""Issue 13: `recommend` and `predict` start with only the command module they need."""

from __future__ import annotations

import subprocess
import sys

import typer.main

import fsadvisor.cli as cli

CODE = """
import sys
sys.argv = ["fsadvisor", *{argv!r}]
from fsadvisor.cli import main
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
print("NUMPY_RANDOM", "numpy.random" in sys.modules)
print("LOADED", sorted(m for m in sys.modules
                       if m.startswith(("fsadvisor.cli.", "fsadvisor.probe"))))
"""


def _run(argv, tmp_path, monkeypatch):
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "fsadvisor.db"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", CODE.format(argv=argv)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_fast_commands_name_the_module_that_defines_them():
    cli._register()
    group = typer.main.get_command(cli.app)
    for name, module in cli.FAST_COMMANDS.items():
        info = next(c for c in cli.app.registered_commands
                    if (c.name or c.callback.__name__) == name)
        assert info.callback.__module__ == f"fsadvisor.cli.{module}", name
        assert name in group.commands
        # a module with one command would make typer run it as the whole program
        assert sum(c.callback.__module__ == f"fsadvisor.cli.{module}"
                   for c in cli.app.registered_commands) >= 2


def test_recommend_loads_one_command_module_and_no_probe_code(tmp_path, monkeypatch):
    _run(["recommend", "--profile", "oltp"], tmp_path, monkeypatch)  # seeds, fits
    out = _run(["recommend", "--profile", "oltp", "--json"], tmp_path, monkeypatch)
    loaded = out.splitlines()[-1]
    # P(best)'s sampler is numpy arithmetic (predict/confidence.py): numpy.random's import
    # (~9 ms) is no part of a recommendation.
    assert out.splitlines()[-2] == "NUMPY_RANDOM False"
    # The tie note names the cells that would settle it and their time on this device, which
    # only the probe's pure planning modules know (issue 11); the probe machinery (run, cell,
    # state, commands, measure) and every other command module stay unloaded.
    assert loaded == ("LOADED ['fsadvisor.cli.advice', 'fsadvisor.probe', "
                      "'fsadvisor.probe.micro', 'fsadvisor.probe.plan']"), loaded


def test_other_commands_and_help_still_see_every_command(tmp_path, monkeypatch):
    out = _run(["--help"], tmp_path, monkeypatch)
    for name in ("recommend", "predict", "probe", "simulate", "profiles", "calibrate"):
        assert name in out
    out = _run(["profiles", "list"], tmp_path, monkeypatch)
    assert "oltp" in out
