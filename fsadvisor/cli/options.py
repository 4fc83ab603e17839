"""The options several commands take, each declared once: its flags, help, range check and
metavar. A command names the alias (``db: DbOpt = None``) and sets the default with ``=``,
as typer wants it. Where two commands give the same flag a different meaning (what --load
adds, --top's count and default, what --profile is for) each meaning is its own alias or a
helper's argument; a flag one command alone takes stays in that command.

Imported by most command modules on every run, so it imports only what they import already
(typer, fsadvisor.limits, and service/worth_inputs.py, which imports only the ranges) and
builds a handful of typer.Option objects, nothing more.
(The probe's options are declared in fsadvisor/probe/options.py, from which the probe
command and its request are both built; they are not repeated here. The yearly figures'
inputs are declared in fsadvisor/service/worth_inputs.py; ``with_worth_options`` makes them
a command's options.)"""

# No `from __future__ import annotations`: nothing here is a function annotation typer has to
# evaluate; the aliases are values.

import dataclasses
import functools
import inspect
import typing
from typing import Annotated, Any, Callable, Optional

import typer

from fsadvisor import limits
from fsadvisor.cli.app import METAVARS, complete_profile, limit_option
from fsadvisor.service.worth_inputs import WorthInputs


def bounded(*flags: str, help: str, **settings: Any) -> Any:
    """A number option whose range (fsadvisor/limits.py, named after its long flag) is
    checked as it is parsed and said at the end of its help."""
    name = flags[0].lstrip("-")
    settings.setdefault("metavar", METAVARS.get(flags[0]))
    return typer.Option(
        *flags, callback=limit_option(name), help=help + limits.help_range(name), **settings
    )


def store_option(help: str = "Store file (default: $FSADVISOR_DB, else the user data dir).") -> Any:
    """--db; ``help`` for a command that says what it wants of the store."""
    return typer.Option("--db", metavar=METAVARS["--db"], help=help)


def profile_option(help: str) -> Any:
    """--profile/-p, completed from the preset names; ``help``: what the command uses it for."""
    return typer.Option(
        "--profile", "-p", metavar=METAVARS["--profile"], autocompletion=complete_profile, help=help
    )


DbOpt = Annotated[Optional[str], store_option()]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
ScopeOpt = Annotated[
    str,
    typer.Option(
        "--scope",
        metavar=METAVARS["--scope"],
        help="Which power the efficiency is per joule of: the whole system, the CPU package "
        "and DRAM, or the drive alone (never ranked across scopes).",
    ),
]

# The workload a prediction is for, and where: recommend, predict, simulate, compare.
ProfileOpt = Annotated[str, profile_option("Preset name or path to a profile TOML.")]
WorkloadProfileOpt = Annotated[Optional[str], profile_option("Use this profile's workload.")]
WorkloadOpt = Annotated[
    Optional[str],
    typer.Option(
        "--workload",
        "-w",
        metavar=METAVARS["--workload"],
        help="Workload JSON (profile workload keys or fio-style keys).",
    ),
]
TargetDeviceOpt = Annotated[
    Optional[str],
    typer.Option(
        "--device",
        "-d",
        metavar=METAVARS["--device"],
        help="Target: a block device path (inspected read-only), a library drive name "
        "(fsadvisor devices list, e.g. samsung-pm9a3-3.84tb-u2) or a spec like nvme:1.92T, "
        "sata-ssd:480G. Default nvme:1T.",
    ),
]
_CONFIG = typer.Option(
    "--config",
    "-c",
    metavar=METAVARS["--config"],
    help='Configuration JSON, e.g. {"filesystem":"xfs","mount":["noatime"],"ag_count":16}.',
)
ConfigOpt = Annotated[Optional[str], _CONFIG]
RequiredConfigOpt = Annotated[str, _CONFIG]

# The ranking shown: recommend and report (fleet's --top counts per device model).
TopOpt = Annotated[int, bounded("--top", "-n", help="How many ranked configurations to show.")]
PlotOpt = Annotated[
    bool,
    typer.Option(
        "--plot", help="Also draw the efficiency (ops/J or bytes/J) as bars with 95% whiskers."
    ),
]

# A destructive run's safeguards: apply --execute and calibrate (the probe declares its own
# with the same texts, in fsadvisor/probe/options.py).
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Destroy an existing filesystem signature (never a partition table, nor an "
        "array, LVM, LUKS or ZFS member: those are refused).",
    ),
]
YesWipeOpt = Annotated[
    Optional[str],
    typer.Option(
        "--yes-wipe",
        metavar="DEVICE",
        help="Confirm without a prompt by repeating the exact device.",
    ),
]


def with_worth_options(adds: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """What a choice is worth per year, as a command's options: its ``worth_inputs``
    parameter becomes one option per field of WorthInputs (--load, --price, --servers, --pue),
    in the fields' order where the parameter stands, and the command is called with the
    WorthInputs they make (checked as it is made, before the command runs). ``adds``: what
    --load adds to this command's output, said in its help."""
    types = typing.get_type_hints(WorthInputs)
    declared = dataclasses.fields(WorthInputs)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(fn, eval_str=True)
        kind = signature.parameters["worth_inputs"].kind
        options = [
            inspect.Parameter(
                f.name,
                kind,
                default=f.default,
                annotation=Annotated[
                    types[f.name], bounded(f"--{f.name}", help=f.metadata["help"].format(adds=adds))
                ],
            )
            for f in declared
        ]
        params: list[inspect.Parameter] = []
        for p in signature.parameters.values():
            params += options if p.name == "worth_inputs" else [p]

        @functools.wraps(fn)
        def command(*args: Any, **kwargs: Any) -> Any:
            given = {f.name: kwargs.pop(f.name) for f in declared}
            return fn(*args, worth_inputs=WorthInputs(**given), **kwargs)

        # typer reads the parameters from the signature and their types from the annotations
        command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
        return command

    return decorate
