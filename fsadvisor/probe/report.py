"""What a probe shows: the preview before (every command of a dry run), the progress
during (events for a callback), and the summary after (per configuration x workload, from
the store, with the raw-device ratio that measures the filesystem's overhead, seed 002).
Pure data and formatting of plans and store rows; nothing here executes anything.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from fsadvisor.domain import FLAG_DIRECT_IO, Device
from fsadvisor.probe.cell import WIPE_ARGV, CellRunner
from fsadvisor.probe.commands import Executor
from fsadvisor.probe.plan import Cell, Plan, cell_label
from fsadvisor.tools import fio
from fsadvisor.errors import FsAdvisorError
from fsadvisor.host import device as devmod
from fsadvisor.infra.scripttext import COLUMNS, comment, fold_comment, with_note


PLACEHOLDER = "<random>"


def shell_word(word: str) -> str:
    """``word`` quoted for a shell, except that the ``<random>`` placeholder of a name only
    the real run knows (mkstemp/mkdtemp) does not by itself force quotes: an ordinary
    path reads as before, anything else (blanks, ``;``, ``$(``) is quoted whole."""
    plain = word.replace(PLACEHOLDER, "RANDOM")
    return word if shlex.quote(plain) == plain else shlex.quote(word)


def shell_line(argv) -> str:
    return " ".join(shell_word(str(a)) for a in argv)


def sys_block_name(dev: str) -> str:
    """The kernel's name of the disk whose ``/sys/block/<name>/queue`` a run writes: a
    symlink (/dev/disk/by-id/...) resolves, a partition gives its disk, /dev/mapper/x is
    dm-N. A path that cannot be looked up (not present, a placeholder) gives its basename
    with anything outside the kernel's name alphabet replaced, so the preview stays
    one harmless word."""

    try:
        node = devmod.sys_node(dev)
        return node.parent or node.name
    except (FsAdvisorError, OSError, ValueError):
        return re.sub(r"[^A-Za-z0-9._:!+-]", "_", os.path.basename(dev)) or "DEV"


def pre_matrix_lines(plan: Plan, width: int = COLUMNS) -> tuple[list[str], list[str]]:
    """The commands a real run executes besides the cells: fio's io_uring self-test while
    planning (a resumed matrix keeps its planned engine and skips it), and ``fio --version``
    (recorded with every run) just before the first cell; each note beside its command
    where the line fits ``width``, else above it."""
    tmpdir = os.path.join(tempfile.gettempdir(), "fsadvisor-fio-<random>")
    selftest = (
        []
        if plan.matrix_id
        else with_note(
            shell_line(a.format(tmpdir=tmpdir) for a in fio.IO_URING_SELFTEST_ARGV),
            "a real run executes this io_uring self-test while planning; it picks io_uring "
            f"or libaio (this preview assumed {plan.ioengine})",
            width,
        )
    )
    version = with_note(
        shell_line(fio.FIO_VERSION_ARGV),
        "a real run executes this before the first cell (recorded with every run)",
        width,
    )
    return selftest, version


LOOP_WARNING = (
    "scratch loop device: its numbers describe the backing file's filesystem and "
    "disk, not an SSD; use them to try the tool, not to choose a configuration"
)


@dataclass(frozen=True)
class ProgressEvent:
    """What a front end shows: ``kind`` is note | cell-start | cell-end | sample | cleanup |
    done. A ``sample`` comes about once a second while a cell's benchmark runs: ``iops`` and
    ``bw_bytes_s`` are the block layer's completions (``sample_source`` names the stat file
    read: not fio's own count), ``watts`` the energy meter's latest interval (None: the meter
    has no live figure, or there is no meter); its done/total are the last cell event's."""

    kind: str
    done: int
    total: int
    cell: str | None = None
    status: str | None = None
    eta_s: float | None = None
    message: str = ""
    # cell-start/cell-end: the device the matrix runs on (a scratch loop device's path is
    # known only once it is attached); cell-end of a measured repetition: its IOPS (fio's
    # total, or the benchmark's ops/s) and mean watts with the energy source that gave them.
    device: str | None = None
    iops: float | None = None
    watts: float | None = None
    energy_source: str | None = None
    # "" = done/total count cells; "s" = seconds of device time against a budget (probe
    # --adaptive, whose cells are chosen as it goes: the count is not known beforehand)
    unit: str = ""
    bw_bytes_s: float | None = None  # sample: block-layer read + write bytes per second
    sample_source: str | None = None  # sample: the stat file, e.g. /sys/block/loop3/stat
    energy_scope: str | None = None  # with watts: system | cpu+dram | drive
    # probe --adaptive's notes of where it stands: the leading configuration and
    # P(it is within 1% of the best)
    leader: str | None = None
    confidence: float | None = None


@dataclass
class CellOutcome:
    key: str
    rep: int
    label: str
    status: str  # ok | failed | skipped | done-before | incomplete
    error: str | None = None
    flags: tuple[str, ...] = ()
    run_id: int | None = None
    wall_s: float | None = None
    steps_s: dict[str, float] = field(default_factory=dict)  # seconds per phase (cell.py)
    window_s: float | None = None  # the benchmark's own measured window

    def to_dict(self) -> dict[str, Any]:
        return {
            "cell": self.key,
            "rep": self.rep,
            "status": self.status,
            "error": self.error,
            "label": self.label,
            "flags": list(self.flags),
            "run_id": self.run_id,
            "wall_s": self.wall_s,
            "steps_s": self.steps_s,
            "window_s": self.window_s,
        }


def device_time(outcomes: list[CellOutcome]) -> dict[str, Any] | None:
    """Where the cells' device time went: inside the benchmarks' measured windows, and
    outside them per phase (mkfs, mount, fill, cache drop, cool-down, the benchmark's own
    start and end, ...), in seconds and as shares of the cells' time. None before a cell ran."""
    ran = [o for o in outcomes if o.wall_s and o.status in ("ok", "failed")]
    total = sum(o.wall_s or 0.0 for o in ran)
    if total <= 0:
        return None
    window = sum(o.window_s or 0.0 for o in ran)
    phases: dict[str, float] = {}
    for o in ran:
        for k, v in o.steps_s.items():
            phases[k] = phases.get(k, 0.0) + v
    # the measure phase minus the window: the benchmark's start, ramp and exit, the sync after
    phases["measure"] = max(0.0, phases.get("measure", 0.0) - window)
    phases["other"] = max(0.0, total - window - sum(phases.values()))
    outside = {k: v for k, v in sorted(phases.items(), key=lambda kv: -kv[1]) if v > 0}
    return {
        "cells": len(ran),
        "cells_s": round(total, 1),
        "window_s": round(window, 1),
        "window_share": round(window / total, 4),
        "outside_s": {
            ("benchmark start/end" if k == "measure" else k): round(v, 1)
            for k, v in outside.items()
        },
    }


@dataclass
class ProbeSummary:
    matrix_id: str | None = None
    device: str | None = None
    device_kind: str | None = None
    scratch: bool = False
    total: int = 0
    outcomes: list[CellOutcome] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cleanup: list[str] = field(default_factory=list)
    interrupted: str | None = None
    energy: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def complete(self) -> bool:
        return (
            self.interrupted is None
            and self.count("ok")
            + self.count("done-before")
            + self.count("failed")
            + self.count("skipped")
            == self.total
        )

    def to_dict(self) -> dict[str, Any]:
        skipped: dict[str, int] = {}
        for o in self.outcomes:
            if o.status == "skipped":
                skipped[o.error or "skipped"] = skipped.get(o.error or "skipped", 0) + 1
        return {
            "matrix_id": self.matrix_id,
            "device": self.device,
            "device_kind": self.device_kind,
            "scratch": self.scratch,
            "interrupted": self.interrupted,
            "cells": {
                "total": self.total,
                "ok": self.count("ok"),
                "already_done": self.count("done-before"),
                "failed": self.count("failed"),
                "skipped": self.count("skipped"),
                "incomplete": self.count("incomplete"),
            },
            "skipped_reasons": skipped,
            "failed": [o.to_dict() for o in self.outcomes if o.status == "failed"],
            "energy": self.energy,
            "results": self.results,
            "notes": self.notes,
            "cleanup": self.cleanup,
            "wall_s": round(self.wall_s, 3),
            "device_time": device_time(self.outcomes),
        }


def dry_run_lines(
    plan: Plan, header: str | None = None, notes: Sequence[str] = (), width: int = COLUMNS
) -> list[str]:
    """Every command a real run of ``plan`` would execute, in order, as shell lines
    (comments start with #), under ``header`` (a comment's text; by default what a probe's
    dry run is) and then ``notes`` (comments' texts: the safety verdict, a resume). Comments
    fit ``width`` columns (80; UNFOLDED: each one line, for a program); a command is one
    line whatever its length, a note that would make it longer goes above it. Runs nothing
    and needs no privileges."""

    scratch = bool(plan.scratch_size_bytes)
    dev = "/dev/loopN" if scratch else str(plan.device)
    sys_name = "loopN" if scratch else sys_block_name(dev)
    queue = shlex.quote(f"/sys/block/{sys_name}/queue/scheduler")
    mnt = os.path.join(tempfile.gettempdir(), "fsadvisor-mnt-<random>")
    cells = plan.cells()
    runnable = [c for c in cells if not c.skip_reason]
    lines = comment(
        header
        or f"fsadvisor probe --dry-run: {len(cells)} cells ({len(runnable)} runnable), "
        f"about {plan.estimated_seconds() / 60:.0f} min; nothing below is executed",
        width=width,
    )
    for note in notes:
        lines += comment(note, width=width)
    selftest, version = pre_matrix_lines(plan, width)
    lines += selftest
    if scratch:
        img = os.path.join(
            plan.scratch_dir or tempfile.gettempdir(), f"fsadvisor-scratch-{PLACEHOLDER}.img"
        )
        lines += [
            *comment(LOOP_WARNING, width=width),
            shell_line(["truncate", "-s", plan.scratch_size_bytes, img]),
            shell_line(["losetup", "--find", "--show", "--direct-io=on", img]),
        ]
    # the label folds, the command stays one commented line: uncommented, it runs as shown
    lines += [*comment("remember the current scheduler:", width=width), f"#   cat {queue}"]
    lines += version
    runner = CellRunner(
        plan=plan,
        device=dev,
        mountpoint=mnt,
        executor=Executor(),
        device_info=plan.device_info or Device(path=dev, size_bytes=plan.device_size_bytes),
    )
    for i, cell in enumerate(cells, 1):
        head = f"## cell {i}/{len(cells)}: {cell.label}"
        if cell.skip_reason:
            lines += fold_comment(f"{head}  -- SKIPPED: {cell.skip_reason}; it would run:", width)
            # commented out, each still one line: uncommented, it runs as shown
            lines += [f"#   {s.display(dev, sys_name)}" for s in runner.steps(cell)]
            continue
        lines += fold_comment(head, width)
        for s in runner.steps(cell):
            if s.argv and s.note:
                lines += with_note(replace(s, note="").display(dev, sys_name), s.note, width)
            else:
                lines.append(s.display(dev, sys_name))
    lines += [
        *comment("restore the original scheduler:", width=width),
        f"#   echo <original> > {queue}",
    ]
    if scratch:
        lines += [shell_line(["losetup", "--detach", dev]), shell_line(["rm", img])]
    else:
        lines += with_note(
            shell_line(WIPE_ARGV + [dev]),
            "the last cell's signature, so a rerun needs no --force",
            width,
        )
    return lines


def results_from_store(store: Any, matrix_id: str, plan: Plan) -> list[dict[str, Any]]:
    """Per configuration x workload: mean and 95% CI of IOPS, MB/s, p99, energy and ops/J,
    and the ratio to the raw-device baseline of the same scheduler and workload (the
    filesystem overhead, seed 002)."""
    seen: list[Cell] = []
    keys: set[str] = set()
    for c in plan.cells():
        if c.key not in keys:
            keys.add(c.key)
            seen.append(c)
    rows: list[dict[str, Any]] = []
    raw_iops: dict[tuple[str, str], float] = {}
    c_workloads = {c.workload.name: c.workload.workload for c in seen}
    for c in seen:
        for s in store.summaries(matrix_id=matrix_id, cell_key=c.key):
            ranked = FLAG_DIRECT_IO not in (s.get("flags") or [])
            row = {
                "config": c.config_key,
                "label": cell_label(c.config, c.scheduler),
                "filesystem": c.config.fs if c.config else "raw-device",
                "scheduler": c.scheduler,
                "workload": c.workload.name,
                "n": s["n"],
                "iops": s["iops"],
                "mb_s": s["mb_s"],
                "p99_latency_us": s["p99_latency_us"],
                "energy_j": s["energy_j"],
                "watts": s["watts"],
                "ops_per_joule": s["ops_per_joule"],
                "bytes_per_joule": s["bytes_per_joule"],
                "energy_source": s["energy_source"],
                "power_scope": s["power_scope"],
                "flags": s.get("flags") or [],
                "ranked": ranked,
            }
            rows.append(row)
            if c.config is None and s["iops"]["mean"]:
                raw_iops[(c.scheduler, c.workload.name)] = s["iops"]["mean"]
    for row in rows:
        base = raw_iops.get((row["scheduler"], row["workload"]))
        mean = row["iops"]["mean"]
        row["vs_raw_iops"] = (
            (mean / base) if (base and mean and row["filesystem"] != "raw-device") else None
        )
        row["vs_raw_note"] = raw_ratio_note(row["vs_raw_iops"], c_workloads.get(row["workload"]))
    return rows


def raw_ratio_note(ratio: float | None, workload: Any = None) -> str:
    """The filesystem's IOPS against the raw device, with the reason when it is over 100%:
    nothing on top of a device makes it faster, so more than the raw figure means reads
    served from the page cache (buffered I/O) or requests merged before they reached it."""
    if not ratio:
        return ""
    text = f"{ratio * 100:.0f}% of raw device"
    if ratio <= 1.0:
        return text
    buffered = workload is not None and not getattr(workload, "direct", True)
    why = (
        "the page cache served part of it (buffered I/O)"
        if buffered
        else "above the raw baseline: the page cache or request merging served part of it, "
        "or run-to-run noise"
    )
    return f"{text} — {why}"
