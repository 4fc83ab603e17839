"""Lint, format-check and type-check the package as part of the suite: `ruff check fsadvisor`,
`ruff format --check fsadvisor`, `ruff format --check tests` and `mypy` (configured in
pyproject.toml) report nothing.
They run as the installed modules of this interpreter, so the versions are the lock's
(requirements/test.txt); without them the test is skipped, saying which tool is missing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(module: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed here (it is in requirements/test.txt)")
    # From the project root, so each tool finds its settings in pyproject.toml.
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_ruff_finds_nothing():
    r = _run("ruff", "check", "--no-fix", "--output-format", "concise", "fsadvisor", timeout=120)
    assert r.returncode == 0, f"ruff check fsadvisor:\n{r.stdout}{r.stderr}"


def test_ruff_format_would_change_nothing():
    # The layout is the formatter's: a change that is not formatted shows here, with the diff.
    r = _run("ruff", "format", "--check", "--diff", "fsadvisor", timeout=120)
    assert r.returncode == 0, f"ruff format --check fsadvisor:\n{r.stdout}{r.stderr}"


def test_ruff_format_would_change_nothing_in_the_tests():
    # The tests too: their layout is the formatter's, so a diff of a test is its change only.
    r = _run("ruff", "format", "--check", "--diff", "tests", timeout=120)
    assert r.returncode == 0, f"ruff format --check tests:\n{r.stdout}{r.stderr}"


def test_mypy_finds_nothing():
    # No arguments: pyproject.toml's [tool.mypy] names the files. A cold run (no .mypy_cache)
    # of the whole package is the slow case.
    r = _run("mypy", timeout=900)
    assert r.returncode == 0, f"mypy:\n{r.stdout}{r.stderr}"
