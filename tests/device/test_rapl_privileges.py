"""RAPL counters readable only by root, read by an unprivileged user (needs root to set up
and setpriv to drop privileges): the meter says "needs root" instead of failing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import fsadvisor
from fsadvisor.energy.rapl import ROOT_ONLY, RaplMeter

pytestmark = pytest.mark.device


def zone(root: Path, label: str, name: str, energy_uj: int) -> Path:
    """A powercap zone directory (as tests/unit/test_energy_rapl.py builds them)."""
    d = root / label
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    (d / "energy_uj").write_text(f"{energy_uj}\n")
    (d / "max_energy_range_uj").write_text("262143328850\n")  # a typical Intel package
    return d


def _python_for_nobody() -> str | None:
    """An interpreter user 65534 can execute (root's pyenv under /root is not)."""
    src = str(Path(fsadvisor.__file__).resolve().parent.parent)
    for exe in (sys.executable, "/usr/bin/python3"):
        p = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                exe,
                "-B",
                "-c",
                "import fsadvisor.energy.rapl",
            ],
            capture_output=True,
            env={"PYTHONPATH": src},
            cwd="/",
        )
        if p.returncode == 0:
            return exe
    return None


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="needs root and setpriv to drop privileges",
)
def test_real_root_only_file_as_unprivileged_user():
    """A 0600 root-owned energy_uj, read by uid 65534 through setpriv: "needs root"."""
    exe = _python_for_nobody()
    if exe is None:
        pytest.skip("no Python interpreter executable by uid 65534")
    top = Path(tempfile.mkdtemp(prefix="fsadvisor-rapl-", dir="/tmp"))
    try:
        top.chmod(0o755)
        d = zone(top, "intel-rapl:0", "package-0", 123456)
        for p in (d, d / "name", d / "max_energy_range_uj"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        (d / "energy_uj").chmod(0o600)
        assert os.stat(d / "energy_uj").st_uid == 0
        code = (
            "import json, sys; from fsadvisor.energy.rapl import RaplMeter; "
            "m = RaplMeter(root=sys.argv[1]); why = m.unavailable(); m.start(); r = m.stop(); "
            "print(json.dumps({'why': why, 'missing': r.missing, 'energy_j': r.energy_j}))"
        )
        src = str(Path(fsadvisor.__file__).resolve().parent.parent)
        p = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                exe,
                "-B",
                "-c",
                code,
                str(top),
            ],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": src},
            cwd="/",
        )
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        assert out == {"why": ROOT_ONLY, "missing": ROOT_ONLY, "energy_j": None}
        # The same tree read as root works: the refusal above came from the file mode.
        assert RaplMeter(root=str(top)).unavailable() is None
    finally:
        shutil.rmtree(top)
