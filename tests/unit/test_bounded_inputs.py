"""Inputs that never end, never arrive or do not fit: each is one line and exit 2, quickly,
never a traceback, a hang or unbounded memory.

- a device (/dev/zero) or a FIFO with no writer given as a fio result, a profile or a meter
  log is refused unread: only regular files are read, and at most a stated size;
- a meter log with an absurd numeric timestamp skips that row (no OverflowError);
- calibrate --reps 1000000 is refused by the option's range before a plan is built;
- a scratch device larger than the free space is refused before a file is created, naming
  the scratch directory;
- a newline inside a fio field never makes the error two lines;
- Ctrl-C while the program is still loading is "interrupted", exit 130, no traceback, also
  where Python drops or wraps a signal handler's exception (a weakref callback, a
  descriptor's __set_name__).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "fio"


def cli(
    *args: str, db: Path, timeout: float = 60, stdin: str | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    e = dict(os.environ, FSADVISOR_DB=str(db), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "fsadvisor.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=e,
        input=stdin if stdin is not None else "",
    )


def one_line_refusal(p: subprocess.CompletedProcess, needle: str) -> None:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1, (p.returncode, p.stderr[-2000:])
    assert needle in lines[0] and "Traceback" not in p.stderr, p.stderr


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


IMPORT = [
    "import",
    "fio-json",
    "--device",
    "nvme:1T",
    "--config",
    '{"filesystem": "xfs"}',
    "--profile",
    "fio-randread-4k-j1",
]


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_import_reads_only_regular_files(target, fifo, tmp_path):
    path = str(fifo) if target == "fifo" else target
    t0 = time.monotonic()
    p = cli(*IMPORT, path, db=tmp_path / "s.db")
    one_line_refusal(p, "not a regular file")
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_a_profile_path_that_is_no_regular_file_is_refused(target, fifo, tmp_path):
    path = str(fifo) if target == "fifo" else target
    p = cli("recommend", "--profile", path, db=tmp_path / "s.db")
    one_line_refusal(p, "not a regular file")


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_a_meter_log_that_is_no_regular_file_is_named_as_such(target, fifo, tmp_path):
    path = str(fifo) if target == "fifo" else target
    p = cli("energy", "import-log", path, db=tmp_path / "s.db")
    one_line_refusal(p, "not a regular file")
    assert "not found" not in p.stderr


def test_a_huge_numeric_timestamp_is_a_skipped_row(tmp_path):
    from fsadvisor.energy import meterlog

    log = meterlog.parse_log(
        "timestamp,watts\n" + "9" * 400 + ",50\n1790000000,60\n1e308,70\n1790000001,61\n"
    )
    assert [w for _, w in log.samples] == [60.0, 61.0] and log.rows_skipped == 2
    path = tmp_path / "m.csv"
    path.write_text("timestamp,watts\n" + "9" * 400 + ",50\n")
    p = cli("energy", "import-log", str(path), db=tmp_path / "s.db")
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) <= 1, p.stderr


def test_calibrate_refuses_absurd_repetitions_before_planning(tmp_path):
    t0 = time.monotonic()
    p = cli("calibrate", "--scratch", "1G", "--dry-run", "--reps", "1000000", db=tmp_path / "s.db")
    one_line_refusal(p, "--reps must be between 1 and 100")
    assert time.monotonic() - t0 < 30


def test_a_scratch_device_larger_than_the_free_space_is_refused_first(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    p = cli(
        "probe",
        "--scratch",
        "16T",
        "--scratch-dir",
        str(scratch),
        "--fs",
        "ext4",
        "--runtime",
        "1",
        "--full",
        db=tmp_path / "s.db",
    )
    one_line_refusal(p, f"does not fit in {scratch}")
    assert list(scratch.iterdir()) == []


def test_a_newline_inside_a_fio_field_stays_on_one_line(tmp_path):
    doc = json.loads((FIXTURES / "fio-3.33-randread-json-plus.json").read_text())
    doc["jobs"][0]["job options"]["rw"] = "randwrite\nand a second line"
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    p = cli(*IMPORT, str(path), db=tmp_path / "s.db")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_ctrl_c_while_loading_is_one_line_and_exit_130(tmp_path):
    """SIGINT a few tens of ms after start, while Python still imports the program (the
    console script's entry point, fsadvisor.cli.entry), and later while the command runs."""
    env = dict(os.environ, FSADVISOR_DB=str(tmp_path / "s.db"))

    # The interpreter's own start-up and its import of signal (with enum) come before
    # anything can install a handler (a SIGINT there is Python's default traceback):
    # measured here and now, the slowest of three, so that on a busy machine (the suite runs
    # in two processes) the signals still land while the program loads and runs.
    def bare_start() -> float:
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", "import os, signal"], check=True)
        return time.monotonic() - t0

    bare = max(bare_start() for _ in range(3))
    seen = set()
    for delay in (bare + 0.02, bare + 0.05, bare + 0.1, bare + 0.15):
        p = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from fsadvisor.cli.entry import main; main()",
                "recommend",
                "-p",
                "oltp",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        assert "Traceback" not in err, err
        if p.returncode == 130:
            assert err.strip() == "fsadvisor: interrupted", err
        seen.add(p.returncode)
    assert 130 in seen  # at least one landed while loading or running


# Where Python itself turns a signal handler's exception into something else: inside a
# weakref callback (importlib's module-lock cleanup is one) it is printed as "Exception
# ignored" and dropped; inside a descriptor's __set_name__ (a module defining a class while
# it is imported) it comes back as a RuntimeError caused by it. Each is driven here by the
# command itself raising SIGINT at that point, so the case does not depend on timing.
_AT_A_POINT = {
    "weakref callback": """
class O:
    pass
o = O()
r = weakref.ref(o, lambda _: signal.raise_signal(signal.SIGINT))
del o
time.sleep(20)  # the Ctrl-C, delivered again, ends this at once
""",
    "__set_name__": """
class D:
    def __set_name__(self, owner, name):
        signal.raise_signal(signal.SIGINT)
class A:
    d = D()
""",
}


@pytest.mark.parametrize("where", sorted(_AT_A_POINT))
def test_ctrl_c_where_python_rewraps_it_is_still_one_line_and_exit_130(tmp_path, where):
    body = "\n".join("    " + line for line in _AT_A_POINT[where].strip().splitlines())
    script = (
        "import signal, sys, time, weakref\n"
        "from fsadvisor.cli import app\n"
        "def command(argv):\n"
        f"{body}\n"
        "    print('the command went on')\n"
        "app._main = command\n"
        "sys.argv = ['fsadvisor']\n"
        "app.main()\n"
    )
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, FSADVISOR_DB=str(tmp_path / "s.db")),
    )
    assert (p.returncode, p.stderr.strip(), p.stdout) == (130, "fsadvisor: interrupted", "")
    assert time.monotonic() - t0 < 15  # not the 20 s sleep: the signal came again


def test_only_an_interruption_in_the_chain_counts_as_one():
    from fsadvisor.cli.app import Interrupted, _caused_by_interruption

    class D:
        def __set_name__(self, owner, name):
            raise Interrupted()

    with pytest.raises(RuntimeError) as wrapped:

        class A:
            d = D()

    assert _caused_by_interruption(wrapped.value)
    try:
        try:
            raise KeyError("x")
        except KeyError:
            raise ValueError("while handling")  # noqa: B904 - the context is the point
    except ValueError as e:
        assert not _caused_by_interruption(e)
