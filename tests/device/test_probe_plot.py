"""probe --plot on a real (scratch loop device) probe: the summary ends with an ops/J bar
chart per workload, whiskers included, within 80 columns."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.device


def test_probe_plot_draws_the_measured_bars(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    env = dict(
        os.environ,
        FSADVISOR_DB=str(tmp_path / "p.db"),
        COLUMNS="80",
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsadvisor.cli",
            "probe",
            "--scratch",
            "512M",
            "--scratch-dir",
            str(tmp_path),
            "--fs",
            "xfs,ext4",
            "--schedulers",
            "none",
            "--workloads",
            "4k-randwrite-qd32",
            "--reps",
            "2",
            "--runtime",
            "1",
            "--cooldown",
            "0",
            "--no-baseline",
            "--no-variants",
            "--plot",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if p.returncode == 2 and "loop" in p.stderr and "free" in p.stderr:
        pytest.skip(p.stderr.strip())
    assert p.returncode == 0, p.stderr[-3000:]
    chart = p.stdout.split("4k-randwrite-qd32: ops/J")[1]
    rows = [ln for ln in chart.splitlines() if "┤" in ln]
    assert len(rows) == 2 and {r.split("┤")[0].split()[1] for r in rows} == {"xfs", "ext4"}
    assert all(r.split("┤")[0].strip().startswith("M ") for r in rows)
    assert all("│" in r.split("┤")[1] for r in rows)  # whisker caps
    assert max(len(ln) for ln in chart.splitlines()) <= 80
