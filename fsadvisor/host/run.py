"""Running external commands: the one place fsadvisor starts a process.

Argument lists only, never a shell. Every command starts its own session, so a timeout or an
interruption stops its whole process group: fio forks one process per job, and killing only
the parent would leave its jobs writing to a filesystem about to be unmounted. Stopping is
SIGINT first (fio then ends its jobs and exits), SIGKILL after a grace period. Failures are
worded one way: "<tool> exited N: <last line of its output>", "<tool> timed out after N s",
"cannot run <tool>: <reason>".
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from fsadvisor.errors import FsAdvisorError

# How long a stopped command has to end on SIGINT before its process group gets SIGKILL.
STOP_GRACE_S = 5.0


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

    @property
    def name(self) -> str:
        return os.path.basename(self.argv[0]) if self.argv else "command"

    def one_line_error(self) -> str:
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        # The last non-empty line is usually the reason (mkfs and mount print usage first).
        last = next((ln.strip() for ln in reversed(text) if ln.strip()), "")
        return f"{self.name} exited {self.returncode}" + (f": {last[:300]}" if last else "")


class CommandFailed(FsAdvisorError):
    """A command could not run, timed out or (with ``check``) exited non-zero; the message
    is one line. ``result`` is what it printed, when it ran at all."""

    def __init__(
        self, message: str, result: CommandResult | None = None, reason: str | None = None
    ):
        super().__init__(message)
        self.result = result
        self.reason = reason or message  # without the "cannot run X:" prefix


class CommandNotFound(CommandFailed):
    """The program does not exist (a shell would say 127)."""


class CommandTimedOut(CommandFailed):
    """The command outlived its timeout; its process group was stopped."""


def run(
    argv: Sequence[str],
    *,
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    check: bool = False,
    on_child: Callable[[int | None], None] | None = None,
    critical: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
    stop_grace_s: float = STOP_GRACE_S,
) -> CommandResult:
    """Run ``argv`` with ``env`` added to this process's environment and wait for it.

    ``on_child`` hears the process group's id once it runs and None when it is gone (the
    probe's state file names it, so a later probe can stop it after a SIGKILL of this one).
    ``critical`` (a context manager factory) holds interruptions while the child starts: a
    signal raised inside ``Popen`` itself would leave a started child nobody knows about."""
    argv = [str(a) for a in argv]
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update(env)
    t0 = time.monotonic()
    held = contextlib.ExitStack()
    held.enter_context(critical())
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError as e:
        held.close()
        raise CommandNotFound(f"cannot run {argv[0]}: {e.strerror}", reason=e.strerror) from None
    except OSError as e:
        held.close()
        raise CommandFailed(f"cannot run {argv[0]}: {e.strerror}", reason=e.strerror) from None
    except BaseException:
        held.close()
        raise
    try:
        try:
            if on_child:
                on_child(proc.pid)
            # A signal held while the child started is raised here, with the child known.
            held.close()
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stop_group(proc, stop_grace_s)
            out, err = proc.communicate()
            raise CommandTimedOut(
                f"{os.path.basename(argv[0])} timed out after {timeout_s:g} s",
                CommandResult(tuple(argv), -1, out, err, time.monotonic() - t0),
            ) from None
        except BaseException:
            # Ctrl-C, SIGTERM (raised by the probe's handler) or anything else: the
            # command's process group must not outlive this call.
            stop_group(proc, stop_grace_s)
            raise
    finally:
        if on_child:
            on_child(None)
    result = CommandResult(
        tuple(argv), proc.returncode, out or "", err or "", time.monotonic() - t0
    )
    if check and not result.ok:
        raise CommandFailed(result.one_line_error(), result)
    return result


def stop_group(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> None:
    """SIGINT the process group, SIGKILL it if it has not gone after ``grace_s``."""
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; its forked jobs may not be.
        if not group_alive(proc.pid):
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and group_alive(proc.pid):
            time.sleep(0.05)
        if not group_alive(proc.pid):
            return


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
