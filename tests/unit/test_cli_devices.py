"""`devices list|show`, `--device NAME` and `recommend --load/--price/...` through the real
CLI, on a real SQLite store in a tmp dir."""

import json
import math
import re

import pytest
from typer.testing import CliRunner

import fsadvisor.cli.app as cli

cli.register_all()
runner = CliRunner()


def run(*args):
    return runner.invoke(cli.app, list(args))


@pytest.fixture(autouse=True)
def _store(tmp_db, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    from fsadvisor.service import advice

    advice._cache.clear()


def one_line_error(r, *fragments):
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1, r.output
    for f in fragments:
        assert f in lines[0], (f, lines[0])


def test_devices_list_json_and_text():
    r = run("devices", "list", "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    names = {row["name"] for row in rows}
    assert {"samsung-990-pro-2tb", "samsung-pm9a3-3.84tb-u2", "crucial-mx500-1tb"} <= names
    pm = next(row for row in rows if row["name"] == "samsung-pm9a3-3.84tb-u2")
    assert pm["plp"] == "yes" and pm["seq_read_mb_s"] == 6500
    r = run("devices", "list", "--kind", "sata-ssd")
    assert r.exit_code == 0 and "intel-dc-s4500-960gb" in r.output and "samsung-990" not in r.output
    one_line_error(run("devices", "list", "--kind", "hdd"), "--kind must be one of")


def test_devices_show_cites_every_figure():
    r = run("devices", "show", "micron-9200-pro", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["name"] == "micron-9200-pro-3.84tb" and doc["plp"] == "yes"
    ids = {s["id"] for s in doc["sources"]}
    for key, f in doc["figures"].items():
        assert f["source"] in ids, key
    assert doc["figures"]["seq_read_mb_s"]["disagrees"][0]["value"] == 3500
    assert doc["prior"]["values"]["read_bw_bytes_s"] == 3150e6
    r = run("devices", "show", "samsung-990-pro-2tb")
    assert r.exit_code == 0
    assert "https://mezha.media/" in r.output and "not the manufacturer's text" in r.output


def test_an_unknown_drive_suggests_the_closest_names():
    one_line_error(run("devices", "show", "samsung-99o-pro-2tb"), "closest:", "samsung-990-pro-2tb")
    one_line_error(
        run("recommend", "--profile", "oltp", "--device", "samsng-pm9a3"),
        "closest:",
        "samsung-pm9a3",
    )
    one_line_error(run("devices", "show", "samsung-990-pro"), "matches 3 drives")


def recommend_json(*args):
    r = run("recommend", "--profile", "oltp", "--json", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_two_named_drives_give_different_recommendations_where_their_figures_differ():
    consumer = recommend_json("--device", "samsung-990-pro-2tb", "--top", "3")
    plp = recommend_json("--device", "samsung-pm9a3-3.84tb-u2", "--top", "3")
    # The output names the drive, its capacity comes from the datasheet.
    assert consumer["device"]["model"].startswith("Samsung 990 PRO")
    assert consumer["device"]["size_bytes"] == 2_000_000_000_000
    assert plp["device"]["size_bytes"] == 3_840_000_000_000
    # A datasheet's "no PLP" is taken as is; a datasheet's PLP is shown, not acted on alone.
    assert consumer["device"]["plp"] == "no"
    assert plp["device"]["plp"] == "unknown"
    assert any("--plp yes" in n and "power-loss protection" in n for n in plp["notes"])
    assert not any("power-loss protection" in n for n in consumer["notes"])
    # Only with the user's --plp yes do flush-skipping options become candidates, and only
    # for the drive that has PLP: claiming it for the 990 PRO is refused.
    allowed = recommend_json("--device", "samsung-pm9a3-3.84tb-u2", "--plp", "yes")
    assert allowed["device"]["plp"] == "yes"
    hazards = lambda d: d["excluded"]["durability_hazard_not_allowed"]  # noqa: E731
    assert hazards(allowed) < hazards(plp)
    one_line_error(
        run("recommend", "--profile", "oltp", "--device", "samsung-990-pro-2tb", "--plp", "yes"),
        "contradicts samsung-990-pro-2tb",
        "no power-loss protection",
    )


def test_predict_takes_a_library_name():
    r = run(
        "predict",
        "--config",
        '{"filesystem": "xfs"}',
        "--profile",
        "oltp",
        "--device",
        "intel-p4500-2",
        "--json",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["device"]["model"].endswith("[library: intel-p4500-2tb]")


def test_recommend_yearly_figures_in_json_and_text():
    doc = recommend_json(
        "--load", "20000", "--price", "0.30", "--servers", "10", "--pue", "1.4", "--top", "3"
    )
    basis = doc["yearly_basis"]
    assert basis["load_unit"] == "ops/s" and basis["servers"] == 10 and basis["pue"] == 1.4
    assert basis["default"]["config"]["filesystem"] == "ext4"
    recs = doc["recommendations"]
    for rec in recs:
        y = rec["yearly"]
        p = rec["predicted"]
        idle = rec["basis"]["idle_watts"]
        util = min(20000 / p["iops"], 1.0)
        watts = idle + (max(p["watts"], idle) - idle) * util
        assert y["avg_watts"] == pytest.approx(watts)
        assert y["kwh_per_year"] == pytest.approx(watts * 8766 / 1000 * 10 * 1.4)
        assert y["cost_per_year"] == pytest.approx(y["kwh_per_year"] * 0.30)
        lo, hi = y["cost_per_year_90"]
        assert lo <= y["cost_per_year"] <= hi
        assert "model" in y["energy_source"] and "system scope" in y["energy_source"]
        assert y["saving_vs_default"]["cost_per_year"] == pytest.approx(
            basis["default"]["cost_per_year"] - y["cost_per_year"]
        )
    assert recs[0]["yearly"]["saving_vs_runner_up"]["kwh_per_year"] == pytest.approx(
        recs[1]["yearly"]["kwh_per_year"] - recs[0]["yearly"]["kwh_per_year"]
    )
    r = run("recommend", "--profile", "oltp", "--load", "20000", "--price", "0.30", "--top", "2")
    assert r.exit_code == 0, r.output
    assert r.output.count("   per year:  ") == 2
    assert "against the runner-up" in r.output and "energy source: model" in r.output


def test_a_load_above_every_capacity_is_said_and_marked():
    doc = recommend_json("--load", "1e12", "--top", "2")
    assert all(not r["yearly"]["sustains_load"] for r in doc["recommendations"])
    assert any(
        "above every shown configuration's predicted capacity" in n
        for n in doc["yearly_basis"]["notes"]
    )
    r = run("recommend", "--profile", "oltp", "--load", "1e12", "--top", "1")
    assert "CANNOT SUSTAIN THE LOAD" in r.output


def test_datasheet_power_changes_the_yearly_watts_at_drive_scope():
    # Two SATA drives from one Intel specification with different power figures (S4500:
    # 1.1 W idle / 5.6 W active; S4600: 1.0 / 5.0): at drive scope the yearly figures use them.
    a = recommend_json(
        "--device", "intel-dc-s4500-960gb", "--scope", "drive", "--load", "0", "--top", "1"
    )
    b = recommend_json(
        "--device", "intel-dc-s4600-960gb", "--scope", "drive", "--load", "0", "--top", "1"
    )
    ya, yb = a["recommendations"][0]["yearly"], b["recommendations"][0]["yearly"]
    assert ya["avg_watts"] == pytest.approx(1.1) and yb["avg_watts"] == pytest.approx(1.0)
    assert ya["kwh_per_year"] == pytest.approx(1.1 * 8.766)
    assert "datasheet power of intel-dc-s4500-960gb" in ya["energy_source"]
    busy = recommend_json(
        "--device", "intel-dc-s4500-960gb", "--scope", "drive", "--load", "1e9", "--top", "1"
    )
    assert busy["recommendations"][0]["yearly"]["avg_watts"] == pytest.approx(5.6)
    # A generic device at drive scope keeps the model's power, and says so.
    g = recommend_json("--device", "sata-ssd:960G", "--scope", "drive", "--load", "0", "--top", "1")
    assert "model" in g["recommendations"][0]["yearly"]["energy_source"]
    assert not math.isclose(g["recommendations"][0]["yearly"]["avg_watts"], 1.1)


def test_bandwidth_workloads_take_the_load_in_mb_s():
    doc = recommend_json_profile("analytics-scan", "--load", "500", "--top", "1")
    y = doc["recommendations"][0]["yearly"]
    assert doc["yearly_basis"]["load_unit"] == "MB/s"
    assert y["utilisation"] == pytest.approx(
        min(500 / doc["recommendations"][0]["predicted"]["mb_s"], 1.0)
    )


def recommend_json_profile(profile, *args):
    r = run("recommend", "--profile", profile, "--json", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_the_highest_operational_power_state_is_the_busy_power_when_no_active_figure_is_given(
    tmp_path, monkeypatch
):
    from fsadvisor.catalog import devicelib

    (tmp_path / "v.toml").write_text(
        'vendor = "V"\n'
        '[sources.log]\ntitle = "smartctl log"\ndate = "2024"\nurl = "https://l.invalid"\nkind = "device-identify-log"\n'
        '[sources.doc]\ntitle = "V datasheet"\ndate = "2024"\nurl = "https://d.invalid"\nkind = "manufacturer-datasheet"\n'
        '[[drive]]\nname = "v-ps-1tb"\nmodel = "V PS"\nkind = "nvme"\nclass = "consumer"\ncapacity_gb = 1000\n'
        'idle_power_w = { v = 0.5, src = "doc" }\n'
        "power_states = { v = [{ ps = 0, max_w = 8.0, op = true }, { ps = 1, max_w = 4.0, op = true },"
        ' { ps = 2, max_w = 0.01, op = false }], src = "log" }\n'
    )
    devicelib._load.cache_clear()
    lib = devicelib.load_library(tmp_path)
    monkeypatch.setattr(devicelib, "load_library", lambda root=None: lib)
    full = recommend_json(
        "--device", "v-ps-1tb", "--scope", "drive", "--load", "1e12", "--top", "1"
    )
    y = full["recommendations"][0]["yearly"]
    assert y["avg_watts"] == pytest.approx(8.0) and "busy 8 W (smartctl log)" in y["energy_source"]
    idle = recommend_json("--device", "v-ps-1tb", "--scope", "drive", "--load", "0", "--top", "1")
    assert idle["recommendations"][0]["yearly"]["avg_watts"] == pytest.approx(0.5)


def test_show_puts_seed_measurements_beside_the_datasheet():
    doc = json.loads(run("devices", "show", "samsung-pm9a3-3.84tb-u2", "--json").output)
    (m,) = doc["measured"]
    # seed 002's raw nvme0n1 4K randwrite QD32: 408,200 IOPS against the 200,000 quoted
    assert m["figure"] == "rand_write_iops" and m["measured"] == 408200 and m["datasheet"] == 200000
    assert m["measured_over_datasheet"] == pytest.approx(2.041)
    assert m["origin"] == "seed" and "seed 002" in m["source"]
    # the seed's transcribed datasheet claim (412,000, note "[spec]") is not a measurement
    assert all(x["measured"] != 412000 for x in doc["measured"])
    assert json.loads(run("devices", "show", "intel-p4500-1tb", "--json").output)["measured"] == []


def test_a_probed_device_is_listed_as_measured_beside_the_datasheet_ones(tmp_db, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")  # the measured line whole (80 wraps it between words)
    from fsadvisor.domain import Device, Workload
    from fsadvisor.records import RunRecord
    from fsadvisor.store import open_store

    dev = Device(
        path="/dev/nvme1n1",
        size_bytes=2_000_398_934_016,
        kind="nvme",
        model="Samsung SSD 990 PRO 2TB",
        plp="no",
    )
    store = open_store(str(tmp_db))
    for rep, iops in ((1, 1_000_000.0), (2, 1_100_000.0)):
        store.record_run(
            RunRecord(
                cell_key="raw|randread-4k",
                device=dev,
                config=None,
                workload_name="randread-4k",
                workload=Workload(rw="randread", bs_bytes=4096, iodepth=64, numjobs=4),
                rep=rep,
                status="ok",
                started_at=1_700_000_000.0 + rep,
                wall_s=10.0,
                metrics={"iops": iops, "mb_s": iops * 4096 / 1e6, "runtime_s": 10.0},
            )
        )
    r = run("devices", "list")
    assert r.exit_code == 0, r.output
    assert "measured by your probes" in r.output
    assert (
        "Samsung SSD 990 PRO 2TB (nvme, 2 runs): rand_read_iops 1,050,000  [library: samsung-990-pro-2tb]"
        in r.output
    )
    rows = json.loads(run("devices", "list", "--json").output)
    assert any(row.get("measured") and row["library"] == "samsung-990-pro-2tb" for row in rows)
    doc = json.loads(run("devices", "show", "samsung-990-pro-2tb", "--json").output)
    (m,) = doc["measured"]
    assert m["origin"] == "probe" and m["measured"] == pytest.approx(1_050_000)
    assert m["measured_over_datasheet"] == pytest.approx(0.75)
    text = run("devices", "show", "samsung-990-pro-2tb").output
    assert "0.75 x datasheet 1,400,000" in text


@pytest.mark.parametrize(
    "workload, expected",
    [
        (dict(rw="randread", bs_bytes=4096), ("rand_read_iops", "iops")),
        (dict(rw="randwrite", bs_bytes=4096), ("rand_write_iops", "iops")),
        (dict(rw="randwrite", bs_bytes=4096, fsync_every=1, fsync_mode="every_n"), None),
        (dict(rw="read", bs_bytes=128 << 10), ("seq_read_mb_s", "mb_s")),
        (dict(rw="write", bs_bytes=1 << 20), ("seq_write_mb_s", "mb_s")),
        (dict(rw="read", bs_bytes=4096), None),
        (dict(rw="randrw", bs_bytes=4096), None),
    ],
)
def test_which_raw_workloads_have_a_datasheet_counterpart(workload, expected):
    from fsadvisor.domain import Workload
    from fsadvisor.service.devices import datasheet_figure_for

    assert datasheet_figure_for(Workload(**workload)) == expected


def test_a_bare_device_kind_still_asks_for_a_size():
    one_line_error(run("recommend", "--profile", "oltp", "--device", "nvme"), "not a device size")


def test_a_resolved_library_device_leads_back_to_its_datasheet_prior():
    from fsadvisor.service.advice import resolve_device
    from fsadvisor.service.devices import library_params_of

    dev = resolve_device("samsung-990-pro-2tb")
    p = library_params_of(dev)
    assert p.device_id == "library:samsung-990-pro-2tb" and p.values["read_iops_cap"] == 1_400_000
    assert library_params_of(resolve_device("nvme:1T")) is None


def test_recommend_text_names_the_library_drive_and_its_prior(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # each statement on one line
    r = run("recommend", "--profile", "oltp", "--device", "samsung-pm9a3-3.84tb-u2", "--top", "1")
    assert r.exit_code == 0, r.output
    assert (
        "Device: nvme, 3.84 TB, PLP unknown, Samsung PM9A3 (U.2) [library: samsung-pm9a3-3.84tb-u2]"
        in r.output
    )
    # named once, in the device parameters note (no duplicate device notes)
    assert r.output.count("samsung-pm9a3-3.84tb-u2 — ") == 1, r.output
    assert "note: device parameters: datasheet:" in r.output


@pytest.mark.parametrize("name", ["samsung-990-pro-2tb", "samsung-pm9a3-3.84tb-u2"])
def test_devices_show_reads_as_words_and_fits_80_columns(name, monkeypatch):
    """Each figure as devices list prints it (1,400,000, not 1400000; PLP yes/no, not
    Python's True/False); at 80 columns a line is longer only where it is one word (a
    source's URL), with the same words and figures as the unwrapped text."""
    monkeypatch.setenv("COLUMNS", "80")
    narrow = run("devices", "show", name).output
    monkeypatch.setenv("COLUMNS", "1000")
    wide = run("devices", "show", name).output
    doc = json.loads(run("devices", "show", name, "--json").output)
    assert [ln for ln in narrow.splitlines() if len(ln) > 80 and len(ln.split()) > 1] == []
    assert narrow.split() == wide.split()
    assert not re.search(r"\b(True|False)\b", narrow)
    rows: dict[str, str] = {}  # the figures' own lines come before the measured ones
    for ln in wide.splitlines():
        if ln.startswith("  ") and ln.split()[0] in doc["figures"]:
            rows.setdefault(ln.split()[0], ln.split()[1])
    for key, f in doc["figures"].items():
        v = f["value"]
        if isinstance(v, bool):
            assert rows[key] == ("yes" if v else "no"), key
        elif isinstance(v, (int, float)):
            assert rows[key] == f"{v:,}".removesuffix(".0"), key
    assert any(isinstance(f["value"], int) and f["value"] >= 1000 for f in doc["figures"].values())
