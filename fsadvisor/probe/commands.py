"""The probe's way of running its steps: :func:`fsadvisor.host.run.run` (argument lists,
own process group, one wording for failures) with the matrix's hooks attached.

The running group is reported to ``on_child`` so the state file can name it, and a later
probe can stop it if this process is SIGKILLed.
"""

from __future__ import annotations

import contextlib
import shlex
from typing import Callable, Mapping, Sequence

from fsadvisor.host.run import STOP_GRACE_S, CommandFailed, CommandResult, run

__all__ = ["CommandFailed", "CommandResult", "Executor", "display"]


def display(argv: Sequence[str]) -> str:
    return shlex.join(list(argv))


class Executor:
    """``critical`` (a context manager factory) holds interruptions while a child starts: a
    signal raised inside ``Popen`` itself would leave a started child that nobody knows
    about (it happened: a fill that ran after the cleanup wrote into the bare mount point)."""

    def __init__(
        self,
        on_child: Callable[[int | None], None] | None = None,
        stop_grace_s: float = STOP_GRACE_S,
        critical: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
    ):
        self.on_child = on_child
        self.stop_grace_s = stop_grace_s
        self.critical = critical

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        check: bool = True,
        cwd: str | None = None,
    ) -> CommandResult:
        return run(
            argv,
            env=env,
            timeout_s=timeout_s,
            check=check,
            cwd=cwd,
            on_child=self.on_child,
            critical=self.critical,
            stop_grace_s=self.stop_grace_s,
        )
