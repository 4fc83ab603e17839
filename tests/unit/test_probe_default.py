"""What `probe` does by default: with --profile, the adaptive probe (a budget stated before it
starts); --full runs the whole matrix; without a profile, a matrix of more than an hour is
refused in one line unless --full, naming its size and what to do instead. Dry runs only:
nothing is formatted here (tests/device/test_probe_adaptive.py runs the adaptive probe)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from _script import header


def run(*args: str):
    cli.register_all()
    return CliRunner().invoke(cli.app, ["probe", *args])


def test_a_profile_probes_adaptively_by_default(tmp_db):
    r = run("--scratch", "1G", "--profile", "oltp", "--dry-run", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["adaptive"] is True


def test_full_runs_the_whole_matrix(tmp_db):
    r = run("--scratch", "1G", "--profile", "oltp", "--full", "--dry-run", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert "adaptive" not in doc and doc["cells"] > 100


def test_without_a_profile_a_matrix_over_an_hour_needs_full(tmp_db, monkeypatch):
    from fsadvisor.service import probing

    monkeypatch.setattr(probing, "root_problem", lambda: None)
    monkeypatch.setattr(probing, "cleanup_stale_state", lambda db=None: probing.CleanupReport())
    r = run("--scratch", "1G")
    assert r.exit_code == 2
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "this is the whole matrix" in lines[0] and "--full" in lines[0]
    assert "give --profile NAME" in lines[0]


def test_adaptive_and_full_exclude_each_other(tmp_db):
    r = run("--scratch", "1G", "--profile", "oltp", "--adaptive", "--full", "--dry-run")
    assert r.exit_code == 2 and "exclude each other" in r.output


def test_several_profiles_are_planned_as_one_probe_before_anything_runs(tmp_path):
    # a bad second profile (or a budget too small for all of them) is refused in one line
    # before anything starts; --full and --resume take one profile; the dry run is one
    # session: one calibration, the first cells across the profiles, the split it expects
    from typer.testing import CliRunner
    import fsadvisor.cli.app as cli

    cli.register_all()
    base = ["probe", "--scratch", "1G", "--fs", "ext4,xfs", "--db", str(tmp_path / "s.db")]
    r = CliRunner().invoke(cli.app, [*base, "--profile", "oltp", "--profile", "no-such-profile"])
    assert r.exit_code == 2 and "no-such-profile" in r.output, r.output
    if (tmp_path / "s.db").exists():
        from fsadvisor.store import open_store

        with open_store(tmp_path / "s.db") as store:
            assert store.runs() == []
    r = CliRunner().invoke(
        cli.app, [*base, "--profile", "oltp", "--profile", "log-append", "--full"]
    )
    assert r.exit_code == 2 and "--full and --resume take one --profile" in r.output
    r = CliRunner().invoke(
        cli.app, [*base, "--profile", "oltp", "--profile", "log-append", "--dry-run"]
    )
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert "one session for profiles oltp, log-append" in header(lines), lines[:3]
    assert sum("calibrate the device once for every profile" in ln for ln in lines) == 1
    assert [ln.split(":")[0] for ln in lines if ln.startswith("# now: ")] == ["# now", "# now"]
    assert any(
        ln.startswith("#   1. for oltp") or ln.startswith("#   1. for log-append") for ln in lines
    ), r.output
    split = lines.index("# expected split of the device time between the profiles:")
    assert lines[split + 1].startswith("#   oltp: ") and lines[split + 2].startswith(
        "#   log-append: "
    )


def test_profile_weights_need_one_positive_number_per_profile(tmp_path):
    from typer.testing import CliRunner
    import fsadvisor.cli.app as cli

    cli.register_all()
    base = [
        "probe",
        "--scratch",
        "1G",
        "--fs",
        "ext4,xfs",
        "--db",
        str(tmp_path / "s.db"),
        "--dry-run",
        "--profile",
        "oltp",
    ]
    for weights, why in (
        ("2", "2 profiles"),
        ("2,x", "not a list of numbers"),
        ("1,0", "positive"),
    ):
        r = CliRunner().invoke(
            cli.app, [*base, "--profile", "log-append", "--profile-weights", weights]
        )
        assert r.exit_code == 2 and why in r.output, (weights, r.output)
    r = CliRunner().invoke(cli.app, [*base, "--profile-weights", "2"])
    assert r.exit_code == 2 and "several --profile" in r.output
    r = CliRunner().invoke(cli.app, [*base, "--profile", "log-append", "--profile-weights", "3,1"])
    assert r.exit_code == 0, r.output
    assert "oltp (weight 3), log-append (weight 1)" in header(r.output.splitlines())


def test_the_service_previews_a_joint_probe_as_the_cli_prints_it(tmp_path):
    """service.adaptive.adaptive_preview takes every profile and their weights (the TUI's
    preview and the CLI's dry run are one function): its lines are what the CLI prints,
    and the command it shows runs that same probe, every profile and weight included."""
    import shlex

    from fsadvisor.service import adaptive as ad
    from fsadvisor.service.request import ProbeRequest

    db = str(tmp_path / "s.db")
    request = ProbeRequest.make(
        None, scratch="1G", filesystems="ext4,xfs", db=db, profile="oltp", dry_run=True
    )
    shown = ad.adaptive_preview(
        request, ad.DEFAULT_TARGET, "2h", profiles=["oltp", "log-append"], weights=[3.0, 1.0]
    )
    assert shown.adaptive and shown.profiles == ["oltp", "log-append"]
    assert "oltp (weight 3), log-append (weight 1)" in header(shown.lines)
    argv = shlex.split(shown.command)
    assert argv[:2] == ["fsadvisor", "probe"]
    r = run(*argv[2:], "--dry-run")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == shown.lines
    r = run(*argv[2:], "--dry-run", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    # --json: the same preview unfolded, each comment one line
    unfolded = ad.adaptive_preview(
        request,
        ad.DEFAULT_TARGET,
        "2h",
        profiles=["oltp", "log-append"],
        weights=[3.0, 1.0],
        folded=False,
    )
    assert (doc["lines"], doc["profiles"], doc["budget_s"]) == (
        unfolded.lines,
        shown.profiles,
        shown.budget_s,
    )
    assert len(doc["lines"]) < len(shown.lines)  # the folded one has comments over lines
    assert (
        " ".join(doc["lines"]).replace(" # ", " ").split()
        == " ".join(shown.lines).replace(" # ", " ").split()
    )
