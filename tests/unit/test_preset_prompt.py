"""The preset list's names, broken where a person would break them when the list is
narrower than a name (80 columns: some twenty cells for names of up to 31)."""

from __future__ import annotations

import io

from rich.console import Console

from fsadvisor.tui.present import PresetPrompt, name_lines


def test_a_name_breaks_after_a_hyphen_never_inside_a_piece():
    assert name_lines("fs-overhead-randwrite-4k-fsync1", 20) == [
        "fs-overhead-",
        "randwrite-4k-fsync1",
    ]
    assert name_lines("filebench-fileserver-003", 20) == ["filebench-", "fileserver-003"]
    assert name_lines("fs-overhead-randwrite-4k-fsync1", 36) == ["fs-overhead-randwrite-4k-fsync1"]
    assert name_lines("my own profile", 8) == ["my own", "profile"]


def test_a_piece_wider_than_the_list_is_folded_since_nothing_else_shows_it():
    assert name_lines("a-abcdefghij-b", 6) == ["a-", "abcdef", "ghij-b"]
    assert "".join(name_lines("x" * 25, 10)) == "x" * 25


def test_the_prompt_draws_the_broken_name_over_one_cut_description():
    prompt = PresetPrompt(
        "fs-overhead-metadata-create", "Create 50,000 files of 4 KB in one directory", 36
    )
    console = Console(width=20, record=True, color_system=None, file=io.StringIO())
    console.print(prompt)
    lines = console.export_text().splitlines()
    assert lines[:2] == ["fs-overhead-", "metadata-create"]
    assert " ".join(" ".join(lines[2:]).split()) == "Create 50,000 files of 4 KB in one…"
    assert prompt.plain == "fs-overhead-metadata-create\nCreate 50,000 files of 4 KB in one…"
