"""The one subprocess runner (fsadvisor/host/run.py): argument lists, a timeout that stops
the whole process group, and one wording for every failure."""

from __future__ import annotations

import os
import sys
import time

import pytest

from fsadvisor.errors import one_line
from fsadvisor.host import run as hostrun


def test_output_and_exit_status_come_back():
    r = hostrun.run(
        [
            sys.executable,
            "-c",
            "import sys; print('out'); print('bad', file=sys.stderr); sys.exit(3)",
        ]
    )
    assert (r.returncode, r.stdout, r.stderr, r.ok) == (3, "out\n", "bad\n", False)
    assert r.one_line_error() == f"{os.path.basename(sys.executable)} exited 3: bad"
    with pytest.raises(hostrun.CommandFailed, match="exited 1: bad") as e:
        hostrun.run([sys.executable, "-c", "import sys; sys.exit('bad')"], check=True)
    assert e.value.result.returncode == 1


def test_env_is_added_to_this_process_environment():
    r = hostrun.run(
        [sys.executable, "-c", "import os; print(os.environ['FSA_X'], 'PATH' in os.environ)"],
        env={"FSA_X": "42"},
    )
    assert r.stdout.split() == ["42", "True"]


def test_a_missing_program_is_named():
    with pytest.raises(hostrun.CommandNotFound, match="cannot run /nonexistent/tool: ") as e:
        hostrun.run(["/nonexistent/tool"])
    assert "No such file" in e.value.reason


def test_a_timeout_stops_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    # the parent forks a child that would outlive it, as fio's jobs would
    code = (
        "import os, subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    t0 = time.monotonic()
    with pytest.raises(hostrun.CommandTimedOut, match=r"timed out after 1 s"):
        hostrun.run([sys.executable, "-c", code], timeout_s=1, stop_grace_s=2)
    assert time.monotonic() - t0 < 30
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as f:  # a zombie is gone too
            if f.read().split(")")[-1].split()[0] == "Z":
                break
        time.sleep(0.1)
    else:
        pytest.fail("the forked child outlived the timeout")


@pytest.mark.parametrize(
    "what, limit, expected",
    [
        ("a\n  b\tc ", None, "a b c"),
        (ValueError(), None, "ValueError"),
        (OSError("disk\nfull"), None, "disk full"),
        ("x" * 50, 10, "xxxxxxx..."),
    ],
)
def test_one_line(what, limit, expected):
    assert one_line(what, limit) == expected
