"""The core must be usable without the front ends (harlequin's rule: the execution core is
reachable without the TUI). Checked in a fresh interpreter so nothing else pre-imports them."""

import subprocess
import sys

CORE = [
    "fsadvisor.domain",
    "fsadvisor.predict.fit",
    "fsadvisor.predict.predict",
    "fsadvisor.predict.rank",
    "fsadvisor.catalog",
    "fsadvisor.profiles",
    "fsadvisor.store",
    "fsadvisor.store.datasets",
    "fsadvisor.tools.fio",
    "fsadvisor.energy",
    "fsadvisor.host.device",
    "fsadvisor.probe",
    "fsadvisor.service.advice",
]


def test_core_imports_without_textual_or_typer():
    code = (
        "import sys, importlib\n"
        f"for m in {CORE!r}: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'typer', 'click', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core imported front-end packages: {out.stdout}"


def test_domain_imports_no_other_fsadvisor_module():
    # The nouns are the bottom of the layers: records.py builds on them, and domain.py does
    # not import records (nor hand out its names on first use), so there is no circle and
    # importing domain loads nothing else of fsadvisor.
    code = (
        "import sys\n"
        "import fsadvisor.domain as d\n"
        "print(sorted(m for m in sys.modules if m.startswith('fsadvisor.') and m != 'fsadvisor.domain'),\n"
        "      [n for n in ('EnergyReading', 'Observation', 'RunRecord') if hasattr(d, n)])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] []", out.stdout
