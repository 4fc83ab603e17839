"""predict/ is layered (predict/__init__.py): what the model is (spec, mechanisms, settings)
-> features -> fit -> predict -> validation, ranking and the simulator. Every import, at the
top of a module or inside a function, goes to a lower layer: no import loop, and no facade
re-exporting another module's names (no star import anywhere in fsadvisor)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "fsadvisor"

LAYERS = {
    # what the model is made of: declared effects, mechanisms, device figures, pure helpers
    "design": 0,
    "fit_version": 0,
    "spec": 0,
    "mechanisms": 0,
    "ceilings": 0,
    "cost": 0,
    "scorecard": 0,
    "settings": 1,
    "confidence": 1,
    "datasheet": 1,
    "device_fit": 1,
    "features": 2,
    "fit": 3,
    "predict": 4,
    "validate": 5,
    "mechanism_fit": 5,
    "crossval": 6,
    "rank": 6,
    "sim": 6,
    "adaptive": 6,
}
# predict/ is pure computation: it never reaches up into the front ends, the service or the
# machine (probe/host).
FORBIDDEN = (
    "fsadvisor.service",
    "fsadvisor.cli",
    "fsadvisor.tui",
    "fsadvisor.probe",
    "fsadvisor.host",
)


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "fsadvisor.predict":
                out += [f"fsadvisor.predict.{a.name}" for a in node.names]
            else:
                out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def test_every_predict_module_imports_only_lower_layers():
    modules = {p.stem: p for p in (PKG / "predict").glob("*.py") if p.stem != "__init__"}
    assert set(modules) == set(LAYERS), "declare the new module's layer here"
    for name, path in modules.items():
        for imp in _imports(path):
            assert not imp.startswith(FORBIDDEN), (name, imp)
            if imp.startswith("fsadvisor.predict."):
                dep = imp.split(".")[2]
                assert LAYERS[dep] < LAYERS[name], (
                    f"{name} (layer {LAYERS[name]}) imports {dep} (layer {LAYERS[dep]})"
                )


def test_no_star_imports():
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert all(a.name != "*" for a in node.names), path


def test_no_module_reaches_into_another_modules_private_names():
    # A name used by another module is part of its module's interface: it is named as such
    # (no leading underscore), so that what a module may change freely is visible.
    import re

    bad = []
    for path in PKG.rglob("*.py"):
        tree = ast.parse(path.read_text())
        own = path.relative_to(PKG.parent).with_suffix("").as_posix().replace("/", ".")
        aliases = {}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("fsadvisor")
                and node.module != own
            ):
                for a in node.names:
                    if re.match(r"_[^_]", a.name):
                        bad.append(f"{path}: from {node.module} import {a.name}")
                    aliases[a.asname or a.name] = node.module
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("fsadvisor"):
                        aliases[a.asname or a.name.split(".")[0]] = a.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and re.match(r"_[^_]", node.attr)
            ):
                bad.append(f"{path}: {node.value.id}.{node.attr}")
    assert not bad, "\n".join(bad)
