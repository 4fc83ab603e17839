"""The TUI driven with Textual's Pilot against a real store: what the user sees must be what
the service layer answers for the same choices, and a mistake is a notification, not a
crash."""

from __future__ import annotations

import io
import os
import re
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
        assert first[8] == f"{expected.ranked[0].prediction.energy_source}, system"
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
    path.write_text(
        'name = "mine"\ndescription = "4k random writes"\n'
        '[fio]\nrw = "randwrite"\nbs = "4k"\niodepth = 8\n'
    )
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
        await pilot.pause()  # its focus messages first (see _in_jobs)
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
        await pilot.pause()  # its focus messages first (see _in_jobs)
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
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press("space")
        await pilot.press("r")
        await settle(pilot)
        rec = app.query_one(ResultsPane).recommendation
        assert {r.config.fs for r in rec.ranked} == {"btrfs"}  # the only one with snapshots
        assert rec.excluded["missing_required_feature"] > 0
        # a floor nothing can reach: the service's one-line reason, and the app lives on
        await pilot.press("f1")
        app.query_one("#min-iops", Input).focus()
        await pilot.pause()  # its focus messages first (see _in_jobs)
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
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press(*"fast", "enter")
        await settle(pilot)
        assert any("max p99 ms must be a number" in t for t in toasts(app))
        # nothing was ranked for the bad form: no explicit run, and the live table (which
        # follows every edit) is empty and says why
        assert app.query_one(ResultsPane).explicit_runs == 0
        assert app.query_one("#live-ranked", DataTable).row_count == 0
        assert "no ranking: max p99 ms must be a number" in str(
            app.query_one("#live-status", Static).content
        )
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
async def test_the_device_tab_says_a_library_drive_name_is_accepted_and_inspects_one():
    # recommend --device takes a library drive's name; the Device tab, which resolves its
    # field the same way, says so too, and a name typed there is the library's drive.
    from fsadvisor.service.devices import library_device

    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("f2")
        hint = str(app.query_one("DevicePane Label.section").content)
        assert "library drive name" in hint and "fsadvisor devices list" in hint
        name = "samsung-pm9a3-3.84tb-u2"
        assert name in hint and library_device(name, None) is not None
        spec = app.query_one("#device-spec", Input)
        spec.value = name
        await pilot.press("enter")
        await settle(pilot)
        info = str(app.query_one("#device-info", Static).content)
        assert info.startswith("nvme, "), info
        assert not any("unknown device" in t for t in toasts(app))


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
        assert (row[0], row[1], row[4], row[5], row[6]) == (
            mid,
            "running",
            "/dev/loop7",
            "oltp",
            "3",
        )


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

    import fsadvisor.cli.app as cli

    cli.register_all()
    r = CliRunner().invoke(cli.app, ["tui", "--help"])
    assert r.exit_code == 0 and "--db" in r.output
    code = (
        "import sys, fsadvisor.cli.tui, fsadvisor.service.advice\nprint('textual' in sys.modules)"
    )
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


def want_live(app, ranked) -> list[tuple[str, ...]]:
    """The live rows for ``ranked`` as the table has room to draw them now."""
    return [present.live_row(r, app.query_one("ProfilePane")._live_width) for r in ranked]


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
        assert live_rows(app) == want_live(app, want.ranked)
        made = app.whatif.predictions_made
        best_iops = max(r.prediction.iops for r in want.ranked)
        threshold = f"{int(best_iops) - 1}"
        app.query_one("#min-iops", Input).focus()
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press(*threshold)  # no r, no Enter
        await live_settled(pilot)
        q = calls.with_constraints(oltp, min_iops=float(threshold))
        cut = advice.recommend(q, "nvme:1T", top=5)
        assert live_rows(app) == want_live(app, cut.ranked)
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
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press("backspace", "backspace", "4")
        await live_settled(pilot)
        oltp = advice.get_profile("oltp")
        want = advice.recommend(
            calls.with_workload(oltp, calls.edit_workload(oltp.workload, jobs=4)), "nvme:1T", top=5
        )
        assert live_rows(app) == want_live(app, want.ranked)
        assert app.whatif.predictions_made > made
        assert "1 job(s)" not in str(app.query_one("#live-status", Static).content)
        assert "4 job(s) x QD" in str(app.query_one("#live-status", Static).content)
        await pilot.press("x")
        await live_settled(pilot)
        assert "no ranking: jobs must be a whole number, not '4x'" in str(
            app.query_one("#live-status", Static).content
        )
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
        await pilot.pause()  # its focus messages first (see _in_jobs)
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
async def test_palette_commands_copy_the_mkfs_and_fstab_lines_and_export_json(
    tmp_path, monkeypatch
):
    import json

    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for want in (
            "Recommend",
            "Probe preview",
            "Copy mkfs and fstab lines",
            "Export recommendation (JSON)",
            "Help for this screen",
        ):
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
async def test_a_matrix_opens_to_its_measured_cells_and_exports(
    probed_store, tmp_path, monkeypatch
):
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
        assert "matrix m-new (oltp on /dev/loop9)" in str(
            app.query_one("#matrix-note", Static).content
        )
        await pilot.press("c", "j")
        await settle(pilot)
        assert json.loads((tmp_path / "fsadvisor-m-new.json").read_text()) == want
        got = list(csv.DictReader((tmp_path / "fsadvisor-m-new.csv").open()))
        assert [r["configuration"] for r in got] == [c["label"] for c in want["cells"]]
        await pilot.press("h")
        await settle(pilot)
        assert "<html" in (tmp_path / "fsadvisor-m-new.html").read_text().lower()


def drawn(plot) -> list[str]:
    """What a PlotextPlot draws at its size, as plain lines."""
    plt = plot.plt
    return [ln.rstrip() for ln in plt.uncolorize(plt.build()).splitlines()]


@pytest.mark.asyncio
async def test_p_plots_the_ranked_ops_per_joule_with_whiskers_and_p_again_goes_back():
    from textual_plotext import PlotextPlot

    from fsadvisor.service import report

    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        pane = app.query_one(ResultsPane)
        detail = app.query_one("#detail-text", Static)
        plot = app.query_one("#detail-plot", PlotextPlot)
        row_text = str(detail.content)
        assert not plot.display
        await pilot.press("p")
        await settle(pilot)
        chart = report.recommendation_chart(pane.recommendation)
        width = pane.plot_width
        # the widget draws the chart recommend --plot prints: one row a bar, at its own size
        assert plot.display and plot.size.height == chart.height()
        assert plot.size.width >= width
        lines = drawn(plot)
        assert lines[0].strip() == chart.title
        rows = [ln for ln in lines if "┤" in ln]
        assert len(rows) == len(chart.items)
        assert all(r.split("┤")[1].startswith("█") for r in rows)
        assert rows[0].split("┤")[0].strip().startswith("P #")
        assert str(detail.content) == "\n".join(chart.legend(width))
        assert "95% interval" in str(detail.content)
        await pilot.press("p")
        await settle(pilot)
        assert str(detail.content) == row_text and not plot.display


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


# ---------------------------------------------------------------------- headline and confidence


def _label_of(entry: dict) -> str:
    """A --json recommendation's configuration as FsConfig.label() spells it."""
    from fsadvisor.domain import FsConfig

    c = entry["config"]
    return FsConfig.make(
        c["filesystem"],
        mkfs=c["mkfs"],
        mount=c["mount"],
        scheduler=c["scheduler"],
        ag_count=c["ag_count"],
    ).label()


def _recommend_json(*args: str) -> dict:
    import json

    from typer.testing import CliRunner

    import fsadvisor.cli.app as cli

    cli.register_all()
    result = CliRunner().invoke(cli.app, ["recommend", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _recommend_text(*args: str) -> list[str]:
    """recommend's text lines, at a width no line wraps at."""
    from typer.testing import CliRunner

    import fsadvisor.cli.app as cli

    cli.register_all()
    result = CliRunner().invoke(cli.app, ["recommend", *args], env={"COLUMNS": "1000"})
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


@pytest.mark.asyncio
@pytest.mark.parametrize("preset", ["oltp", "build-unpack"])
async def test_recommendations_open_with_the_headline_and_the_confidence_of_recommend_json(preset):
    """The pane's first lines are recommend's headline (its JSON ``summary``), then P(best)
    of #1 and the leaders and, when tied, the cells that would settle it and how long: the
    same values `fsadvisor recommend --json` gives for the same profile and device."""
    doc = _recommend_json("-p", preset, "--top", "5")
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        pane = await recommend_for(pilot, preset)
        shown = str(app.query_one("#summary", Static).content)
        details = [detail(app)]
        for _ in pane.recommendation.ranked[1:]:
            await pilot.press("down")
            await pilot.pause()
            details.append(detail(app))
    lines = shown.splitlines()
    assert " ".join(lines[:3]) == doc["summary"]  # headline first, in words
    conf = doc["confidence"]
    assert lines[3].startswith("worth: filesystem ")  # each knob's worth, 90% intervals
    # recommend's own confidence line, word for word (its CLI test pins what it names)
    said = _recommend_text("-p", preset, "--top", "5")
    assert lines[4] == next(ln for ln in said if ln.startswith("confidence: "))
    # and what it says is the JSON's: every leader it names is in the list, with its P,
    # in the leaders' order; the ones it does not name are counted, none twice
    listed = {r["config_label"] for r in doc["recommendations"]}
    head = f"confidence: P(within {conf['tolerance']:.0%} of the best): "
    assert lines[4].startswith(head), lines[4]
    parts = lines[4][len(head) :].split("; ")
    counted = [
        p
        for p in parts
        if re.fullmatch(r"\d+( more)? leaders? (in the list|outside the shown list)", p)
    ]
    named = [tuple(p.rsplit(" ", 1)) for p in parts if p not in counted]
    p_of = {x["config"]: f"{x['p_best']:.2f}" for x in conf["leaders"]}
    assert named and all(label in listed and p == p_of[label] for label, p in named), named
    order = [x["config"] for x in conf["leaders"]]
    assert [label for label, _ in named] == [k for k in order if k in dict(named)]
    assert len(named) + sum(int(p.split()[0]) for p in counted) == len(conf["leaders"])
    outside = sum(int(p.split()[0]) for p in counted if p.endswith("outside the shown list"))
    assert outside == sum(k not in listed for k in order)
    assert conf["leaders"][0]["p_best"] == conf["p_best_first"]
    if conf["settle"]:
        from fsadvisor.service.answer import duration  # the headline's rounding too

        total_s = sum(c["seconds"] for c in conf["settle"])
        assert lines[5].startswith(
            f"tied: to settle it, measure {len(conf['settle'])} cells "
            f"(about {duration(total_s)} on this device): "
        )
        assert all(f"{c['config']} x{c['reps']}" in lines[5] for c in conf["settle"])
    else:
        assert not conf["settle"] and not lines[5].startswith("tied")
    # each row's detail gives its own P where it is one of the leaders, the one number the
    # confidence line gives it, and none where it is not
    leaders = {x["config"]: x["p_best"] for x in conf["leaders"]}
    what = f"P(within {conf['tolerance']:.0%} of the best)"
    for i, (entry, text) in enumerate(zip(doc["recommendations"], details)):
        p = conf["p_best_first"] if i == 0 else leaders.get(_label_of(entry))
        assert (f"{what} {p:.2f}" in text) if p is not None else ("P(" not in text), text


@pytest.mark.asyncio
async def test_the_ag_column_is_recommend_json_ag_count_and_a_dash_only_for_non_xfs():
    """One AG value in text, JSON and TUI: the column shows the JSON's
    ag_count for every xfs row (mkfs.xfs's default when the configuration leaves it unset)
    and "-" exactly where the JSON has null."""
    doc = _recommend_json("-p", "build-unpack", "--top", "10", "--plp", "yes")
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#plp", Select).value = "yes"
        await recommend_for(pilot, "build-unpack")
        app.query_one("#top", Input).value = "10"
        await pilot.press("r")
        await settle(pilot)
        table = app.query_one("#ranked", DataTable)
        ag = [str(table.get_row_at(i)[3]) for i in range(table.row_count)]
        fs = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
    want = [r["ag_count"] for r in doc["recommendations"]]
    assert len(ag) == len(want) == 10
    assert ag == [present.NO_AG if a is None else str(a) for a in want]
    assert all((a == present.NO_AG) == (f != "xfs") for a, f in zip(ag, fs))
    assert "xfs" in fs, "the check needs an xfs row to mean anything"


# ---------------------------------------------------------------------- two cells side by side


async def _open_matrix(pilot, matrix_id: str) -> None:
    app = pilot.app
    await settle(pilot)
    await pilot.press("f5")
    await settle(pilot)
    table = app.query_one("#history-table", DataTable)
    ids = [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]
    table.focus()
    await pilot.pause()  # its focus messages first (see _in_jobs)
    await pilot.press(*["down"] * ids.index(matrix_id), "enter")
    await settle(pilot)


@pytest.mark.asyncio
async def test_two_marked_cells_are_compared_side_by_side_with_compares_welch_verdict(probed_store):
    from fsadvisor.service import compare, matrix_results

    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await _open_matrix(pilot, "m-new")
        await pilot.press("space")  # nothing compared yet: one marked cell
        await settle(pilot)
        view = app.query_one("#compare-view", Static)
        assert "space on a second cell compares them" in plain(view.content)
        cells = app.query_one("#matrix-cells", DataTable)
        cells.focus()
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press("down", "space")
        await settle(pilot)
        shown = plain(view.content, 200)
        compared = app.query_one("HistoryPane").compared
    doc = matrix_results.matrix_cells("m-new", db=str(probed_store))
    a, b = doc["cells"][0], doc["cells"][1]  # xfs (15k IOPS / 50 W) then ext4 (10k / 50 W)
    d = compare.welch(
        a["ops_per_joule"]["mean"],
        a["ops_per_joule"]["sd"],
        a["n"],
        b["ops_per_joule"]["mean"],
        b["ops_per_joule"]["sd"],
        b["n"],
    )
    assert f"A {a['label']} (profile:oltp): {a['ops_per_joule']['mean']:,.0f} ops/J" in shown
    assert f"n = {a['n']}" in shown and f"n = {b['n']}" in shown
    assert f"B − A: {d['diff']:+,.0f} ops/J ({d['diff_pct']:+.1f}%" in shown
    # ext4 is a third below xfs with 3 tight runs each: the runs separate them
    assert "; separable: " + compare.verdict("A", "B", d, "ops/J") in shown
    assert compared["difference"]["significant"] is True


def test_compare_cells_says_when_the_runs_cannot_separate_two_cells():
    doc = {
        "matrix": {"id": "m"},
        "cells": [
            {
                "label": "a",
                "workload": "w",
                "energy": "ipmi, system",
                "n": 3,
                "ops_per_joule": {
                    "n": 3,
                    "mean": 100.0,
                    "sd": 10.0,
                    "ci95_low": 75.0,
                    "ci95_high": 125.0,
                },
                "iops": {
                    "n": 3,
                    "mean": 5000.0,
                    "sd": 500.0,
                    "ci95_low": 3700.0,
                    "ci95_high": 6200.0,
                },
            },
            {
                "label": "b",
                "workload": "w",
                "energy": "ipmi, system",
                "n": 3,
                "ops_per_joule": {
                    "n": 3,
                    "mean": 102.0,
                    "sd": 10.0,
                    "ci95_low": 77.0,
                    "ci95_high": 127.0,
                },
                "iops": {
                    "n": 3,
                    "mean": 5100.0,
                    "sd": 500.0,
                    "ci95_low": 3800.0,
                    "ci95_high": 6300.0,
                },
            },
            {
                "label": "c",
                "workload": "v",
                "energy": "none",
                "n": 1,
                "ops_per_joule": {
                    "n": 0,
                    "mean": None,
                    "sd": None,
                    "ci95_low": None,
                    "ci95_high": None,
                },
                "iops": {"n": 1, "mean": 7000.0, "sd": None, "ci95_low": None, "ci95_high": None},
            },
        ],
    }
    c = calls.compare_cells(doc, 0, 1)
    assert c["metric"] == "ops_per_joule" and c["difference"]["significant"] is False
    text = plain(present.comparison_text(c), 200)
    assert "not separable: no difference the data can see" in text
    c = calls.compare_cells(doc, 0, 2)  # no energy on one side: IOPS, and n = 1 cannot tell
    assert c["metric"] == "iops" and c["difference"] is None
    text = plain(present.comparison_text(c), 200)
    assert "1 run — no interval" in text and "cannot tell: fewer than 2 runs" in text
    assert "different workloads" in text
    with pytest.raises(calls.USER_ERRORS):
        calls.compare_cells(doc, 1, 1)


# ---------------------------------------------------------------------- plots: measured apart, device history


@pytest.mark.asyncio
async def test_g_charts_the_highlighted_matrix_device_over_time(probed_store):
    from fsadvisor.service import matrix_results

    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("f5")
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        assert type(app.screen).__name__ == "ChartScreen"
        from textual_plotext import PlotextPlot

        lines = drawn(app.screen.query_one("#chart-plot", PlotextPlot))
        shown = "\n".join(lines) + "\n" + str(app.screen.query_one("#chart-legend", Static).content)
        assert any("└" in ln for ln in lines) and any("●" in ln for ln in lines)
        await pilot.press("escape")
        await settle(pilot)
        assert type(app.screen).__name__ != "ChartScreen"
    hist = matrix_results.device_history("/dev/loop9", db=str(probed_store))
    assert [m["id"] for m in hist["matrices"]] == ["m-base", "m-new"] or sorted(
        m["id"] for m in hist["matrices"]
    ) == ["m-base", "m-new"]
    assert hist["unit"] == "ops/J"
    # one line per configuration with one point per matrix: xfs 240 -> 300 ops/J (PROBED_IOPS / 50 W)
    xfs = next(v for k, v in hist["series"].items() if k.startswith("xfs"))
    assert [round(p[1]) for p in xfs] == [240, 300]
    assert "/dev/loop9: measured ops/J per matrix" in shown
    assert "last 300 ops/J (2 matrices)" in shown


@pytest.mark.asyncio
async def test_the_plot_marks_runs_measured_on_the_device_apart_from_predictions(probed_store):
    """With runs of the profile on the recommendation's device in the store, p draws each
    measured configuration's bar (M) beside its prediction (P) and says where and how many
    runs; the same plot for a device given as a size has predictions only."""
    from fsadvisor.domain import Device
    from fsadvisor.service import report

    dev = Device(path="/dev/loop9", size_bytes=8 << 30, kind="loop", model="loop on ext4 (test)")
    rec = advice.recommend("oltp", device=dev, top=5, db=str(probed_store))
    measured = report.measured_on_device(rec, str(probed_store))
    hits = [r for r in rec.ranked if r.config.key() in measured]
    assert hits, "the check needs a measured configuration among the ranked ones"
    app = FsAdvisorApp(db=str(probed_store))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        pane = app.query_one(ResultsPane)
        before = pane.recommendation
        pane.recommendation = rec  # as if the device pane had named /dev/loop9
        await pilot.press("p")
        await settle(pilot)
        shown = str(app.query_one("#detail-text", Static).content)
        pane.recommendation = before
        await pilot.press("p", "p")
        await settle(pilot)
        unmeasured = str(app.query_one("#detail-text", Static).content)
    for r in hits:  # both probe matrices of the fixture ran it: 6 runs
        label = f"#{r.label} {report.config_label(r.config)}"  # the rank as the table's
        assert f"M {label}: measured on /dev/loop9: 6 runs" in shown
        kinds = {
            m[1] for m in re.finditer(rf"^{re.escape(label)} +(predicted|measured) ", shown, re.M)
        }
        assert kinds == {"predicted", "measured"}, shown
    assert "measured on" not in unmeasured and "M #" not in unmeasured


# ---------------------------------------------------------------------- capture from the TUI


def _block_device_of(path) -> str | None:
    """The /proc/diskstats name of the block device holding ``path`` (None on tmpfs etc.)."""
    st = os.stat(path)
    try:
        uevent = open(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/uevent").read()
    except OSError:
        return None
    return next(
        (ln.split("=", 1)[1] for ln in uevent.splitlines() if ln.startswith("DEVNAME=")), None
    )


@pytest.mark.asyncio
async def test_capture_samples_a_working_device_and_loads_its_profile_with_the_assumptions(
    tmp_path,
):
    """ctrl+g: device, seconds, file -> the service capture runs in a worker while this test
    writes and fsyncs a file on that device (the application "working"), the profile it
    wrote is loaded into the form, and its assumptions are listed to confirm."""
    import threading

    dev = _block_device_of(tmp_path)
    if dev is None:
        pytest.skip(f"{tmp_path} is not on a block device")
    out = tmp_path / "captured.toml"
    stop = threading.Event()

    def work() -> None:  # 4 KiB writes, each fsync'd: I/O the device's counters see
        with open(tmp_path / "busy.bin", "wb") as f:
            while not stop.is_set():
                f.write(os.urandom(4096))
                f.flush()
                os.fsync(f.fileno())

    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert type(app.screen).__name__ == "CaptureScreen"
        app.screen.query_one("#cap-device", Input).value = f"/dev/{dev}"
        app.screen.query_one("#cap-seconds", Input).value = "1"
        app.screen.query_one("#cap-out", Input).value = str(out)
        writer = threading.Thread(target=work)
        writer.start()
        try:
            await pilot.press("enter")
            await pilot.pause()
            await settle(pilot)
            await settle(pilot)  # the capture's worker, then the file's
        finally:
            stop.set()
            writer.join()
        prof = app.query_one("ProfilePane")
        info = plain(app.query_one("#profile-info", Static).content, 300)
        current = prof.current
    assert out.exists() and current is not None and current.ref == str(out)
    assert current.profile.name == f"captured-{dev}"
    assert current.profile == advice.get_profile(str(out))
    assert "assumptions to confirm" in info
    for line in prof.assumptions[str(out)]:
        assert line in info
    assert any("fsync" in a for a in prof.assumptions[str(out)])


@pytest.mark.asyncio
async def test_capture_of_a_device_that_does_not_exist_is_one_error_and_loads_nothing(tmp_path):
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        before = app.query_one("ProfilePane").current
        app.action_capture()
        await pilot.pause()
        app.screen.query_one("#cap-device", Input).value = "/dev/no-such-disk"
        app.screen.query_one("#cap-seconds", Input).value = "0.2"
        app.screen.query_one("#cap-out", Input).value = str(tmp_path / "x.toml")
        await pilot.press("enter")
        await settle(pilot)
        await settle(pilot)
        shown = toasts(app)
        assert app.query_one("ProfilePane").current is before
    assert any("no-such-disk is not in /proc/diskstats" in t for t in shown)
    assert not (tmp_path / "x.toml").exists()


@pytest.mark.asyncio
async def test_live_reranks_do_not_redraw_the_hidden_results_tab_until_it_is_shown():
    """Per key press the TUI redraws only what is on screen: the
    Results tab keeps the newest live answer but refills its table and detail (or plot)
    once, when it is shown."""
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await live_settled(pilot)
        pane = app.query_one(ResultsPane)
        assert pane.draws == 0 and pane.stale  # the start's live ranking, unseen so far
        app.query_one("#min-iops", Input).focus()
        gen = app.live_generation
        await pilot.press("1", "0", "0")
        await live_settled(pilot)
        assert app.live_generation > gen and pane.draws == 0
        oltp = advice.get_profile("oltp")
        want = advice.recommend(calls.with_constraints(oltp, min_iops=100.0), "nvme:1T", top=5)
        assert pane.recommendation.to_dict() == want.to_dict()
        await pilot.press("f3")
        await settle(pilot)
        assert pane.draws == 1 and not pane.stale
        table = app.query_one("#ranked", DataTable)
        assert [tuple(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)] == [
            present.ranked_row(r) for r in want.ranked
        ]
        # on screen, a live answer is drawn at once
        app.query_one("#min-iops", Input).value = "1000"
        await live_settled(pilot)
        assert pane.draws == 2


# ---------------------------------------------------------------------- layout, stale, keys


def _inside(app, selector: str) -> bool:
    """The widget is displayed and its whole region lies within the screen."""
    w = app.screen.query_one(selector)
    region, screen = w.region, app.screen.region
    return w.display and w.is_on_screen and region.height > 0 and screen.contains_region(region)


@pytest.mark.asyncio
async def test_at_120x40_the_live_ranking_stays_on_screen_while_typing_in_the_lowest_field():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await live_settled(pilot)
        assert app.screen.has_class("-wide")
        assert _inside(app, "#live-ranked") and live_rows(app)
        # the last fields of the form: the form scrolls to them, the ranking stays put
        app.query_one("#max-p99", Input).focus()
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press("5", "0")
        await live_settled(pilot)
        assert _inside(app, "#max-p99") and _inside(app, "#live-ranked")
        assert live_rows(app)


def _live_rows_whole(app) -> None:
    """Every live row is drawn whole: the table is as tall and as wide as its rows, and each
    options cell, its folds undone, is the configuration's options."""
    table = app.query_one("#live-ranked", DataTable)
    assert table.virtual_size.height <= table.size.height, (table.virtual_size, table.size)
    assert table.virtual_size.width <= table.size.width, (table.virtual_size, table.size)
    ranked = app.query_one("ProfilePane")._live_ranked
    assert ranked and len(ranked) == table.row_count
    for r, row in zip(ranked, live_rows(app), strict=True):
        unfolded = row[-1].replace("\n", " ").replace(", ", ",")
        assert unfolded == present.options_cell(r), (row, present.options_cell(r))


@pytest.mark.asyncio
async def test_the_live_rows_fold_to_the_room_the_table_has():
    """At 120x40 a row's options are on one line when they fit (folded at a fixed 20
    columns, the fifth row of the start screen was three lines in a table cut at six, and
    read "agcount=4 -o"); at 80x24 behind ctrl+l they fold, every line drawn; a resize
    refolds them. Shown on a profile whose leaders' options are wider than 20 columns and
    narrower than the table at 120 (filebench's oltp: "agcount=4 -o logbufs=8,logbsize=256k"
    among its five)."""
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await live_settled(pilot)
        options = app.query_one("#presets", OptionList)
        options.highlighted = options.get_option_index("filebench-oltp-004")
        await live_settled(pilot)
        _live_rows_whole(app)
        widest = max(
            len(present.options_cell(r)) for r in app.query_one("ProfilePane")._live_ranked
        )
        assert widest > present.LIVE_OPTIONS_WIDTH  # else the case proves nothing
        assert all("\n" not in row[-1] for row in live_rows(app))
        await pilot.resize_terminal(80, 24)
        await pilot.press("ctrl+l")
        await pilot.pause()
        await pilot.pause()
        _live_rows_whole(app)
        assert any("\n" in row[-1] for row in live_rows(app))
        await pilot.resize_terminal(*SIZE)
        await pilot.pause()
        await pilot.pause()
        _live_rows_whole(app)
        assert all("\n" not in row[-1] for row in live_rows(app))


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(100, 24), (120, 30)], ids=["100x24", "120x30"])
async def test_from_100_columns_the_live_ranking_is_above_the_form_on_a_short_screen_too(size):
    """From 100 columns the live ranking is in view without a key on fewer than 32 rows
    too, its first rows above the form, while the lowest workload field is typed into: it
    was behind ctrl+l there, as at 80x24, where the form needs the columns."""
    app = FsAdvisorApp()
    async with app.run_test(size=size) as pilot:
        await live_settled(pilot)
        assert app.screen.has_class("-short")
        assert _inside(app, "#live-ranked") and live_rows(app)
        assert not app.query_one("#live-key").display  # no key to press
        field = app.query_one("#wl-fsync-every", Input)
        field.focus()
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press("2")
        await live_settled(pilot)
        assert _inside(app, "#wl-fsync-every") and _inside(app, "#live-ranked")
        assert live_rows(app)


@pytest.mark.asyncio
async def test_at_80x24_ctrl_l_shows_the_live_ranking_from_a_field_and_its_rows_differ():
    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await live_settled(pilot)
        assert not app.query_one("#live-ranked").display  # the form needs the rows
        assert _inside(app, "#live-key") and _inside(app, "#live-status")
        jobs = app.query_one("#wl-jobs", Input)
        jobs.focus()
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press("ctrl+l")  # acts although an Input has focus
        await pilot.pause()
        assert jobs.value == "16"
        assert _inside(app, "#live-ranked") and not app.query_one("#live-key").display
        rows = live_rows(app)
        assert len(rows) > 1 and len(set(rows)) == len(rows)
        # what tells the rows apart (fs, scheduler, options) is drawn, not cut off: the
        # columns' total width fits the table
        table = app.query_one("#live-ranked", DataTable)
        assert table.virtual_size.width <= table.size.width
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert not app.query_one("#live-ranked").display


@pytest.mark.asyncio
async def test_the_recommendations_tab_is_marked_stale_while_the_form_has_no_ranking():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await recommend_for(pilot)
        await live_settled(pilot)
        note = app.query_one("#stale-note", Static)
        assert not note.display
        await pilot.press("f1")
        jobs = app.query_one("#wl-jobs", Input)
        jobs.focus()
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press("end", "x")
        await live_settled(pilot)
        await pilot.press("f3")
        await settle(pilot)
        assert note.display and _inside(app, "#stale-note")
        assert "STALE" in str(note.content) and "jobs must be a whole number" in str(note.content)
        await pilot.press("f1")
        jobs.focus()
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press("end", "backspace")
        await live_settled(pilot)
        await pilot.press("f3")
        await settle(pilot)
        assert not note.display
        # the device changed: the ranking is for the old one until r
        await pilot.press("f2")
        app.query_one("#device-spec", Input).value = "sata-ssd:480G"
        await settle(pilot)
        assert note.display and "device or top N changed" in str(note.content)


async def _in_jobs(pilot, *keys: str) -> Input:
    """The jobs field focused after the start's ranking, ``keys`` typed into it."""
    await live_settled(pilot)
    jobs = pilot.app.query_one("#wl-jobs", Input)
    jobs.focus()
    # The focus's own messages first (its tab pane tells the TabbedContent, which makes that
    # pane active): a key pressed before they are handled can switch to another tab that
    # this late message then switches back from, as no person types that fast.
    await settle(pilot)
    await pilot.press(*keys)
    await settle(pilot)
    return jobs


@pytest.mark.asyncio
async def test_an_unreadable_value_is_said_under_its_own_field():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        jobs = await _in_jobs(pilot, "end", "x")
        await live_settled(pilot)
        error = app.query_one("#field-error", Static)
        assert error.display and "jobs must be a whole number, not '16x'" in str(error.content)
        assert jobs.has_class("-invalid")
        # right under the row of the field, and on screen
        assert error.region.y == jobs.parent.region.bottom and _inside(app, "#field-error")
        # the cursor moves on to another field: the error stays with its own field
        app.query_one("#max-p99", Input).focus()
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press("9")
        await live_settled(pilot)
        assert error.display and error.region.y == jobs.parent.region.bottom
        jobs.value = "16"
        await live_settled(pilot)
        assert not error.display and not jobs.has_class("-invalid")


@pytest.mark.asyncio
async def test_r_in_a_number_field_and_ctrl_r_in_a_text_field_recommend():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        jobs = await _in_jobs(pilot, "r")
        assert jobs.value == "16" and app.query_one(ResultsPane).explicit_runs == 1
        assert app.query_one("TabbedContent").active == "results"
        await pilot.press("f1")
        path = app.query_one("#profile-path", Input)
        path.focus()
        await settle(pilot)
        await pilot.press("r")  # a letter of a path here
        assert path.value == "r"
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert app.query_one(ResultsPane).explicit_runs == 2 and path.value == "r"


def footer_keys(app) -> list[tuple[str, str]]:
    """(key shown, description) of each footer entry, left to right."""
    from textual.widgets._footer import FooterKey

    return [(k.key_display, k.description) for k in app.screen.query(FooterKey)]


@pytest.mark.asyncio
async def test_keys_type_in_a_text_field_and_their_control_twins_act_from_anywhere():
    """In a text field r, ? and q are text; ctrl+r, ctrl+/ (ctrl+underscore from most
    terminals, ctrl+slash with the kitty protocol) and F12 act there, and the footer shows
    those instead; outside a field, and for r and ? in a number field, the plain keys act."""
    from fsadvisor.tui.help import HelpScreen

    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert footer_keys(app)[:4] == [
            ("tab", "Next field"),
            ("r", "Recommend"),
            ("?", "Help"),
            ("q", "Quit"),
        ]
        await pilot.press("f2")
        spec = app.query_one("#device-spec", Input)
        assert spec.has_focus
        assert footer_keys(app)[:3] == [("tab", "Next field"), ("^r", "Recommend"), ("^/", "Help")]
        spec.value = ""
        await pilot.press("r", "question_mark", "q")
        await settle(pilot)
        assert spec.value == "r?q" and app.is_running and not isinstance(app.screen, HelpScreen)
        assert app.query_one(ResultsPane).explicit_runs == 0
        for key in ("ctrl+underscore", "ctrl+slash", "f12"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen), key
            assert str(app.screen.query_one("#help-text", Static).content).startswith("Device")
            await pilot.press(key)  # the same key closes it
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen) and spec.has_focus, key
        assert spec.value == "r?q"
        top = app.query_one("#top", Input)
        top.focus()
        await pilot.pause()
        assert ("?", "Help") in footer_keys(app) and ("r", "Recommend") in footer_keys(app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen) and top.value == "5"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


@pytest.mark.asyncio
async def test_at_80_columns_the_footer_says_how_to_get_help_wherever_the_focus_is(monkeypatch):
    """On every tab, whichever of its widgets has the focus, the footer names the help key
    (? outside a text field, ^/ in one) and every entry is whole left of the palette's: on
    the History tab its five keys pushed Help off the 80 columns. The help it opens names
    the tab keys (F1 is the Profile tab, not help) and how Enter acts where."""
    from textual.widgets._footer import FooterKey
    from fsadvisor.tui.help import HelpScreen
    from fsadvisor.tui.widgets import NumberInput

    monkeypatch.setattr(
        calls,
        "energy_sources",
        lambda: [
            {"name": "estimate", "ok": True, "auto": True, "detail": "the model's assumed power"}
        ],
    )
    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await live_settled(pilot)
        for i, tab in enumerate(("profile", "device", "results", "energy", "history", "probe"), 1):
            await pilot.press(f"f{i}")
            await settle(pilot)
            assert app.active_tab == tab
            pane = app.query_one(f"#{tab}")
            shown_widgets = [
                w
                for w in pane.query("*")
                if w.focusable and all(n.display for n in w.ancestors_with_self if n is not app)
            ]
            for widget in shown_widgets or [pane]:
                widget.focus()
                await pilot.pause()
                keys = [
                    k for k in app.screen.query(FooterKey) if not k.has_class("-command-palette")
                ]
                palette = app.screen.query_one("FooterKey.-command-palette")
                shown = [(k.key_display, k.description) for k in keys]
                # ? is text in a text field, but not in a number field (no number holds it)
                typed = isinstance(widget, Input) and not isinstance(widget, NumberInput)
                help_key = "^/" if typed else "?"
                assert (help_key, "Help") in shown, (tab, widget.id, shown)
                assert all(k.region.right <= palette.region.x for k in keys), (
                    tab,
                    widget.id,
                    shown,
                    [k.region for k in keys],
                )
        await pilot.press("f1")
        assert app.active_tab == "profile" and not isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark")
        await pilot.pause()
        text = " ".join(str(app.screen.query_one("#help-text", Static).content).split())
        assert "F1-F6 switch tabs" in text and "ctrl+/ (or F12) shows this help" in text
        assert "Keys outside a text field: r recommends, ? shows this help, q quits." in text
        assert "Enter in a text field does what its tab's button does" in text


@pytest.mark.asyncio
async def test_enter_in_each_text_field_of_the_profile_form_runs_the_ranking():
    """Every field of the Profile form but the TOML path (where Enter loads the file):
    Enter is a full recommendation, shown on the Recommendations tab, with the field's
    value ranked (jobs typed as 32 is the workload the recommendation was made for)."""
    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await live_settled(pilot)
        fields = [
            box for box in app.query_one("#profile-side").query(Input) if box.id != "profile-path"
        ]
        assert {box.id for box in fields} >= {"wl-jobs", "min-iops", "max-p99", "load", "price"}
        pane = app.query_one(ResultsPane)
        for runs, box in enumerate(fields, 1):
            await pilot.press("f1")
            box.focus()
            await pilot.pause()
            assert app.focused is box
            await pilot.press("enter")
            await live_settled(pilot)
            assert pane.explicit_runs == runs, box.id
            assert app.active_tab == "results", box.id
        await pilot.press("f1")
        jobs = app.query_one("#wl-jobs", Input)
        jobs.focus()
        jobs.value = "32"
        await live_settled(pilot)
        await pilot.press("enter")
        await live_settled(pilot)
        assert pane.explicit_runs == len(fields) + 1
        assert pane.recommendation.profile.workload.numjobs == 32


@pytest.mark.asyncio
async def test_enter_in_a_field_does_what_its_tabs_button_does():
    """Profile: recommend (the full results); Device: inspect the device (Probe: preview,
    test_probe_preview_lists_commands_and_executes_nothing)."""
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await _in_jobs(pilot, "enter")
        assert app.query_one(ResultsPane).explicit_runs == 1
        assert app.query_one("TabbedContent").active == "results"
        await pilot.press("f2")
        app.query_one("#device-spec", Input).value = "sata-ssd:480G"
        app.query_one("#top", Input).focus()
        await pilot.pause()  # its focus messages first (see _in_jobs)
        await pilot.press("enter")
        await settle(pilot)
        assert str(app.query_one("#device-info", Static).content).startswith("sata-ssd, ")
        assert app.query_one(ResultsPane).explicit_runs == 1


@pytest.mark.asyncio
async def test_boxes_show_x_only_when_ticked_and_durability_says_required():
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await live_settled(pilot)

        def drawn(sel: str) -> str:
            return app.query_one(sel).render().plain.strip()

        assert drawn("#durability") == "▐X▌ required"  # oltp requires durability
        assert drawn("#feat-snapshots") == "▐ ▌ snapshots"
        app.query_one("#feat-snapshots").value = True
        await live_settled(pilot)
        assert drawn("#feat-snapshots") == "▐X▌ snapshots"


@pytest.mark.asyncio
async def test_a_load_shows_what_number_one_is_worth_per_year_beside_the_ranking():
    from fsadvisor.service import worth
    from fsadvisor.service.worth_inputs import WorthInputs

    app = FsAdvisorApp()
    async with app.run_test(size=SIZE) as pilot:
        await live_settled(pilot)
        assert not app.query_one("#live-worth").display
        app.query_one("#load", Input).value = "20000"
        await live_settled(pilot)
        rec = app.query_one(ResultsPane).recommendation
        yw = worth.yearly_worth(rec, WorthInputs(20000.0))
        shown = str(app.query_one("#live-worth", Static).content)
        assert shown.startswith("#1 per year: " + worth.yearly_line(yw, 0))
        assert _inside(app, "#live-worth")
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert worth.yearly_line(yw, 0) in str(app.query_one("#summary", Static).content)


@pytest.mark.asyncio
async def test_history_cells_have_a_scheduler_column_and_exports_name_absolute_paths(
    probed_store, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await _open_matrix(pilot, "m-new")
        cells = app.query_one("#matrix-cells", DataTable)
        labels = [str(c.label) for c in cells.columns.values()]
        assert labels[:2] == ["configuration", "scheduler"]
        assert {str(cells.get_row_at(i)[1]) for i in range(cells.row_count)} == {"none"}
        await pilot.press("c")
        await settle(pilot)
        assert any(
            f"wrote {tmp_path / 'fsadvisor-m-new.csv'}" in " ".join(t.split()) for t in toasts(app)
        )


@pytest.mark.asyncio
async def test_h_reports_a_micro_only_matrix_for_the_profile_chosen(
    probed_store, tmp_path, monkeypatch
):
    from fsadvisor.domain import Device, FsConfig
    from fsadvisor.records import EnergyReading, RunRecord
    from fsadvisor.profiles import load_profile

    monkeypatch.chdir(tmp_path)
    w = load_profile("oltp").workload
    dev = Device(path="/dev/loop9", size_bytes=8 << 30, kind="loop", model="loop (test)")
    cfg = FsConfig.make("ext4")
    with open_store(str(probed_store)) as store:
        store.start_matrix({"reps": 1, "device": dev.path}, matrix_id="m-micro")
        store.record_run(
            RunRecord(
                cell_key=f"{cfg.key()} | 4k-randread",
                device=dev,
                config=cfg,
                workload_name="4k-randread",
                workload=w,
                rep=1,
                status="ok",
                started_at=1_790_000_000.0,
                wall_s=12.0,
                metrics={
                    "iops": 1000.0,
                    "mb_s": 4.0,
                    "p99_latency_us": 900.0,
                    "mean_latency_us": 300.0,
                },
                energy=EnergyReading(
                    source="ipmi",
                    scope="system",
                    energy_j=500.0,
                    avg_watts=50.0,
                    duration_s=10.0,
                    samples=10,
                ),
                host={"hostname": "box", "kernel": "6.18"},
                matrix_id="m-micro",
            )
        )
        store.finish_matrix("m-micro")
    app = FsAdvisorApp()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await _open_matrix(pilot, "m-micro")
        assert app.query_one("#profile-pane").ref == "oltp"
        await pilot.press("h")
        await settle(pilot)
        assert (tmp_path / "fsadvisor-m-micro.html").exists(), toasts(app)


@pytest.mark.asyncio
async def test_each_f_key_switches_to_its_tab_from_every_text_field(monkeypatch):
    """The help promises "Keys anywhere, text fields included: F1-F6 switch tabs": from a
    text field, each F key shows its tab (the one whose title names it) and puts the focus
    there, the field's text left as it was; every text field of every tab passes on at
    least one F key (all six from the first, then one each in turn)."""
    from textual.widgets import TabbedContent
    from fsadvisor.tui.app import TABS

    monkeypatch.setattr(
        calls,
        "energy_sources",
        lambda: [
            {"name": "estimate", "ok": True, "auto": True, "detail": "the model's assumed power"}
        ],
    )
    app = FsAdvisorApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await live_settled(pilot)
        tabs = app.query_one(TabbedContent)
        assert [tabs.get_tab(tab).label_text for tab, _ in TABS] == [
            f"F{i} {label}" for i, (_, label) in enumerate(TABS, 1)
        ]
        fields = [(tab, box) for tab, _ in TABS for box in app.query_one(f"#{tab}").query(Input)]
        assert {tab for tab, _ in fields} >= {"profile", "device", "probe"}
        assert len(fields) >= len(TABS)
        for j, (home, box) in enumerate(fields):
            keys = range(1, len(TABS) + 1) if j == 0 else [j % len(TABS) + 1]
            for i in keys:
                tab = TABS[i - 1][0]
                tabs.active = home
                box.focus()
                await pilot.pause()  # its focus messages first (see _in_jobs)
                assert app.focused is box, (home, box.id)
                before = box.value
                await pilot.press(f"f{i}")
                await pilot.pause()
                assert app.active_tab == tab, (box.id, f"f{i}", app.active_tab)
                assert app.focused is not None
                assert app.query_one(f"#{tab}") in app.focused.ancestors_with_self
                assert box.value == before, (box.id, f"f{i}")
