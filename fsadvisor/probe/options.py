"""The options of ``fsadvisor probe``, declared once.

:class:`ProbeOptions` is every choice that says what a probe measures and how: one field per
option, with its type and default (the request's), and in the field's metadata its flag,
help, metavar, range (a name in fsadvisor/limits.py, the one table of numeric ranges) and
the :func:`fsadvisor.probe.plan.build_plan` keyword it reaches. Everything else is derived
from it: the CLI's options (fsadvisor/cli/probe.py builds the command's signature from these
fields), :class:`fsadvisor.service.request.ProbeRequest` (a subclass, so its fields are these),
the request's own command line (``to_argv``), its range checks, and the keyword arguments
planning passes on (:func:`plan_kwargs`). :class:`RunChoices` declares the same way the
options that say how a front end runs and shows a probe (--json, --adaptive, --budget, ...),
which reach no request.

A new option is one field here and the code that uses it.

Pure: this imports the ranges and nothing of the machinery, so the CLI reads it on start-up.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass, field
from typing import Any, Iterator

from fsadvisor import limits

DEFAULT_FILESYSTEMS = ("ext4", "xfs", "btrfs", "f2fs")
DEFAULT_SCHEDULERS = ("none", "mq-deadline")


def option(
    default: Any,
    flag: str,
    help: str,
    *,
    metavar: str | None = None,
    limit: str | None = None,
    cli_type: Any = None,
    cli_default: Any = ...,
    plan: str | None = None,
    plan_value: str | None = None,
    complete: str | None = None,
    after: str | None = None,
) -> Any:
    """A field of :class:`ProbeOptions` (or :class:`RunChoices`) and how it is offered.

    ``flag``: the CLI's spelling (``--micro/--no-micro`` for a switch that is on by
    default); ``limit``: its range in fsadvisor/limits.py, added to the help and checked as
    the CLI parses a number; ``cli_type``/``cli_default``: what the CLI takes where that
    is not the field's own (a comma list for a tuple, a repeatable option); ``plan``: the
    build_plan keyword the value reaches, read from the request's attribute ``plan_value``
    (the field itself unless it is parsed first); ``complete``: the shell completion the
    front end attaches; ``after``: the option the CLI lists it behind (RunChoices only)."""
    meta = {
        "flag": flag,
        "help": help,
        "metavar": metavar,
        "limit": limit,
        "cli_type": cli_type,
        "cli_default": default if cli_default is ... else cli_default,
        "plan": plan,
        "plan_value": plan_value,
        "complete": complete,
        "after": after,
    }
    if isinstance(default, (list, dict, set)):
        raise TypeError("an option's default is immutable")
    return field(default=default, metadata={"option": meta})


@dataclass(frozen=True)
class ProbeOptions:
    """What to probe and how: every option of ``fsadvisor probe`` that a probe request
    carries (field names follow the CLI options: ``--runtime`` -> ``runtime_s``)."""

    scratch: str | None = option(
        None,
        "--scratch",
        metavar="SIZE",
        limit="scratch",
        plan="scratch_size_bytes",
        plan_value="scratch_bytes",
        help="Probe a file-backed loop device of SIZE (e.g. 2G) instead of a disk; its numbers "
        "are not an SSD's. Detached at the end.",
    )  # SIZE as written (to_argv renders it)
    scratch_dir: str | None = option(
        None,
        "--scratch-dir",
        metavar="DIR",
        plan="scratch_dir",
        help="Where the scratch backing file goes (default: $TMPDIR).",
    )
    filesystems: tuple[str, ...] = option(
        DEFAULT_FILESYSTEMS,
        "--fs",
        cli_type=str,
        cli_default=",".join(DEFAULT_FILESYSTEMS),
        plan="filesystems",
        help="Filesystems, comma-separated.",
    )
    configs: tuple[str, ...] = option(  # JSON objects, as --config takes them
        (),
        "--config",
        metavar="JSON",
        cli_type=typing.Optional[list[str]],
        cli_default=None,
        plan="explicit_configs",
        plan_value="parsed_configs",
        help='Explicit configuration (repeatable), e.g. \'{"filesystem":"xfs","mount":["noatime"]}\'; '
        "replaces the default set.",
    )
    agcounts: tuple[int, ...] = option(
        (),
        "--agcounts",
        metavar="N,N",
        cli_type=typing.Optional[str],
        cli_default=None,
        plan="agcounts",
        help="XFS allocation-group counts to add, e.g. 4,16.",
    )
    schedulers: tuple[str, ...] = option(
        DEFAULT_SCHEDULERS,
        "--schedulers",
        cli_type=str,
        cli_default=",".join(DEFAULT_SCHEDULERS),
        plan="schedulers",
        help="I/O schedulers, comma-separated (none,mq-deadline,kyber,bfq).",
    )
    # The CLI takes several (one adaptive probe each, service/adaptive.py); a request one.
    profile: str | None = option(
        None,
        "--profile",
        metavar="NAME|FILE",
        cli_type=typing.Optional[list[str]],
        complete="profile",
        help="Your workload (preset name or TOML file), run next to the micro matrix. Repeat it "
        "for a server's several workloads: one adaptive probe for all of them (one "
        "calibration, one --budget), each next cell the most valuable of any profile's, "
        "a cell profiles share measured once; an answer per profile.",
    )
    micro: bool = option(
        True, "--micro/--no-micro", plan="micro", help="Run the standard micro matrix."
    )
    workloads: tuple[str, ...] | None = option(
        None,
        "--workloads",
        metavar="NAMES",
        cli_type=typing.Optional[str],
        plan="micro_names",
        help="Only these micro workloads (comma-separated).",
    )
    variants: bool = option(
        True,
        "--variants/--no-variants",
        plan="variants",
        help="Measure each filesystem's option variants, not only its default.",
    )
    baseline: bool = option(
        True,
        "--baseline/--no-baseline",
        plan="baseline",
        help="Raw-device baseline of the micro workloads (filesystem overhead).",
    )
    reps: int | None = option(
        None, "--reps", limit="reps", plan="reps", help="Repetitions per cell (default 3)."
    )
    runtime_s: float | None = option(
        None,
        "--runtime",
        metavar="SECONDS",
        limit="runtime",
        plan="runtime_s",
        help="Measurement window per run (default 30).",
    )
    cooldown_s: float | None = option(
        None,
        "--cooldown",
        metavar="SECONDS",
        limit="cooldown",
        plan="cooldown_s",
        help="Idle period after each run (default 30, seed 000).",
    )
    size: str | None = option(
        None,
        "--size",
        metavar="SIZE",
        limit="size",
        plan="size_bytes",
        plan_value="size_bytes",
        help="Data set per job (default: 1/8 of the device, at most 4G).",
    )
    quick: bool = option(
        False,
        "--quick",
        plan="quick",
        help="1 rep, 10 s runs, 4k randread/randwrite only, no variants.",
    )
    resume: bool = option(
        False, "--resume", help="Continue the last unfinished matrix of this device."
    )
    energy: str = option("auto", "--energy", help="auto | rapl | ipmi | meter-log | estimate.")
    meter_log: str | None = option(
        None, "--meter-log", metavar="FILE", help="CSV log of an external power meter."
    )
    clock_offset_s: float = option(
        0.0,
        "--clock-offset",
        metavar="SECONDS",
        limit="clock-offset",
        help="Add to the meter log's timestamps to align its clock with this host's.",
    )
    idle_watts: str | None = option(
        None,
        "--idle-watts",
        metavar="W",
        limit="idle-watts",
        help="Known idle power of the machine.",
    )
    idle_seconds: float | None = option(
        None,
        "--idle-seconds",
        metavar="S",
        limit="idle-seconds",
        help="Measure idle power for S seconds before the matrix.",
    )
    plp: str = option(
        "unknown", "--plp", plan="plp", help="Drive has power-loss protection: yes | no | unknown."
    )
    db: str | None = option(
        None,
        "--db",
        metavar="PATH",
        help="Store file (default: $FSADVISOR_DB, else the user data dir).",
    )
    dry_run: bool = option(
        False, "--dry-run", help="Print every command it would run and run none (no root needed)."
    )
    force: bool = option(
        False,
        "--force",
        plan="force",
        help="Destroy an existing filesystem signature (never a partition table, nor an "
        "array, LVM, LUKS or ZFS member: those are refused).",
    )


@dataclass(frozen=True)
class RunChoices:
    """How a front end runs and shows a probe: the options of ``fsadvisor probe`` that are
    not part of the request (its output, the confirmation, the adaptive probe's stopping
    rule). The CLI lists each behind its ``after`` option, else at the end."""

    as_json: bool = option(False, "--json", after="resume", help="Print the final summary as JSON.")
    plot: bool = option(
        False,
        "--plot",
        after="as_json",
        help="After the summary, draw each workload's measured ops/J as bars with 95% whiskers.",
    )
    profile_weights: str | None = option(
        None,
        "--profile-weights",
        metavar="W,W",
        after="profile",
        help="With several --profile: how much each profile's answer counts when the probe "
        "chooses its next cell (one positive number per --profile, in their order; "
        "default all equal).",
    )
    yes_wipe: str | None = option(
        None,
        "--yes-wipe",
        metavar="DEVICE",
        help="Confirm without a prompt by repeating the exact device.",
    )
    adaptive: bool = option(
        False,
        "--adaptive",
        help="Let the model choose each next cell of the --profile matrix and stop once the "
        "winner is settled (calibrates the device first if needed). The default with "
        "--profile.",
    )
    full: bool = option(
        False,
        "--full",
        help="Run the whole matrix (the micro matrix, and the profile's with --profile) "
        "instead of the adaptive probe; without --profile a matrix over an hour needs it.",
    )
    budget: str | None = option(
        None,
        "--budget",
        metavar="TIME",
        limit="budget",
        help="With --adaptive: most device time to spend (e.g. 90s, 3m, 1h; default a fifth "
        "of the full matrix's estimate, the device's calibration included).",
    )
    target_confidence: float = option(
        0.95,
        "--target-confidence",
        metavar="P",
        limit="target-confidence",
        help="With --adaptive: stop when P(the leader is the best) reaches P.",
    )


@dataclass(frozen=True)
class Declared:
    """One declared option, read back from its field."""

    name: str
    type: Any  # the field's type (the request's)
    default: Any
    flag: str
    help: str  # with its range, as the CLI shows it
    metavar: str | None
    limit: str | None
    cli_type: Any
    cli_default: Any
    plan: str | None
    plan_value: str
    complete: str | None
    after: str | None

    @property
    def flags(self) -> tuple[str, ...]:
        """``("--micro", "--no-micro")`` for a switch, else ``("--reps",)``."""
        return tuple(self.flag.split("/"))

    @property
    def numeric(self) -> bool:
        """A number on the command line: the CLI checks its range as it parses it (a size or
        a duration is text until the request parses it, and the request checks it then)."""
        base = [a for a in typing.get_args(self.cli_type) if a is not type(None)] or [self.cli_type]
        return base[0] in (int, float)


def declared(cls: type = ProbeOptions) -> tuple[Declared, ...]:
    """The options ``cls`` declares, in order (``cls``: ProbeOptions, RunChoices, or a
    subclass that adds one)."""
    return _declared(cls)


@functools.cache
def _declared(cls: Any) -> tuple[Declared, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get("option")
        if meta is None:
            continue
        hint = hints[f.name]
        out.append(
            Declared(
                name=f.name,
                type=hint,
                default=f.default,
                flag=meta["flag"],
                help=meta["help"] + (limits.help_range(meta["limit"]) if meta["limit"] else ""),
                metavar=meta["metavar"],
                limit=meta["limit"],
                cli_type=meta["cli_type"] if meta["cli_type"] is not None else hint,
                cli_default=meta["cli_default"],
                plan=meta["plan"],
                plan_value=meta["plan_value"] or f.name,
                complete=meta["complete"],
                after=meta["after"],
            )
        )
    return tuple(out)


def cli_order(*classes: type) -> list[Declared]:
    """The options of ``classes`` in the order the CLI lists them: each class's in turn,
    an option with ``after`` right behind that one."""
    out: list[Declared] = []
    placed: list[Declared] = []
    for cls in classes:
        for d in declared(cls):
            (placed if d.after else out).append(d)
    for d in placed:
        at = next(i for i, o in enumerate(out) if o.name == d.after)
        out.insert(at + 1, d)
    return out


def plan_kwargs(request: Any, cls: type = ProbeOptions) -> Iterator[tuple[str, Any]]:
    """(build_plan keyword, value) for every declared option that reaches the plan as it
    is (or as the request parsed it), read from ``request``."""
    for d in declared(cls):
        if d.plan is not None:
            yield d.plan, getattr(request, d.plan_value)


def check_ranges(request: Any, cls: type = ProbeOptions) -> None:
    """Every declared numeric range, checked on the request's values (the parsed one where
    the option is text: ``--size 1G`` as bytes). ConfigError names the option."""
    for d in declared(cls):
        if d.limit is None:
            continue
        value = getattr(request, d.plan_value)
        if isinstance(value, str):
            continue  # parsed later (--idle-watts: by the energy planning, which checks it)
        limits.check(d.limit, value, d.flags[0])
