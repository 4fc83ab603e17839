"""`recommend` and `predict` start with only the command module they need."""

from __future__ import annotations

import subprocess
import sys

import typer.main

import fsadvisor.cli.app as cli

CODE = """
import sys
sys.argv = ["fsadvisor", *{argv!r}]
from fsadvisor.cli.app import main
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
# the application itself (cli/app.py, the root group) and the console script are not commands
print("LOADED", sorted(m for m in sys.modules
                       if m.startswith(("fsadvisor.cli.", "fsadvisor.probe"))
                       and m not in ("fsadvisor.cli.app", "fsadvisor.cli.entry")))
"""


def _run(argv, tmp_path, monkeypatch):
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "fsadvisor.db"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    r = subprocess.run(
        [sys.executable, "-c", CODE.format(argv=argv)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_lazy_table_names_every_command_and_the_module_that_defines_it():
    cli.register_all()
    group = typer.main.get_command(cli.app)
    assert set(cli.COMMAND_MODULES) == set(group.commands)
    for info in cli.app.registered_commands:
        name = info.name or typer.main.get_command_name(info.callback.__name__)
        assert info.callback.__module__ == f"fsadvisor.cli.{cli.COMMAND_MODULES[name]}", name
    for info in cli.app.registered_groups:
        t = info.typer_instance
        name = info.name or t.info.name
        modules = {c.callback.__module__ for c in t.registered_commands}
        assert modules == {f"fsadvisor.cli.{cli.COMMAND_MODULES[name]}"}, name


def test_the_root_group_loads_a_command_only_when_it_is_looked_up(tmp_path, monkeypatch):
    code = """
import sys
import typer.main
import fsadvisor.cli.app as cli
root = typer.main.get_command(cli.app)
assert isinstance(root, cli.LazyGroup)
assert root.list_commands(None) == list(cli.COMMAND_MODULES)
def commands():  # the modules of cli/ but the application itself
    return {m for m in sys.modules if m.startswith("fsadvisor.cli.") and m != "fsadvisor.cli.app"}
before = commands()
cmd = root.get_command(None, "validate")
after = commands()
print(sorted(before), sorted(after - before), cmd.name, root.get_command(None, "nope"))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # (cli/options.py, the options several commands share, comes with any of them)
    assert r.stdout.split() == [
        "[]",
        "['fsadvisor.cli.advice',",
        "'fsadvisor.cli.options']",
        "validate",
        "None",
    ]


def test_the_root_callback_keeps_a_lone_command_a_subcommand():
    # Typer runs a lone command as the whole program unless the app has a callback; the root
    # group may hold one module's single command (simulate) only because _root is one.
    assert cli.app.registered_callback is not None


def test_simulate_loads_only_its_command_module(tmp_path, monkeypatch):
    args = [
        "simulate",
        "--profile",
        "oltp",
        "--config",
        '{"filesystem": "xfs"}',
        "--requests",
        "1000",
        "--json",
    ]
    out = _run(args, tmp_path, monkeypatch)
    assert out.splitlines()[-1] == "LOADED ['fsadvisor.cli.options', 'fsadvisor.cli.simulate']", (
        out.splitlines()[-1]
    )
    # run as the `simulate` subcommand: its options parsed, its JSON printed
    assert '"requests": 1000' in out
    # the help of a lazily loaded command names the subcommand, as the full tree's does
    help_text = _run(["simulate", "--help"], tmp_path, monkeypatch)
    assert "Usage: fsadvisor simulate [OPTIONS]" in help_text


def test_recommend_loads_one_command_module_and_no_probe_code(tmp_path, monkeypatch):
    _run(["recommend", "--profile", "oltp"], tmp_path, monkeypatch)  # seeds, fits
    out = _run(["recommend", "--profile", "oltp", "--json"], tmp_path, monkeypatch)
    loaded = out.splitlines()[-1]
    # The tie note names the cells that would settle it and their time on this device, which
    # the probe's timing (probe/timing.py, pure) gives; the probe's planning (plan), its
    # machinery (run, cell, state, commands, measure) and every other command module stay
    # unloaded; cli/options.py, loaded too, is not a command module but the options several
    # share. The micro matrix's job files are read (and their reader, probe/micro.py,
    # loaded) only when something asks for the matrix.
    assert '"settle"' in out  # oltp's leaders are tied here: the tie note was made
    assert loaded == (
        "LOADED ['fsadvisor.cli.advice', 'fsadvisor.cli.options', 'fsadvisor.probe', "
        "'fsadvisor.probe.timing']"
    ), loaded


def test_other_commands_and_help_still_see_every_command(tmp_path, monkeypatch):
    out = _run(["--help"], tmp_path, monkeypatch)
    for name in ("recommend", "predict", "probe", "simulate", "profiles", "calibrate"):
        assert name in out
    out = _run(["profiles", "list"], tmp_path, monkeypatch)
    assert "oltp" in out


def test_importing_the_plan_does_not_read_the_micro_job_files():
    # recommend imports probe.plan for a tie note's per-cell time; the micro matrix is read
    # from runner/probe-micro/*.fio only when something asks for it.
    code = (
        "import sys\n"
        "from fsadvisor.probe import plan\n"
        "assert 'fsadvisor.probe.micro' not in sys.modules\n"
        "from fsadvisor.probe import micro\n"
        "print(micro.micro_jobs.cache_info().misses)\n"
        "names = [w.name for w in plan.MICRO]\n"
        "assert plan.MICRO_BY_NAME[names[0]] is plan.MICRO[0]\n"
        "assert [w.name for w in plan.micro_workloads()] == names\n"
        "print(micro.micro_jobs.cache_info().misses, len(names))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    before, after = r.stdout.split("\n")[:2]
    assert before == "0"
    assert after.split()[0] == "1" and int(after.split()[1]) > 0


def test_running_a_command_leaves_the_app_registrations_alone():
    # the root group loads and builds commands as they are looked up; it never edits what
    # the modules registered (an in-process caller may run any command next)
    cli.register_all()
    before = list(cli.app.registered_commands), list(cli.app.registered_groups)
    try:
        cli.main(["recommend", "--help"])
    except SystemExit as e:
        assert not e.code
    assert (cli.app.registered_commands, cli.app.registered_groups) == before


def test_only_the_process_command_line_freezes_the_collector_at_exit(monkeypatch):
    # main() for the process's own arguments hands its objects to gc.freeze as it ends (the
    # exit-time collections were ~16 ms of a `recommend`); an in-process caller's main([...])
    # leaves the collector alone, also when the command fails.
    import gc

    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    for argv in (["--version"], ["recommend", "--top", "0", "--profile", "oltp"]):
        try:
            cli.main(argv)
        except SystemExit:
            pass
    assert frozen == []
    monkeypatch.setattr("sys.argv", ["fsadvisor", "--version"])
    try:
        cli.main()
    except SystemExit as e:
        assert not e.code
    assert frozen == [True]


def test_a_command_line_run_still_prints_everything_and_keeps_its_exit_code(tmp_path, monkeypatch):
    out = _run(["recommend", "--profile", "oltp", "--json"], tmp_path, monkeypatch)
    import json

    doc = json.loads(out[: out.rindex("}") + 1])
    assert doc["recommendations"] and doc["candidates_considered"] > 1000
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "fsadvisor.db"))
    r = subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", "recommend", "--profile", "no-such-profile"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stderr.startswith("fsadvisor: no preset or profile")
