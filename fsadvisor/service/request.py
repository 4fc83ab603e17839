"""One probe request: every choice a user makes for ``fsadvisor probe``, checked once.

Both front ends build a :class:`ProbeRequest` (the CLI from its options, the TUI's preview
from its form) and hand it to :func:`fsadvisor.service.probing.plan_probe`. It is frozen and
validated when it is made, so a request that exists is a request that makes sense; it carries
the device it inspected (read-only, once) and can say itself as the equivalent
``fsadvisor probe`` command line (:meth:`ProbeRequest.to_argv`), which is what the TUI shows
next to its preview.
"""

from __future__ import annotations

import json
import os
import shlex
import typing
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping, Sequence

from fsadvisor import limits
from fsadvisor.domain import Device
from fsadvisor.errors import ConfigError
from fsadvisor.host import device as devmod
from fsadvisor.probe import options as declared_options
from fsadvisor.probe.options import ProbeOptions
from fsadvisor.sizes import parse_size

# The smallest scratch device every filesystem here formats (btrfs and xfs want ~300 MiB).
MIN_SCRATCH_BYTES = int(limits.LIMITS["scratch"].lo)
ENERGY_SOURCES = ("auto", "rapl", "ipmi", "meter-log", "estimate")
PLP_VALUES = ("yes", "no", "unknown")


def _names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"a,b"`` or ``["a", "b,c"]`` -> ``("a", "b", "c")`` (what --fs and friends take)."""
    if value is None:
        return ()
    items = (
        value.split(",")
        if isinstance(value, str)
        else [p for v in value for p in str(v).split(",")]
    )
    return tuple(p.strip() for p in items if p.strip())


def _ints(value: str | Sequence[int | str] | None, option: str) -> tuple[int, ...]:
    out = []
    for p in _names(value) if isinstance(value, str) or value is None else value:
        try:
            out.append(int(p))
        except (TypeError, ValueError):
            raise ConfigError(f"{option}: {p!r} is not a whole number") from None
    return tuple(out)


def _config_json(c: str | Mapping[str, Any]) -> str:
    if isinstance(c, Mapping):
        return json.dumps(dict(c), separators=(",", ":"))
    return str(c)


def _size(text: str | int | None, option: str, example: str) -> int | None:
    if text is None:
        return None
    try:
        return parse_size(text)
    except ValueError:
        raise ConfigError(f"{option} {text!r} is not a size (e.g. {example})") from None


@dataclass(frozen=True)
class ProbeRequest(ProbeOptions):
    """What to probe and how: the options are :class:`ProbeOptions`' fields (declared
    there once, with their flags, help and ranges), and the device. Make one with
    :meth:`make`, which normalises comma lists and inspects the device; every instance is
    validated on creation (:meth:`validate`)."""

    device: str | None = None
    # Resolved when the request is made, so nothing later parses or inspects them again.
    device_info: Device | None = field(default=None, compare=False)
    scratch_bytes: int | None = field(default=None, init=False, compare=False)
    size_bytes: int | None = field(default=None, init=False, compare=False)
    parsed_configs: tuple[dict[str, Any], ...] = field(default=(), init=False, compare=False)

    def __post_init__(self) -> None:
        self.validate()

    @classmethod
    def make(
        cls, device: str | None = None, *, inspect: bool = True, **options: Any
    ) -> "ProbeRequest":
        """A request from loosely typed choices (comma lists, dicts for --config, numbers as
        text); ``inspect`` reads the device (read-only) once, here."""
        for d in declared_options.declared(cls):
            if d.name in options and (options[d.name] is not None or d.type in _LISTS):
                options[d.name] = _normalised(d, options[d.name])
        req = cls(device=None if device is None else str(device), **options)
        if inspect and req.device is not None:
            req = replace(req, device_info=devmod.inspect(req.device, plp=req.plp))
        return req

    # ------------------------------------------------------------------ validation

    def validate(self) -> None:
        """Every check of the request's own values, in one place; ConfigError names the
        option. (Checks that need the host — the device's safety, an energy source that
        works here — belong to planning and running.)"""
        if (self.device is None) == (self.scratch is None):
            raise ConfigError("give either a DEVICE or --scratch SIZE")
        if self.plp not in PLP_VALUES:
            raise ConfigError(f"--plp must be yes, no or unknown, not {self.plp!r}")
        if self.energy not in ENERGY_SOURCES:
            raise ConfigError(
                f"unknown --energy {self.energy!r}: use auto, rapl, ipmi, meter-log or estimate"
            )
        if self.energy == "meter-log" and self.meter_log is None:
            raise ConfigError("--energy meter-log needs --meter-log FILE")
        if self.db is not None and str(self.db) == ":memory:":
            raise ConfigError(
                "a probe needs a store file (its state file lives next to it), not :memory:"
            )
        if self.scratch_dir is not None and (
            why := devmod.control_character_refusal(self.scratch_dir, "--scratch-dir")
        ):
            raise ConfigError(why)
        scratch_bytes = _size(self.scratch, "--scratch", "2G")
        if scratch_bytes is not None:
            if scratch_bytes < MIN_SCRATCH_BYTES:
                raise ConfigError(
                    f"--scratch must be at least {MIN_SCRATCH_BYTES >> 20}M "
                    "(the smallest device every filesystem here formats)"
                )
            limits.check("scratch", scratch_bytes)
        object.__setattr__(self, "scratch_bytes", scratch_bytes)
        if self.resume:
            return  # the recorded plan decides everything else
        object.__setattr__(self, "size_bytes", _size(self.size, "--size", "1G"))
        object.__setattr__(self, "parsed_configs", tuple(_parse_config(c) for c in self.configs))
        if self.meter_log is None and self.clock_offset_s:
            raise ConfigError("--clock-offset applies to --meter-log only")
        self.check_numeric_bounds()

    def check_numeric_bounds(self) -> None:
        """Range checks of the numeric options (--reps, --runtime, --cooldown,
        --idle-seconds, --clock-offset, ...): every range ProbeOptions declares, from the
        shared table of fsadvisor/limits.py (finite, at most a stated maximum); build_plan
        keeps the checks that depend on --quick defaults (reps >= 1, runtime > 0,
        cooldown >= 0)."""
        declared_options.check_ranges(self)

    # ------------------------------------------------------------------ rendering

    def to_argv(self, adaptive: bool = False) -> list[str]:
        """The ``fsadvisor probe`` argument list that makes this same request (defaults
        left out), e.g. ``["fsadvisor", "probe", "--scratch", "1G", "--quick"]``. With a
        profile the CLI probes adaptively unless told ``--full``: a request that is not
        ``adaptive`` says so."""
        argv = ["fsadvisor", "probe"]
        flags_of = {d.name: d.flags for d in declared_options.declared(type(self))}
        if self.scratch is not None:
            argv += ["--scratch", self.scratch]
        elif self.device is not None:  # one of the two: validate() refuses neither
            argv.append(self.device)
        for f in fields(self):
            if not f.init or f.name in ("device", "scratch", "device_info"):
                continue
            value = getattr(self, f.name)
            if value == f.default:
                continue
            flags = flags_of[f.name]
            option = flags[0]
            if isinstance(value, bool):
                argv.append(option if value else flags[-1])
            elif f.name == "configs":
                for c in value:
                    argv += [option, c]
            elif isinstance(value, tuple):
                argv += [option, ",".join(str(v) for v in value)]
            elif isinstance(value, float):
                argv += [option, f"{value:g}"]
            else:
                argv += [option, str(value)]
        if self.profile is not None and not adaptive and not self.resume:
            argv.append("--full")
        return argv

    def command_line(self) -> str:
        """:meth:`to_argv` as one line a shell reads back into the same argument list."""
        return shlex.join(self.to_argv())


# Comma lists: not given (None) is an empty one (``--fs ""`` -> no filesystem, refused).
_LISTS = (tuple[str, ...], tuple[int, ...])


def _normalised(d: declared_options.Declared, value: Any) -> Any:
    """An option's value as loosely given (a comma list, a dict for --config, a number as
    text, a path) as the field's type holds it."""
    if d.name == "configs":
        return tuple(_config_json(c) for c in value or ())
    if d.type == tuple[int, ...]:
        return _ints(value, d.flag)
    if d.type == tuple[str, ...] | None:
        return _names(value) or None
    if d.type == tuple[str, ...]:
        return _names(value)
    if str in typing.get_args(d.type) and not isinstance(value, bool):
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    return value


def _parse_config(text: str) -> dict[str, Any]:
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"--config is not JSON: {e.msg} in {text[:80]!r}") from None
    if not isinstance(d, dict):
        raise ConfigError(f"--config must be a JSON object, not {text[:80]!r}")
    return d
