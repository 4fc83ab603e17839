"""The offline commands through the real CLI, on a real SQLite store in a tmp dir."""

import json
import math

import pytest
from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from fsadvisor.errors import FsAdvisorError

cli.register_all()
runner = CliRunner()


def run(*args, input=None):
    return runner.invoke(cli.app, list(args), input=input)


@pytest.fixture(autouse=True)
def _store(tmp_db, tmp_path, monkeypatch):
    # Each test gets its own store and its own model cache.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    from fsadvisor.service import advice

    advice._cache.clear()


def test_recommend_json_has_the_promised_fields():
    r = run("recommend", "--profile", "oltp", "--json", "--top", "3")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["candidates_considered"] >= 1000
    recs = doc["recommendations"]
    assert 1 <= len(recs) <= 3
    for rec in recs:
        for key in (
            "filesystem",
            "mkfs_command",
            "mount_options",
            "fstab",
            "scheduler",
            "ag_count",
            "predicted",
            "uncertainty",
            "why",
            "warnings",
        ):
            assert key in rec, key
        for key in ("iops", "mb_s", "p99_latency_ms", "watts", "ops_per_joule"):
            assert rec["predicted"][key] > 0 and math.isfinite(rec["predicted"][key])
        lo, hi = rec["uncertainty"]["ops_per_joule_90"]
        assert lo < rec["predicted"]["ops_per_joule"] < hi
        assert (rec["ag_count"] is None) == (rec["filesystem"] != "xfs")
        assert rec["mkfs_command"][0].startswith("mkfs.")
        assert rec["why"], "every recommendation says why"
        # nothing that needs PLP while PLP is unknown
        assert not any(o in rec["mount_options"] for o in ("nobarrier", "barrier=0"))
    # Best first, except that a simpler configuration may precede one that leads it by less
    # than the model's uncertainty: then it must really be simpler.
    from fsadvisor.catalog import config_from_dict
    from fsadvisor.predict.rank import complexity
    from fsadvisor.service.advice import resolve_device

    dev = resolve_device(None)
    for a, b in zip(recs, recs[1:]):
        if b["score"] > a["score"]:
            assert complexity(config_from_dict(a["config"]), dev) < complexity(
                config_from_dict(b["config"]), dev
            )
            assert b["score"] / a["score"] < a["uncertainty"]["ops_per_joule_factor"]
    assert "power_level" in recs[0]["basis"]


def test_plp_yes_widens_the_search_but_keeps_warnings():
    unknown = json.loads(run("recommend", "-p", "oltp", "--json").output)
    yes = json.loads(run("recommend", "-p", "oltp", "--json", "--plp", "yes").output)
    assert (
        yes["excluded"]["durability_hazard_not_allowed"]
        < unknown["excluded"]["durability_hazard_not_allowed"]
    )
    # a flush-skipping option, when allowed, always comes with its warning
    from fsadvisor import catalog
    from fsadvisor.predict.rank import rank
    from fsadvisor.service import advice

    cfg = catalog.config_from_dict({"filesystem": "ext4", "mount": ["noatime", "nobarrier"]})
    prof = advice.get_profile("oltp")
    rec = rank(advice.get_model(), prof, advice.resolve_device(None, "yes"), candidates=[cfg])
    assert any("nobarrier" in w and "PLP confirmed" in w for w in rec.ranked[0].warnings)
    rec = rank(
        advice.get_model(),
        prof,
        advice.resolve_device(None),
        candidates=[cfg, catalog.default_config("ext4")],
    )
    assert [r.config for r in rec.ranked] == [catalog.default_config("ext4")]


def test_snapshots_requirement_leaves_only_btrfs(tmp_path):
    prof = tmp_path / "snap.toml"
    prof.write_text(
        'name = "snap"\ndescription = "needs snapshots"\n'
        '[fio]\nrw = "randwrite"\nbs = "4k"\niodepth = 8\n'
        '[constraints]\nfeatures = ["snapshots"]\n'
    )
    doc = json.loads(run("recommend", "-p", str(prof), "--json").output)
    assert {r["filesystem"] for r in doc["recommendations"]} == {"btrfs"}


def test_bandwidth_workload_ranks_by_bytes_per_joule():
    doc = json.loads(run("recommend", "-p", "analytics-scan", "--json").output)
    assert doc["rank_by"] == "bytes_per_joule"


def test_f2fs_is_recommended_offline_with_a_kernel_note():
    doc = json.loads(run("recommend", "-p", "fio-randwrite-4k-j1", "--json", "--top", "1").output)
    f2fs = doc["best_per_filesystem"]["f2fs"]
    assert any("f2fs" in w and "kernel" in w for w in f2fs["warnings"])


def test_recommend_text_output():
    r = run("recommend", "--profile", "oltp", "--top", "1")
    assert r.exit_code == 0, r.output
    assert "mkfs:" in r.output and "fstab:" in r.output and "why:" in r.output


@pytest.mark.parametrize(
    "args, words",
    [
        (["recommend", "--profile", "no-such-profile"], "no-such-profile"),
        (["recommend", "--profile", "oltp", "--top", "0"], "--top"),
        (["recommend", "--profile", "oltp", "--scope", "moon"], "scope"),
        (["recommend", "--profile", "oltp", "--device", "floppy:1.44M"], "floppy"),
        (["predict", "--config", '{"filesystem": "zfs"}', "--profile", "oltp"], "zfs"),
        (
            [
                "predict",
                "--config",
                '{"filesystem": "xfs", "mount": ["data=writeback"]}',
                "--profile",
                "oltp",
            ],
            "data=writeback",
        ),
        (
            [
                "predict",
                "--config",
                '{"filesystem": "xfs", "mount": ["nobarrier"]}',
                "--profile",
                "oltp",
            ],
            "nobarrier",
        ),
        (["predict", "--config", "{not json", "--profile", "oltp"], "JSON"),
        (
            ["predict", "--config", '{"filesystem": "ext4", "ag_count": 8}', "--profile", "oltp"],
            "ag",
        ),
        (["predict", "--config", "[" * 100000, "--profile", "oltp"], "nested"),
        (["validate", "--folds", "0"], "folds"),
        (["refit", "--output", ""], "output"),
        (["refit", "--output", "/"], "directory"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, words):
    r = run(*args)
    assert r.exit_code == 2, r.output
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in r.output
    assert words.lower() in lines[0].lower()


def test_unsatisfiable_constraints_name_the_problem(tmp_path):
    prof = tmp_path / "greedy.toml"
    prof.write_text(
        'name = "greedy"\ndescription = "impossible"\n'
        '[fio]\nrw = "randread"\nbs = "4k"\n'
        "[constraints]\nmin_iops = 1e12\n"
    )
    r = run("recommend", "-p", str(prof))
    assert r.exit_code == 2
    assert "min_iops" in r.output and "no configuration satisfies" in r.output


def test_malformed_profile_toml_is_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [unclosed\n")
    r = run("recommend", "-p", str(bad))
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1


def test_predict_one_config():
    r = run(
        "predict",
        "--config",
        '{"filesystem": "xfs", "ag_count": 16, "mount": "noatime"}',
        "--workload",
        '{"rw": "randrw", "bs": "4k", "iodepth": 32, "numjobs": 4}',
        "--json",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["config"]["ag_count"] == 16
    assert doc["predicted"]["iops"] > 0
    assert doc["uncertainty"]["iops_90"][0] < doc["predicted"]["iops"]


def test_predict_batch_json_lines_one_out_per_in_and_errors_inline():
    lines = [
        {"id": 1, "config": {"filesystem": "ext4"}, "profile": "oltp"},
        {
            "id": 2,
            "device": "nvme:2T",
            "config": {"filesystem": "xfs", "ag_count": 32},
            "workload": {"rw": "randwrite", "bs": "4k", "iodepth": 64, "numjobs": 8},
        },
        {
            "id": 3,
            "config": {"filesystem": "btrfs", "mount": ["compress=zstd:3"]},
            "workload": {"rw": "read", "bs": "1m", "iodepth": 16},
        },
        "not an object",
        {"config": {"filesystem": "ext4"}, "bogus": 1},
    ]
    stdin = "\n".join(json.dumps(x) for x in lines) + "\n{broken\n"
    r = run("predict", "--batch", input=stdin)
    assert r.exit_code == 0, r.output
    out = [json.loads(line) for line in r.output.splitlines()]
    assert len(out) == 6
    assert [o.get("id") for o in out[:3]] == [1, 2, 3]
    assert all("predicted" in o for o in out[:3])
    assert all("error" in o and "line" in o for o in out[3:])


def test_predict_is_consistent_with_recommend():
    doc = json.loads(run("recommend", "-p", "oltp", "--json", "--top", "1").output)
    top = doc["recommendations"][0]
    one = json.loads(
        run("predict", "--config", json.dumps(top["config"]), "--profile", "oltp", "--json").output
    )
    assert one["predicted"]["ops_per_joule"] == pytest.approx(top["predicted"]["ops_per_joule"])


def test_profiles_list_and_show():
    r = run("profiles", "list")
    assert r.exit_code == 0 and "oltp" in r.output and "filebench-webserver-004" in r.output
    r = run("profiles", "show", "oltp", "--json")
    assert json.loads(r.output)["name"] == "oltp"


def test_validate_reports_cross_validated_error_both_ways():
    r = run("validate", "--json", "--folds", "3")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    for key in ("by_source_table", "by_row"):
        assert doc[key]["model"]["n"] > 100
        assert doc[key]["model"]["n"] == doc[key]["prior_only"]["n"]
    # Within the studies it has seen, the fitted model must not do worse than its priors
    # alone (across studies it may: see README, "what the embedded data can tell").
    assert (
        doc["by_row"]["model"]["median_abs_log_error"]
        <= doc["by_row"]["prior_only"]["median_abs_log_error"]
    )


def test_refit_writes_parameters_with_provenance(tmp_path):
    out = tmp_path / "cal.json"
    r = run("refit", "--output", str(out), "--folds", "3")
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["prior_scale"] in (0.1, 0.25, 0.5, 1.0)
    assert len(doc["prior_scale_search"]) == 4
    assert "how" in doc and doc["observations_used"] > 100


def test_refit_refuses_a_directory_before_the_cross_validation(tmp_path, monkeypatch):
    """A directory as --output is said at once, not after a minute of cross-validation."""
    from fsadvisor.service import advice

    def never(*a, **k):
        raise AssertionError("the cross-validation ran before the output was checked")

    monkeypatch.setattr(advice, "choose_prior_scale", never)
    with pytest.raises(FsAdvisorError, match="is a directory"):
        advice.calibrate(db=str(tmp_path / "s.db"), out=tmp_path, folds=2)


def test_calibrate_without_a_device_is_the_old_spelling_of_refit_with_a_note(tmp_path):
    out = tmp_path / "cal.json"
    r = run("calibrate", "--output", str(out), "--folds", "3")
    assert r.exit_code == 0, r.output
    assert "refitting the model is `fsadvisor refit` now" in r.output
    assert json.loads(out.read_text())["prior_scale"] in (0.1, 0.25, 0.5, 1.0)


def test_recommend_never_prints_a_ready_mkfs_for_the_root_disk():
    from fsadvisor.host.device import safety_verdict

    root_disk = "/dev/vda"
    import os

    if not os.path.exists(root_disk) or safety_verdict(root_disk).ok:
        pytest.skip("no refused root disk named /dev/vda on this machine")
    doc = json.loads(
        run("recommend", "-p", "oltp", "--device", root_disk, "--json", "--top", "2").output
    )
    for rec in doc["recommendations"]:
        assert root_disk not in rec["mkfs_command"]
        assert rec["mkfs_command"][-1] == "/dev/DEVICE"
        assert any("must not be formatted" in w for w in rec["warnings"])


def test_data_journal_is_never_offered_to_direct_io_workloads():
    doc = json.loads(run("recommend", "-p", "fio-randread-4k-j1", "--json", "--top", "50").output)
    assert doc["excluded"]["o_direct_not_honoured"] > 0
    assert not any("data=journal" in r["mount_options"] for r in doc["recommendations"])


@pytest.mark.parametrize("profile", ["oltp", "fio-randread-4k-j1"])
def test_recommend_text_keeps_each_candidates_lines_together_in_rank_order(profile, monkeypatch):
    """Each listed configuration is one block: its '#' line, then its own lines up to the
    blank line, the blocks in the ranking's order. A leader's probability of being the best
    (within the tolerance) is said in its own block, the same figure as --json's; a
    configuration outside the leading group has no such line."""
    monkeypatch.setenv("COLUMNS", "1000")  # each statement on one line
    doc = json.loads(run("recommend", "-p", profile, "--json").output)
    text = run("recommend", "-p", profile).output
    blocks = [b.splitlines() for b in text.split("\n\n") if b.startswith("#")]
    heads = [f"#{r['tie_label']} {r['config_label']}" for r in doc["recommendations"]]
    assert [b[0] for b in blocks] == heads
    leaders = {x["config"]: x["p_best"] for x in doc["confidence"]["leaders"]}
    tol = doc["confidence"]["tolerance"]
    what = f"P(within {tol:.0%} of the best)" if tol else "P(best)"
    for block, r in zip(blocks, doc["recommendations"]):
        assert block[1].startswith("   score:")
        said = [ln for ln in block if ln.startswith("   leader:")]
        p = doc["confidence"]["p_best_first"] if r["rank"] == 1 else leaders.get(r["config_label"])
        if p is None:
            assert said == [], block
        else:
            assert said == [f"   leader:    {what} {p:.2f}"], block
            assert block.index(said[0]) == 2  # beside the score it qualifies
    assert sum(any(ln.startswith("   leader:") for ln in b) for b in blocks) >= 2


@pytest.mark.parametrize(
    "profile", ["fio-randread-128k-j1", "fio-randread-128k-j8", "fio-read-4k-j4", "analytics-scan"]
)
def test_reads_on_nvme_are_a_filesystem_tie_as_the_one_nvme_study_measured_them(profile):
    """Seed 000 Obs. 4 (990 PRO, kernel 6.16, 10 runs a cell): "For read operations, all three
    file systems generally show comparable IO performance and energy efficiency". On an NVMe
    drive nothing else describes, recommend does not pick a filesystem for reads: the gap
    between the best one and the next is unresolved, its 90% interval holds zero, and it is
    within 10% (it was XFS +19%, 90% +5% to +35%, from 2010 disks' tables)."""
    doc = json.loads(run("recommend", "-p", profile, "--json").output)
    fs = doc["lead"]["worth"]["filesystem"]
    assert not fs["resolved"]
    assert fs["low"] < 0 < fs["high"]
    assert abs(fs["gain"]) < 0.10
    assert doc["summary"].startswith("What matters: nothing the data resolves")
