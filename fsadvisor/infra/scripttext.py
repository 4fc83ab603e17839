"""Comments in the scripts and files fsadvisor writes (a probe's dry run, apply's udev rule
and Ansible tasks) within 80 columns: a comment is broken between words and continues as
another comment line. A command is never broken: a wrapped command does not run as shown,
a long one does, so a command's note moves to comment lines above it instead."""

from __future__ import annotations

import re
import textwrap

# A file is read in an editor or a pager of any width: the classic terminal's.
COLUMNS = 80
# The width of text a program reads (a dry run's --json): no comment folds, a note stays
# beside its command, so a line's content does not depend on its layout.
UNFOLDED = 1 << 30

# A comment line's lead: its indentation and "#"s with the blanks after them, then a list
# marker ("1. ") whose text the continuation lines hang under.
_LEAD = re.compile(r"(\s*#+ *)(\d+\. )?")


def comment(text: str, lead: str = "# ", hang: str = "", width: int = COLUMNS) -> list[str]:
    """``text`` as comment lines of at most ``width`` columns, broken between words only (a
    word longer than a line stays whole), each starting with ``lead``, the continuations
    with ``lead`` and ``hang``."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=lead,
        subsequent_indent=lead + hang,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [lead.rstrip()]


def fold_comment(line: str, width: int = COLUMNS) -> list[str]:
    """A comment line (``#`` first, after any indentation) within ``width``: its
    continuations start as it does ("#   " stays "#   ") and hang under a list marker's
    text."""
    if len(line) <= width:
        return [line]
    m = _LEAD.match(line)
    if m is None or "#" not in m.group(1):
        return [line]
    lead = m.group(1)
    marker = m.group(2) or ""
    return comment(marker + line[len(lead) + len(marker) :], lead, " " * len(marker), width)


def fold_comments(lines: list[str], width: int = COLUMNS) -> list[str]:
    """Every comment line of ``lines`` folded (fold_comment), the other lines as they are:
    for text whose only commands are outside its comments."""
    return [out for line in lines for out in fold_comment(line, width)]


def with_note(command: str, note: str, width: int = COLUMNS) -> list[str]:
    """``command`` followed by ``  # note`` when that fits ``width``, else the note as
    comment lines above the command, which stays one line whatever its length."""
    one = f"{command}  # {note}"
    return [one] if len(one) <= width else comment(note, width=width) + [command]
