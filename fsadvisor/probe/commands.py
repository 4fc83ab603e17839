"""Running the probe's external commands: argument lists only, each in its own process group.

fio forks one process per job. Killing only the fio parent would leave its jobs writing to a
filesystem we are about to unmount, so every command starts a new session and is stopped as
a group: SIGINT first (fio then ends its jobs and exits), SIGKILL after a grace period. The
running group is reported to ``on_child`` so the state file can name it, and a later probe can
stop it if this process is SIGKILLed.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from fsadvisor.errors import FsAdvisorError


class CommandFailed(FsAdvisorError):
    """A probe step's command exited non-zero; the message is one line."""

    def __init__(self, message: str, result: "CommandResult | None" = None):
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def one_line_error(self) -> str:
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        # The last non-empty line is usually the reason (mkfs and mount print usage first).
        last = next((ln.strip() for ln in reversed(text) if ln.strip()), "")
        name = os.path.basename(self.argv[0]) if self.argv else "command"
        return f"{name} exited {self.returncode}" + (f": {last[:300]}" if last else "")


def display(argv: Sequence[str]) -> str:
    return shlex.join(list(argv))


class Executor:
    """``critical`` (a context manager factory) holds interruptions while a child starts: a
    signal raised inside ``Popen`` itself would leave a started child that nobody knows
    about (it happened: a fill that ran after the cleanup wrote into the bare mount point)."""

    def __init__(self, on_child: Callable[[int | None], None] | None = None,
                 stop_grace_s: float = 5.0,
                 critical: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext):
        self.on_child = on_child
        self.stop_grace_s = stop_grace_s
        self.critical = critical

    def run(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
            timeout_s: float | None = None, check: bool = True,
            cwd: str | None = None) -> CommandResult:
        argv = [str(a) for a in argv]
        full_env = None
        if env:
            full_env = dict(os.environ)
            full_env.update(env)
        t0 = time.monotonic()
        held = contextlib.ExitStack()
        held.enter_context(self.critical())
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, text=True, errors="replace",
                                    env=full_env, cwd=cwd, start_new_session=True)
        except OSError as e:
            held.close()
            raise CommandFailed(f"cannot run {argv[0]}: {e.strerror}") from None
        except BaseException:
            held.close()
            raise
        try:
            try:
                if self.on_child:
                    self.on_child(proc.pid)
                # A signal held while the child started is raised here, with the child known.
                held.close()
                out, err = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.stop(proc)
                out, err = proc.communicate()
                raise CommandFailed(f"{os.path.basename(argv[0])} timed out after {timeout_s:g} s",
                                    CommandResult(tuple(argv), -1, out, err,
                                                  time.monotonic() - t0)) from None
            except BaseException:
                # Ctrl-C, SIGTERM (raised by the probe's handler) or anything else: the
                # command's process group must not outlive this step.
                self.stop(proc)
                raise
        finally:
            if self.on_child:
                self.on_child(None)
        result = CommandResult(tuple(argv), proc.returncode, out or "", err or "",
                               time.monotonic() - t0)
        if check and not result.ok:
            raise CommandFailed(result.one_line_error(), result)
        return result

    def stop(self, proc: subprocess.Popen) -> None:
        for sig, wait_s in ((signal.SIGINT, self.stop_grace_s), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                continue
            # The leader is gone; its forked jobs may not be.
            if not _group_alive(proc.pid):
                return
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and _group_alive(proc.pid):
                time.sleep(0.05)
            if not _group_alive(proc.pid):
                return


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
