"""`ls fsadvisor/` reads as the architecture: README's "How it works" names every package and
top-level module, and every module of the layers this layout introduced, so the text and the
tree cannot drift apart unnoticed."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
SECTION = README.split("## How it works", 1)[1].split("\n## ", 1)[0]
PACKAGE = ROOT / "fsadvisor"


def _entries() -> list[str]:
    out = []
    for p in sorted(PACKAGE.iterdir()):
        if p.name.startswith("_") or p.name == "__pycache__":
            continue
        if p.is_dir() and (p / "__init__.py").exists():
            out.append(f"{p.name}/")
        elif p.suffix == ".py":
            out.append(p.name)
    return out


@pytest.mark.parametrize("entry", _entries())
def test_every_package_and_top_level_module_is_described(entry):
    assert f"`{entry}`" in SECTION


@pytest.mark.parametrize("package", ["service", "tools", "host", "probe", "predict"])
def test_every_module_of_the_layers_is_named(package):
    for mod in sorted((PACKAGE / package).glob("*.py")):
        if mod.stem != "__init__":
            assert f"`{mod.stem}`" in SECTION, f"{package}/{mod.name} is not in How it works"
