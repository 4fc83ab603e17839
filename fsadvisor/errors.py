"""Domain errors. Front ends turn any of these into one line on stderr and exit code 2."""

import os
import sys


class FsAdvisorError(Exception):
    """A problem the user can fix (bad input, unsafe device, unsupported filesystem)."""


class ProfileError(FsAdvisorError):
    pass


class ConfigError(FsAdvisorError):
    pass


class DeviceRefused(FsAdvisorError):
    """The device must not be touched; the message says why in one line."""


class StoreError(FsAdvisorError):
    pass


class EnergyError(FsAdvisorError):
    pass


class NotSupported(FsAdvisorError):
    """E.g. f2fs on a kernel without it: reported, never a crash."""


def one_line(what: object, limit: int | None = None) -> str:
    """``what`` (an exception or any text) as one line, whitespace collapsed: what every
    error message here is made of. An exception without a message says its class name;
    ``limit`` cuts a long line to that many characters, ending in "..."."""
    text = " ".join(str(what).split())
    if not text and isinstance(what, BaseException):
        text = what.__class__.__name__
    if limit is not None and len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def exit_interrupted() -> None:
    """Ctrl-C before the CLI handles it itself (while the program still loads): the shell's
    convention, one line and exit 130, no traceback. Nothing is half-written while loading,
    so the process ends at once."""

    sys.stderr.write("fsadvisor: interrupted\n")
    sys.stderr.flush()
    os._exit(130)
