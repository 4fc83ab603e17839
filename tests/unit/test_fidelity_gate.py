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
    env = dict(
        os.environ,
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        FSADVISOR_DB=str(tmp_path / "unused.db"),
        PYTHONPATH=str(ROOT),
    )
    p = subprocess.run(
        [sys.executable, str(BENCH), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert p.returncode in (0, 1), p.stderr[-3000:]
    doc = json.loads(p.stdout)
    against = doc["against_recorded"]
    # The recorded figures are of these very matrices: otherwise nothing would be judged.
    assert against["judged"], (
        doc["scorecard"]["matrices"],
        json.loads(RECORDED.read_text())["matrices"],
    )
    assert p.returncode == 0 and not against["worse"], [
        ln for ln in against["lines"] if ln[0] in against["worse"]
    ]
    # The held-out device is the disk-backed loop, scored raw-only and in 5 draws of 20%.
    shares = sorted(r["share_of_cells_given"] for r in doc["reports"])
    assert shares == [0.0] + [0.2] * 5
    assert all(r["device"].startswith("loop:") for r in doc["reports"])


def test_the_held_out_device_is_judged_as_calibrate_would_leave_it_with_this_code(tmp_path):
    # The shipped store's calibration was fitted by the code of its day (before the knee's
    # shape was a parameter). Refitted from its own raw runs, it keeps the host figures that
    # calibration measured (the model prices every filesystem's CPU work with them) and gains
    # what this code fits from the same runs.
    sys.path.insert(0, str(BENCH.parent))
    try:
        import fidelity
    finally:
        sys.path.remove(str(BENCH.parent))
    from fsadvisor.service.calibration import refitted_calibration
    from fsadvisor.store import open_store

    store = open_store(fidelity.restore_store(str(SHIPPED), str(tmp_path)))
    device = next(
        d for d in {r["device_identity"] for r in store.runs(status="ok")} if d.startswith("loop:")
    )
    stored, now = store.device_params(device), refitted_calibration(store, device)
    assert "knee_power" not in stored.details["measured"]
    assert "knee_power" in now.details["measured"]
    for k in ("host_cpu_factor", "host_cores"):
        assert k in now.details["measured"] and now.values[k] == stored.values[k]
    assert now.values["read_latency_us"] == stored.values["read_latency_us"]
    assert sorted(now.details["run_ids"]) == sorted(stored.details["run_ids"])
    assert refitted_calibration(store, "loop:never calibrated") is None


def test_a_repeat_matrix_scored_on_itself_is_perfect_and_on_the_other_is_not(tmp_path):
    # fidelity_repeat.py scores one measured matrix's means as predictions of another's with
    # fidelity's own rules; on itself every figure must be perfect (a check of the scoring),
    # and the two shipped disk-loop matrices must differ (else the ceiling says nothing).
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import fidelity_repeat
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    a = fidelity_repeat._cells(str(SHIPPED), str(tmp_path / "a"))
    b = fidelity_repeat._cells(
        str(ROOT / "benchmarks" / "data" / "fidelity-diskloop-2.sql.gz"), str(tmp_path / "b")
    )
    same = fidelity_repeat.score(a, a)
    assert same["cells"] == len(a) > 50
    assert same["median"] == 0 and same["pairs"] == 1.0 and same["regret"] == 0
    other = fidelity_repeat.score(a, b)
    assert other["cells"] > 50 and other["median"] > 0.01 and other["regret"] > 0


def test_the_repeat_benchmark_names_configurations_as_recommend_prints_them(tmp_path):
    # fidelity_repeat.py --model lists the cells the model gets wrong on both matrices; each
    # configuration reads as recommend prints it (FsConfig.label()), not as the store's key
    # ("btrfs [] (nodiscard) none"), and the largest shared error comes first.
    import re

    from fsadvisor.predict import validate

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import fidelity_repeat
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    cells = fidelity_repeat._cells(str(SHIPPED), str(tmp_path))
    configs = {c.config.key(): c.config for c in cells}
    assert len(configs) >= 5 and any(c.mkfs for c in configs.values())  # ext4 journal=false
    over = fidelity_repeat.SYSTEMATIC
    ea = {validate._cell_key(c): (over + 0.01 * (i + 1)) for i, c in enumerate(cells)}
    eb = dict(ea)
    lines = fidelity_repeat.systematic_lines(ea, eb, {k: c.label() for k, c in configs.items()})
    assert len(lines) == len(cells)
    shown = {ln.rpartition(": ")[2] for ln in lines}
    assert shown == {c.label() for c in configs.values()}
    for ln in lines:
        assert not re.search(r"\[[^\]]*\]|\([^)]*\)", ln), ln  # no "[...]" or "(...)" repr
    first = max(cells, key=lambda c: ea[validate._cell_key(c)])
    assert lines[0].endswith(": " + first.config.label())
