"""The fsadvisor(1) man page, generated from the commands themselves: every command and
subcommand with its usage, description and options as ``--help`` gives them, so the page
cannot drift from the program. ``python -m fsadvisor.cli.manpage`` prints it; the package
ships the generated copy (fsadvisor/man/fsadvisor.1, installed as share/man/man1/fsadvisor.1)
and tests/unit/test_manpage.py checks that copy against this generator and that man(1)
renders it without a warning."""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path
from fsadvisor.cli.app import command_tree, register_all

PAGE = Path(__file__).resolve().parents[1] / "man" / "fsadvisor.1"


def _esc(text: str) -> str:
    """Text as roff reads it literally: backslashes doubled, a leading dot or quote kept
    from being a request, hyphens in options as real minus signs."""
    out = []
    for line in text.replace("\\", "\\e").splitlines():
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line.replace("-", "\\-"))
    return "\n".join(out)


def _commands(group, ctx, prefix: str = ""):
    """(full name, click command, context) for every leaf command, in the listing's order."""
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or getattr(cmd, "hidden", False):
            continue
        sub = type(ctx)(cmd, info_name=name, parent=ctx)
        full = f"{prefix}{name}"
        if hasattr(cmd, "list_commands"):
            yield from _commands(cmd, sub, full + " ")
        else:
            yield full, cmd, sub


def render() -> str:

    __version__ = version("fsadvisor")  # as --version prints it

    register_all()
    root = command_tree()
    ctx = root.context_class(root, info_name="fsadvisor")  # typer's own (vendored) Click
    lines = [
        f'.TH FSADVISOR 1 "" "fsadvisor {__version__}" "User Commands"',
        ".SH NAME",
        "fsadvisor \\- choose a filesystem configuration for an SSD by operations per joule",
        ".SH SYNOPSIS",
        ".B fsadvisor",
        ".I COMMAND",
        "[\\fIOPTIONS\\fR]",
        ".SH DESCRIPTION",
        _esc((root.help or "").strip()),
        ".PP",
        _esc(
            "Two ways, both real: probe formats a spare device with each candidate "
            "configuration, runs fio and application benchmarks, and stores every run with "
            "its provenance; predict, recommend and the rest answer from a model calibrated "
            "on stored measurements. Every command takes -h/--help."
        ),
        ".SH COMMANDS",
    ]
    for full, cmd, sub in _commands(root, ctx):
        usage = " ".join(cmd.collect_usage_pieces(sub))
        lines += [
            ".SS " + _esc(f"fsadvisor {full}"),
            ".B " + _esc(f"fsadvisor {full}"),
            _esc(usage),
            ".PP",
            _esc(" ".join((cmd.help or "").split())),
        ]
        for param in cmd.get_params(sub):
            rec = param.get_help_record(sub)
            if not rec or getattr(param, "hidden", False):
                continue
            opts, text = rec
            lines += [".TP", ".B " + _esc(opts), _esc(" ".join(text.split()) or " ")]
    lines += [
        ".SH ENVIRONMENT",
        ".TP",
        ".B FSADVISOR_DB",
        _esc(
            "The results store (SQLite); default $XDG_DATA_HOME/fsadvisor/fsadvisor.db. Its "
            "probe state file lives beside it (<db>.probe-state.json)."
        ),
        ".SH EXIT STATUS",
        ".TP",
        ".B 0",
        "Success.",
        ".TP",
        ".B 2",
        _esc("Refused or bad input: one line on standard error says why."),
        ".TP",
        ".B 130",
        _esc("Interrupted (Ctrl-C); 143 for SIGTERM. A probe cleans up first."),
        ".SH SEE ALSO",
        ".BR fio (1),",
        ".BR mkfs.xfs (8),",
        ".BR mkfs.ext4 (8),",
        ".BR mkfs.btrfs (8),",
        ".BR xfs (5),",
        ".BR ext4 (5)",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        PAGE.parent.mkdir(exist_ok=True)
        PAGE.write_text(render())
        print(f"wrote {PAGE}")
    else:
        sys.stdout.write(render())
