"""Every command has help text and is documented in the README (sqlite-utils' test_docs idea),
and the README's quick start names the commands CI runs."""

from pathlib import Path

import typer.main
from typer.testing import CliRunner

import fsadvisor.cli as cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _commands():
    cli._register()
    group = typer.main.get_command(cli.app)
    for name, cmd in group.commands.items():
        subs = getattr(cmd, "commands", None)
        if subs:
            for sub_name, sub in subs.items():
                yield f"{name} {sub_name}", sub
        else:
            yield name, cmd


def test_every_command_has_help_and_is_in_the_readme():
    names = []
    for name, cmd in _commands():
        names.append(name)
        assert (cmd.help or "").strip(), f"fsadvisor {name} has no help text"
        assert f"fsadvisor {name}" in README, f"`fsadvisor {name}` is not documented in README.md"
        r = CliRunner().invoke(cli.app, [*name.split(), "--help"])
        assert r.exit_code == 0, r.output
    assert {"recommend", "predict", "validate", "profiles list", "db info"} <= set(names)


def test_quick_start_and_ci_run_the_same_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m pytest -q" in README and "python3 -m pytest -q" in ci
    assert "fsadvisor recommend --profile oltp" in README
