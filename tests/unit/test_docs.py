"""Every command has help text and is documented in the README (sqlite-utils' test_docs idea),
and the README's quick start names the commands CI runs."""

from pathlib import Path

import typer.main
from typer.testing import CliRunner

import fsadvisor.cli.app as cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _commands():
    cli.register_all()
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


def _quick_start_commands() -> list[str]:
    """The command lines of the README's quick-start code block (comments dropped)."""
    block = README.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]


def test_quick_start_is_two_commands_that_create_and_use_a_venv():
    # Debian's system Python is externally managed (PEP 668): a bare `pip install` fails
    # there, so each quick-start command must create a venv and run from it.
    cmds = _quick_start_commands()
    assert len(cmds) == 2, cmds
    for cmd in cmds:
        assert "python3 -m venv .venv" in cmd, cmd
        steps = [s.strip() for s in cmd.split("&&")]
        assert not any(s.startswith(("pip ", "python3 -m pip")) for s in steps), cmd
        assert any(s.startswith(".venv/bin/pip install") for s in steps), cmd
        # the exact versions of the lock, by hash; fsadvisor itself without resolving again
        pips = [s for s in steps if s.startswith(".venv/bin/pip install")]
        assert pips[0].startswith(".venv/bin/pip install --require-hashes -r requirements/")
        assert pips[-1] == ".venv/bin/pip install --no-deps --no-build-isolation -e .", cmd
    assert "-r requirements/main.txt" in cmds[0] and "-r requirements/test.txt" in cmds[1]
    assert cmds[0].endswith(".venv/bin/fsadvisor recommend --profile oltp")
    # no -q: pytest prints its progress, so a long run shows where it is; the device tests
    # alone, in one process, after the rest
    assert cmds[1].endswith(
        '.venv/bin/python3 -m pytest -m "not device" && .venv/bin/python3 -m pytest -m device -n 0'
    )


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    readme_steps = [s.strip() for s in _quick_start_commands()[1].split("&&")]
    venv_steps = [s for s in readme_steps if not s.startswith("apt-get")]
    ci_line = next(ln for ln in ci.splitlines() if "pytest" in ln and not ln.startswith("#"))
    # CI keeps the suite's exit status for the end (the non-gating check runs after it) ...
    assert ci_line.endswith(" || rc=$?") and ci.rstrip().endswith('exit "$rc"')
    ci_line = ci_line.removesuffix(" || rc=$?")
    # ... and adds only quiet flags to pip; the steps are otherwise the README's, in order.
    ci_steps = [
        s.strip().replace(" -q --disable-pip-version-check", "") for s in ci_line.split("&&")
    ]
    assert ci_steps == venv_steps
    # Every apt package the README installs is one CI installs when missing.
    apt = next(s for s in readme_steps if s.startswith("apt-get install"))
    for pkg in apt.split()[3:]:
        assert pkg in ci, pkg
