"""Reading the scripts a dry run prints, whose comments fold over several lines."""

from __future__ import annotations


def header(lines: list[str]) -> str:
    """A dry run's first comment, folded over its first lines up to the one that ends it
    ("nothing below is executed"), as one line of text."""
    out = []
    for ln in lines:
        assert ln.startswith("# "), lines[:3]
        out.append(ln[2:])
        if ln.rstrip(".").endswith("executed"):
            return " ".join(out)
    raise AssertionError(lines[:3])
