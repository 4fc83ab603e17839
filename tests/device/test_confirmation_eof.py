"""probe and calibrate on a real device without --yes-wipe, standard input at its end (a
script, a pipe, cron): the prompt gets no answer, so one line, exit 2, nothing touched."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fsadvisor.host import loopdev

pytestmark = pytest.mark.device


@pytest.mark.parametrize(
    "command",
    [
        ["probe", "--fs", "ext4", "--runtime", "1", "--full"],
        ["calibrate", "--runtime", "1", "--reps", "1"],
    ],
)
def test_no_answer_at_the_prompt_is_one_line_and_touches_nothing(command, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    with loopdev.scratch_loop(512 << 20, tmp_path) as dev:
        env = dict(os.environ, FSADVISOR_DB=str(tmp_path / "s.db"))
        p = subprocess.run(
            [sys.executable, "-m", "fsadvisor.cli", command[0], dev, *command[1:]],
            input="",
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert lines[-1] == "fsadvisor: aborted: no answer to the prompt; nothing was touched"
        assert subprocess.run(["blkid", "-p", dev], capture_output=True).returncode == 2
