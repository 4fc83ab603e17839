"""Text the TUI shows, made from service results: table cells and detail panes.

Pure functions (rich Text, no widgets) so the words on screen are checked without a
terminal. Texts that contain option names in brackets (``[opt:noatime]``) are built as
Text, never as console markup, so they show as written.
"""

from __future__ import annotations

import re
import time
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from fsadvisor.domain import Device, Profile, Workload
from fsadvisor.service.advice import Ranked, Recommendation, format_size
from fsadvisor.service.answer import (
    confidence_lines,
    headline,
    leader_p_best,
    notes as answer_notes,
)

# The options come before the energy source (the same for every row as a rule): they are
# what tells near-equal rows apart, so they are on screen at 80 columns; the table scrolls
# sideways for the rest, and the detail pane shows everything in full.
TABLE_COLUMNS = (
    "#",
    "filesystem",
    "scheduler",
    "AG",
    "IOPS",
    "ops/J (90% interval)",
    "mkfs options",
    "mount options",
    "energy (source, scope)",
)


def workload_text(w: Workload) -> str:
    mix = (
        f"{w.read_pct}% reads"
        if w.rw in ("rw", "randrw")
        else {100: "reads", 0: "writes"}.get(w.read_pct, f"{w.read_pct}% reads")
    )
    fsync = "no fsync" if w.fsync_every == 0 else f"fsync every {w.fsync_every} write(s)"
    if w.fsync_mode == "per_transaction":
        fsync = f"fsync per transaction ({w.fsync_every} write(s))"
    meta = ""
    if w.metadata_frac:
        meta = (
            f"; metadata create {w.create_frac:.0%} stat {w.stat_frac:.0%} "
            f"delete {w.delete_frac:.0%}, {w.dir_shape} dirs depth {w.dir_depth:g}"
        )
    return (
        f"{w.rw} {format_size(w.bs_bytes)} ({mix}), {w.numjobs} job(s) x QD{w.iodepth}, "
        f"{'O_DIRECT' if w.direct else 'page cache'}, {w.ioengine}, {fsync}; "
        f"working set {format_size(w.working_set_bytes)} in {w.nrfiles} file(s){meta}; "
        f"one op = {w.op}, ranked by {w.rank_by} per joule"
    )


def profile_text(p: Profile, origin: str) -> Text:
    c = p.constraints
    t = Text()
    t.append(p.name, style="bold")
    t.append(f"  ({origin})\n", style="dim")
    t.append(p.description + "\n")
    t.append("source: ", style="bold")
    t.append((p.source or "not stated") + "\n", style="italic")
    t.append("workload: ", style="bold")
    t.append(workload_text(p.workload) + "\n")
    t.append("as loaded: ", style="bold")
    t.append(
        f"PLP {c.plp}, durability {'required' if c.durability else 'waived'}, "
        f"features {', '.join(c.features) or 'none'}, "
        f"min IOPS {_opt(c.min_iops)}, min MB/s {_opt(c.min_mb_s)}, "
        f"max p99 {_opt(c.max_p99_ms, ' ms')}, allow risky {'yes' if c.allow_risky else 'no'}"
    )
    return t


# A name breaks after a hyphen, underscore or slash (or at a space): "fs-overhead-" over
# "randwrite-4k-fsync1", never "fs-overhead-randwrit" over "e-4k-fsync1" as a fold at the
# list's width would.
_NAME_PIECE = re.compile(r"[^-_/\s]*(?:[-_/]+|\s+|$)")


def name_lines(name: str, width: int) -> list[str]:
    """``name`` on lines of at most ``width`` cells, broken only between its pieces; a piece
    wider than ``width`` on its own is folded, as nothing else would show it whole."""
    lines: list[str] = []
    line = ""
    for piece in (m.group(0) for m in _NAME_PIECE.finditer(name) if m.group(0)):
        if line and len(line.rstrip() + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
        while len(line.rstrip()) > width:
            lines.append(line[:width])
            line = line[width:]
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


class PresetPrompt:
    """A profile in the preset list: its name in bold, broken only where the name has a
    hyphen when the list is narrower than it (an OptionList folds a word at the edge), and
    one dim line of description, cut with "…", under it. Rendered for the width it is given,
    so the same option reads whole in the wide list and the narrow one."""

    def __init__(self, name: str, description: str, description_width: int) -> None:
        self.name = name
        self.description = (
            description
            if len(description) <= description_width
            else description[: description_width - 1].rstrip() + "…"
        )
        # what a person reads, for a test to compare with what is drawn
        self.plain = f"{name}\n{self.description}"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in name_lines(self.name, options.max_width):
            yield Text(line, style="bold")
        yield Text(self.description, style="dim")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, max(len(self.name), len(self.description)))


def assumptions_text(assumptions: list[str]) -> Text:
    """A captured profile's assumptions (what /proc/diskstats cannot tell), to confirm."""
    t = Text()
    t.append("\nassumptions to confirm ", style="bold yellow")
    t.append("(captured: edit the workload fields or the TOML where they are wrong)\n", style="dim")
    for a in assumptions:
        t.append(f" ? {a}\n", style="yellow")
    return t


def _opt(v: float | None, unit: str = "") -> str:
    return "-" if v is None else f"{v:g}{unit}"


def device_text(
    d: Device, ag_range: tuple[int, int] | None = None, ag_default: int | None = None
) -> Text:
    t = Text()
    t.append(f"{d.kind}, {format_size(d.size_bytes)} ({d.size_bytes / 1e12:.2f} TB)", style="bold")
    t.append(f"  {d.path or 'a size, not a real device'}\n", style="dim")
    facts = [("model", d.model), ("serial", d.serial), ("firmware", d.firmware)]
    shown = ", ".join(f"{k} {v}" for k, v in facts if v)
    if shown:
        t.append(shown + "\n")
    t.append(
        f"PLP {d.plp}, logical block {d.logical_block_size} B, write cache "
        f"{d.write_cache}, {'rotational' if d.rotational else 'non-rotational'}\n"
    )
    if ag_range:
        t.append(
            f"XFS allocation groups for this size: {ag_range[0]}–{ag_range[1]}"
            f" (mkfs.xfs default {ag_default})\n"
        )
    return t


def energy_label(r: Ranked) -> str:
    return f"{r.prediction.energy_source}, {r.prediction.power_scope}"


# The AG column for a filesystem that has no allocation groups: recommend's JSON has null
# there (and only there: an xfs row always names the count mkfs.xfs will use).
NO_AG = "-"  # as every other missing value in the TUI's tables


def ag_cell(r: Ranked) -> str:
    return str(r.ag_count) if r.ag_count is not None else NO_AG


def ranked_row(r: Ranked) -> tuple[str, ...]:
    p = r.prediction
    lo, hi = p.uncertainty["ops_per_joule_90"]
    mkfs = ",".join(f"{k}={v}" for k, v in r.config.mkfs) or "defaults"
    # the same AG count as recommend's text and JSON (mkfs.xfs's default when unset)
    return (
        r.label,
        r.config.fs,
        r.config.scheduler,
        ag_cell(r),
        f"{p.iops:,.0f}",
        f"{p.ops_per_joule:,.0f} ({lo:,.0f}–{hi:,.0f})",
        mkfs,
        r.commands["mount_options"] or "defaults",
        energy_label(r),
    )


# The live table beside the form has room for less than the Recommendations tab's: the
# columns that tell near-equal rows apart come first and whole (filesystem and scheduler, then
# the options), so no row reads like its neighbour when the pane is 50 columns wide.
# The intervals are on the Recommendations tab; here "1=" says which leaders they cannot
# tell apart.
LIVE_COLUMNS = ("#", "ops/J", "fs, scheduler", "options")


def options_cell(r: Ranked) -> str:
    """mkfs settings (AG count included), then mount options; "defaults" when neither."""
    made = [f"{k}={v}" for k, v in r.config.mkfs]
    if r.ag_count is not None:
        made.append(f"agcount={r.ag_count}")
    mount = r.commands["mount_options"]
    mount = "" if mount in ("", "defaults") else mount
    return " ".join(made + ([f"-o {mount}"] if mount else [])) or "defaults"


LIVE_OPTIONS_WIDTH = 20  # the options column's narrowest lines: the live table fits 80 columns


def fold_options(text: str, width: int = LIVE_OPTIONS_WIDTH) -> str:
    """``text`` over lines of at most ``width`` where it can break (after a comma, at a
    space): the live table's rows differ by their options, which must be drawn, not cut."""
    parts = re.findall(r"-o [^, ]+,?|[^, ]+,?| ", text)  # "-o" stays with its first option
    lines, line = [], ""
    for part in parts:
        if line and part != " " and len(line) + len(part.rstrip()) > width:
            lines.append(line.rstrip())
            line = part
        else:
            line += part
    return "\n".join(lines + [line.rstrip()])


def _live_lead(r: Ranked) -> tuple[str, str, str]:
    """A live row's cells before its options (LIVE_COLUMNS)."""
    return (r.label, f"{r.prediction.ops_per_joule:,.0f}", f"{r.config.fs}, {r.config.scheduler}")


def live_row(r: Ranked, width: int = LIVE_OPTIONS_WIDTH) -> tuple[str, ...]:
    return (*_live_lead(r), fold_options(options_cell(r), width))


def live_options_width(ranked: list[Ranked], room: int, padding: int = 1) -> int:
    """The options column's line width in a live table ``room`` cells wide: what the other
    columns leave (each as wide as its widest cell, plus ``padding`` on either side), never
    under LIVE_OPTIONS_WIDTH. Folding at a fixed width made a row two or three lines tall in
    a table with room for it on one, and the table's last row then read "agcount=4 -o"."""
    rows = [_live_lead(r) for r in ranked]
    others = sum(
        max([len(name)] + [len(row[i]) for row in rows]) + 2 * padding
        for i, name in enumerate(LIVE_COLUMNS[:-1])
    )
    return max(LIVE_OPTIONS_WIDTH, room - others - 2 * padding)


def worth_text(yw: dict[str, Any] | None, yearly_line, summary_lines, basis: bool = True) -> Text:
    """What #1 is worth per year at the load typed (service.worth's own lines, as
    ``recommend --load`` prints them), with ``basis`` also the arithmetic's assumptions;
    empty without a load."""
    t = Text()
    if not yw or not yw.get("entries"):
        return t
    t.append("#1 per year: ", style="bold")
    t.append(yearly_line(yw, 0))
    lines = summary_lines(yw)
    best = [ln for ln in lines if "against the runner-up" in ln]
    if best:
        t.append("\n" + best[0])
    if basis:
        t.append("\n" + lines[0], style="dim")
    return t


def live_status(rec: Recommendation) -> Text:
    """One line over the live table: what was ranked and what the constraints cut."""
    w = rec.profile.workload
    excluded = sum(rec.excluded.values())
    t = Text()
    t.append("live: ", style="bold")
    t.append(
        f"{rec.profile.name}, {w.numjobs} job(s) x QD {w.iodepth}, "
        f"{format_size(w.bs_bytes)} requests, {w.read_pct}% reads; "
        f"{rec.considered} candidates, {excluded} excluded"
    )
    return t


def summary_text(rec: Recommendation) -> Text:
    """recommend's answer in the order the CLI prints it: the headline (what to use, why,
    how sure), the decision confidence with what would settle a tie, then what was ranked
    and the notes."""
    d = rec.device
    t = Text()
    for line in headline(rec):
        t.append(line + "\n", style="bold")
    tied = rec.confidence is not None and rec.confidence.tied
    for line in confidence_lines(rec):
        t.append(line.strip() + "\n", style="yellow" if tied else "green")
    t.append(f"{rec.profile.name}", style="bold")
    t.append(
        f" on {d.kind} {format_size(d.size_bytes)} ({d.size_bytes / 1e12:.2f} TB), PLP {d.plp}"
        + (f" ({d.path})" if d.path else "")
        + "; "
    )
    excluded = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in rec.excluded.items() if v)
    t.append(f"{rec.considered} candidates, excluded: {excluded or 'none'}")
    for n in answer_notes(rec):
        t.append(f"\nnote: {n}", style="dim")
    return t


def detail_text(r: Ranked, rec: Recommendation) -> Text:
    d: dict[str, Any] = r.to_dict()
    p, u = r.prediction, r.prediction.uncertainty
    unit = "bytes/J" if rec.rank_by == "bytes_per_joule" else "ops/J"
    t = Text()
    t.append(f"#{r.rank} {r.config.fs}", style="bold")
    t.append(f"  score {r.score:,.0f} {unit}, scheduler {r.config.scheduler}")
    if r.ag_count is not None:  # the same words as recommend's text
        t.append(f", AG count {r.ag_count}" + ("" if r.config.ag_count else " (mkfs.xfs default)"))
    t.append("\n")
    p_best, conf = leader_p_best(r, rec), rec.confidence
    if p_best is not None and conf is not None:  # a p_best is conf's
        t.append(f"{conf.what} ", style="bold")
        # the tie set's count, as the headline's "tied with N" (lead.tied_with): the
        # confidence's leaders are at most MAX_LEADERS of it
        n_tied = int((rec.lead or {}).get("tied_with") or 0) + 1
        t.append(
            f"{p_best:.2f}, one of the {n_tied} configurations the model cannot yet tell apart"
            if conf.tied and n_tied > 1
            else f"{p_best:.2f}"
        )
        t.append("\n")
    for label, value in (
        ("mkfs", d["mkfs_command_line"]),
        ("mount", d.get("mount_setup") or f"-o {d['mount_options'] or 'defaults'}"),
        (
            "fstab",
            d["fstab"] + (f"  (<uuid>: {d['uuid_command']})" if d.get("uuid_command") else ""),
        ),
        ("udev", d["scheduler_udev_rule"]),
    ):
        t.append(f"{label:<7}", style="bold cyan")
        t.append(value + "\n")
    t.append("predicted ", style="bold")
    lo, hi = u["iops_90"]
    t.append(
        f"{p.iops:,.0f} IOPS (90%: {lo:,.0f}–{hi:,.0f}), {p.mb_s:,.1f} MB/s, "
        f"p99 {p.p99_latency_ms:.2f} ms, {p.watts:.0f} W\n"
    )
    lo, hi = u["ops_per_joule_90"]
    t.append("ops/J     ", style="bold")
    t.append(
        f"{p.ops_per_joule:,.0f} (90%: {lo:,.0f}–{hi:,.0f}); energy: {energy_label(r)} "
        f"scope; basis: {dict(p.basis).get('power_level', '-')}\n"
    )
    if r.scheduler_alternatives:
        alts = ", ".join(f"{k} {v:.1%}" for k, v in r.scheduler_alternatives.items())
        t.append("other schedulers (share of this score): ", style="bold")
        t.append(alts + "\n")
    t.append("why\n", style="bold green")
    for y in r.why or ["no option differs enough from ext4 defaults to explain"]:
        t.append(f" • {y}\n")
    t.append("warnings\n", style="bold yellow")
    for w in r.warnings or ["none"]:
        t.append(f" ! {w}\n", style="yellow" if r.warnings else "dim")
    return t


def energy_row(s: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        s["name"],
        "available" if s["ok"] else "not available",
        "yes" if s.get("auto") else "",
        s.get("detail") or "",
    )


def energy_table(sources: list[dict[str, Any]]) -> Table:
    table = Table(expand=True, box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("source", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("auto", no_wrap=True)
    table.add_column("why", ratio=1)
    for s in sources:
        name, status, auto, why = energy_row(s)
        table.add_row(name, Text(status, style="green" if s["ok"] else "red"), auto, Text(why))
    return table


MATRIX_COLUMNS = (
    "configuration",
    "scheduler",
    "workload",
    "n",
    "ops/J mean (95%)",
    "IOPS mean (95%)",
    "p99 µs",
    "W",
    "energy",
)


def _ci(stat: dict[str, Any], digits: int = 0) -> str:
    if stat.get("mean") is None:
        return "-"
    text = f"{stat['mean']:,.{digits}f}"
    if stat.get("ci95_low") is not None and stat.get("ci95_high") is not None:
        text += f" ({stat['ci95_low']:,.{digits}f}–{stat['ci95_high']:,.{digits}f})"
    return text


def matrix_row(c: dict[str, Any]) -> tuple[str, ...]:
    # The scheduler has its own column: in the label it is a bracketed suffix only when it is
    # not "none", so two cells differing only by scheduler read alike.
    sched = c.get("scheduler") or "-"
    label = c["label"].removesuffix(f" [{sched}]")
    return (
        label,
        sched,
        c["workload"],
        str(c["n"]),
        _ci(c["ops_per_joule"]),
        _ci(c["iops"]),
        _ci(c["p99_latency_us"]),
        _ci(c["watts"], 1),
        c["energy"],
    )


def _stat_line(side: dict[str, Any], unit: str) -> str:
    if side.get("mean") is None:
        return f"no {unit} measured"
    n = side.get("n") or 0
    spread = (
        f" (95%: {side['ci95_low']:,.0f}–{side['ci95_high']:,.0f})"
        if side.get("ci95_low") is not None and side.get("ci95_high") is not None
        else " (1 run — no interval)"
        if n == 1
        else ""
    )
    return f"{side['mean']:,.0f} {unit}{spread}, n = {n}"


def marked_text(doc: dict[str, Any], marked: list[int]) -> Text:
    t = Text()
    if not marked:
        t.append("space on a cell marks it; two marked cells are shown side by side", style="dim")
        return t
    t.append("A ", style="bold")
    t.append(
        f"{doc['cells'][marked[0]]['label']} ({doc['cells'][marked[0]]['workload']}); "
        "space on a second cell compares them",
        style="dim",
    )
    return t


def comparison_text(c: dict[str, Any]) -> Text:
    """Two cells side by side: mean, 95% interval and n of each, then B − A and whether
    the runs can tell them apart (service.compare's Welch verdict)."""
    unit = c["unit"]
    t = Text()
    for side in ("a", "b"):
        s = c[side]
        t.append(f"{side.upper()} ", style="bold")
        t.append(f"{s['label']} ({s['workload']}): ")
        t.append(_stat_line(s, unit) + "\n")
    d = c.get("difference")
    if d is None:
        t.append(c["verdict"], style="yellow")
    else:
        half = (d["high_pct"] - d["low_pct"]) / 2
        t.append(
            f"B − A: {d['diff']:+,.0f} {unit} ({d['diff_pct']:+.1f}% ± {half:.1f}%, "
            f"95% Welch interval {d['low']:+,.0f} to {d['high']:+,.0f}); ",
            style="bold",
        )
        t.append(
            "separable" if d["significant"] else "not separable",
            style="green" if d["significant"] else "yellow",
        )
        t.append(f": {d['verdict']}")
    if not c["same_workload"]:
        t.append(
            "\n(different workloads: the difference is not only the configuration)", style="dim"
        )
    return t


HISTORY_COLUMNS = (
    "matrix",
    "status",
    "started",
    "finished",
    "device",
    "profile",
    "reps",
    "runs ok",
    "failed",
    "incomplete",
    "cells",
)


def history_row(m: dict[str, Any]) -> tuple[str, ...]:

    def when(ts: Any) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"

    return (
        str(m.get("id")),
        str(m.get("status")),
        when(m.get("started_at")),
        when(m.get("finished_at")),
        str(m.get("device") or "-"),
        str(m.get("profile") or "-"),
        str(m.get("reps") or "-"),
        str(m.get("runs_ok", 0)),
        str(m.get("runs_failed", 0)),
        str(m.get("runs_incomplete", 0)),
        str(m.get("cells_run", 0)),
    )


# ---------------------------------------------------------------------- help (`?`)

_COMMON_HELP = (
    "ops/J is operations per joule: how much work one joule of energy buys (bytes/J for "
    "bandwidth workloads). Higher is better. The figure in brackets is the 90% interval: "
    "the model expects the true value inside it nine times in ten. Two candidates whose "
    "intervals overlap may swap places on real hardware; a probe decides.\n\n"
    "Keys anywhere, text fields included: F1-F6 switch tabs, Tab/Shift+Tab move between "
    "fields, ctrl+r recommends, ctrl+/ (or F12) shows this help, ctrl+p opens the command "
    "palette (recommend, probe preview, copy the mkfs and fstab lines, export), ctrl+q "
    "quits; on the Profile tab ctrl+l shows the live ranking at 80x24 and ctrl+g captures "
    "a profile.\n"
    "Keys outside a text field: r recommends, ? shows this help, q quits.\n"
    "In a text field every printable key types (r, ? and q are letters of a path); in a "
    "number field r recommends and ? shows this help, since no number holds them. Enter "
    "in a text field does what its tab's button does: on Profile it recommends (in the "
    "profile path it loads the file), on Device it inspects the device, on Probe it "
    "previews; on a box Enter (or space) ticks it, on a choice it opens the list.\n"
    "On this help Esc, q, ? or ctrl+/ close it."
)

HELP = {
    "profile": (
        "Profile: what the application does",
        "Pick a preset on the left (Enter or the arrows) or type the path of a profile TOML "
        "and press Enter, or capture one from a running device with ctrl+g (its mix, "
        "request sizes, IOPS and queue depth from /proc/diskstats; confirm the assumptions "
        "listed with it). The workload fields are a what-if: jobs, queue depth, request size "
        "(4k, 1M), read share, fsync policy and working set. The constraints filter the "
        "answer: PLP (power-loss protection; your choice stays when you switch presets), "
        "durability, features, min IOPS, max p99.\n\n"
        "Next: press r (or Enter in a text field) for the full recommendation with its "
        "commands, or F2 to describe your device.\n\n"
        "The table above the form re-ranks as you type, without r (at 80x24 ctrl+l shows "
        "it): a constraint refilters the predictions made, a workload change predicts again "
        "(the model is not refitted). A value that cannot be read is named under its field; "
        "the Recommendations tab says STALE until the form ranks again. A load (ops/s; MB/s "
        "for bandwidth profiles) and a price per kWh add what #1 is worth per year.",
    ),
    "device": (
        "Device: where the filesystem goes",
        "Type a device spec (nvme:1T, sata-ssd:480G) or a path (/dev/nvme0n1, inspected "
        "read-only) and press Enter. The XFS allocation-group range shown is what the AG "
        "column is chosen from. Top N is how many configurations are listed. Next: r.",
    ),
    "results": (
        "Recommendations",
        "The first lines are the answer: what to use and why, how sure (the probability "
        "that #1 is the best, from the model's posterior) and, when the leaders are tied, "
        "which cells a probe would measure to settle it and about how long. "
        "Ranked by predicted ops/J. IOPS and ops/J are predictions unless the detail says "
        "measured; the interval is 90%. A candidate ahead by less than the model's "
        "uncertainty of the difference is not preferred for extra settings. Up/Down moves, "
        "Enter shows a row's mkfs command, fstab line and why; p plots "
        "ops/J with 95% whiskers (M: measured on this device, P: predicted). Next: Ctrl+P -> copy the mkfs "
        "and fstab lines, or F6 to preview a probe that would measure the top candidates.",
    ),
    "energy": (
        "Energy: where watts come from",
        "Which power sources this machine offers (RAPL, IPMI, a meter log). Without one, "
        "ops/J rests on the model's assumed power (marked 'assumed'). Next: probe with a "
        "source for measured figures.",
    ),
    "history": (
        "History: probe runs in the store",
        "Each row is one probe matrix, newest first. Measured results are the ground truth "
        "the model is fitted on. Enter opens a matrix's cells (mean, 95% interval, n); space "
        "marks two cells to see them side by side with the difference and whether the runs "
        "can tell them apart; g charts the device's matrices over time; c, j, h export CSV, "
        "JSON and the HTML report (the notification names the file's full path; a matrix of "
        "micro workloads only is reported for the profile chosen on the Profile tab). "
        "Next: F6 to preview a new probe.",
    ),
    "probe": (
        "Probe",
        "Measure configurations on a real device, as `fsadvisor probe` does. The list shows "
        "this machine's block devices, each allowed or refused with the reason (never a "
        "mounted or system disk, nothing holding data, no loop device on a file that is not "
        "yours); scratch:SIZE is a loop device of the probe's own on a file. Blank fields "
        "(their grey italic text says so) take the probe's defaults. Probe FORMATS the device: it needs root and the device path typed back. "
        "Progress shows the cell, n/N, the ETA, what the device does now (the block "
        "layer's completed I/Os per second from its /sys/block stat file, not fio's count; "
        "watts only from a live meter) and the last cell's IOPS and watts (with the energy "
        "source); the ranking on the Recommendations tab is redone after each measured "
        "cell. sched and micro narrow the schedulers and micro workloads (blank: all); "
        "adaptive lets the model choose each next cell of the profile's matrix until it is "
        "sure (P(best)) or the budget of device time is spent, and shows the leader; more "
        'adds profiles (presets or files, comma-separated) to the "with profile" one for '
        "one adaptive session (one calibration, one budget, a cell they share run once, an "
        "answer per profile), weighed by weights (2,1: that one first); resume "
        "continues an interrupted matrix; force also formats a device that holds a "
        "filesystem signature, and the confirmation says so. Cancel stops it as Ctrl-C "
        "does: unmounted, the scratch device detached, the matrix kept for resume. Preview "
        "lists the commands and runs none.",
    ),
}


def help_text(tab: str) -> Text:
    title, body = HELP.get(tab, HELP["profile"])
    t = Text()
    t.append(title + "\n\n", style="bold")
    t.append(body + "\n\n")
    t.append(_COMMON_HELP, style="dim")
    return t
