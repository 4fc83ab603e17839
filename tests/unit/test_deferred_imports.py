"""An import inside a function says why it is there: a comment on its line or in the few
lines above it, where a reader of that function sees it (a module-wide note may state the
policy, and a site may point at it, but it excuses no site). The reasons are start-up (a
heavy or rarely needed module loads only when its function runs), an optional dependency, or
a cycle that cannot be broken; an import that defers nothing belongs at the top of its
module."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fsadvisor"
LOOK_BACK = 3  # lines above an import where its comment may stand (a group shares one)


def deferred_imports(tree: ast.AST) -> list[ast.stmt]:
    found: list[ast.stmt] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(child, True)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                if in_function:
                    found.append(child)
            else:
                walk(child, in_function)

    walk(tree, False)
    return found


def unexplained(source: str) -> list[int]:
    lines = source.splitlines()
    out = []
    for node in deferred_imports(ast.parse(source)):
        start = max(0, node.lineno - 1 - LOOK_BACK)
        near = lines[start : node.end_lineno]
        if not any("#" in line for line in near):
            out.append(node.lineno)
    return out


def test_every_deferred_import_in_fsadvisor_says_why():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 100  # the walk found the package
    bad = [
        f"{path.relative_to(PACKAGE.parent)}:{n}"
        for path in files
        for n in unexplained(path.read_text(encoding="utf-8"))
    ]
    assert bad == [], "deferred imports without a reason:\n" + "\n".join(bad)


def test_an_unexplained_deferred_import_is_found_and_a_commented_one_is_not():
    bare = "import os\n\n\ndef f():\n    x = 1\n    y = 2\n    z = 3\n    import json\n    return json\n"
    assert unexplained(bare) == [8]
    commented = bare.replace(
        "    import json\n", "    # json only here (start-up)\n    import json\n"
    )
    assert unexplained(commented) == []
    # a module-wide note alone does not explain the import: its function says nothing
    noted = "# Imported inside functions: start-up.\n" + bare
    assert unexplained(noted) == [9]
