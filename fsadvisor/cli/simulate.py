"""``fsadvisor simulate``: what-if questions answered by the simpy simulator."""

# No `from __future__ import annotations`: typer then reads the parameters' annotations
# without evaluating them one by one as it builds the command (see cli/advice.py).

from typing import Annotated, Optional

import typer

from fsadvisor.cli import app, domain_errors, emit_json, fail
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

# The service (and the nouns) are imported inside the command: --help, shell completion and
# the man page import this module without running it (start-up).

# sim.DEFAULT_REQUESTS, written out: importing the simulator here would slow every command's
# start-up (a test keeps the two equal).
DEFAULT_REQUESTS = 10_000


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


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
    typer.echo(
        "Simulated from the fitted model — not a measurement. Calibrated at the "
        "workload's own point; every variant extrapolates from there."
    )
    c = first.config
    from fsadvisor.domain import FsConfig

    typer.echo(
        "config:      "
        + FsConfig.make(
            c["filesystem"],
            c.get("mkfs"),
            c.get("mount") or (),
            c.get("scheduler") or "none",
            c.get("ag_count"),
        ).label()
    )
    wpf = cal.writes_per_flush
    typer.echo(
        f"workload:    {w['rw']} {w['bs_bytes']} B, {w['numjobs']} jobs x iodepth "
        f"{w['iodepth']}, "
        + (f"{w['rwmixread']}% reads, " if w["rw"] in ("rw", "randrw") else "")
        + (f"fsync every {wpf} writes; " if wpf else "no fsync; ")
        + f"{first.device_kind} ({cal.channels} channels), PLP {cal.plp}"
    )
    if fixed:
        typer.echo(f"every variant: {' '.join(f'{k}={v}' for k, v in fixed.items())}")
    lo, hi = cal.model_iops_90
    tlo, thi = cal.model_p99_latency_ms_90
    typer.echo(
        f"calibrated:  predict says {cal.model_iops:,.0f} IOPS (90%: {lo:,.0f}–{hi:,.0f}), "
        f"p99 {cal.model_p99_latency_ms:.3f} ms (90%: {tlo:.3f}–{thi:.3f}) at "
        f"{cal.concurrency} outstanding"
    )
    typer.echo(
        f"             device times x{cal.scale:.3f} of {cal.device_params_source}; "
        f"service-time log-sd {cal.sigma:.3f} from {cal.sigma_source}"
    )
    typer.echo(
        f"power:       estimate: {cal.model_watts:.1f} W (predict) at {cal.utilisation:.0%} "
        f"utilisation, + {cal.watts_per_utilisation:.1f} W x (util - "
        f"{cal.utilisation:.0%}); {cal.drive_power_source}; {cal.power_scope} scope, "
        f"{cal.power_basis}"
    )
    typer.echo(
        f"seed {cal.seed}, {cal.requests:,} requests per variant; util = the busier of "
        f"the device's {cal.channels} channels (a flush holds them all) and its link"
    )
    for warning in cal.warnings:
        typer.echo(f"WARN: {warning}")
    typer.echo("")
    head = (
        f"{'variant':<16} {'ops/s':>10} {'ceiling':>10} {'mean ms':>8} {'p50 ms':>8} "
        f"{'p99 ms':>8} {'p99 95% CI':>13} {'p99.9 ms':>9} {'fsync ms':>9} {'util':>6} "
        f"{'W':>6} {'ops/J':>8} {'model ops/s':>12}"
    )
    typer.echo(head)
    for r in results:
        ci = (
            "-"
            if r.p99_latency_ms_95 is None
            else f"{r.p99_latency_ms_95[0]:.3f}–{r.p99_latency_ms_95[1]:.3f}"
        )
        typer.echo(
            f"{_variant(r, keys):<16} {r.throughput_ops_s:>10,.0f} {r.ceiling_iops:>10,.0f} "
            f"{_ms(r.mean_latency_ms):>8} {_ms(r.p50_latency_ms):>8} "
            f"{_ms(r.p99_latency_ms):>8} {ci:>13} "
            f"{_ms(r.p999_latency_ms):>9} {_ms(r.mean_flush_latency_ms):>9} "
            f"{r.utilisation:>6.1%} {r.watts:>6.1f} {r.ops_per_joule:>8,.0f} "
            f"{r.model_iops:>12,.0f}"
        )
