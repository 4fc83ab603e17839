"""Tables and prose that fit the terminal's width without cutting a figure.

A table whose row is wider than the terminal is folded: its columns are packed, in order,
onto as many lines as the width needs, the continuation lines indented, and the header
folded the same way, so each figure stays under its heading. Prose wraps between words
only (a number such as ``10,800–410,244`` has no space in it and is never split)."""

from __future__ import annotations

import re
import shutil
import textwrap
from dataclasses import dataclass

import typer  # loaded with the CLI application (cli/app.py) before any command module

# Where the terminal says nothing (a pipe, a log): the classic 80 columns.
DEFAULT_COLUMNS = 80
# Continuation lines of a folded row start this far in: clearly not a new row.
FOLD_INDENT = "    "


def columns() -> int:
    """The terminal's width, ``COLUMNS`` first."""
    return shutil.get_terminal_size((DEFAULT_COLUMNS, 24)).columns


@dataclass(frozen=True)
class Column:
    title: str
    align: str = ">"  # "<" for words, ">" for figures
    gap: int = 1  # spaces before the column (ignored for the first one on a line)


def _cell(text: str, col: Column, width: int, first: bool) -> str:
    pad = "" if first else " " * col.gap
    return pad + f"{text:{col.align}{width}}"


def _groups(cols: list[Column], widths: list[int], limit: int) -> list[list[int]]:
    """Column indexes per line: as many as fit ``limit`` each, at least one."""
    groups: list[list[int]] = []
    used = 0
    for i, (col, w) in enumerate(zip(cols, widths)):
        if groups and used + col.gap + w <= limit:
            groups[-1].append(i)
            used += col.gap + w
        else:
            used = (len(FOLD_INDENT) if groups else 0) + w
            groups.append([i])
    return groups


def table(cols: list[Column], rows: list[list[str]], width: int | None = None) -> list[str]:
    """The header and one line per row when a row fits ``width`` (the terminal's), else
    each row folded over as many lines as needed. Trailing blanks are dropped."""
    limit = width or columns()
    widths = [max([len(c.title)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    groups = _groups(cols, widths, limit)
    out = []
    for cells in [[c.title for c in cols]] + rows:
        for n, group in enumerate(groups):
            line = (FOLD_INDENT if n else "") + "".join(
                _cell(cells[i], cols[i], widths[i], i == group[0]) for i in group
            )
            out.append(line.rstrip())
    return out


# Stands in for a space inside a `command` while the prose is wrapped: a private-use
# character, which textwrap does not break at and no message contains.
_KEEP = "\ue000"


def _glue(span: re.Match[str]) -> str:
    return span.group(0).replace(" ", _KEEP)


def wrap(text: str, width: int | None = None, hang: int = 0) -> list[str]:
    """``text`` as lines of at most ``width`` (the terminal's) columns, broken between words
    only, continuation lines indented by ``hang`` spaces. A command in backticks is never
    broken: copied from the terminal, it must run as printed (a longer one overflows the
    width on its own line, as the mkfs lines do)."""
    lines = textwrap.wrap(
        re.sub(r"`[^`]+`", _glue, text),
        width=width or columns(),
        subsequent_indent=" " * hang,
        break_long_words=False,
        break_on_hyphens=False,
        drop_whitespace=True,
    ) or [""]
    return [line.replace(_KEEP, " ") for line in lines]


def say(text: str, hang: int = 0) -> None:
    """Print ``text`` wrapped to the terminal (``wrap``)."""
    for line in wrap(text, hang=hang):
        typer.echo(line)
