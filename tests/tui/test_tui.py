"""The TUI driven with Textual's Pilot against a real store: what the user sees must be what
the service layer answers for the same choices, and a mistake is a notification, not a
crash."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import sys

import pytest
from rich.console import Console
from textual.widgets import DataTable, Input, Log, OptionList, Select, Static

from fsadvisor.service import advice, energy
from fsadvisor.store import open_store
from fsadvisor.tui import calls, present
from fsadvisor.tui.app import FsAdvisorApp
from fsadvisor.tui.panes.energy import EnergyPane
from fsadvisor.tui.panes.results import ResultsPane

SIZE = (120, 40)


def plain(renderable, width: int = 118) -> str:
    """What a renderable shows, as plain text."""
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def toasts(app) -> list[str]:
    """The notifications on screen, as the user reads them."""
    return [plain(t.render()) for t in app.screen.query("Toast")]


async def settle(pilot) -> None:
    """Let every worker finish and every message it posted be handled."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def recommend_for(pilot, preset: str | None = None):
    """Highlight ``preset`` in the list the way the keyboard does, press r, wait."""
    app = pilot.app
    await settle(pilot)  # the presets are read in a worker
    options = app.query_one("#presets", OptionList)
    options.focus()
    if preset is not None:
        target = options.get_option_index(preset)
        step = "down" if target > options.highlighted else "up"
        await pilot.press(*[step] * abs(target - options.highlighted))
        assert options.get_option_at_index(options.highlighted).id == preset
    await pilot.press("r")
    await settle(pilot)
    return app.query_one(ResultsPane)


def detail(app) -> str:
    return str(app.query_one("#detail-text", Static).content)


@pytest.mark.asyncio
async def test_recommend_shows_what_the_service_ranks():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)  # the presets are read in a worker
        pane = await recommend_for(pilot, "rocksdb-ycsb-a")
        assert app.query_one("TabbedContent").active == "results"
        table = app.query_one("#ranked", DataTable)
        expected = advice.recommend("rocksdb-ycsb-a", top=5)
        assert table.row_count == len(expected.ranked) == 5
        first = table.get_row_at(0)
        assert first[1] == expected.ranked[0].config.fs
        assert pane.recommendation.ranked[0].config == expected.ranked[0].config
        assert tuple(first) == present.ranked_row(expected.ranked[0])
        # the energy label says where the figure comes from and in which power scope
        assert first[6] == f"{expected.ranked[0].prediction.energy_source}, system"
        assert "rocksdb-ycsb-a" in str(app.query_one("#summary", Static).content)


@pytest.mark.asyncio
async def test_selecting_a_row_fills_the_detail_pane():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)  # the presets are read in a worker
        pane = await recommend_for(pilot)
        ranked = pane.recommendation.ranked
        assert shlex.join(ranked[0].commands["mkfs"]) in detail(app)
        await pilot.press("down")
        await pilot.pause()
        text = detail(app)
        second = ranked[1]
        assert text.startswith("#2 ")
        assert shlex.join(second.commands["mkfs"]) in text
        assert second.commands["fstab"] in text
        assert second.commands["udev"] in text
        assert all(w in text for w in second.why)


@pytest.mark.asyncio
async def test_unknown_profile_path_is_a_notification_not_a_crash(tmp_path):
    missing = tmp_path / "no-such-profile.toml"
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        before = app.query_one("#presets", OptionList).option_count
        assert before > 0
        path_input = app.query_one("#profile-path", Input)
        path_input.focus()
        path_input.value = str(missing)
        await pilot.press("enter")
        await settle(pilot)
        assert app.is_running
        shown = " ".join(toasts(app))
        assert "cannot read" in shown and "no-such-profile.toml" in shown
        assert app.query_one("#presets", OptionList).option_count == before


@pytest.mark.asyncio
async def test_a_profile_toml_file_is_loaded_and_ranked(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\ndescription = "4k random writes"\n'
                    '[fio]\nrw = "randwrite"\nbs = "4k"\niodepth = 8\n')
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)  # the presets are read in a worker
        path_input = app.query_one("#profile-path", Input)
        path_input.focus()
        path_input.value = str(path)
        await pilot.press("enter")
        await settle(pilot)
        assert "mine" in str(app.query_one("#profile-info", Static).content)
        app.query_one("#presets", OptionList).focus()
        await pilot.press("r")
        await settle(pilot)
        got = app.query_one(ResultsPane).recommendation
        assert got.profile.name == "mine"
        assert got.ranked[0].config == advice.recommend(str(path)).ranked[0].config


@pytest.mark.asyncio
async def test_plp_yes_widens_the_search():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)  # the presets are read in a worker
        unknown = (await recommend_for(pilot, "oltp")).recommendation
        await pilot.press("f1")
        app.query_one("#plp", Select).focus()
        await pilot.press("enter", "down", "enter")  # open, move to "yes", choose
        await pilot.pause()
        assert app.query_one("#plp", Select).value == "yes"
        await pilot.press("r")
        await settle(pilot)
        yes = app.query_one(ResultsPane).recommendation
        hazard = "durability_hazard_not_allowed"
        assert yes.excluded[hazard] < unknown.excluded[hazard]
        assert yes.excluded == advice.recommend("oltp", plp="yes").excluded
        assert yes.device.plp == "yes"
        assert "PLP yes" in str(app.query_one("#summary", Static).content)


@pytest.mark.asyncio
async def test_required_feature_and_impossible_minimum():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)  # the presets are read in a worker
        app.query_one("#feat-snapshots").focus()
        await pilot.press("space")
        await pilot.press("r")
        await settle(pilot)
        rec = app.query_one(ResultsPane).recommendation
        assert {r.config.fs for r in rec.ranked} == {"btrfs"}  # the only one with snapshots
        assert rec.excluded["missing_required_feature"] > 0
        # a floor nothing can reach: the service's one-line reason, and the app lives on
        await pilot.press("f1")
        app.query_one("#min-iops", Input).focus()
        await pilot.press(*"1e12", "enter")
        await settle(pilot)
        assert app.is_running
        assert any("no configuration satisfies" in t for t in toasts(app))
        assert "no configuration satisfies" in str(app.query_one("#summary", Static).content)


@pytest.mark.asyncio
async def test_a_typo_in_the_form_is_named_and_nothing_runs():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)  # the presets are read in a worker
        app.query_one("#max-p99", Input).focus()
        await pilot.press(*"fast", "enter")
        await settle(pilot)
        assert any("max p99 ms must be a number" in t for t in toasts(app))
        # nothing was ranked for the bad form: no explicit run, and the live table (which
        # follows every edit) is empty and says why
        assert app.query_one(ResultsPane).explicit_runs == 0
        assert app.query_one("#live-ranked", DataTable).row_count == 0
        assert "no ranking: max p99 ms must be a number" in str(
            app.query_one("#live-status", Static).content)
        assert app.query_one("TabbedContent").active == "profile"


@pytest.mark.asyncio
async def test_device_spec_is_inspected_and_a_bad_one_reported():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)  # the presets are read in a worker
        await pilot.press("f2")
        spec = app.query_one("#device-spec", Input)
        assert spec.has_focus and spec.value == "nvme:1T"
        spec.value = "sata-ssd:480G"
        await pilot.press("enter")
        await settle(pilot)
        info = str(app.query_one("#device-info", Static).content)
        assert info.startswith("sata-ssd, ") and "480g" in info
        spec.value = "floppy:1M"
        await pilot.press("enter")
        await settle(pilot)
        assert app.is_running
        assert any("unknown device kind 'floppy'" in t for t in toasts(app))
        spec.value = "/dev/fsadvisor-no-such-disk"  # a path is inspected, read-only
        await pilot.press("enter")
        await settle(pilot)
        assert any("/dev/fsadvisor-no-such-disk: no such file" in t for t in toasts(app))
        assert "not usable" in str(app.query_one("#device-info", Static).content)
        # the recommendation uses the device typed here
        # r typed into an input is a letter, not "recommend"
        spec.value = "nvme:1.92"
        spec.cursor_position = len(spec.value)
        await pilot.press("T", "r")
        assert spec.value == "nvme:1.92Tr" and app.query_one(ResultsPane).explicit_runs == 0
        assert app.query_one("TabbedContent").active == "device"
        spec.value = "nvme:1.92T"
        await pilot.press("f1", "r")
        await settle(pilot)
        rec = app.query_one(ResultsPane).recommendation
        assert rec.device == advice.resolve_device("nvme:1.92T")


@pytest.mark.asyncio
async def test_energy_tab_lists_every_source_with_its_reason():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)  # the presets are read in a worker
        await pilot.press("f4")
        await settle(pilot)
        pane = app.query_one(EnergyPane)
        expected = energy.energy_check()
        assert [s["name"] for s in pane.sources] == [s["name"] for s in expected]
        shown = plain(app.query_one("#energy-sources", Static).content)
        lines = {line.split()[0]: line for line in shown.splitlines() if line.strip()}
        for s in expected:
            assert ("not available" if not s["ok"] else "available") in lines[s["name"]]
        rapl = next(s for s in expected if s["name"] == "rapl")
        if not os.path.exists("/sys/class/powercap"):  # this machine: no RAPL
            assert not rapl["ok"]
            assert "not available" in lines["rapl"]
            assert "/sys/class/powercap absent" in lines["rapl"]


@pytest.mark.asyncio
async def test_history_lists_probe_runs_from_the_store(tmp_env):
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)  # the presets are read in a worker
        await pilot.press("f5")
        await settle(pilot)
        assert app.query_one("#history-table", DataTable).row_count == 0
        assert "No probe runs" in str(app.query_one("#history-note", Static).content)
        with open_store(tmp_env) as store:
            mid = store.start_matrix({"reps": 3, "device": "/dev/loop7", "profile": "oltp"})
        await pilot.press("f1", "f5")  # the tab re-reads the store when opened
        await settle(pilot)
        table = app.query_one("#history-table", DataTable)
        assert table.row_count == 1
        row = table.get_row_at(0)
        assert (row[0], row[1], row[4], row[5], row[6]) == (mid, "running", "/dev/loop7", "oltp", "3")


@pytest.mark.asyncio
async def test_probe_preview_lists_commands_and_executes_nothing(tmp_path):
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)  # the presets are read in a worker
        await pilot.press("f6")
        assert app.query_one("#probe-target", Input).has_focus
        await pilot.press("enter")
        await settle(pilot)
        lines = list(app.query_one("#probe-lines", Log).lines)
        assert lines[0].startswith("# fsadvisor probe --dry-run")
        assert any(line.startswith("mkfs.xfs") for line in lines)
        command = str(app.query_one("#probe-command", Static).content)
        assert "fsadvisor probe --scratch 1G --profile oltp --quick" in command
        # the tab also runs real probes now (tests/tui/test_probe_tab.py): its note says
        # which button does what
        note = str(app.query_one("#probe-note", Static).content)
        assert "FORMATS" in note and "Preview runs nothing" in note
        # no scratch file was created: a preview executes nothing
        assert not any(p.name.startswith("fsadvisor-scratch") for p in tmp_path.iterdir())
        target = app.query_one("#probe-target", Input)
        target.value = "scratch:1M"
        await pilot.press("enter")
        await settle(pilot)
        assert any("--scratch must be at least" in t for t in toasts(app))


def test_calls_recommend_is_advice_recommend_for_an_unedited_preset():
    prof = advice.get_profile("log-append")
    got = calls.recommend(prof, "nvme:2T", top=3)
    want = advice.recommend("log-append", device="nvme:2T", top=3)
    assert [r.config for r in got.ranked] == [r.config for r in want.ranked]
    assert got.excluded == want.excluded


def test_tui_command_is_registered_and_textual_stays_lazy():
    from typer.testing import CliRunner

    import fsadvisor.cli as cli

    cli._register()
    r = CliRunner().invoke(cli.app, ["tui", "--help"])
    assert r.exit_code == 0 and "--db" in r.output
    code = ("import sys, fsadvisor.cli.tui, fsadvisor.service.advice\n"
            "print('textual' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------- live what-if

async def live_settled(pilot) -> None:
    """Wait until no live re-rank is running or wanted (each run is one thread worker)."""
    app = pilot.app
    for _ in range(200):
        await settle(pilot)
        if not app._live_busy and not app._live_wanted:
            return
    raise AssertionError("the live re-rank never settled")


def live_rows(app) -> list[tuple[str, ...]]:
    table = app.query_one("#live-ranked", DataTable)
    return [tuple(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]


@pytest.mark.asyncio
async def test_typing_a_constraint_reranks_live_without_r():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await live_settled(pilot)
        oltp = advice.get_profile("oltp")
        want = advice.recommend(oltp, "nvme:1T", top=5)
        assert live_rows(app) == [present.ranked_row(r) for r in want.ranked]
        made = app.whatif.predictions_made
        best_iops = max(r.prediction.iops for r in want.ranked)
        threshold = f"{int(best_iops) - 1}"
        app.query_one("#min-iops", Input).focus()
        await pilot.press(*threshold)  # no r, no Enter
        await live_settled(pilot)
        q = calls.with_constraints(oltp, min_iops=float(threshold))
        cut = advice.recommend(q, "nvme:1T", top=5)
        assert live_rows(app) == [present.ranked_row(r) for r in cut.ranked]
        assert cut.excluded["fails_min_iops"] > 0
        assert app.whatif.predictions_made == made  # refiltered, never predicted again
        # the Results tab follows too, and no toast was raised per key press
        assert app.query_one(ResultsPane).recommendation.to_dict() == cut.to_dict()
        assert app.query_one(ResultsPane).explicit_runs == 0
        assert toasts(app) == []
        assert app.query_one("TabbedContent").active == "profile"


@pytest.mark.asyncio
async def test_a_workload_edit_predicts_again_and_a_bad_one_is_said_once_under_the_form():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await live_settled(pilot)
        made = app.whatif.predictions_made
        jobs = app.query_one("#wl-jobs", Input)
        assert jobs.value == "16"  # oltp's own
        jobs.focus()
        await pilot.press("backspace", "backspace", "4")
        await live_settled(pilot)
        oltp = advice.get_profile("oltp")
        want = advice.recommend(calls.with_workload(oltp, calls.edit_workload(oltp.workload, jobs=4)),
                                "nvme:1T", top=5)
        assert live_rows(app) == [present.ranked_row(r) for r in want.ranked]
        assert app.whatif.predictions_made > made
        assert "1 job(s)" not in str(app.query_one("#live-status", Static).content)
        assert "4 job(s) x QD" in str(app.query_one("#live-status", Static).content)
        await pilot.press("x")
        await live_settled(pilot)
        assert "no ranking: jobs must be a whole number, not '4x'" in str(
            app.query_one("#live-status", Static).content)
        assert live_rows(app) == [] and toasts(app) == []


@pytest.mark.asyncio
async def test_changing_the_preset_keeps_the_plp_answer():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await live_settled(pilot)
        plp = app.query_one("#plp", Select)
        assert plp.value == "unknown"
        plp.value = "yes"  # what choosing it in the dropdown does
        await live_settled(pilot)
        options = app.query_one("#presets", OptionList)
        options.focus()
        await pilot.press("down")
        await live_settled(pilot)
        assert options.get_option_at_index(options.highlighted).id != "oltp"
        assert plp.value == "yes"
        assert app.query_one(ResultsPane).recommendation.device.plp == "yes"


# ---------------------------------------------------------------------- discoverability

@pytest.mark.asyncio
async def test_question_mark_opens_help_for_the_current_tab_and_escape_closes_it():
    from fsadvisor.tui.help import HelpScreen

    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text", Static).content)
        assert "Profile: what the application does" in text
        assert "90% interval" in text and "operations per joule" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f3", "question_mark")
        await pilot.pause()
        assert str(app.screen.query_one("#help-text", Static).content).startswith("Recommendations")


@pytest.mark.asyncio
async def test_the_first_tab_lands_on_a_visible_field():
    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.focused.id == "presets"
        await pilot.press("tab")
        await pilot.pause()
        focused = app.focused
        assert isinstance(focused, Input) and focused.id == "wl-jobs"
        region = focused.region
        assert region.width > 0 and region.right <= 80 and region.bottom <= 24


@pytest.mark.asyncio
async def test_palette_commands_copy_the_mkfs_and_fstab_lines_and_export_json(tmp_path, monkeypatch):
    import json

    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for want in ("Recommend", "Probe preview", "Copy mkfs and fstab lines",
                     "Export recommendation (JSON)", "Help for this screen"):
            assert want in titles
        results = app.query_one(ResultsPane)
        live = results.recommendation  # the live ranking of the start screen
        results.recommendation = None  # as before any ranking (e.g. a form that has none)
        app.action_copy_commands()
        await pilot.pause()
        assert any("press r first" in t for t in toasts(app))
        results.recommendation = live
        await pilot.press("r")
        await settle(pilot)
        rec = app.query_one(ResultsPane).recommendation
        top = rec.ranked[0].commands
        copied = []
        monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
        app.action_copy_commands()
        assert copied == [f"{shlex.join(top['mkfs'])}\n{top['fstab']}\n"]
        out = tmp_path / "rec.json"
        app.action_export_json(str(out))
        assert json.loads(out.read_text()) == json.loads(json.dumps(rec.to_dict(), default=str))
        app.action_probe_preview()
        await settle(pilot)
        assert app.active_tab == "probe"
        assert "fsadvisor probe" in str(app.query_one("#probe-command", Static).content)


# ---------------------------------------------------------------------- history you can open

@pytest.mark.asyncio
async def test_a_matrix_opens_to_its_measured_cells_and_exports(probed_store, tmp_path, monkeypatch):
    import csv
    import json

    from fsadvisor.service import matrix_results

    monkeypatch.chdir(tmp_path)
    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("f5")
        await settle(pilot)
        table = app.query_one("#history-table", DataTable)
        assert table.has_focus
        await pilot.press("c")  # nothing opened yet: said so
        await settle(pilot)
        assert any("open a matrix first" in t for t in toasts(app))
        ids = [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]
        await pilot.press(*["down"] * ids.index("m-new"), "enter")
        await settle(pilot)
        want = matrix_results.matrix_cells("m-new", db=str(probed_store))
        cells = app.query_one("#matrix-cells", DataTable)
        rows = [tuple(str(c) for c in cells.get_row_at(i)) for i in range(cells.row_count)]
        assert rows == [present.matrix_row(c) for c in want["cells"]] and len(rows) == 2
        assert "matrix m-new (oltp on /dev/loop9)" in str(app.query_one("#matrix-note", Static).content)
        await pilot.press("c", "j")
        await settle(pilot)
        assert json.loads((tmp_path / "fsadvisor-m-new.json").read_text()) == want
        got = list(csv.DictReader((tmp_path / "fsadvisor-m-new.csv").open()))
        assert [r["configuration"] for r in got] == [c["label"] for c in want["cells"]]
        await pilot.press("h")
        await settle(pilot)
        assert "<html" in (tmp_path / "fsadvisor-m-new.html").read_text().lower()


@pytest.mark.asyncio
async def test_p_plots_the_ranked_ops_per_joule_with_whiskers_and_p_again_goes_back():
    from fsadvisor.service import report

    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        pane = app.query_one(ResultsPane)
        detail = app.query_one("#detail-text", Static)
        row_text = str(detail.content)
        await pilot.press("p")
        await settle(pilot)
        width = max(app.query_one("#detail").size.width - 2, 40)
        shown = str(detail.content)
        assert shown == report.plot_recommendation(pane.recommendation, width)
        assert "P #1 " in shown and "95% interval" in shown and "│" in shown
        await pilot.press("p")
        await settle(pilot)
        assert str(detail.content) == row_text


@pytest.mark.asyncio
async def test_enter_on_a_preset_recommends_it():
    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        options = app.query_one("#presets", OptionList)
        assert options.has_focus
        await pilot.press("down", "enter")
        await settle(pilot)
        chosen = options.get_option_at_index(options.highlighted).id
        pane = app.query_one(ResultsPane)
        assert app.active_tab == "results" and pane.explicit_runs == 1
        assert pane.recommendation.profile.name == chosen
