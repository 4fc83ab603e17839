"""The ``fsadvisor`` command: thin Typer front end over :mod:`fsadvisor.service`.

Each command parses, calls one service function and prints. A domain error becomes one line
on stderr and exit code 2; no traceback reaches the user.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import signal
import sys
import threading
from typing import Any, Callable

import typer
from typer.core import TyperGroup

from fsadvisor.errors import FsAdvisorError
from fsadvisor import limits

# Every top-level command, in the order --help lists them (the front door first), and the
# module of this package that defines it. The root group
# (LazyGroup) lists these names without importing anything and imports a command's module
# only when that command is asked for: `recommend` loads advice.py and its services, never
# the probe's, and typer builds the few commands that module defines, not all ~60.
# tests/unit/test_fast_startup.py holds the table to what the modules register.
COMMAND_MODULES = {
    "recommend": "advice",
    "predict": "advice",
    "validate": "advice",
    "apply": "apply",
    "calibrate": "calibrate",
    "refit": "calibrate",
    "compare": "compare",
    "probe": "probe",
    "report": "report",
    "simulate": "simulate",
    "tui": "tui",
    # command groups (typer lists them after the plain commands)
    "db": "db",
    "devices": "devices",
    "energy": "energy",
    "fleet": "fleet",
    "import": "imports",
    "profiles": "profiles",
}


class LazyGroup(TyperGroup):
    """The root command: a Click group whose subcommands are built the first time they are
    looked up (Click's documented way to a lazily loaded command set)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMAND_MODULES, *(n for n in self.commands if n not in COMMAND_MODULES)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            importlib.import_module(f"{__package__}.{COMMAND_MODULES[cmd_name]}")
            # typer builds the commands registered so far: the modules imported, not all.
            # The app has a callback (_root), so typer always builds a group of them.
            built = typer.main.get_command(app)
            assert isinstance(built, LazyGroup)
            for name, command in built.commands.items():
                self.commands.setdefault(name, person_facing(command))
        return self.commands.get(cmd_name)


# -h as well as --help everywhere; no rich boxes: a usage error is one line (main()).
app = typer.Typer(
    cls=LazyGroup,
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Choose a filesystem configuration for an SSD by operations per joule.",
)


def complete_profile(incomplete: str) -> list[str]:
    """Shell completion of --profile: the preset names starting with what was typed (a path
    is the shell's own file completion's job)."""
    # shell completion only: the service loads when a name is completed (start-up)
    from fsadvisor.service.advice import list_profiles

    return [p.name for p in list_profiles() if p.name.startswith(incomplete)]


def _version(value: bool) -> None:
    if value:
        # importlib.metadata only for --version (start-up)
        from importlib.metadata import version

        typer.echo(f"fsadvisor {version('fsadvisor')}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Choose a filesystem configuration for an SSD by operations per joule."""


def fail(message: str, code: int = 2) -> None:
    typer.echo(f"fsadvisor: {message}", err=True)
    raise typer.Exit(code)


def limit_option(name: str, option: str | None = None) -> Callable[[Any], Any]:
    """A Typer option callback: ``name``'s range (fsadvisor/limits.py) checked as the option
    is parsed, one line and exit code 2 on failure (the line the service would give);
    ``option``: the flag that line names, when it is not ``--name``."""

    def callback(value: Any) -> Any:
        try:
            return limits.check(name, value, option)
        except FsAdvisorError as e:
            fail(str(e))

    return callback


def confirm_wipe(plan: Any, yes_wipe: str | None, detail: str = "") -> str | None:
    """The destructive-run confirmation probe and calibrate share: nothing to confirm for a
    scratch loop device; else ``--yes-wipe`` must name the device, or the user types it at
    the prompt. Returns what was typed (the run records it); a mismatch is one line, exit 2."""
    # only a destructive command confirms: the probe's service loads then (start-up)
    from fsadvisor.service import probing

    if plan.scratch_size_bytes:
        return None
    if yes_wipe is not None:
        if not probing.confirmation_matches(plan, yes_wipe):
            fail(f"--yes-wipe {yes_wipe} does not match the device {plan.device}")
        return yes_wipe
    typer.echo(f"This DESTROYS all data on {plan.device}{detail}.", err=True)
    confirm = typer.prompt("Type the device path to continue", err=True)
    if not probing.confirmation_matches(plan, confirm):
        fail(f"not confirmed ({confirm!r} is not {plan.device}); nothing was touched")
    return confirm


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
            raise typer.Exit(0) from None
        except OSError as e:
            where = f"{e.filename}: " if getattr(e, "filename", None) else ""
            fail(f"{where}{e.strerror or e}")
        except (ValueError, KeyError) as e:
            fail(str(e) if str(e) else e.__class__.__name__)

    return wrapper


def emit_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, sort_keys=False, default=str))


# One metavar per option name, whatever command it is on (typer's defaults are <str>,
# <int>, <float>): what --help, the man page and the README show. An option that sets its
# own metavar keeps it; a new option without one gets its name in capitals (command_tree).
METAVARS = {
    "--config": "JSON",
    "--workload": "JSON",
    "--db": "PATH",
    "--device": "DEVICE",
    "--energy": "SOURCE",
    "--source": "SOURCE",
    "--folds": "N",
    "--format": "FORMAT",
    "--fs": "FS,...",
    "--kind": "KIND",
    "--load": "RATE",
    "--matrix": "ID",
    "--mountpoint": "PATH",
    "--name": "NAME",
    "--out": "FILE",
    "--output": "FILE",
    "--plp": "yes|no|unknown",
    "--price": "PER_KWH",
    "--profile": "NAME|FILE",
    "--pue": "X",
    "--rank": "N",
    "--reps": "N",
    "--requests": "N",
    "--schedulers": "SCHED,...",
    "--scope": "system|cpu+dram|drive",
    "--seconds": "SECONDS",
    "--sector-size": "512|4096",
    "--seed": "N",
    "--servers": "N",
    "--set": "KNOB=VALUE",
    "--sigma": "SD",
    "--table": "TABLE",
    "--top": "N",
    "--vary": "KNOB=V1,V2",
}


def command_tree(group=None):
    """The Click command typer builds from ``app`` (every command module loaded), or
    ``group`` (with the commands it has built so far: a LazyGroup finishes the others the
    same way as it builds them), finished for people (``person_facing``): main, the man page
    and the tests all read this tree."""
    if group is None:
        register_all()
        root = typer.main.get_command(app)
    else:
        root = group
    return person_facing(root)


def person_facing(cmd):
    """``cmd`` and its subcommands with one metavar per option name (METAVARS) and a short
    help that is the first sentence whole (Click would cut it at 45 characters with "..."):
    a person reads what the command does."""
    for sub in getattr(cmd, "commands", {}).values():
        person_facing(sub)
    if not cmd.short_help and cmd.help:
        first = " ".join(cmd.help.split()).split(". ")[0].rstrip(".")
        cmd.short_help = first + "."
    for p in getattr(cmd, "params", ()):
        if p.param_type_name == "option" and not p.is_flag and p.metavar is None:
            long = max(p.opts, key=len)
            p.metavar = METAVARS.get(long, long.lstrip("-").upper())
    return cmd


def register_all() -> None:
    # Command groups live in their own modules; importing them registers them on ``app``.
    # pkgutil only when every command is registered (man page, tests): start-up
    import pkgutil

    for mod in pkgutil.iter_modules([os.path.dirname(__file__)]):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__package__}.{mod.name}")


def usage_line(e: Any) -> str:
    """A Click usage error as one line: what was wrong and where help is."""
    ctx = e.ctx
    where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    return f"fsadvisor: {e.format_message()}{where}"


def _click_errors():
    """Typer 0.2x vendors its own Click (typer._click); older ones use click itself."""
    try:
        # which Click typer carries is only known by trying (see the docstring)
        from typer._click import exceptions
    except ImportError:  # pragma: no cover - typer with click as a dependency
        import click.exceptions  # the fallback of the try above

        return click.exceptions
    return exceptions


def main(argv: list[str] | None = None) -> None:
    """The ``fsadvisor`` command (``argv`` None: the process's own arguments)."""
    if argv is None:
        _interrupt_with_a_message()
    try:
        _main(argv)
    except (KeyboardInterrupt, Interrupted):
        typer.echo("fsadvisor: interrupted", err=True)
        sys.exit(130)
    except Exception as e:
        # Python wraps an exception raised in some places, the handler's among them: in a
        # descriptor's __set_name__ (while a module defines a class) it comes back as a
        # RuntimeError caused by it.
        if not _caused_by_interruption(e):
            raise
        typer.echo("fsadvisor: interrupted", err=True)
        sys.exit(130)
    finally:
        if argv is None:
            _exiting()


class Interrupted(BaseException):
    """Ctrl-C in a command: not KeyboardInterrupt, which typer turns into a silent exit 130."""


def _caused_by_interruption(e: BaseException) -> bool:
    """Whether ``e`` or an exception in its chain (cause or context) is the Ctrl-C's."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, (Interrupted, KeyboardInterrupt)):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def _interrupt_with_a_message() -> None:
    # The process's own command line only; a probe installs its own handler while it runs
    # (probe/run.py Interruptions) and puts this one back after.

    def handler(signum: int, frame: object) -> None:
        raise Interrupted()

    # A signal handler's exception raised inside a callback whose exceptions Python ignores
    # (a weakref callback such as importlib's module-lock cleanup, a __del__) would be
    # printed as "Exception ignored" and the Ctrl-C lost: send it again, a little later,
    # from another thread (any way of raising it from this hook runs the handler in the
    # hook, whose exceptions are ignored too), to land once that callback has returned.
    previous = sys.unraisablehook

    def unraisable(u: Any) -> None:
        if isinstance(u.exc_value, Interrupted):
            main_id = threading.main_thread().ident
            assert main_id is not None  # the main thread is running this hook
            again = threading.Timer(0.01, signal.pthread_kill, args=(main_id, signal.SIGINT))
            again.daemon = True
            again.start()
            return
        previous(u)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)
        sys.unraisablehook = unraisable


def _exiting() -> None:
    # The process is about to end: move every object the garbage collector tracks out of
    # its sight (gc.freeze), so interpreter shutdown does not walk them all again (after a
    # `recommend` that walk took longer than all of `python3 -c 'import numpy'`;
    # benchmarks/recommend_vs_numpy.py measures the whole command). Nothing is
    # skipped that a user could see: atexit handlers, thread joins, stream flushes and
    # every deallocation by reference count still run; only cyclic garbage is left to the
    # OS, and CPython never promised finalizers for that at exit. Only for the process's
    # own command line, so an in-process caller (tests, main([...])) keeps its collector.
    import gc

    gc.freeze()


def _main(argv: list[str] | None) -> None:
    cx = _click_errors()
    # The root group with what is registered so far; its commands load on demand (LazyGroup).
    command = command_tree(typer.main.get_command(app))
    try:
        rc = command.main(args=argv, prog_name="fsadvisor", standalone_mode=False)
    except cx.NoArgsIsHelpError as e:  # bare `fsadvisor` or a bare group: its help
        typer.echo(e.ctx.get_help() if e.ctx is not None else str(e))
        sys.exit(0)
    except cx.UsageError as e:
        typer.echo(usage_line(e), err=True)
        sys.exit(2)
    except cx.ClickException as e:
        typer.echo(f"fsadvisor: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    except (typer.Abort, EOFError):
        # typer's answer to standard input ending at a prompt: the confirmation never came
        # (a prompt is on the line without its newline: end it first)
        typer.echo("\nfsadvisor: aborted: no answer to the prompt; nothing was touched", err=True)
        sys.exit(2)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
