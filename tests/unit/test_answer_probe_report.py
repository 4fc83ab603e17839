"""Issue 12 §8: the probe report reads like a person wrote it — configuration labels, n = 1
said as such, over-100%-of-raw explained, history with device and profile."""

from __future__ import annotations

from types import SimpleNamespace

from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from fsadvisor.cli.probe import _print_summary
from fsadvisor.domain import FsConfig, Workload
from fsadvisor.probe.plan import cell_label
from fsadvisor.probe.report import raw_ratio_note
from fsadvisor.store import open_store
from fsadvisor.store.queries import plan_target

cli.register_all()


def test_configuration_labels_are_readable():
    assert cell_label(FsConfig.make("ext4"), "none") == "ext4 defaults, sched none"
    assert (
        cell_label(FsConfig.make("xfs", mount=("noatime",), ag_count=16), "none")
        == "xfs agcount=16, noatime, sched none"
    )
    assert (
        cell_label(
            FsConfig.make("ext4", {"inode_size": 1024}, ("noatime", "nodiscard")), "mq-deadline"
        )
        == "ext4 inode_size=1024, noatime,nodiscard, sched mq-deadline"
    )
    assert cell_label(None, "kyber") == "raw device (no filesystem), sched kyber"


def test_over_100_percent_of_raw_is_explained():
    assert raw_ratio_note(None) == ""
    assert raw_ratio_note(0.87) == "87% of raw device"
    buffered = raw_ratio_note(1.8, Workload(rw="randread", direct=False))
    assert buffered.startswith("180% of raw device — ") and "page cache" in buffered
    assert "page cache" in raw_ratio_note(1.8, Workload(rw="randread", direct=True))


def _stat(mean, lo=None, hi=None, n=1):
    return {"n": n, "mean": mean, "sd": None, "ci95_low": lo, "ci95_high": hi}


def test_summary_shows_labels_single_runs_and_raw_ratio(capsys):
    row = {
        "config": "ext4 [] () none",
        "label": "ext4 defaults, sched none",
        "filesystem": "ext4",
        "scheduler": "none",
        "workload": "4k-randread",
        "n": 1,
        "iops": _stat(180_000.0),
        "mb_s": _stat(737.0),
        "p99_latency_us": _stat(90.0),
        "ops_per_joule": _stat(3000.0),
        "energy_source": "estimate",
        "flags": [],
        "ranked": True,
        "vs_raw_iops": 1.8,
        "vs_raw_note": raw_ratio_note(1.8, Workload(rw="randread", direct=False)),
    }
    doc = {
        "matrix_id": "m1",
        "device": "/dev/loop3",
        "device_kind": "loop",
        "cells": {
            "ok": 1,
            "failed": 0,
            "skipped": 0,
            "already_done": 0,
            "incomplete": 0,
            "total": 1,
        },
        "wall_s": 12.0,
        "skipped_reasons": {},
        "failed": [],
        "energy": None,
        "results": [row],
        "interrupted": None,
    }
    _print_summary(SimpleNamespace(to_dict=lambda: doc))
    out = capsys.readouterr().out
    assert "ext4 defaults, sched none" in out and "ext4 [] () none" not in out
    assert "1 run — no interval" in out
    assert "180% of raw device — the page cache served part of it" in out


def test_history_shows_device_and_profile(tmp_path):
    assert plan_target({"device": "/dev/nvme1n1", "profile": "oltp"}) == {
        "device": "/dev/nvme1n1",
        "profile": "oltp",
    }
    assert plan_target(
        {"device": None, "scratch_dir": "/var/tmp", "workloads": [{"name": "4k-randread"}]}
    ) == {"device": "scratch file in /var/tmp", "profile": "micro benchmarks"}
    db = tmp_path / "h.db"
    with open_store(db) as s:
        s.start_matrix({"device": "/dev/loop3", "profile": "oltp", "reps": 1})
        lp = s.info()["last_probe"]
    assert lp["device"] == "/dev/loop3" and lp["profile"] == "oltp"
    r = CliRunner().invoke(cli.app, ["db", "info", "--db", str(db)])
    assert r.exit_code == 0 and "on /dev/loop3 (oltp)" in r.output, r.output
    from fsadvisor.service.store import history

    h = history(db=str(db))[0]
    assert (h["device"], h["profile"]) == ("/dev/loop3", "oltp")
