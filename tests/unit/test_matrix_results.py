"""service/matrix_results: a stored matrix opens to its measured cells (mean, 95% interval,
n, from the store's summaries) and exports them as CSV and JSON."""

from __future__ import annotations

import csv
import json
import statistics

import pytest

from fsadvisor.errors import FsAdvisorError
from fsadvisor.service import matrix_results as mr


def test_cells_are_the_runs_summaries(probed_store, probed_iops):
    doc = mr.matrix_cells("m-new", db=str(probed_store))
    assert doc["matrix"]["id"] == "m-new" and doc["matrix"]["profile"] == "oltp"
    by_fs = {c["label"].split()[0]: c for c in doc["cells"]}
    mine = {fs: xs for (m, fs), xs in probed_iops.items() if m == "m-new"}
    assert set(by_fs) == set(mine)
    for fs, xs in mine.items():
        iops = by_fs[fs]["iops"]
        assert by_fs[fs]["n"] == iops["n"] == len(xs)
        assert iops["mean"] == pytest.approx(statistics.fmean(xs))
        assert iops["ci95_low"] < iops["mean"] < iops["ci95_high"]
        # energy 500 J over 10 s per run: ops/J = iops * 10 / 500
        assert by_fs[fs]["ops_per_joule"]["mean"] == pytest.approx(statistics.fmean(xs) / 50)
    opj = [c["ops_per_joule"]["mean"] for c in doc["cells"]]
    assert opj == sorted(opj, reverse=True)


def test_csv_and_json_exports_hold_the_same_figures(probed_store, tmp_path):
    db = str(probed_store)
    doc = mr.matrix_cells("m-base", db=db)
    j = mr.export_matrix("m-base", "json", tmp_path / "m.json", db=db)
    assert json.loads(j.read_text()) == doc
    c = mr.export_matrix("m-base", "csv", tmp_path / "m.csv", db=db)
    rows = list(csv.DictReader(c.open()))
    assert [r["configuration"] for r in rows] == [x["label"] for x in doc["cells"]]
    for r, cell in zip(rows, doc["cells"]):
        assert float(r["iops_mean"]) == pytest.approx(cell["iops"]["mean"])
        assert float(r["iops_ci95_high"]) == pytest.approx(cell["iops"]["ci95_high"])
        assert int(r["iops_n"]) == cell["iops"]["n"]


def test_unknown_matrix_and_format_are_one_line_errors(probed_store, tmp_path):
    with pytest.raises(FsAdvisorError, match="no matrix 'nope'"):
        mr.matrix_cells("nope", db=str(probed_store))
    with pytest.raises(FsAdvisorError, match="export format must be one of csv, json"):
        mr.export_matrix("m-new", "xml", tmp_path / "x", db=str(probed_store))


def test_html_report_of_the_matrix(probed_store, tmp_path):
    out = mr.export_report("m-new", tmp_path / "r.html", db=str(probed_store))
    html = out.read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and "oltp" in html
