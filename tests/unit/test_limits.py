"""Numeric options: one table of ranges (fsadvisor.limits), checked at the CLI edge and by
the service, one line and exit code 2 for anything non-finite or out of range."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from fsadvisor import limits
from fsadvisor.errors import ConfigError

cli.register_all()
runner = CliRunner()

NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**30), 10**30))


@given(name=st.sampled_from(sorted(limits.LIMITS)), value=NUMBERS)
def test_check_accepts_exactly_the_finite_numbers_in_range(name, value):
    lim = limits.LIMITS[name]
    inside = (
        math.isfinite(value)
        and lim.lo <= value <= lim.hi
        and (not lim.whole or float(value).is_integer())
    )
    try:
        assert limits.check(name, value) == value and inside
    except ConfigError as e:
        assert not inside
        msg = str(e)
        assert "\n" not in msg and msg.startswith(f"--{name} must be") and lim.between_text in msg


@pytest.mark.parametrize("value", ["12", True, [], object()])
def test_check_refuses_what_is_no_number(value):
    with pytest.raises(ConfigError, match="must be a number"):
        limits.check("runtime", value)


def test_none_means_not_given():
    assert limits.check("runtime", None) is None


def test_the_simulator_agrees_with_the_table():
    from fsadvisor.predict import sim

    assert (limits.LIMITS["requests"].lo, limits.LIMITS["requests"].hi) == (
        sim.MIN_REQUESTS,
        sim.MAX_REQUESTS,
    )


def test_scratch_minimum_is_the_table_s():
    from fsadvisor.service import probing

    assert probing.MIN_SCRATCH_BYTES == limits.LIMITS["scratch"].lo == 320 << 20


# (command words, option, values that must be refused) for every numeric CLI option.
BAD = ["inf", "-inf", "nan", "1e308"]
CASES = [
    (["probe", "--scratch", "512M", "--dry-run"], "--runtime", BAD + ["0", "0.05", "86401"]),
    (["probe", "--scratch", "512M", "--dry-run"], "--cooldown", BAD + ["-1", "3601"]),
    (["probe", "--scratch", "512M", "--dry-run"], "--reps", ["0", "101", "-5"]),
    (["probe", "--scratch", "512M", "--dry-run"], "--idle-seconds", BAD + ["-1"]),
    (["probe", "--scratch", "512M", "--dry-run"], "--idle-watts", ["200000", "nan", "inf"]),
    (
        [
            "probe",
            "--scratch",
            "512M",
            "--dry-run",
            "--meter-log",
            "x.csv",
            "--energy",
            "meter-log",
        ],
        "--clock-offset",
        BAD + ["1e17", "-1e17"],
    ),
    (["probe", "--dry-run"], "--scratch", ["64M", "17T", "1e9"]),
    (["probe", "--scratch", "512M", "--dry-run"], "--size", ["4k", "nan"]),
    (["energy", "import-log", "ok.csv"], "--clock-offset", BAD + ["1e17"]),
    (["energy", "import-log", "ok.csv"], "--idle-watts", BAD + ["-1"]),
    (["energy", "idle"], "--seconds", BAD + ["0", "3601"]),
    (["recommend", "-p", "oltp"], "--top", ["0", "-1", "100000"]),
    (["validate"], "--folds", ["1", "51"]),
    (["refit"], "--folds", ["0", "51"]),
    (["calibrate"], "--folds", ["0"]),
    (["calibrate", "--scratch", "1G", "--dry-run"], "--reps", ["0", "101", "1000000"]),
    (["calibrate", "--scratch", "1G", "--dry-run"], "--runtime", BAD + ["0", "86401"]),
    (["simulate", "-c", '{"filesystem":"ext4"}'], "--requests", ["0", "99", "5000001"]),
    (["simulate", "-c", '{"filesystem":"ext4"}'], "--sigma", BAD + ["-0.1", "3.5"]),
    (["simulate", "-c", '{"filesystem":"ext4"}'], "--seed", ["-1"]),
    (["recommend", "-p", "oltp"], "--sector-size", ["0", "1000", "-4096", "8192"]),
    (["recommend", "-p", "oltp", "--load", "1000"], "--price", BAD + ["-1", "1e8"]),
    (["recommend", "-p", "oltp", "--load", "1000"], "--servers", ["0", "-1", "10000001"]),
    (["recommend", "-p", "oltp", "--load", "1000"], "--pue", BAD + ["0.5", "5.1"]),
    (["recommend", "-p", "oltp"], "--load", BAD + ["-1", "1e13"]),
    (["compare", "a", "b", "-p", "oltp"], "--load", BAD + ["-1"]),
    (["compare", "a", "b", "-p", "oltp", "--load", "1"], "--pue", ["0.9"]),
    (["report", "-p", "oltp"], "--top", ["0", "1001"]),
    (["report", "-p", "oltp"], "--load", ["nan", "-1"]),
    (["report", "-p", "oltp", "--load", "1"], "--servers", ["0"]),
    (["fleet", "recommend", "-p", "oltp"], "--top", ["0", "1001"]),
    (["apply", "-p", "oltp", "-d", "/dev/nvme0n1"], "--rank", ["0", "-1", "1001"]),
    (
        ["probe", "--scratch", "512M", "--dry-run", "--profile", "oltp"],
        "--target-confidence",
        BAD + ["0.4", "1", "1.0"],
    ),
    (
        ["probe", "--scratch", "512M", "--dry-run", "--profile", "oltp"],
        "--budget",
        ["1000000h", "0.5s", "0"],
    ),
    (["profiles", "capture", "--device", "/dev/loop0"], "--seconds", BAD + ["0", "3601"]),
]


@pytest.mark.parametrize("words,option,values", CASES, ids=[f"{c[0][0]}{c[1]}" for c in CASES])
def test_every_numeric_option_is_one_line_and_exit_2(
    words, option, values, tmp_db, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.csv").write_text("timestamp,watts\n1700000000,50\n1700000001,51\n")
    for v in values:
        r = runner.invoke(cli.app, [*words, f"{option}={v}"])
        assert r.exit_code == 2, (option, v, r.output, r.exception)
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("fsadvisor: "), (option, v, r.output)
        assert option in lines[0] or "idle power must be" in lines[0], lines[0]
        assert "Traceback" not in r.output and not isinstance(
            r.exception, (ValueError, OverflowError)
        )


def _numeric_options():
    def walk(c, path):
        for name, sub in getattr(c, "commands", {}).items():
            yield from walk(sub, (*path, name))
        for p in getattr(c, "params", ()):
            if p.param_type_name == "option" and p.type.name in ("int", "integer", "float"):
                yield " ".join(path), max(p.opts, key=len), p.callback

    return list(walk(cli.command_tree(), ()))


def test_every_number_option_is_checked_as_it_is_parsed():
    # A number option without a parse-time check reaches a clock, a size or a loop unchecked
    # (or is checked only deep in its service, after work has started).
    opts = _numeric_options()
    assert len(opts) >= 30
    unchecked = [
        f"{c} {o}"
        for c, o, cb in opts
        if cb is None or getattr(cb, "__qualname__", "") != "limit_option.<locals>.callback"
    ]
    assert unchecked == []
    names = {o.lstrip("-") for _, o, _ in opts}
    assert names <= set(limits.LIMITS) | set(limits.CHOICES)


def test_the_cli_option_fuzz_reaches_every_option():
    # benchmarks/fuzz_parsers.py fuzzes these 10,000 times each; here a few hundred inputs
    # in all, and the check that an in-range value parses (so refusals are the option's own).
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import fuzz_parsers

    targets = fuzz_parsers.cli_option_targets()
    assert {t.rsplit(" ", 1)[1] for t in targets} >= {
        "--top",
        "--load",
        "--pue",
        "--rank",
        "--target-confidence",
        "--sector-size",
    }
    for name, (inputs, call, own) in sorted(targets.items()):
        r = fuzz_parsers.fuzz(name, inputs, call, own, 12)
        assert r["failure"] is None, (name, r)


@pytest.mark.parametrize(
    "words,option",
    [
        (["probe"], "--runtime"),
        (["probe"], "--cooldown"),
        (["probe"], "--reps"),
        (["probe"], "--clock-offset"),
        (["probe"], "--idle-seconds"),
        (["probe"], "--scratch"),
        (["energy", "import-log"], "--clock-offset"),
        (["energy", "idle"], "--seconds"),
        (["simulate"], "--sigma"),
        (["recommend"], "--top"),
        (["recommend"], "--pue"),
        (["compare"], "--load"),
        (["report"], "--top"),
        (["apply"], "--rank"),
        (["probe"], "--target-confidence"),
        (["probe"], "--budget"),
        (["profiles", "capture"], "--seconds"),
    ],
)
def test_help_shows_each_range(words, option):
    r = runner.invoke(cli.app, [*words, "--help"], env={"COLUMNS": "400"})
    assert r.exit_code == 0
    name = option.lstrip("-")
    assert f"Range: {limits.LIMITS[name].range_text}" in " ".join(r.output.split()), r.output


def test_the_service_checks_the_same_table_for_api_callers(tmp_path):
    from fsadvisor.service import energy, probing

    db = tmp_path / "s.db"
    for kw, needle in (
        ({"runtime_s": math.inf}, "--runtime"),
        ({"cooldown_s": math.nan}, "--cooldown"),
        ({"reps": 0}, "--reps"),
        ({"idle_seconds": 1e12}, "--idle-seconds"),
        ({"idle_watts": 1e6}, "--idle-watts"),
    ):
        with pytest.raises(ConfigError, match=needle):
            probing.plan_probe(probing.ProbeRequest.make(scratch="512M", db=db, dry_run=True, **kw))
    log = tmp_path / "ok.csv"
    log.write_text("timestamp,watts\n1700000000,50\n")
    with pytest.raises(ConfigError, match="--clock-offset"):
        energy.import_meter_log(str(log), clock_offset_s=1e17, db=str(db))
    with pytest.raises(ConfigError, match="--seconds"):
        energy.energy_idle(seconds=math.nan, source="estimate")


@settings(max_examples=60, deadline=None)
@given(
    offset=st.floats(limits.LIMITS["clock-offset"].lo, limits.LIMITS["clock-offset"].hi),
    first=st.sampled_from(
        [
            "100000000",
            "1700000000",
            "99999999999",
            "9999-12-31T23:59:58+00:00",
            "1970-01-02T00:00:00+00:00",
        ]
    ),
)
def test_any_offset_in_range_gives_a_reading_not_an_os_error(offset, first, tmp_path_factory):
    from fsadvisor.energy import meterlog

    log = tmp_path_factory.mktemp("log") / "m.csv"
    log.write_text(f"timestamp,watts\n{first},50\n")
    reading = meterlog.reading_for_window(str(log), 1.7e9, 1.7e9 + 10, clock_offset_s=offset)
    assert reading.energy_j is None or math.isfinite(reading.energy_j)


def test_the_readme_lists_the_table_as_it_is():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("<!-- option-ranges:")
    start = readme.index("\n", start) + 1
    end = readme.index("<!-- /option-ranges -->")
    assert readme[start:end] == limits.readme_table()
