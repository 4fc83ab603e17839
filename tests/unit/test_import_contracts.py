"""The import contracts in pyproject.toml ([tool.importlinter]: the layers from the front ends
down to the nouns, the front ends' reach, predict/'s own layers) hold: lint-imports, run as
this interpreter's import-linter (the lock's, requirements/test.txt), reports none broken.
Each contract is also shown to fail on a copy of the package with one import that breaks it,
so a contract that matches nothing (a misspelt module name) cannot pass unnoticed."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

if importlib.util.find_spec("importlinter") is None:
    pytest.skip(
        "import-linter is not installed here (it is in requirements/test.txt)",
        allow_module_level=True,
    )


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports on the package under ``root`` with ``root``'s pyproject.toml; a fresh
    interpreter whose path starts at ``root``, so that tree is the one analysed (not an
    installed fsadvisor), and no cache written into it."""
    code = (
        "import sys\nfrom importlinter.cli import lint_imports\n"
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, "
        "no_logo=True))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_contracts_are_kept():
    r = lint_imports(ROOT)
    assert r.returncode == 0, f"lint-imports:\n{r.stdout}{r.stderr}"
    assert "0 broken" in r.stdout


@pytest.mark.parametrize(
    "module, line, broken",
    [
        # a noun reaching up to the service
        (
            "domain.py",
            "from fsadvisor.service import advice",
            "fsadvisor.domain is not allowed to import fsadvisor.service",
        ),
        # a front end reaching past the service into the store
        (
            "cli/db.py",
            "from fsadvisor.store import open_store",
            "fsadvisor.cli is not allowed to import fsadvisor.store",
        ),
        # predict's lowest layer importing its highest
        (
            "predict/spec.py",
            "from fsadvisor.predict import rank",
            "fsadvisor.predict.spec is not allowed to import fsadvisor.predict.rank",
        ),
        # the model reaching the machine (below it in the layers, but not its business)
        (
            "predict/fit.py",
            "from fsadvisor.host import device",
            "fsadvisor.predict is not allowed to import fsadvisor.host",
        ),
    ],
)
def test_a_broken_contract_fails(tmp_path, module, line, broken):
    shutil.copytree(
        ROOT / "fsadvisor",
        tmp_path / "fsadvisor",
        ignore=shutil.ignore_patterns("__pycache__", "_data"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with open(tmp_path / "fsadvisor" / module, "a") as f:
        f.write(f"\n\ndef _broken():\n    {line}\n")
    r = lint_imports(tmp_path)
    assert r.returncode != 0, r.stdout + r.stderr
    assert broken in r.stdout, r.stdout


def test_the_service_use_cases_depend_one_way():
    # service/ is use cases (advice, probing, adaptive, calibration, apply, ...): one may
    # build on another, never both ways round -- an import circle there is how private
    # helpers leaked between modules before. grimp (import-linter's graph) sees in-function
    # imports too.
    import grimp

    g = grimp.build_graph("fsadvisor", cache_dir=None)
    mods = sorted(m for m in g.modules if m.startswith("fsadvisor.service."))
    both_ways = [
        (a, b)
        for i, a in enumerate(mods)
        for b in mods[i + 1 :]
        if g.chain_exists(a, b) and g.chain_exists(b, a)
    ]
    assert not both_ways, both_ways


def test_no_package_has_modules_that_import_each_other():
    # The service's rule (above) inside every other package: a module that needs another
    # never serves it too (host/spec.py parses a --device spec and hands a path to its
    # caller's inspector; host/device.py inspects and imports spec.py). A deferred import
    # hides such a circle from a reader, not from grimp.
    import grimp

    g = grimp.build_graph("fsadvisor", cache_dir=None)
    packages = sorted({m.split(".")[1] for m in g.modules if m.count(".") >= 2} - {"service"})
    assert {"host", "predict", "store", "probe"} <= set(packages)
    circles = []
    for pkg in packages:
        mods = sorted(m for m in g.modules if m.startswith(f"fsadvisor.{pkg}."))
        circles += [
            (a, b)
            for i, a in enumerate(mods)
            for b in mods[i + 1 :]
            if g.chain_exists(a, b) and g.chain_exists(b, a)
        ]
    assert not circles, circles
