"""benchmarks/adaptive_vs_full.py prints its rows for people: a configuration as recommend
prints it (FsConfig.label), never its stored key ("ext4 [] () none"); the rows' JSON keeps
the keys. The benchmark itself needs devices: only its printing runs here."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import adaptive_vs_full as B  # noqa: E402

from fsadvisor import catalog  # noqa: E402
from fsadvisor.domain import FsConfig  # noqa: E402

TIB = 1 << 40


def test_every_catalog_configuration_key_reads_as_its_label():
    """Each configuration recommend can name (every generated one, each scheduler, AG
    counts and switches included) reads back from its key to its own label."""
    configs = catalog.candidates(TIB, ncpus=8)
    assert any(c.mkfs for c in configs) and any(c.ag_count for c in configs)
    assert any(isinstance(v, bool) for c in configs for _, v in c.mkfs)
    for c in configs:
        assert B.shown(c.key()) == c.label(), c.key()
    assert B.shown("raw-device mq-deadline") == "raw device (no filesystem), sched mq-deadline"


def _row(full: str, adaptive: str) -> dict:
    return {
        "class": "zram",
        "profile": "fs-overhead-randwrite-4k-fsync1",
        "full_cells": 36,
        "full_configs": 12,
        "full_device_s": 1200.0,
        "full_overhead_s": 1.5,
        "full_estimate_s": 1100.0,
        "full_winner": full,
        "adaptive_winner": adaptive,
        "adaptive_runs": 9,
        "stated_confidence": 0.91,
        "stop_reason": "confident",
        "regret": 0.012,
        "full_noise": 0.02,
        "welch": None,
        "adaptive_device_s": 300.0,
        "calibration_s": 60.0,
        "share": 0.25,
        "share_without_calibration": 0.2,
        "borne_out": True,
        "reference_precision": None,
        "loaded": None,
    }


def test_a_row_prints_both_winners_as_recommend_names_them(capsys):
    full = FsConfig.make("xfs", mount=("noatime", "logbufs=8", "logbsize=256k"))
    ada = FsConfig.make("ext4")
    B.print_row(_row(full.key(), ada.key()))
    out = capsys.readouterr().out
    assert f"   exhaustive winner: {full.label()}\n" in out
    assert f"   adaptive winner:   {ada.label()}  after 9 runs" in out
    assert "ext4 defaults, sched none" in out
    # no stored key, no Python repr, anywhere in the text
    assert not re.search(r"\[\]|\(\)|\[[^\]]*\] \(", out), out


def test_the_share_goal_counts_a_calibration_that_ran(capsys):
    """The 20% goal is judged with the calibration where the case ran one (the device's
    first profile pays for it), without it where the stored one was reused."""
    full = FsConfig.make("xfs").key()
    row = {**_row(full, full), "share": 0.25, "share_without_calibration": 0.2}
    B.print_row(row)
    out = capsys.readouterr().out
    assert "= 25% [MISS, goal <= 20%]; without it 240 s = 20%" in out
    B.print_row({**row, "calibration_s": 0.0, "adaptive_device_s": 240.0})
    out = capsys.readouterr().out
    assert "= 20% [ok, goal <= 20%]; no calibration ran" in out
