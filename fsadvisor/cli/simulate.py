"""``fsadvisor simulate``: what-if questions answered by the simpy simulator."""

# No `from __future__ import annotations`: typer then reads the parameters' annotations
# without evaluating them one by one as it builds the command (see cli/advice.py).

from typing import Annotated, Optional

import typer

from fsadvisor.cli.app import app, domain_errors, emit_json, fail
from fsadvisor.cli.options import (
    DbOpt,
    JsonOpt,
    RequiredConfigOpt,
    ScopeOpt,
    TargetDeviceOpt,
    WorkloadOpt,
    WorkloadProfileOpt,
    bounded,
)
from fsadvisor.domain import FsConfig

# Deferred imports, each marked where it stands (start-up): the service (the model and the
# simulator), since --help, shell completion and the man page import this module without
# running it; the terminal layout, for text output only (`simulate --json` loads no other cli
# module: tests/unit/test_fast_startup.py).

# sim.DEFAULT_REQUESTS, written out: importing the simulator here would slow every command's
# start-up (a test keeps the two equal).
DEFAULT_REQUESTS = 10_000


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _device_shape(cal) -> str:
    """How the simulated device queues: its measured knee, else its channels."""
    if cal.knee_power:
        return f"measured knee, power {cal.knee_power:g}"
    return f"{cal.channels} channels"


def _variant(r, keys: list[str]) -> str:
    return " ".join(f"{k}={r.overrides[k]}" for k in keys) or "as given"


def combine_vary(items: list[str] | None) -> str | None:
    """Repeated --vary for one knob combine (``--vary bs=4k --vary bs=128k`` is bs=4k,128k);
    two different knobs would need a grid, which simulate does not do: refused, not dropped."""
    if not items:
        return None
    knobs = {i.partition("=")[0].strip() for i in items}
    if len(knobs) > 1:
        fail(
            f"--vary takes one knob, got {', '.join(sorted(knobs))}: vary one and fix the "
            "others with --set KNOB=VALUE"
        )
    if len(items) == 1:
        return items[0]
    knob = knobs.pop()
    values = [v for i in items for v in i.partition("=")[2].split(",") if v.strip()]
    return f"{knob}={','.join(dict.fromkeys(v.strip() for v in values))}"


@app.command()
@domain_errors
def simulate(
    config: RequiredConfigOpt,
    workload: WorkloadOpt = None,
    profile: WorkloadProfileOpt = None,
    device: TargetDeviceOpt = None,
    vary: Annotated[
        Optional[list[str]],
        typer.Option(
            "--vary",
            help="One knob and its values (repeat only for the same knob: its values combine), e.g. numjobs=1,4,16 | iodepth=1,32 | fsync_every=0,1,32 | plp=no,yes | bs=4k,128k | rwmixread=0,70,100.",
        ),
    ] = None,
    setting: Annotated[
        Optional[list[str]],
        typer.Option(
            "--set",
            help="A knob fixed for every variant, e.g. --set iodepth=4 (also burst=N with pause_ms=MS).",
        ),
    ] = None,
    seed: Annotated[
        int, bounded("--seed", help="Random seed; the same seed gives the same output.")
    ] = 0,
    requests: Annotated[
        int,
        bounded(
            "--requests",
            "-n",
            help="Requests simulated per variant (the p99's 95% interval is printed).",
        ),
    ] = DEFAULT_REQUESTS,
    sigma: Annotated[
        Optional[float],
        bounded(
            "--sigma",
            help="Log-sd of device service times (default: the one that gives the model's own p99/mean at the workload's point).",
        ),
    ] = None,
    scope: ScopeOpt = "system",
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Simulate a configuration under what-if variants: tail latency, queueing, fsync batching, PLP."""
    # the model and the simulator (numpy, simpy): on use (see the top)
    from fsadvisor.service.simulate import SIM_LABEL, simulate_what_if

    results = simulate_what_if(
        config,
        workload=workload,
        profile=profile,
        device=device,
        vary=combine_vary(vary),
        seed=seed,
        requests=requests,
        db=db,
        scope=scope,
        fixed=setting,
        sigma=sigma,
    )
    if as_json:
        emit_json({"note": SIM_LABEL, "results": [r.to_dict() for r in results]})
        return
    from fsadvisor.cli.layout import Column, say, table  # text output only (see the top)

    first, cal = results[0], results[0].calibration
    w = cal.workload
    keys = sorted(
        {
            k
            for r in results
            for k in r.overrides
            if len({str(x.overrides.get(k)) for x in results}) > 1
        }
    )
    fixed = {k: v for k, v in first.overrides.items() if k not in keys}
    say(
        "Simulated from the fitted model — not a measurement. Calibrated at the "
        "workload's own point; every variant extrapolates from there."
    )
    c = first.config
    say(
        "config:      "
        + FsConfig.make(
            c["filesystem"],
            c.get("mkfs"),
            c.get("mount") or (),
            c.get("scheduler") or "none",
            c.get("ag_count"),
        ).label(),
        hang=13,
    )
    wpf = cal.writes_per_flush
    say(
        f"workload:    {w['rw']} {w['bs_bytes']} B, {w['numjobs']} jobs x iodepth "
        f"{w['iodepth']}, "
        + (f"{w['rwmixread']}% reads, " if w["rw"] in ("rw", "randrw") else "")
        + (f"fsync every {wpf} writes; " if wpf else "no fsync; ")
        + f"{first.device_kind} ({_device_shape(cal)}), PLP {cal.plp}",
        hang=13,
    )
    if fixed:
        say(f"every variant: {' '.join(f'{k}={v}' for k, v in fixed.items())}", hang=15)
    lo, hi = cal.model_iops_90
    tlo, thi = cal.model_p99_latency_ms_90
    say(
        f"calibrated:  predict says {cal.model_iops:,.0f} IOPS (90%: {lo:,.0f}–{hi:,.0f}), "
        f"p99 {cal.model_p99_latency_ms:.3f} ms (90%: {tlo:.3f}–{thi:.3f}) at "
        f"{cal.concurrency} outstanding",
        hang=13,
    )
    say(
        f"             device times x{cal.scale:.3f} of {cal.device_params_source}; "
        f"service-time log-sd {cal.sigma:.3f} from {cal.sigma_source}",
        hang=13,
    )
    say(
        f"power:       estimate: {cal.model_watts:.1f} W (predict) at {cal.utilisation:.0%} "
        f"utilisation, + {cal.watts_per_utilisation:.1f} W x (util - "
        f"{cal.utilisation:.0%}); {cal.drive_power_source}; {cal.power_scope} scope, "
        f"{cal.power_basis}",
        hang=13,
    )
    say(
        f"seed {cal.seed}, {cal.requests:,} requests per variant; util = "
        + (
            "all of the device while a flush runs (one at a time), outside flushes the "
            "share of its ceiling in use"
            if cal.knee_power
            else "all of the device while a flush runs (one at a time), outside flushes the "
            f"busier of its {cal.channels} channels and its link"
        )
    )
    for warning in cal.warnings:
        say(f"WARN: {warning}", hang=6)
    typer.echo("")
    cols = [
        Column("variant", "<"),
        *(
            Column(title, gap=2)
            for title in (
                "ops/s",
                "ceiling",
                "mean ms",
                "p50 ms",
                "p99 ms",
                "p99 95% CI",
                "p99.9 ms",
                "fsync ms",
                "util",
                "W",
                "ops/J",
                "model ops/s",
            )
        ),
    ]
    cells = [
        [
            _variant(r, keys),
            f"{r.throughput_ops_s:,.0f}",
            f"{r.ceiling_iops:,.0f}",
            _ms(r.mean_latency_ms),
            _ms(r.p50_latency_ms),
            _ms(r.p99_latency_ms),
            "-"
            if r.p99_latency_ms_95 is None
            else f"{r.p99_latency_ms_95[0]:.3f}–{r.p99_latency_ms_95[1]:.3f}",
            _ms(r.p999_latency_ms),
            _ms(r.mean_flush_latency_ms),
            f"{r.utilisation:.1%}",
            f"{r.watts:.1f}",
            f"{r.ops_per_joule:,.0f}",
            f"{r.model_iops:,.0f}",
        ]
        for r in results
    ]
    for line in table(cols, cells):
        typer.echo(line)
