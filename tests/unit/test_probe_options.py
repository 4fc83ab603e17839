"""The probe's options are declared once (fsadvisor/probe/options.py) and the CLI's options,
ProbeRequest's fields and the keyword arguments planning passes to build_plan are derived
from that declaration, field for field; every declared range is enforced at the CLI edge."""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing

import pytest
import typer
from typer.testing import CliRunner

from fsadvisor import limits
from fsadvisor.cli.app import app, register_all
from fsadvisor.cli.probe import with_declared_options
from fsadvisor.probe import plan as planmod
from fsadvisor.probe.options import (
    ProbeOptions,
    RunChoices,
    cli_order,
    declared,
    option,
    plan_kwargs,
)
from fsadvisor.service import probing
from fsadvisor.service.request import ProbeRequest

# build_plan's keywords that planning resolves itself rather than take from an option: the
# profile is loaded, the I/O engine probed, the kernel asked.
RESOLVED_BY_PLANNING = {"profile", "ioengine", "kernel_supports"}


def _probe_command():
    register_all()
    root = typer.main.get_command(app)
    return root.get_command(None, "probe")


def test_the_cli_options_are_the_declared_ones_in_order():
    params = [p for p in _probe_command().params if p.param_type_name == "option"]
    wanted = cli_order(ProbeOptions, RunChoices)
    assert [p.name for p in params] == [d.name for d in wanted]
    for p, d in zip(params, wanted):
        assert tuple(p.opts + p.secondary_opts) == d.flags, d.name
        assert p.default == d.cli_default, d.name
        assert p.help == d.help, d.name
        if d.limit:
            assert p.help.endswith(limits.help_range(d.limit)), d.name
        assert (p.callback is not None) == (d.limit is not None and d.numeric), d.name


def test_the_request_fields_are_the_declared_ones():
    own = {"device", "device_info"}
    request_fields = [f for f in dataclasses.fields(ProbeRequest) if f.init and f.name not in own]
    hints = typing.get_type_hints(ProbeRequest)
    decl = declared(ProbeOptions)
    assert [f.name for f in request_fields] == [d.name for d in decl]
    for f, d in zip(request_fields, decl):
        assert f.default == d.default and hints[f.name] == d.type, d.name
    # and what the CLI gives each one, ProbeRequest.make takes: the defaults make the
    # default request
    cli_defaults = {d.name: d.cli_default for d in decl}
    assert ProbeRequest.make(
        None, inspect=False, **(cli_defaults | {"scratch": "1G"})
    ) == ProbeRequest(scratch="1G")


def test_every_plan_keyword_is_a_declared_option_and_back():
    sig = inspect.signature(planmod.build_plan)
    keywords = {n for n, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY}
    plan_fields = {f.name for f in dataclasses.fields(planmod.Plan)}
    reach = {d.plan for d in declared(ProbeOptions) if d.plan}
    # an option reaches build_plan, or the Plan through its **extra
    assert reach <= keywords | plan_fields
    assert keywords - RESOLVED_BY_PLANNING <= reach


def test_planning_passes_every_declared_option_on(monkeypatch, tmp_path):
    seen = {}
    real = planmod.build_plan

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(planmod, "build_plan", spy)
    request = ProbeRequest.make(
        None,
        scratch="2G",
        scratch_dir=str(tmp_path),
        filesystems="xfs",
        agcounts="8",
        schedulers="none",
        workloads="4k-randread-qd32",
        variants=False,
        baseline=False,
        reps=2,
        runtime_s=5.0,
        cooldown_s=1.0,
        size="64M",
        quick=True,
        plp="yes",
        db=str(tmp_path / "s.db"),
        dry_run=True,
    )
    plan = probing.plan_probe(request)
    expected = dict(plan_kwargs(request))
    assert {k: seen[k] for k in expected} == expected
    assert expected["micro_names"] == ("4k-randread-qd32",)
    assert (plan.reps, plan.runtime_s, plan.cooldown_s, plan.size_bytes, plan.plp) == (
        2,
        5.0,
        1.0,
        64 << 20,
        "yes",
    )


@dataclasses.dataclass(frozen=True)
class WithANewOption(ProbeOptions):
    """What a new option is: one field (with the range of --reps, reaching build_plan as
    ``new_knob``)."""

    new_knob: int | None = option(
        None, "--new-knob", limit="reps", plan="new_knob", help="A new knob."
    )


@dataclasses.dataclass(frozen=True)
class RequestWithIt(ProbeRequest, WithANewOption):
    """ProbeRequest is its options plus the device: with the new one, it has that too."""


def test_a_new_declared_option_reaches_the_cli_the_request_and_the_plan():
    got = {}

    def command(device: str | None = None, **options) -> None:
        got.update(options)

    test_app = typer.Typer(rich_markup_mode=None)
    test_app.command()(with_declared_options(command, (WithANewOption, RunChoices)))
    runner = CliRunner()
    result = runner.invoke(test_app, ["--help"], terminal_width=200)
    assert "--new-knob <int>" in result.output
    assert "A new knob. Range: 1–100." in result.output
    result = runner.invoke(test_app, ["--new-knob", "7"])
    assert result.exit_code == 0, result.output
    assert got["new_knob"] == 7
    # a request built on the declaration has the field, and planning passes it on
    run_choices = {d.name for d in declared(RunChoices)}
    request = RequestWithIt.make(
        None,
        inspect=False,
        **{k: v for k, v in (got | {"scratch": "1G"}).items() if k not in run_choices},
    )
    assert request.new_knob == 7
    assert request.to_argv()[-2:] == ["--new-knob", "7"]  # the command line says it too
    assert dict(plan_kwargs(request, WithANewOption))["new_knob"] == 7
    # its range is checked as the CLI parses it
    result = runner.invoke(test_app, ["--new-knob", "101"])
    assert result.exit_code == 2 and "--new-knob must be between 1 and 100" in result.output


def _outside(name: str) -> list[str]:
    """Values just outside ``name``'s range, as the option is written."""
    lim = limits.LIMITS[name]
    if lim.unit == "bytes":
        return [str(int(lim.hi) + 1)]  # below the smallest, --scratch says its own minimum
    if name == "budget":
        return [f"{int(lim.hi) + 1}s"]
    if name == "idle-watts":
        return [f"{lim.hi + 1:g}"]  # a negative power is not read as watts at all
    step = 1 if lim.whole else 0.001
    return [
        repr(lim.lo - step) if not lim.whole else str(int(lim.lo - step)),
        repr(lim.hi + step) if not lim.whole else str(int(lim.hi + step)),
    ]


LIMITED = [d for d in cli_order(ProbeOptions, RunChoices) if d.limit]


@pytest.mark.parametrize("d", LIMITED, ids=[d.name for d in LIMITED])
def test_every_declared_range_is_enforced_at_the_cli_edge(d, tmp_path, monkeypatch):
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "s.db"))
    base = ["probe", "--dry-run", "--json", "--quick", "--fs", "ext4"]
    if d.name != "scratch":
        base += ["--scratch", "1G"]
    if d.name == "budget":
        base += ["--profile", "oltp"]  # the budget is the adaptive probe's
    if d.name == "clock_offset_s":
        log = tmp_path / "meter.csv"
        log.write_text("timestamp,watts\n")
        base += ["--energy", "meter-log", "--meter-log", str(log)]
    lim = limits.LIMITS[d.limit]
    for value in _outside(d.limit):
        result = CliRunner().invoke(app, base + [d.flags[0], value])
        assert result.exit_code == 2, (d.name, value, result.output)
        assert f"{d.flags[0]} must be" in result.output, (value, result.output)
        assert lim.between_text in result.output, (value, result.output)
    # and a value inside it is taken (the dry run plans)
    inside = {"bytes": "512M", "s": "600"}.get(lim.unit, f"{(lim.lo + lim.hi) / 2:g}")
    if lim.whole:
        inside = str(int(lim.lo))
    if d.limit == "clock-offset":
        inside = "0"  # a meter log without rows: no offset needed to plan
    result = CliRunner().invoke(app, base + [d.flags[0], inside])
    assert result.exit_code == 0, (d.name, inside, result.output)
    assert json.loads(result.output)["dry_run"] is True


def test_the_tui_forms_fields_are_declared_options():
    """The probe tab reads its fields by declared name: the request's options go to the
    request, the adaptive probe's to its choice, as the CLI splits them."""
    from fsadvisor.tui.panes import probe as pane

    assert set(pane.FORM_OPTIONS) <= {d.name for d in declared(ProbeOptions)}
    assert set(pane.ADAPTIVE_FORM.values()) <= {d.name for d in declared(RunChoices)}
    ids = [pane.field_id(n) for n in (*pane.FORM_OPTIONS, *pane.ADAPTIVE_FORM.values())]
    assert len(set(ids)) == len(ids) and pane.field_id("filesystems") == "probe-fs"
