"""The front ends stay thin: every module under fsadvisor/cli and fsadvisor/tui imports from
this project only fsadvisor.service (the one API both run through), fsadvisor.domain (the
nouns), fsadvisor.errors and fsadvisor.limits (the numeric options' ranges, which each option
checks and shows in its help as it is parsed), besides their own package. Anything else they
need the service re-exports. Checked on the source (the AST), so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "fsadvisor"
ALLOWED = ("fsadvisor.service", "fsadvisor.domain", "fsadvisor.errors", "fsadvisor.limits")
# The CLI's `tui` command starts the other front end; the TUI never imports the CLI.
OWN = {"cli": ("fsadvisor.cli", "fsadvisor.tui"), "tui": ("fsadvisor.tui",)}


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def project_imports(source: str, module: str) -> list[tuple[int, str]]:
    """(line, imported module) for every import of a fsadvisor module in ``source``;
    relative imports are resolved against ``module`` (dotted name of the file)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: -node.level]
                base = ".".join(parts + ([base] if base else []))
            if base == "fsadvisor":  # `from fsadvisor import catalog` imports fsadvisor.catalog
                out += [(node.lineno, f"fsadvisor.{a.name}") for a in node.names]
            else:
                out.append((node.lineno, base))
    return [(n, name) for n, name in out if name.split(".")[0] == "fsadvisor"]


def violations(source: str, module: str, front_end: str) -> list[str]:
    allowed = ALLOWED + OWN[front_end]
    return [
        f"{module}:{n} imports {name}"
        for n, name in project_imports(source, module)
        if not _within(name, allowed)
    ]


def _modules(front_end: str):
    for path in sorted((PACKAGE / front_end).rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        yield path, ".".join(rel.parts)


@pytest.mark.parametrize("front_end", ["cli", "tui"])
def test_front_ends_import_only_service_domain_and_errors(front_end):
    found = list(_modules(front_end))
    assert len(found) > 3  # the walk found the package
    bad = [v for path, mod in found for v in violations(path.read_text(), mod, front_end)]
    assert bad == []


@pytest.mark.parametrize(
    "source",
    [
        "from fsadvisor.predict.rank import Recommendation",
        "import fsadvisor.catalog",
        "from fsadvisor import catalog",
        "def f():\n    from fsadvisor.predict import sim\n",
        "from ..profiles import profile_to_toml",
    ],
)
def test_the_rule_catches_core_imports(source):
    assert violations(source, "fsadvisor.cli.x", "cli")


@pytest.mark.parametrize(
    "source",
    [
        "from fsadvisor.service import advice",
        "from fsadvisor import service, domain",
        "from fsadvisor.domain import Profile",
        "from fsadvisor.errors import FsAdvisorError",
        "from fsadvisor.tui.panes import WorkerFailed",
        "import textual\nfrom rich.text import Text",
    ],
)
def test_the_rule_lets_the_allowed_through(source):
    assert violations(source, "fsadvisor.tui.x", "tui") == []
