"""The accuracy gate on the held-out device class: benchmarks/fidelity.py, run on the shipped
dump of the disk-backed loop matrix (benchmarks/data/fidelity-diskloop.sql.gz, which no fit
trains on), exits 1 when a figure is worse than benchmarks/results/fidelity-scorecard.json
records by more than predict/scorecard.py's tolerance for its kind. The analysis of stored
runs is deterministic, so the same matrices are judged, not re-measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "fidelity.py"
SHIPPED = ROOT / "benchmarks" / "data" / "fidelity-diskloop.sql.gz"
RECORDED = ROOT / "benchmarks" / "results" / "fidelity-scorecard.json"


def test_the_shipped_held_out_matrix_is_the_recorded_one_and_no_figure_got_worse(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"),
               FSADVISOR_DB=str(tmp_path / "unused.db"), PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, str(BENCH), "--json"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=600)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    doc = json.loads(p.stdout)
    against = doc["against_recorded"]
    # The recorded figures are of these very matrices: otherwise nothing would be judged.
    assert against["judged"], (doc["scorecard"]["matrices"],
                               json.loads(RECORDED.read_text())["matrices"])
    assert p.returncode == 0 and not against["worse"], [
        ln for ln in against["lines"] if ln[0] in against["worse"]]
    # The held-out device is the disk-backed loop, scored raw-only and in 5 draws of 20%.
    shares = sorted(r["share_of_cells_given"] for r in doc["reports"])
    assert shares == [0.0] + [0.2] * 5
    assert all(r["device"].startswith("loop:") for r in doc["reports"])
