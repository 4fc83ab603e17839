"""--dry-run lists the commands a real run executes before the matrix (fio's io_uring
self-test while planning, ``fio --version`` before the first cell), exactly as the real code
runs them, and executes none of them."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile

import pytest

from fsadvisor.host import run as hostrun
from fsadvisor.host.run import CommandResult
from fsadvisor.tools import fio
from fsadvisor.errors import FsAdvisorError
from fsadvisor.probe.plan import build_plan
from fsadvisor.probe.report import dry_run_lines, sys_block_name

GIB = 1 << 30


def plan(**kw):
    return build_plan(
        "/dev/loop9",
        4 * GIB,
        filesystems=["ext4"],
        schedulers=["none"],
        quick=True,
        kernel_supports=lambda fs: True,
        **kw,
    )


def real_selftest_argv(monkeypatch) -> list[str]:
    """What fio.best_ioengine() really executes (its fio run captured, not executed)."""
    seen: list[list[str]] = []

    def capture(argv, **kw):
        seen.append(list(argv))
        raise FsAdvisorError("not executed in this test")

    monkeypatch.setattr(fio, "run", capture)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: f"/usr/bin/{name}")
    assert fio.best_ioengine.__wrapped__() == "libaio"
    assert len(seen) == 1
    return seen[0]


def real_version_argv(monkeypatch) -> list[str]:
    seen: list[list[str]] = []

    def capture(argv, **kw):
        seen.append(list(argv))
        return CommandResult(tuple(argv), 0, "fio-3.33\n", "", 0.0)

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: f"/usr/bin/{name}")
    monkeypatch.setattr(hostrun, "run", capture)  # the one runner every command goes through
    assert fio.fio_version() == "fio-3.33"
    return seen[0]


def note_above(lines: list[str], i: int) -> str:
    """The text of the comment lines just above line ``i`` (a command's note), joined."""
    j = i
    while j > 0 and lines[j - 1].startswith("# "):
        j -= 1
    return " ".join(ln[2:] for ln in lines[j:i])


def test_the_dry_run_lists_the_io_uring_self_test_and_fio_version(monkeypatch):
    lines = dry_run_lines(plan())
    selftest = real_selftest_argv(monkeypatch)
    version = real_version_argv(monkeypatch)
    tmp = tempfile.gettempdir()
    shown = [
        ln for ln in lines if ln.startswith("fio ") and "--ioengine=io_uring --iodepth=4" in ln
    ]
    assert len(shown) == 1
    # the command whole on its line, its note in the comment lines above it
    cmd, note = shown[0], note_above(lines, lines.index(shown[0]))
    # the same argv, with the random temporary directory as a placeholder
    words = cmd.split()
    assert len(words) == len(selftest)
    for w, real in zip(words, selftest):
        if "<random>" in w:
            assert w.startswith(f"--filename={tmp}/fsadvisor-fio-<random>/")
            assert real.startswith(f"--filename={tmp}/fsadvisor-fio-") and real.endswith("/probe")
        else:
            assert w == real
    assert "a real run executes" in note and "io_uring or libaio" in note
    v = lines.index(" ".join(version))
    assert note_above(lines, v).endswith(
        "a real run executes this before the first cell (recorded with every run)"
    )
    # in the order a real run executes them: self-test while planning, version before cell 1
    first_cell = next(i for i, ln in enumerate(lines) if ln.startswith("## cell 1/"))
    v = next(i for i, ln in enumerate(lines) if ln.startswith("fio --version"))
    assert 0 < lines.index(shown[0]) < v < first_cell


def test_a_resumed_matrix_runs_no_self_test_and_the_dry_run_says_so():
    p = plan()
    p.matrix_id = "m1"  # --resume keeps the planned engine: plan_probe never calls best_ioengine
    lines = dry_run_lines(p)
    assert not any("--number_ios=8" in ln for ln in lines)
    assert sum(ln == "fio --version" for ln in lines) == 1
    assert "a real run executes this" in note_above(lines, lines.index("fio --version"))


def test_listing_executes_nothing(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError(f"executed {a[0] if a else k}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(hostrun, "run", refuse)
    scratch = build_plan(
        None,
        2 * GIB,
        filesystems=["ext4"],
        schedulers=["none"],
        quick=True,
        kernel_supports=lambda fs: True,
        scratch_size_bytes=2 * GIB,
    )
    for p in (plan(), scratch):
        assert any(ln.startswith("fio --version") for ln in dry_run_lines(p))


@pytest.mark.parametrize("engine", ["io_uring", "libaio"])
def test_the_note_names_the_engine_the_preview_assumed(engine):
    lines = dry_run_lines(plan(ioengine=engine))
    assert any(f"this preview assumed {engine}" in ln for ln in lines)


def test_the_scheduler_commands_to_run_by_hand_stay_whole_under_their_comment():
    """The two commands a person runs by hand around a probe (read the scheduler before,
    restore it after an interrupted one) are each one commented line, whole whatever the
    device's name, their label folded above them, as the skipped cells' commands are."""
    for dev in ("/dev/loop9", "/dev/disk/by-id/nvme-SAMSUNG_MZQL23T8HCLS-00A07_S64HNE0R123456"):
        p = build_plan(
            dev,
            4 * GIB,
            filesystems=["ext4"],
            schedulers=["none"],
            quick=True,
            kernel_supports=lambda fs: True,
        )
        lines = dry_run_lines(p)
        queue = shlex.quote(f"/sys/block/{sys_block_name(dev)}/queue/scheduler")
        for label, cmd in (
            ("remember the current scheduler:", f"cat {queue}"),
            ("restore the original scheduler:", f"echo <original> > {queue}"),
        ):
            at = lines.index(f"#   {cmd}")
            assert lines[at - 1] == f"# {label}"
        assert not [ln for ln in lines if ln.startswith("#") and ln.rstrip().endswith((">", "|"))]


def test_notes_and_the_resume_note_follow_the_whole_header_folded():
    """A dry run's notes (the safety verdict's, a resume's) come after the whole header,
    each folded to 80 columns, in that order."""
    from fsadvisor.service import probing

    p = plan()
    p.matrix_id = "20250101-120000-abcdef"
    note = (
        "the xfs signature on /dev/loop9 (UUID 0b4c6e1c-2f7a-4d1e-9a51-3c0e7f1b2a44) is "
        "the one an unfinished probe made; formatting it needs no --force"
    )
    lines = probing.dry_run(p, [note])
    end = next(i for i, ln in enumerate(lines) if ln.endswith(" executed"))
    header = " ".join(ln[2:] for ln in lines[: end + 1])
    assert header.startswith("fsadvisor probe --dry-run: ")
    assert header.endswith("; nothing below is executed"), header
    assert "signature" not in header and "resuming" not in header, header
    resume = f"resuming matrix {p.matrix_id}: cells already stored are skipped"
    rest = lines[end + 1 :]
    k = next(
        (
            j
            for j in range(1, len(rest) + 1)
            if " ".join(ln[2:] for ln in rest[:j]) == f"{note} {resume}"
        ),
        None,
    )
    assert k is not None, rest[:4]
    assert all(ln.startswith("# ") and len(ln) <= 80 for ln in rest[:k]), rest[:k]
