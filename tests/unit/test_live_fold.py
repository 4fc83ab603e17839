"""The live table's options column folds at a width, losing nothing and keeping "-o" with
the option it introduces (a line ending in "-o" reads as a cut-off row)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fsadvisor.tui import present

word = st.from_regex(r"[a-z0-9=:]{1,14}", fullmatch=True)
mkfs = st.lists(word, max_size=3)
mount = st.lists(word, max_size=4)


def unfold(folded: str) -> str:
    # a fold at a space dropped the space; a fold after a comma dropped nothing
    return "".join(
        line if i == 0 or prev.endswith(",") else " " + line
        for i, (prev, line) in enumerate(zip([""] + folded.split("\n"), folded.split("\n")))
    )


@given(mkfs, mount, st.integers(min_value=8, max_value=60))
def test_folding_loses_nothing_and_keeps_minus_o_with_its_option(made, opts, width):
    text = " ".join(made + ([f"-o {','.join(opts)}"] if opts else [])) or "defaults"
    folded = present.fold_options(text, width)
    assert unfold(folded) == text
    lines = folded.split("\n")
    assert all(not line.endswith("-o") for line in lines)
    # a line is over the width only when it is one unbreakable piece
    for line in lines:
        if len(line) > width:
            assert line.count(" ") <= (1 if line.startswith("-o ") else 0)
            assert line.rstrip(",").count(",") == 0


def test_the_start_screens_fifth_row_at_80_columns():
    folded = present.fold_options("agcount=4 -o logbufs=8,logbsize=256k", 21)
    assert folded.split("\n") == ["agcount=4", "-o logbufs=8,", "logbsize=256k"]
    assert present.fold_options("agcount=4 -o logbufs=8,logbsize=256k", 46).count("\n") == 0
