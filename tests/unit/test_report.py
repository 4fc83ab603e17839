"""The report, terminal plots and compare: rendering and arithmetic on known numbers, and the
CLI commands on a real store (tests/conftest.py probed_store)."""

from __future__ import annotations

import json
import math
import re
import statistics

import pytest
from hypothesis import given, strategies as st
from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from fsadvisor.service import compare as cmp
from fsadvisor.service import report as rep

cli.register_all()
runner = CliRunner()


def run(*args):
    return runner.invoke(cli.app, list(args))


@pytest.fixture
def fresh_store(tmp_db, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    from fsadvisor.service import advice

    advice._cache.clear()
    return tmp_db


# ------------------------------------------------------------------ arithmetic


def test_welch_matches_a_hand_computation():
    # equal variances and counts: Welch-Satterthwaite gives exactly 2(n-1) = 4 df, and
    # t(0.975, 4) = 2.776 (any t table)
    a, b = [10.0, 10.2, 9.8], [12.0, 12.2, 11.8]
    d = cmp.welch(
        statistics.mean(a), statistics.stdev(a), 3, statistics.mean(b), statistics.stdev(b), 3
    )
    assert d["df"] == pytest.approx(4.0)
    half = 2.7764 * math.sqrt(0.04 / 3 + 0.04 / 3)
    assert d["low"] == pytest.approx(2.0 - half, abs=1e-3)
    assert d["high"] == pytest.approx(2.0 + half, abs=1e-3)
    assert d["diff_pct"] == pytest.approx(20.0)
    assert d["low_pct"] == pytest.approx(100 * (2.0 - half) / 10.0, abs=1e-2)
    # unequal variances: fewer degrees of freedom than the pooled 4
    u = cmp.welch(10.0, 0.2, 3, 12.0, 0.3, 3)
    va, vb = 0.04 / 3, 0.09 / 3
    assert u["df"] == pytest.approx((va + vb) ** 2 / (va**2 / 2 + vb**2 / 2))
    assert u["df"] < 4


def test_welch_refuses_single_runs():
    with pytest.raises(Exception, match="at least 2 runs"):
        cmp.welch(1.0, 0.0, 1, 2.0, 0.1, 3)


def test_log_difference_interval_is_the_models_sd():
    d = cmp.log_difference(100.0, 112.0, 0.02)
    assert d["diff_pct"] == pytest.approx(12.0)
    assert d["low_pct"] == pytest.approx(100 * (1.12 * math.exp(-1.96 * 0.02) - 1), abs=0.01)
    assert d["high_pct"] == pytest.approx(100 * (1.12 * math.exp(1.96 * 0.02) - 1), abs=0.01)


def test_verdict_words():
    sig = {"diff_pct": 12.0, "low_pct": 8.0, "high_pct": 16.0}
    assert cmp.verdict("A", "B", sig) == "B gives 12% ± 4% more ops/J than A — significant"
    worse = {"diff_pct": -12.0, "low_pct": -16.0, "high_pct": -8.0}
    assert "fewer ops/J" in cmp.verdict("A", "B", worse)
    none = {"diff_pct": 3.0, "low_pct": -5.0, "high_pct": 11.0}
    assert cmp.verdict("A", "B", none).startswith("no difference the data can see")


@given(st.floats(-50, 50), st.floats(0.001, 40))
def test_verdict_is_significant_exactly_when_the_interval_excludes_zero(centre, half):
    d = {"diff_pct": centre, "low_pct": centre - half, "high_pct": centre + half}
    text = cmp.verdict("A", "B", d)
    assert text.endswith("significant") == (centre - half > 0 or centre + half < 0)


@given(st.floats(1e-3, 1e6), st.floats(1.0001, 100.0))
def test_widening_90_to_95_keeps_the_centre_and_widens(lo, ratio):
    hi = lo * ratio
    lo95, hi95 = rep.widen_90_to_95(lo, hi)
    assert lo95 < lo and hi95 > hi
    assert math.sqrt(lo95 * hi95) == pytest.approx(math.sqrt(lo * hi), rel=1e-9)
    assert math.log(hi95 / lo95) == pytest.approx(math.log(hi / lo) * 1.959964 / 1.644854, rel=1e-5)


def test_difference_sd_is_the_one_recommend_uses():
    import numpy as np
    from fsadvisor.predict.rank import difference_sd

    design = {
        "X": np.array([[1.0, 0.0], [0.0, 1.0]]),
        "cov": np.array([[0.04, 0.01], [0.01, 0.09]]),
    }
    # var(x0 - x1) = 0.04 + 0.09 - 2 * 0.01
    assert difference_sd(design, 0, 1) == pytest.approx(math.sqrt(0.11))


# ------------------------------------------------------------------ report data and HTML


def test_report_separates_measured_and_predicted_with_provenance(probed_store, probed_iops):
    doc = rep.build("oltp", db=str(probed_store))
    assert doc["missing"] == []
    w = doc["workloads"][0]
    assert w["name"] == "profile:oltp"
    xfs = next(c for c in w["configs"] if c["label"] == "xfs -o noatime")
    m = xfs["measured"]["efficiency"]
    # both matrices pooled: 6 runs of xfs at 50 W
    runs = [x / 50 for (mid, fs), xs in probed_iops.items() if fs == "xfs" for x in xs]
    assert m["n"] == 6 and m["mean"] == pytest.approx(statistics.mean(runs))
    assert m["low"] < m["mean"] < m["high"]
    assert xfs["predicted"]["efficiency"]["low"] < xfs["predicted"]["efficiency"]["high"]
    prov = xfs["provenance"]
    assert "ipmi (system scope)" in prov["measured"] and "m-base" in prov["measured"]
    assert "validated error median ×" in prov["predicted"]
    assert doc["recommendation"]["headline"].startswith("Use ")
    # recommend's own words, from the one renderer: what matters, what to use, how sure
    said = doc["recommendation"]["answer"]
    assert said[0].startswith("What matters: ") and said[1].startswith("Recommended: ")
    assert said[2].startswith("How sure: ")
    assert any(x.startswith("confidence: P(within 1% of the best)") for x in said)
    ranked = [c for c in w["configs"] if c["rank"]]
    assert [c["rank"] for c in ranked] == sorted(c["rank"] for c in ranked)


def test_report_of_one_matrix_shows_only_its_runs(probed_store):
    doc = rep.build("oltp", matrix="m-new", db=str(probed_store))
    xfs = next(c for c in doc["workloads"][0]["configs"] if c["label"] == "xfs -o noatime")
    assert xfs["measured"]["efficiency"]["n"] == 3
    assert xfs["measured"]["efficiency"]["mean"] == pytest.approx(15_000 / 50)
    # predictions for a matrix are made for the device it measured (a loop device), and
    # the recommendation's headline speaks of the same device as the table
    assert doc["device"]["kind"] == "loop"
    first = next(c for c in doc["workloads"][0]["configs"] if c["rank"] == 1)
    shown = f"{first['predicted']['efficiency']['mean']:,.0f} ops/J predicted"
    assert shown in doc["recommendation"]["headline"]


def test_html_is_self_contained_and_escapes(probed_store, tmp_path):
    out = tmp_path / "r.html"
    res = rep.write("oltp", out=out, png_dir=tmp_path / "png", db=str(probed_store))
    html = out.read_text()
    assert res["written"][0] == str(out) and len(res["written"]) == 2
    assert html.count('src="data:image/png;base64,') == 1
    assert "http://" not in html and "https://" not in html and "<script" not in html
    assert 'class="measured"' in html and 'class="predicted"' in html
    assert "Provenance" in html and "validated error" in html
    png = (tmp_path / "png").iterdir().__next__().read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"

    from fsadvisor.report.html import render

    doc = rep.build("oltp", db=str(probed_store))
    doc["profile"]["description"] = "<script>alert(1)</script>"
    assert "<script>alert" not in render(doc, [])


def test_report_without_probes_says_what_is_missing(fresh_store, tmp_path):
    r = run("report", "--profile", "oltp", "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 0, r.output
    assert "missing: no probe runs of profile oltp" in r.output
    assert (tmp_path / "r.html").read_text().count("Missing: no probe runs") == 1


def test_report_with_nothing_to_show_is_one_line_exit_2(fresh_store, tmp_path):
    # constraints nothing satisfies and no runs: neither a prediction nor a measurement
    prof = tmp_path / "impossible.toml"
    prof.write_text(
        'name = "impossible"\ndescription = "x"\n[workload]\nread_pct = 70\n'
        'pattern = "random"\nrequest_size = "8k"\n[constraints]\nmin_iops = 1e12\n'
    )
    r = run("report", "--profile", str(prof), "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "nothing to report for profile impossible" in lines[0]
    assert "no configuration satisfies" in lines[0]
    assert not (tmp_path / "r.html").exists()


def test_report_unknown_matrix_is_one_line(probed_store, tmp_path):
    r = run("report", "--profile", "oltp", "--matrix", "nope", "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 2 and "no matrix 'nope'" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_report_png_only(probed_store, tmp_path):
    r = run("report", "--profile", "oltp", "--png", str(tmp_path / "png"), "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert all(p.endswith(".png") for p in doc["written"]) and doc["written"]
    # the figures behind the charts, for scripts
    configs = doc["report"]["workloads"][0]["configs"]
    assert any(c["measured"] and c["predicted"] for c in configs)
    assert not (tmp_path / "report.html").exists()


# ------------------------------------------------------------------ compare


def test_compare_ranks_json(fresh_store):
    r = run("compare", "--profile", "oltp", "1", "2", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [e["name"] for e in doc["entries"]] == ["#1", "#2"]
    d = doc["differences"][0]
    assert d["basis"].startswith("predicted")
    assert d["low_pct"] <= d["diff_pct"] <= d["high_pct"]
    assert d["verdict"]


def test_compare_measured_configs_use_welch(probed_store, probed_iops):
    r = run(
        "compare",
        "--profile",
        "oltp",
        '{"filesystem": "ext4"}',
        '{"filesystem": "xfs", "mount": ["noatime"]}',
        "--json",
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)["differences"][0]
    assert d["basis"].startswith("measured: Welch")
    a = [x / 50 for (m, fs), xs in probed_iops.items() if fs == "ext4" for x in xs]
    b = [x / 50 for (m, fs), xs in probed_iops.items() if fs == "xfs" for x in xs]
    want = cmp.welch(
        statistics.mean(a), statistics.stdev(a), 6, statistics.mean(b), statistics.stdev(b), 6
    )
    assert d["diff_pct"] == pytest.approx(want["diff_pct"])
    assert d["significant"] and "more ops/J than A — significant" in d["verdict"]


def test_compare_matrices_text_and_plot(probed_store, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # the chart takes the terminal's width
    r = run("compare", "--matrix", "m-base", "m-new", "--plot")
    assert r.exit_code == 0, r.output
    out = r.output
    # xfs: 12,000 -> 15,000 IOPS at the same power: +25%, clearly significant
    assert re.search(r"B gives 25% ± \d+% more ops/J than A — significant", out)
    # ext4: 10,000 vs 10,033: within noise
    assert "no difference the data can see" in out
    assert max(len(ln) for ln in out.splitlines() if "┤" in ln) <= 80


def test_compare_bad_input_is_one_line(fresh_store):
    for args, msg in (
        (["compare", "{not json", "{}"], "configuration 1 is not JSON"),
        (["compare", "1", "2"], "ranks need --profile"),
        (["compare", "--profile", "oltp", "1", "5000"], "no rank 5000"),
        (["compare", "--profile", "oltp", "0", "1"], "ranks start at 1"),
        (["compare", "--matrix", "a"], "exactly two probe matrices"),
        (["compare", "--matrix", "a", "b"], "no matrix 'a'"),
        (
            ["compare", "--profile", "oltp", '{"filesystem":"ext4"}', '{"filesystem":"ext4"}'],
            "same configuration is given twice",
        ),
    ):
        r = run(*args)
        assert r.exit_code == 2, (args, r.output)
        assert msg in r.output and len(r.output.strip().splitlines()) == 1, (args, r.output)


@pytest.mark.parametrize("columns", [80, 120])
def test_recommend_plot_takes_the_terminal_width(fresh_store, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    r = run("recommend", "--profile", "oltp", "--top", "3", "--plot")
    assert r.exit_code == 0, r.output
    chart = r.output.split("\n\n")[-1]
    rows = [ln for ln in chart.splitlines() if "┤" in ln]
    assert len(rows) == 3 and all(ln.split("┤")[0].strip().startswith("P #") for ln in rows)
    assert all(len(ln) <= columns for ln in chart.splitlines())
    assert max(map(len, rows)) >= columns - 2


def test_plot_probe_draws_each_workload_and_skips_unranked():
    def row(cfg, wl, mean, lo, hi, ranked=True, fs="xfs"):
        return {
            "config": cfg,
            "filesystem": fs,
            "scheduler": "none",
            "workload": wl,
            "ranked": ranked,
            "ops_per_joule": {"n": 2, "mean": mean, "ci95_low": lo, "ci95_high": hi},
        }

    summary = {
        "results": [
            row("ext4 [] () none", "4k-randread", 100.0, 90.0, 110.0, fs="ext4"),
            row("xfs [] () none", "4k-randread", 140.0, 120.0, 160.0),
            row(
                "ext4 [] (data=journal) none",
                "4k-randread",
                900.0,
                800.0,
                1000.0,
                ranked=False,
                fs="ext4",
            ),
            row(None, "4k-randwrite", 50.0, 40.0, 60.0, fs="raw-device"),
            {
                "config": "btrfs",
                "filesystem": "btrfs",
                "workload": "4k-randwrite",
                "scheduler": "none",
                "ranked": True,
                "ops_per_joule": {"n": 0, "mean": None},
            },
        ]
    }
    text = rep.plot_probe(summary, width=80)
    charts = text.split("\n\n")
    assert len(charts) == 2 and "4k-randread: ops/J" in charts[0]
    rows = [ln.split("┤")[0].strip() for ln in charts[0].splitlines() if "┤" in ln]
    assert rows == ["M xfs [] () none", "M ext4 [] () none"]  # data=journal never ranked
    assert "M raw device, sched none" in charts[1] and "btrfs" not in charts[1]
    assert max(len(ln) for ln in text.splitlines()) <= 80
    assert rep.plot_probe({"results": []}).startswith("no ops/J to plot")


@given(
    st.lists(
        st.one_of(
            st.text(max_size=12),
            st.integers(-3, 3).map(str),
            st.just('{"filesystem": "ext4"}'),
            st.just("[]"),
        ),
        max_size=4,
    ),
    st.booleans(),
)
def test_compare_input_is_accepted_or_refused_in_one_line(items, matrices):
    """Whatever the arguments, compare either works or raises FsAdvisorError (the CLI's one
    line, exit 2) — never another exception. No profile or workload is given, so nothing
    gets as far as the model; two matrix ids look in an empty store of their own."""
    import tempfile
    from fsadvisor.errors import FsAdvisorError

    with tempfile.TemporaryDirectory() as d:
        try:
            cmp.compare(items, matrices=matrices, db=f"{d}/s.db")
        except FsAdvisorError:
            pass


def test_compare_pairs_runs_of_the_same_device(probed_store, probed_iops):
    """ext4 also probed (more often) on a second device that xfs never ran on: the measured
    difference still pairs the runs of the one device both were measured on."""
    from fsadvisor.domain import Device, FsConfig
    from fsadvisor.records import EnergyReading, RunRecord
    from fsadvisor.profiles import load_profile
    from fsadvisor.store import open_store

    w = load_profile("oltp").workload
    other = Device(
        path="/dev/nvme7n1", size_bytes=1 << 40, kind="nvme", model="Other SSD", serial="S1"
    )
    with open_store(str(probed_store)) as store:
        store.start_matrix({"reps": 8}, matrix_id="m-other")
        for rep in range(1, 9):
            store.record_run(
                RunRecord(
                    cell_key="x",
                    device=other,
                    config=FsConfig.make("ext4"),
                    workload_name="profile:oltp",
                    workload=w,
                    rep=rep,
                    status="ok",
                    started_at=1_790_000_100.0 + rep,
                    wall_s=12.0,
                    metrics={"iops": 90_000.0 + rep},
                    matrix_id="m-other",
                    energy=EnergyReading(
                        source="ipmi",
                        scope="system",
                        energy_j=1000.0,
                        avg_watts=100.0,
                        duration_s=10.0,
                    ),
                )
            )
    doc = cmp.compare(
        ['{"filesystem": "ext4"}', '{"filesystem": "xfs", "mount": ["noatime"]}'],
        profile="oltp",
        db=str(probed_store),
    )
    assert doc["entries"][0]["measured"]["n"] == 8  # shown: the summary with most runs
    d = doc["differences"][0]
    assert d["basis"].startswith("measured: Welch 95% interval over 6 and 6 runs")
    a = [x / 50 for (m, fs), xs in probed_iops.items() if fs == "ext4" for x in xs]
    assert d["diff_pct"] == pytest.approx(
        100
        * (
            statistics.mean(
                x / 50 for (m, fs), xs in probed_iops.items() if fs == "xfs" for x in xs
            )
            / statistics.mean(a)
            - 1
        )
    )


def test_report_unwritable_outputs_are_one_line(probed_store, tmp_path):
    (tmp_path / "afile").write_text("x")
    for args in (
        ["-o", str(tmp_path / "no" / "such" / "dir" / "r.html")],
        ["--png", str(tmp_path / "afile")],
    ):
        r = run("report", "--profile", "oltp", *args)
        assert r.exit_code == 2, r.output
        assert len(r.output.strip().splitlines()) == 1 and r.output.startswith("fsadvisor: ")


def test_profile_report_predicts_for_the_device_the_runs_measured(probed_store):
    doc = rep.build("oltp", db=str(probed_store))
    assert doc["device"]["kind"] == "loop" and doc["device"]["path"] == "/dev/loop9"
    # an explicit --device wins (a spec: the runs stay, labelled with their own device)
    doc = rep.build("oltp", device="nvme:2T", db=str(probed_store))
    assert doc["device"]["kind"] == "nvme"
    xfs = next(c for c in doc["workloads"][0]["configs"] if c["label"] == "xfs -o noatime")
    assert "loop on ext4 (test)" in xfs["provenance"]["measured"]


def test_shown_summary_prefers_the_report_scope_then_more_runs():
    a = {"power_scope": "cpu+dram", "n": 9}
    b = {"power_scope": "system", "n": 2}
    c = {"power_scope": "system", "n": 3}
    assert rep._shown([a, b, c], "system") is c
    assert rep._shown([a, b, c], "cpu+dram") is a
