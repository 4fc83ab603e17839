"""probe --dry-run on a device reached through a hostile symlink name: every
previewed command keeps the name as one quoted word, and the sysfs lines use the kernel's
name of the device the symlink resolves to. Nothing is executed (no file named PWN*)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

pytestmark = pytest.mark.device


def test_a_symlink_with_shell_metacharacters_previews_safely(loop_device, tmp_path):
    dev = loop_device(320 << 20)
    link = tmp_path / "x y;touch PWN$(id)"
    link.symlink_to(dev)
    env = dict(os.environ, FSADVISOR_DB=str(tmp_path / "p.db"))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsadvisor.cli",
            "probe",
            str(link),
            "--dry-run",
            "--fs",
            "ext4",
            "--schedulers",
            "none,mq-deadline",
            "--quick",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    queue = f"/sys/block/{os.path.basename(dev)}/queue/scheduler"
    lines = p.stdout.splitlines()
    echo = [ln for ln in lines if ln.startswith("echo ") and "scheduler" in ln]
    assert echo and all(
        shlex.split(ln) in (["echo", "none", ">", queue], ["echo", "mq-deadline", ">", queue])
        for ln in echo
    ), echo
    assert lines[lines.index(f"#   cat {queue}") - 1] == "# remember the current scheduler:"
    for ln in lines:
        if ln.startswith("#"):
            continue
        for w in shlex.split(ln.split("  # ")[0]):
            assert (
                "PWN" not in w or w in (str(link), f"--filename={link}") or w.endswith(str(link))
            ), (ln, w)
    wipe = [ln for ln in lines if ln.startswith("wipefs ")]
    assert shlex.split(wipe[0].split("  # ")[0])[-1] == str(link)
    # A real shell reads the previewed words back as they were, and runs nothing hidden in
    # them: the wipefs line with its command swapped for printf.
    cmd = wipe[0].split("  # ")[0].replace("wipefs", "printf '%s\\n'", 1)
    out = subprocess.run(
        ["sh", "-c", cmd], capture_output=True, text=True, cwd=tmp_path, timeout=30
    )
    assert out.stdout.splitlines()[-1] == str(link), (cmd, out)
    assert not [f for f in os.listdir(tmp_path) if f.startswith("PWN")]
