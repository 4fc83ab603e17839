"""Issue 12 §9: CLI hygiene — --version, -h, one-line usage errors with exit 2, no silent
directory trees for --db, meter-log errors exit 2, conflicting/repeated options explained."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import fsadvisor
import fsadvisor.cli.app as cli
from fsadvisor.cli.probe import quick_override_note
from fsadvisor.cli.simulate import combine_vary

cli.register_all()
runner = CliRunner()


def main(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        cli.main(list(argv))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_version_and_short_help(capsys):
    code, out, _ = main(capsys, "--version")
    assert code == 0 and out.strip() == f"fsadvisor {fsadvisor.__version__}"
    code, out, _ = main(capsys, "-h")
    assert code == 0 and "Usage: fsadvisor" in out
    code, out, _ = main(capsys, "recommend", "-h")
    assert code == 0 and "--profile" in out


@pytest.mark.parametrize(
    "argv, words",
    [
        (["recommend", "--bogus"], "No such option: --bogus"),
        (["recommend"], "Missing option '--profile'"),
        (["no-such-command"], "No such command"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(capsys, argv, words):
    code, out, err = main(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fsadvisor: ") and words in lines[0] and "--help" in lines[0]
    assert "╭" not in err and "│" not in err


def test_db_in_a_missing_directory_is_an_error_and_creates_nothing(tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "store.db"
    r = runner.invoke(cli.app, ["recommend", "-p", "oltp", "--top", "1", "--db", str(target)])
    assert r.exit_code == 2
    assert "does not exist" in r.output and len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "no").exists()


def test_meter_log_that_is_not_one_exits_2(tmp_path):
    bogus = tmp_path / "notes.txt"
    bogus.write_text("dear diary\nnothing here\n")
    r = runner.invoke(cli.app, ["energy", "import-log", str(bogus)])
    assert r.exit_code == 2 and "no valid (timestamp, watts) rows" in r.output
    r = runner.invoke(cli.app, ["energy", "check", "--meter-log", str(tmp_path / "missing.csv")])
    assert r.exit_code == 2 and "not found" in r.output


def test_quick_with_reps_is_explained():
    assert quick_override_note(False, 5, None) is None
    assert quick_override_note(True, None, None) is None
    note = quick_override_note(True, 5, None)
    assert "--quick with 5 repetitions per cell (--reps)" in note and "instead of its 1 rep" in note
    assert "2 s runs (--runtime)" in quick_override_note(True, None, 2.0)


def test_repeated_vary_combines_or_is_refused():
    assert combine_vary(None) is None
    assert combine_vary(["bs=4k,128k"]) == "bs=4k,128k"
    assert combine_vary(["numjobs=1,4", "numjobs=16", "numjobs=4"]) == "numjobs=1,4,16"
    r = runner.invoke(
        cli.app,
        [
            "simulate",
            "-c",
            '{"filesystem":"xfs"}',
            "-p",
            "oltp",
            "--vary",
            "numjobs=1,4",
            "--vary",
            "iodepth=1,32",
        ],
    )
    assert r.exit_code == 2 and "--vary takes one knob" in r.output
