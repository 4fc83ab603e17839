"""The ``fsadvisor`` command: thin Typer front end over :mod:`fsadvisor.service`.

Each command parses, calls one service function and prints. A domain error becomes one line
on stderr and exit code 2; no traceback reaches the user.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import Any, Callable

import typer

from fsadvisor.errors import FsAdvisorError

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Choose a filesystem configuration for an SSD by operations per joule.")


def fail(message: str, code: int = 2) -> None:
    typer.echo(f"fsadvisor: {message}", err=True)
    raise typer.Exit(code)


def limit_option(name: str) -> Callable[[Any], Any]:
    """A Typer option callback: ``name``'s range (fsadvisor/limits.py) checked as the option
    is parsed, one line and exit code 2 on failure (the line the service would give)."""
    from fsadvisor.service import options

    def callback(value: Any) -> Any:
        try:
            return options.check(name, value)
        except FsAdvisorError as e:
            fail(str(e))

    return callback


def domain_errors(fn: Callable) -> Callable:
    """Turn FsAdvisorError (and bad JSON/TOML surfacing as ValueError, absurdly nested JSON,
    an unwritable output path) into one line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except FsAdvisorError as e:
            fail(str(e))
        except RecursionError:
            fail("input nested too deeply")
        except BrokenPipeError:
            # The reader (`| head`) has gone: stop quietly, as other Unix tools do.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(0)
        except OSError as e:
            where = f"{e.filename}: " if getattr(e, "filename", None) else ""
            fail(f"{where}{e.strerror or e}")
        except (ValueError, KeyError) as e:
            fail(str(e) if str(e) else e.__class__.__name__)

    return wrapper


def emit_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, sort_keys=False, default=str))


def _register() -> None:
    # Command groups live in their own modules; importing them registers them on ``app``.
    import importlib
    import pkgutil

    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")


# The module defining each of the offline commands that must start fast (issue 13): for
# these, main() loads that one module, so typer builds its three commands instead of
# inspecting every command's signature (~60 functions) and importing every module's service.
# Only a module with two or more commands may be listed (typer runs a lone command as the
# whole program). Anything else (help, other commands, typos) loads every module.
# tests/unit/test_fast_startup.py checks the table against the full registration.
FAST_COMMANDS = {"recommend": "advice", "predict": "advice"}


def main() -> None:
    import importlib

    args = sys.argv[1:]
    module = FAST_COMMANDS.get(args[0]) if args else None
    if module is not None:
        importlib.import_module(f"{__name__}.{module}")
    else:
        _register()
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
