"""The user's side of what a choice is worth per year: the load, the electricity price, the
servers and the facility's PUE, declared once.

One field per input, with its default and, in its metadata, its help. Everything else is
derived from the fields: the options of ``recommend``, ``compare`` and ``report`` (the CLI
builds them from these fields, fsadvisor/cli/options.py: the flag is ``--`` and the field's
name, its range the limit of that name in fsadvisor/limits.py), and the checks an instance
runs when it is made, so the CLI and the TUI refuse the same numbers in the same words.
fsadvisor/service/worth.py does the arithmetic with them. A new input is a field here (and
its range in fsadvisor/limits.py) and the arithmetic that uses it.

A module of its own, which imports the ranges and nothing else: a command builds its inputs
as it parses its options, without loading the arithmetic (tests/unit/test_startup_imports.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from fsadvisor import limits
from fsadvisor.errors import FsAdvisorError


def _input(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class WorthInputs:
    """What the yearly figures are computed at. The first field, the load, is what there is
    to cost: without it there are no yearly figures, and the others may not be given."""

    # {adds}: what the command shows with it (its option's help says so)
    load: float | None = _input(
        None, "Your load: ops/s (MB/s for bandwidth workloads); adds {adds}."
    )
    price: float | None = _input(None, "Electricity price per kWh (with --load).")
    servers: int = _input(1, "How many servers run this (with --load).")
    pue: float = _input(1.0, "Facility power usage effectiveness (with --load).")

    def __post_init__(self) -> None:
        """Refuse what cannot be a load, price, server count or PUE (each one's range is in
        fsadvisor/limits.py), and a tariff without the load it costs, in one line each."""
        declared = fields(self)
        for f in declared:
            limits.check(f.name, getattr(self, f.name))
        tariff = declared[1:]
        if self.load is None and any(getattr(self, f.name) != f.default for f in tariff):
            flags = [f"--{f.name}" for f in tariff]
            raise FsAdvisorError(
                f"{', '.join(flags[:-1])} and {flags[-1]} need --load (the work per second to cost)"
            )

    @property
    def given(self) -> bool:
        """A load was given: the yearly figures are wanted."""
        return self.load is not None


# No load given: no yearly figures (a service function's default).
NO_LOAD = WorthInputs()
