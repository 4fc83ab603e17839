"""What a person reads never shows the program's internals: no configuration key
("ext4 [] () none"), no Python repr (FsConfig(...), {'...': ...}, None, True), in the human
output of the commands that print configurations, and in the files apply writes."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

import fsadvisor.cli.app as cli

INTERNAL = re.compile(
    r"\[[^\]]*\] \([^)]*\) (none|mq-deadline|kyber|bfq)\b"  # FsConfig.key()
    r"|\b(FsConfig|Workload|Device|Prediction|Ranked)\("  # a dataclass repr
    r"|\{'[a-z_]+': "  # a dict repr
    r"|\bNone\b|\bTrue\b|\bFalse\b"
)

COMMANDS = [
    ["recommend", "-p", "oltp"],
    [
        "recommend",
        "-p",
        "fio-randwrite-4k-j1",
        "--device",
        "samsung-pm9a3-3.84tb-u2",
        "--plp",
        "yes",
        "--load",
        "20000",
    ],
    ["predict", "--config", '{"filesystem": "xfs", "mount": ["noatime"]}', "-p", "oltp"],
    ["compare", "-p", "oltp", "1", "2"],
    ["compare", "-p", "oltp", "1", "2", "--plot"],
    ["recommend", "-p", "oltp", "--plot"],
    ["devices", "list"],
    ["simulate", "-c", '{"filesystem": "ext4"}', "-p", "oltp", "--requests", "2000"],
    ["apply", "--rank", "1", "-p", "oltp", "--device", "/dev/nvme0n1", "--mount-unit", "--dry-run"],
    # a probe's preview names each cell as a person reads it, and the adaptive probe's
    # first choices say why in words
    [
        "probe",
        "--scratch",
        "1G",
        "--dry-run",
        "--fs",
        "ext4,xfs",
        "--workloads",
        "4k-randread-qd32",
        "--reps",
        "1",
        "--full",
    ],
    ["probe", "--scratch", "1G", "--dry-run", "--fs", "ext4,xfs", "--profile", "oltp"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:2]) for a in COMMANDS])
def test_human_output_carries_no_internal_token(args, tmp_db):
    cli.register_all()
    r = CliRunner().invoke(cli.app, args)
    assert r.exit_code == 0, r.output
    bad = [ln for ln in r.output.splitlines() if INTERNAL.search(ln)]
    assert not bad, bad[:5]


def test_the_files_apply_writes_carry_no_internal_token(tmp_path):
    from fsadvisor.catalog.artifacts import build
    from fsadvisor.catalog.udev import Target
    from fsadvisor.domain import FsConfig

    cfg = FsConfig.make(
        "xfs", {"inode_size": 1024}, ["noatime"], scheduler="mq-deadline", ag_count=8
    )
    a = build(cfg, Target("/dev/nvme0n1", "nvme0n1"), "/srv/data", with_mount_unit=True)
    for name, text in a.files.items():
        bad = [
            ln
            for ln in text.splitlines()
            if INTERNAL.search(ln)
            and not ln.lstrip().startswith(
                ("when:", "failed_when:", "changed_when:", "create:", "enabled:", "daemon_reload:")
            )
        ]
        assert not bad, (name, bad[:5])


def _read_back(text: str) -> float:
    """A number as compare prints it ("1,131.9", "14.81k") as a float."""
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(text[-1], 1.0)
    return float(text.rstrip("kMG").replace(",", "")) * scale


def test_compare_prints_the_numbers_its_json_holds(tmp_db):
    """Each configuration's mean and 95% interval read as compare --json has them: the
    upper end 14,807 ops/J printed as '1.48k' (a tenth of it) beside a plot that showed
    14.8k."""
    import json

    cli.register_all()
    args = ["compare", "-p", "oltp", "1", "2"]
    doc = json.loads(CliRunner().invoke(cli.app, [*args, "--json"]).output)
    shown = CliRunner().invoke(cli.app, args).output
    printed = re.findall(r"predicted (\S+) \[(\S+) – (\S+)\]", shown)
    assert len(printed) == len(doc["entries"]) == 2, shown
    for entry, numbers in zip(doc["entries"], printed):
        stat = entry["predicted"]
        for want, text in zip((stat["mean"], stat["low"], stat["high"]), numbers):
            assert _read_back(text) == pytest.approx(want, rel=0.01), (text, want)
    assert any(entry["predicted"]["high"] >= 1e4 for entry in doc["entries"])  # a 'k' one


# Any figure as printed: "2,100,000", "0.045", "61.3" (an interval's two ends are two).
FIGURE = re.compile(r"\d[\d,.]*")
TABLES = {
    "devices list": (["devices", "list"], ("name", "PLP")),
    "simulate": (
        [
            "simulate",
            "-c",
            '{"filesystem": "ext4"}',
            "-p",
            "oltp",
            "--requests",
            "2000",
            "--vary",
            "numjobs=1,4,16",
        ],
        ("variant", "model ops/s"),
    ),
}


def _at(columns: int, args: list[str]) -> list[str]:
    cli.register_all()
    r = CliRunner().invoke(cli.app, args, env={"COLUMNS": str(columns)})
    assert r.exit_code == 0, r.output
    return r.output.splitlines()


@pytest.mark.parametrize("name", TABLES)
def test_a_table_fits_80_columns_with_every_figure_and_keeps_its_rows_at_120(name, tmp_db):
    """At 80 columns every line fits and the same figures are there, none cut, as in the
    widest layout; at 120 the header (and so each row) is still one line from its first
    column to its last but one, the wide layout."""
    args, (first, last) = TABLES[name]
    narrow, wide, widest = _at(80, args), _at(120, args), _at(400, args)
    assert [ln for ln in narrow if len(ln) > 80] == []
    assert [ln for ln in wide if len(ln) > 120] == []
    assert sorted(FIGURE.findall("\n".join(narrow))) == sorted(FIGURE.findall("\n".join(widest)))
    assert any(ln.startswith(first) and last in ln for ln in wide), wide[:12]
    assert any(ln.startswith(first) and last in ln for ln in widest), widest[:12]
    assert not any(ln.startswith(first) and last in ln for ln in narrow), narrow[:12]


@pytest.mark.parametrize("columns", [80, 120])
def test_recommend_plot_legend_names_each_configuration_in_words(columns, tmp_db):
    """Under recommend --plot, one legend line per ranked configuration: its rank as the list
    above prints it, then "predicted" in words and its figures, never a code such as
    "1.P #1 xfs"; every line of it within the terminal."""
    import json

    cli.register_all()
    doc = json.loads(CliRunner().invoke(cli.app, ["recommend", "-p", "oltp", "--json"]).output)
    ranks = sorted(f"#{r['tie_label']}" for r in doc["recommendations"])
    lines = _at(columns, ["recommend", "-p", "oltp", "--plot"])
    key = next(i for i, ln in enumerate(lines) if ln.startswith("│──│ under a bar"))
    assert "P predicted by the model, M measured" in lines[key]
    legend = lines[key + 1 :]
    assert [ln for ln in lines[key:] if len(ln) > columns] == []
    assert sorted(ln.split()[0] for ln in legend) == ranks, legend
    assert all(re.search(r"\S {2,}predicted +[\d,.]+k?  \(95%: ", ln) for ln in legend), legend
    assert not [ln for ln in lines if re.match(r"\s*\d+\.[MP] ", ln)]
    # the list above names the same ranks
    assert (
        sorted(
            ln.split()[0]
            for ln in lines
            if re.match(r"#\d+=? ", ln)
            and ln in {f"#{r['tie_label']} {r['config_label']}" for r in doc["recommendations"]}
        )
        == ranks
    )


PROSE = [
    ["profiles", "list"],
    ["db", "info"],
    ["energy", "check"],
    ["devices", "show", "samsung-pm9a3-3.84tb-u2"],
    ["predict", "-c", '{"filesystem": "xfs"}', "-p", "oltp"],
]


@pytest.mark.parametrize("args", PROSE, ids=[" ".join(a[:2]) for a in PROSE])
def test_listings_wrap_to_80_columns_between_words(args, tmp_db):
    """At 80 columns a line is wider only where it is one word (a path, a URL); the words,
    and so every figure, are those of the unwrapped text, in the same order."""
    _at(1000, args)  # the first command seeds the store (db info's size changes with it)
    narrow, widest = _at(80, args), _at(1000, args)
    assert [ln for ln in narrow if len(ln) > 80 and len(ln.split()) > 1] == []
    assert "\n".join(narrow).split() == "\n".join(widest).split()
    assert len(narrow) > len(widest)  # something was wrapped: the test can tell


def test_compare_names_measured_runs_in_words_within_80_columns(probed_store):
    """A configuration measured on the store's device: its runs are listed as "runs 1, 2,
    3" (never a Python list, "[1, 2, 3]"), in the entry, the yearly basis and the verdict;
    at 80 columns only a one-word line may be wider, the words those of the unwrapped
    text."""
    args = ["compare", "-p", "oltp", "1", "2", "--load", "20000"]
    _at(1000, args)
    narrow, widest = _at(80, args), _at(1000, args)
    text = "\n".join(widest)
    assert re.search(r"measured .*\(runs \d+(, \d+)+, ipmi\)", text), text
    assert re.search(r"measured \(runs \d+(, \d+)+ on ", text), text
    assert not re.search(r"\[\d+(, \d+)*\]", text), text
    assert [ln for ln in narrow if len(ln) > 80 and len(ln.split()) > 1] == []
    assert "\n".join(narrow).split() == text.split()


def test_validate_wraps_to_80_columns_between_words(tmp_db, monkeypatch):
    """validate's per-device lines (the device's parameters, its figures) wrap at 80
    columns between words, the words and figures those of the unwrapped text."""
    from fsadvisor.service import advice

    real, done = advice.validate, {}

    def once(**kw):  # one real cross-validation serves both widths: the layout is tested
        key = repr(sorted(kw.items()))
        if key not in done:
            done[key] = real(**kw)
        return done[key]

    monkeypatch.setattr(advice, "validate", once)
    args = ["validate", "--folds", "2"]
    narrow, widest = _at(80, args), _at(1000, args)
    assert any("leave-one-device-out" in ln for ln in widest)
    assert [ln for ln in narrow if len(ln) > 80 and len(ln.split()) > 1] == []
    assert "\n".join(narrow).split() == "\n".join(widest).split()
    assert len(narrow) > len(widest)


COMMAND_LINES = ("   mkfs:", "   mount:", "   fstab:", "   udev:")


@pytest.mark.parametrize(
    "args",
    [
        ["recommend", "-p", "oltp"],
        [
            "recommend",
            "-p",
            "fio-randwrite-4k-j1",
            "--device",
            "samsung-pm9a3-3.84tb-u2",
            "--plp",
            "yes",
            "--load",
            "20000",
        ],
    ],
    ids=["oltp", "yearly"],
)
def test_recommend_wraps_to_80_columns_and_keeps_its_commands_whole(args, tmp_db):
    """At 80 columns recommend's statements wrap between words; its commands (mkfs, mount,
    fstab, the udev rule) stay one line each, to copy and paste whole, as in a wide
    terminal; the words, and so every figure, are those of the unwrapped text."""
    _at(1000, args)
    narrow, widest = _at(80, args), _at(1000, args)
    assert [ln for ln in narrow if len(ln) > 80 and not ln.startswith(COMMAND_LINES)] == []
    assert [ln for ln in narrow if ln.startswith(COMMAND_LINES)] == [
        ln for ln in widest if ln.startswith(COMMAND_LINES)
    ]
    assert "\n".join(narrow).split() == "\n".join(widest).split()
    assert len(narrow) > len(widest)
    # a command the prose quotes (`fsadvisor probe ...`) is never split over two lines
    quoted = [ln for ln in narrow if "`" in ln]
    assert quoted and all(ln.count("`") % 2 == 0 for ln in quoted), quoted


def test_fleet_recommend_names_the_best_with_its_unit_within_80_columns(probed_store):
    """fleet recommend's best configuration reads like recommend's score, "(predicted 200
    ops/J)", never the JSON key ops_per_joule; every line within 80 columns."""
    args = ["fleet", "recommend", "-p", "oltp"]
    narrow, widest = _at(80, args), _at(1000, args)
    assert [ln for ln in narrow if len(ln) > 80] == []
    assert "\n".join(narrow).split() == "\n".join(widest).split()
    best = [ln for ln in widest if ln.startswith("  best: ")]
    assert best and all(re.fullmatch(r"  best: .+ \(predicted [\d,]+ ops/J\)", ln) for ln in best)
    assert "ops_per_joule" not in "\n".join(narrow)


def _recommend_json(args: list[str]) -> dict:
    import json

    cli.register_all()
    r = CliRunner().invoke(cli.app, ["recommend", *args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


# A library drive: its datasheet figures are the device parameters of every ranked entry,
# and ext4 defaults is among the five shown (a tie with higher scores below it).
BASELINE_SHOWN = [
    "-p",
    "analytics-scan",
    "--device",
    "intel-dc-p3500-2tb",
    "--top",
    "5",
    "--load",
    "500",
]


def test_the_yearly_baseline_is_the_figure_the_list_shows_for_ext4_defaults(tmp_db):
    """With --load, ext4 defaults in the list is the baseline itself: its year is the
    default's to the last bit, its entry says so (no saving against itself, exactly: no
    range either, in kWh and in money), and every other entry's saving is the default's
    year less its own."""
    doc = _recommend_json([*BASELINE_SHOWN, "--price", "0.30"])
    default = doc["yearly_basis"]["default"]
    recs = doc["recommendations"]
    base = [r for r in recs if r["config_label"] == "ext4 defaults, sched none"]
    assert len(base) == 1, [r["config_label"] for r in recs]
    assert base[0]["yearly"]["kwh_per_year"] == default["kwh_per_year"]
    assert base[0]["yearly"]["is_baseline"] is True
    assert default["kwh_per_year_90"][0] < default["kwh_per_year_90"][1]  # a range to pair
    assert base[0]["yearly"]["saving_vs_default"] == {
        "kwh_per_year": 0,
        "kwh_per_year_range": [0, 0],
        "cost_per_year": 0,
        "cost_per_year_range": [0, 0],
    }
    for r in recs:
        if r is not base[0]:
            assert "is_baseline" not in r["yearly"]
            assert r["yearly"]["saving_vs_default"]["kwh_per_year"] == pytest.approx(
                default["kwh_per_year"] - r["yearly"]["kwh_per_year"], rel=1e-12, abs=1e-9
            )
    text = "\n".join(_at(1000, ["recommend", *BASELINE_SHOWN]))
    entries = text.split("\n\n#")
    own = next(e for e in entries if e.split("\n", 1)[0].endswith(" ext4 defaults, sched none"))
    year = next(ln for ln in own.splitlines() if ln.startswith("   per year:"))
    assert "this is the ext4 defaults baseline (no saving against itself)" in year, year
    assert "saves" not in year, year


@pytest.mark.parametrize("columns", [80, 120])
def test_an_order_line_names_the_entry_as_its_heading_does(columns, tmp_db):
    """An entry listed above a higher score names that one by its heading ("#1= xfs,
    noatime, sched none"), never by a position ("#3") the tied headings do not show; the
    --json order_note says the same, from the same tie_label and config_label."""
    args = ["-p", "oltp", "--device", "samsung-pm9a3-3.84tb-u2", "--top", "5"]
    doc = _recommend_json(args)
    recs = doc["recommendations"]
    headings = {f"#{r['tie_label']} {r['config_label']}" for r in recs}
    notes = [r["order_note"] for r in recs if r["order_note"]]
    assert notes, "no entry listed above a higher score: the test cannot tell"
    for note in notes:
        assert not re.search(r"#\d+\b(?!=)", note), note
        named = re.match(r"listed above (#\S+ .+?) \(score [\d.]+% higher\): ", note)
        assert named and named.group(1) in headings, note
    text = " ".join(" ".join(_at(columns, ["recommend", *args])).split())
    for note in notes:
        assert f"order: {note}" in text


@pytest.mark.parametrize("top", [1, 2, 5])
def test_the_confidence_line_names_only_configurations_the_list_shows(top, tmp_db):
    """The summary's confidence names a leader only when the list shows it (as its heading
    names it); the leaders the list leaves out are counted, the count honest."""
    args = ["-p", "oltp", "--device", "samsung-pm9a3-3.84tb-u2", "--top", str(top)]
    doc = _recommend_json(args)
    shown = {r["config_label"] for r in doc["recommendations"]}
    leaders = [x["config"] for x in doc["confidence"]["leaders"]]
    outside = [k for k in leaders if k not in shown]
    assert top > 1 or outside, "every leader shown: the test cannot tell"
    lines = _at(1000, ["recommend", *args])
    line = next(ln for ln in lines if ln.startswith("confidence: "))
    named = line.split(": ", 2)[2].split("; ")
    for part in named:
        if "more leader" in part:
            continue
        label = re.sub(r" \d\.\d\d$", "", part)
        assert label in shown, (label, shown)
    if outside:
        n = len(outside)
        # "more" only after leaders it has named
        more = " more" if len(outside) < len(leaders) else ""
        assert f"{n}{more} leader{'s' if n != 1 else ''} outside the shown list" in line
    else:
        assert "outside the shown list" not in line


SCRIPTS = [
    [
        "probe",
        "--scratch",
        "1G",
        "--dry-run",
        "--fs",
        "ext4,xfs",
        "--workloads",
        "4k-randread-qd32",
        "--reps",
        "1",
        "--full",
    ],
    ["probe", "--scratch", "1G", "--dry-run", "--fs", "ext4,xfs", "--profile", "oltp"],
    ["calibrate", "--scratch", "1G", "--dry-run"],
]


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("args", SCRIPTS, ids=[" ".join(a[:4:3]) for a in SCRIPTS])
def test_a_dry_run_script_keeps_comments_in_80_columns_and_commands_whole(args, columns, tmp_db):
    """A dry run prints a script: its comments fold to 80 columns between words (another
    "#" line), its commands stay one line each, whatever their length, with no note after
    them that makes them longer than 80; the script still parses (bash -n)."""
    import shlex
    import shutil
    import subprocess

    lines = _at(columns, args)
    comments = [ln for ln in lines if ln.startswith("#")]
    assert comments and [ln for ln in comments if len(ln) > 80] == []
    for ln in lines:
        if not ln.startswith("#") and len(ln) > 80:
            assert "  # " not in ln, ln  # a long command carries no note on its line
            shlex.split(ln)  # one whole command: its quotes close on its own line
    if shutil.which("bash"):
        r = subprocess.run(
            ["bash", "-n"], input="\n".join(lines) + "\n", text=True, capture_output=True
        )
        assert r.returncode == 0, r.stderr


# A safety verdict's note longer than a line, as "needs root" ones are.
LONG_NOTE = (
    "safety check needs root: reading which partitions, holders and mounts "
    "/dev/nvme9n1 has needs privileges this shell does not have"
)


@pytest.mark.parametrize("args", SCRIPTS, ids=[" ".join(a[:4:3]) for a in SCRIPTS])
def test_a_dry_run_note_follows_the_whole_header_folded(args, tmp_db, monkeypatch):
    """The safety verdict's note comes after the whole header sentence, never inside it,
    folded to 80 columns like every comment."""
    from fsadvisor.service import probing

    monkeypatch.setattr(probing, "dry_run_verdict", lambda plan: LONG_NOTE)
    lines = _at(80, args)
    end = next(i for i, ln in enumerate(lines) if re.search(r" executed\.?$", ln))
    header = " ".join(ln[2:] for ln in lines[: end + 1])
    assert lines[0].startswith("# fsadvisor ") and "safety check" not in header, header
    assert re.search(r"[Nn]othing below is executed\.?$", header), header
    rest = lines[end + 1 :]
    k = next(
        (j for j in range(1, len(rest) + 1) if " ".join(ln[2:] for ln in rest[:j]) == LONG_NOTE),
        None,
    )
    assert k is not None, rest[:4]
    assert k > 1 and all(ln.startswith("# ") and len(ln) <= 80 for ln in rest[:k]), rest[:k]


@pytest.mark.parametrize("args", SCRIPTS, ids=[" ".join(a[:4:3]) for a in SCRIPTS])
def test_a_dry_runs_json_gives_each_comment_and_note_on_one_line(args, tmp_db, monkeypatch):
    """--json carries the dry run as a program reads it, apart from the layout: the same
    commands in the same order and the same words as the 80-column text, but each comment
    (the header, the safety verdict's note) one line whatever its length and a command's
    note beside it."""
    import json

    from fsadvisor.service import probing

    monkeypatch.setattr(probing, "dry_run_verdict", lambda plan: LONG_NOTE)
    text = _at(80, args)
    doc = json.loads("\n".join(_at(80, [*args, "--json"])))
    lines = doc["lines"] if doc.get("adaptive") else doc["commands"]

    def commands(ls):
        return [ln.split("  # ")[0] for ln in ls if not ln.startswith("#")]

    def words(ls):
        return sorted(w for w in " ".join(ls).split() if w.strip("#"))

    assert commands(lines) == commands(text)
    assert words(lines) == words(text)
    assert f"# {LONG_NOTE}" in lines
    assert lines[0].startswith("# fsadvisor ") and re.search(
        r"[Nn]othing below is executed\.?$", lines[0]
    ), lines[0]
    assert len(lines) < len(text)  # the text folds what the JSON keeps on one line


def _ext4_defaults() -> dict:
    from fsadvisor import catalog

    return catalog.config_from_dict({"filesystem": "ext4"}).to_dict()


# A SATA drive whose datasheet IOPS are under what the model predicts for oltp: the cap
# lowers ext4 defaults' throughput, so at a load under it a baseline not held under the
# ceiling is less busy and costs a different year; ext4 defaults is among the first five.
CAPPED = ["-p", "oltp", "--device", "crucial-mx500-1tb"]


@pytest.mark.parametrize("compared", ["with ext4 defaults", "without"])
def test_compare_costs_ext4_defaults_as_recommend_does(compared, tmp_db):
    """compare --load prices the ext4 defaults baseline at the figure recommend --load
    gives it (held under the device's ceilings, as the list shows it), whether ext4
    defaults is among the compared (that entry is then the baseline itself and says so)
    or is predicted beside them."""
    import json

    load = ["--load", "5000"]
    doc = _recommend_json([*CAPPED, "--top", "5", *load])
    rank = next(
        i + 1 for i, r in enumerate(doc["recommendations"]) if r["config"] == _ext4_defaults()
    )
    others = [n for n in (1, 2, 3) if n != rank]
    items = [others[0], rank] if compared == "with ext4 defaults" else others[:2]
    args = ["compare", *CAPPED, *map(str, items), *load]
    r = CliRunner().invoke(cli.app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    cmp = json.loads(r.output)
    want, got = doc["yearly_basis"]["default"], cmp["yearly_basis"]["default"]
    assert got["config"] == want["config"] == _ext4_defaults()
    for key in ("capacity", "avg_watts", "avg_watts_90", "kwh_per_year", "kwh_per_year_90"):
        assert got[key] == pytest.approx(want[key], rel=1e-9), key
    for n, e in zip(items, cmp["entries"]):  # each entry's figure is the list's "#n"
        listed = doc["recommendations"][n - 1]
        assert e["config"] == listed["config"]
        assert e["predicted"]["mean"] == pytest.approx(listed["predicted"][cmp["metric"]], rel=1e-9)
    base = [e for e in cmp["entries"] if e["yearly"].get("is_baseline")]
    if compared == "without":
        assert base == []
        return
    assert len(base) == 1 and base[0]["config"] == _ext4_defaults()
    assert base[0]["yearly"]["kwh_per_year"] == got["kwh_per_year"]
    text = " ".join(" ".join(_at(80, args)).split())
    assert "this is the ext4 defaults baseline (no saving against itself)" in text
