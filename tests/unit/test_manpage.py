"""fsadvisor(1) is generated from the commands (fsadvisor/cli/manpage.py): the shipped copy
is what the generator makes of today's commands, man(1) renders it without a warning, and
every command is in it; shell completion is offered and completes commands and presets."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from fsadvisor.cli import manpage


def test_the_shipped_page_is_the_generated_one():
    assert manpage.PAGE.read_text() == manpage.render(), (
        "regenerate: python -m fsadvisor.cli.manpage --write"
    )


def test_every_command_is_on_the_page():
    import typer

    from fsadvisor.cli.app import register_all, app

    register_all()
    root = typer.main.get_command(app)
    page = manpage.PAGE.read_text()
    for name in root.list_commands(None):
        assert f".SS fsadvisor {name}" in page, name


@pytest.mark.skipif(shutil.which("man") is None, reason="man(1) not installed")
def test_man_renders_it_without_a_warning():
    p = subprocess.run(
        ["man", "--warnings", "-l", str(manpage.PAGE)],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, MANWIDTH="100", LC_ALL="C.UTF-8"),
    )
    assert p.returncode == 0 and p.stderr.strip() == "", p.stderr[:2000]
    assert "fsadvisor probe" in p.stdout and "FSADVISOR_DB" in p.stdout


def _complete(words: str) -> list[str]:
    env = dict(
        os.environ,
        _FSADVISOR_COMPLETE="complete_bash",
        COMP_WORDS=words,
        COMP_CWORD=str(len(words.split()) - 1),
    )
    p = subprocess.run(
        [sys.executable, "-c", "from fsadvisor.cli.entry import main; main()"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def test_shell_completion_is_offered_and_completes_commands_options_and_presets():
    p = subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "--install-completion" in p.stdout and "--show-completion" in p.stdout
    assert "..." not in p.stdout.split("Commands:")[1]  # descriptions whole, never cut
    assert _complete("fsadvisor rec") == ["recommend"]
    assert {"--fs", "--force"} <= set(_complete("fsadvisor probe --f"))
    assert _complete("fsadvisor recommend --profile olt") == ["oltp"]


def test_every_option_names_its_value_the_same_way_everywhere():
    """No typer default metavar (<str>, <int>, <float>) in any --help, and one option name
    has one metavar on every command (fsadvisor.cli.METAVARS)."""
    from fsadvisor.cli.app import register_all, command_tree

    register_all()
    seen: dict[str, set[str]] = {}

    def walk(cmd) -> None:
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)
        for p in getattr(cmd, "params", ()):
            if p.param_type_name == "option" and not p.is_flag:
                assert p.metavar and "<" not in p.metavar, (cmd.name, p.opts, p.metavar)
                seen.setdefault(max(p.opts, key=len), set()).add(p.metavar)

    walk(command_tree())
    # --out is a directory for apply (several files) and a file for profiles capture
    assert {k: v for k, v in seen.items() if len(v) > 1} == {"--out": {"DIR", "FILE"}}


def test_every_argument_names_its_value_in_capitals():
    """An argument's name in the usage line is a metavar like an option's value (DEVICE,
    ITEM..., NAME), not the Python parameter's name in lower case ("[device]", "{items}")."""
    from fsadvisor.cli.app import register_all, command_tree

    register_all()
    found: list[tuple[str, str | None]] = []

    def walk(cmd) -> None:
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)
        for p in getattr(cmd, "params", ()):
            if p.param_type_name == "argument":
                found.append((cmd.name, p.metavar))

    walk(command_tree())
    assert found
    # the name in capitals (a file suffix may follow it: OTHER.db...)
    assert all(m and m.split(".")[0] == m.split(".")[0].upper() for _, m in found), found
