"""Offline commands: recommend, predict, validate (calibrate: fsadvisor/cli/calibrate.py)."""

# No `from __future__ import annotations` here, unlike the rest of fsadvisor: typer reads
# each command's parameters from its annotations, and postponed (string) ones it must eval
# one by one when it builds the command, on every run; evaluated once at import instead
# (benchmarks/recommend_vs_numpy.py measures the start-up this belongs to).

import json
import os
import sys
from typing import Annotated, Iterator, Optional, Sequence

import typer

from fsadvisor.domain import FsConfig

from fsadvisor.service import answer
from fsadvisor.service.worth_inputs import NO_LOAD, WorthInputs
from fsadvisor.cli.app import app, domain_errors, emit_json, fail, limit_option
from fsadvisor.cli.options import (
    ConfigOpt,
    DbOpt,
    JsonOpt,
    PlotOpt,
    ProfileOpt,
    ScopeOpt,
    TargetDeviceOpt,
    TopOpt,
    WorkloadOpt,
    WorkloadProfileOpt,
    bounded,
    with_worth_options,
)

# Deferred imports, each marked where it stands (start-up): the service, of which a command
# loads only the part it calls, since `fsadvisor CMD --help`, shell completion and the man
# page import this module without running one; the terminal layout, for text output only
# (`recommend --json` loads no other cli module: tests/unit/test_fast_startup.py).


BATCH_READ_BYTES = 1 << 16  # one read of stdin: ~300-600 request lines of ~150-200 bytes
FALLBACK_LINES = 512  # lines per group from a stream without a file descriptor


def _arriving_lines(stream) -> Iterator[Sequence[bytes | str]]:
    """The lines of ``stream`` in the groups they arrive in: each read returns what is
    there (at most BATCH_READ_BYTES), so a file or pipe full of requests comes in groups of
    hundreds that predict together, while a program that writes one request and waits for
    its answer gets it at once (a read never waits for more than one line). Bytes: the
    service decodes each line, and a line that does not decode is that line's error. A
    stream without a file descriptor (a test runner's) is read FALLBACK_LINES at a time."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    if fd is None:
        group: list[bytes | str] = []
        for line in stream:
            group.append(line)
            if len(group) >= FALLBACK_LINES:
                yield group
                group = []
        if group:
            yield group
        return
    tail = b""
    while True:
        block = os.read(fd, BATCH_READ_BYTES)
        if not block:
            break
        lines = (tail + block).split(b"\n")
        tail = lines.pop()
        if lines:
            yield lines
    if tail:
        yield [tail]


def _fmt_range(r) -> str:
    return f"{r[0]:,.0f}–{r[1]:,.0f}"


@app.command()
@domain_errors
@with_worth_options("yearly energy and cost per configuration")
def recommend(
    profile: ProfileOpt,
    device: TargetDeviceOpt = None,
    top: TopOpt = 5,
    plp: Annotated[
        Optional[str],
        typer.Option(
            "--plp",
            help="Device power-loss protection: yes | no | unknown (default: the profile's, else unknown).",
        ),
    ] = None,
    sector_size: Annotated[
        Optional[int],
        typer.Option(
            "--sector-size",
            callback=limit_option("sector-size"),
            help="Logical sector size of a device given by size or name: 512 | 4096 (default 4096, the stricter: every command shown also runs on 512-byte sectors). A device path uses its own.",
        ),
    ] = None,
    scope: ScopeOpt = "system",
    active: Annotated[
        bool,
        typer.Option(
            "--active", help="Rank by active energy (total minus idle) instead of total energy."
        ),
    ] = False,
    worth_inputs: WorthInputs = NO_LOAD,  # --load, --price, ...: with_worth_options
    plot: PlotOpt = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Rank the candidate configurations for a workload profile by ops (or bytes) per joule."""
    from fsadvisor.service import advice  # the model and the store: on use (see the top)

    rec = advice.recommend(
        profile,
        device=device,
        top=top,
        db=db,
        scope=scope,
        energy_basis="active" if active else "total",
        plp=plp,
        sector_size=sector_size,
    )
    yw = None
    if worth_inputs.given:
        from fsadvisor.service import worth  # the yearly cost: only with --load

        yw = worth.yearly_worth(rec, worth_inputs, db)
    if as_json:
        doc = rec.to_dict()
        if yw is not None:
            for entry, y in zip(doc["recommendations"], yw.pop("entries")):
                entry["yearly"] = y
            doc["yearly_basis"] = yw
        emit_json(doc)
        return
    from fsadvisor.cli.layout import say  # text output only (see the top)

    for line in answer.headline(rec):
        say(line, hang=2)
    typer.echo("")
    _print_recommendation(rec, yw)
    if plot:
        from fsadvisor.service.report import plot_recommendation  # the chart: --plot only

        typer.echo("")
        typer.echo(plot_recommendation(rec))


# Where a configuration's figures start ("   score:     "): their wrapped lines go on there;
# its commands (mkfs, mount, fstab, udev rule) are never wrapped: they copy and paste whole.
FIELD = 14


def _print_recommendation(rec, yw) -> None:
    unit = "bytes/J" if rec.rank_by == "bytes_per_joule" else "ops/J"
    from fsadvisor.cli.layout import say  # text output only (see the top)

    say(f"Profile {rec.profile.name}: {rec.profile.description}", hang=2)
    say(
        f"Device: {rec.device.kind}, {advice_size(rec.device.size_bytes)}, PLP {rec.device.plp}"
        + (f" ({rec.device.path})" if rec.device.path else "")
        + (f", {rec.device.model}" if rec.device.model else ""),
        hang=2,
    )
    say(
        f"{rec.considered} candidates, excluded: "
        + (", ".join(f"{k.replace('_', ' ')} {v}" for k, v in rec.excluded.items() if v) or "none"),
        hang=2,
    )
    for line in answer.confidence_lines(rec):
        say(line, hang=6 if line.startswith(" ") else 2)
    notes = answer.notes(rec)
    if yw is not None:  # the yearly figures' notes before the tie note, as they always were
        from fsadvisor.service import worth  # the yearly cost: only with --load

        at = len(rec.notes)
        notes[at:at] = worth.summary_lines(yw)
    for n in notes:
        say(f"note: {n}", hang=6)
    for r in rec.ranked:
        p = r.prediction
        u = p.uncertainty
        lo, hi = u["ops_per_joule_90"]
        if unit == "bytes/J":  # the interval in the unit of the score (bytes per op x ops/J)
            per_op = p.bytes_per_joule / p.ops_per_joule if p.ops_per_joule else 0.0
            lo, hi = lo * per_op, hi * per_op
        typer.echo("")
        say(f"#{r.label} {r.config.label()}", hang=4)
        say(
            f"   score:     {r.score:,.0f} {unit}  (90%: {_fmt_range((lo, hi))} {unit}; "
            f"{p.energy_source}, {p.power_scope} scope)",
            hang=FIELD,
        )
        leader = answer.leader_line(r, rec)
        if leader:
            say(f"   leader:    {leader}", hang=FIELD)
        if r.order_note:
            say(f"   order:     {r.order_note}", hang=FIELD)
        typer.echo(f"   mkfs:      {' '.join(r.commands['mkfs'])}")
        typer.echo(f"   mount:     {r.commands['mount_setup']}")
        typer.echo(f"   fstab:     {r.commands['fstab']}")
        typer.echo(f"              (<uuid>: `{r.commands['uuid_command']}` after mkfs)")
        typer.echo(
            f"   scheduler: {r.config.scheduler}"
            + (
                f"   AG count: {r.ag_count}" + ("" if r.config.ag_count else " (mkfs.xfs default)")
                if r.ag_count is not None
                else ""
            )
        )
        rule = [ln for ln in r.commands["udev"].splitlines() if ln and not ln.startswith("#")]
        if rule:
            typer.echo(f"   udev:      {rule[-1]}")
            say(
                f"              (in {r.commands['udev_file']}; `fsadvisor apply` writes it)",
                hang=FIELD,
            )
        if r.ag_note:
            say(f"   AG:        {r.ag_note}", hang=FIELD)
        say(
            f"   predicted: {p.iops:,.0f} IOPS (90%: {_fmt_range(u['iops_90'])}), {p.mb_s:,.1f} MB/s, "
            f"p99 {p.p99_latency_ms:.2f} ms, {p.watts:.0f} W",
            hang=FIELD,
        )
        if yw is not None:
            from fsadvisor.service import worth  # the yearly cost: only with --load

            say(f"   per year:  {worth.yearly_line(yw, r.rank - 1)}", hang=FIELD)
        for y in r.why:
            say(f"   why:  {y}", hang=9)
        for w in r.warnings:
            say(f"   WARN: {w}", hang=9)


def advice_size(n: int) -> str:
    # the service's advice, which the command printing this has loaded (see the top)
    from fsadvisor.service.advice import format_binary

    return format_binary(n)


@app.command()
@domain_errors
def predict(
    config: ConfigOpt = None,
    workload: WorkloadOpt = None,
    profile: WorkloadProfileOpt = None,
    device: TargetDeviceOpt = None,
    scope: ScopeOpt = "system",
    batch: Annotated[
        bool,
        typer.Option(
            "--batch", help="Read JSON Lines requests on stdin, write one JSON line per request."
        ),
    ] = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Predict IOPS, MB/s, latency, watts and ops/joule for one configuration and workload."""
    from fsadvisor.service import advice  # the model and the store: on use (see the top)

    if batch:
        for out in advice.predict_chunks(_arriving_lines(sys.stdin), db=db, scope=scope):
            typer.echo(json.dumps(out, default=str))
        return
    if config is None:
        fail("--config is required (or use --batch)")
    out = advice.predict_one(
        config, workload=workload, profile=profile, device=device, db=db, scope=scope
    )
    if as_json:
        emit_json(out)
        return
    p, u = out["predicted"], out["uncertainty"]
    c = out["config"]
    typer.echo(
        FsConfig.make(
            c["filesystem"],
            c.get("mkfs"),
            c.get("mount") or (),
            c.get("scheduler") or "none",
            c.get("ag_count"),
        ).label()
    )
    typer.echo(f"  IOPS          {p['iops']:,.0f}   (90%: {_fmt_range(u['iops_90'])})")
    typer.echo(f"  MB/s          {p['mb_s']:,.1f}")
    typer.echo(
        f"  p99 latency   {p['p99_latency_ms']:.3f} ms (90%: {u['p99_latency_ms_90'][0]:.3f}–{u['p99_latency_ms_90'][1]:.3f})"
    )
    from fsadvisor.cli.layout import say  # text output only (see the top)

    say(
        f"  power         {p['watts']:.1f} W ({p['power_scope']} scope, {p['energy_source']})",
        hang=16,
    )
    typer.echo(
        f"  ops/joule     {p['ops_per_joule']:,.0f}   (90%: {_fmt_range(u['ops_per_joule_90'])})"
    )
    say(f"  device parameters: {out['basis']['device_parameters']}", hang=4)
    if out["basis"].get("calibration"):  # refitted with this version's fit, or predates it
        say(f"  {out['basis']['calibration']}", hang=4)
    for w in out["warnings"]:
        say(f"  WARN: {w}", hang=8)


@app.command()
@domain_errors
def validate(
    folds: Annotated[int, bounded("--folds", help="Cross-validation folds.")] = 5,
    device: Annotated[
        Optional[list[str]],
        typer.Option(
            "--device",
            help="Leave this device out (its identity as stored; repeatable). "
            "Default: every device with raw-device runs and filesystem cells.",
        ),
    ] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Report the model's cross-validated error on the stored observations: by source table,
    by row, and leave-one-device-out (raw runs only, then with 10% and 20% of its cells)."""
    from fsadvisor.service import advice  # the model and the store: on use (see the top)

    rep = advice.validate(db=db, folds=folds, devices=device or None)
    if as_json:
        emit_json(rep)
        return
    from fsadvisor.cli.layout import say  # text output only (see the top)

    say(
        f"{rep['observations']} observations; prior scale {rep['prior_scale']} "
        f"(calibration: {rep['calibration']})",
        hang=2,
    )
    for key, title in (
        ("by_source_table", "held-out source tables (transfer to an unseen study)"),
        ("by_row", "held-out rows (interpolation within known studies)"),
    ):
        r = rep[key]
        typer.echo(f"{r['folds']}-fold CV, {title}:")
        for name in ("model", "prior_only"):
            s = r[name]
            if s.get("n"):
                typer.echo(
                    f"  {name:<10} n={s['n']:<4} median error x{s['median_factor']:.2f}, "
                    f"p90 x{s['p90_factor']:.2f}"
                )
        for m, s in r["per_metric"].items():
            if s.get("n"):
                typer.echo(f"    {m:<22} n={s['n']:<4} median x{s['median_factor']:.2f}")
    if rep["by_device"]:
        say(
            "leave-one-device-out (fit without the device's filesystem cells; "
            "figures over its held-out cells only):",
            hang=2,
        )
    for r in rep["by_device"]:
        say(
            f"  {r['device']}  given {r['cells_given']} of its cells "
            f"({r['share_of_cells_given']:.0%}), {r['cells_held_out']} held out; "
            f"device: {r['device_params']}",
            hang=4,
        )
        for m in ("iops", "ops_per_joule"):
            f = r.get(m)
            if not f or not f.get("n"):
                continue
            order = (
                f"{f['ordered_right']:.0%} of {f['separable_pairs']} separable pairs ordered right"
                if f["separable_pairs"]
                else "no separable pairs"
            )
            regret = f", worst regret {f['max_regret']:.0%}" if f["max_regret"] is not None else ""
            answer = (f.get("recommended") or {}).get("max_regret")
            if answer is not None:  # the ranking's #1 (tie rule, nothing risky), not the argmax
                regret += f" (of the answer given: {answer:.0%})"
            noise = (
                f", rep-to-rep cv {f['rep_to_rep_cv_median']:.0%}"
                if f["rep_to_rep_cv_median"] is not None
                else ""
            )
            say(
                f"    {m:<14} n={f['n']:<4} median |error| {f['median_abs_error']:.0%}, "
                f"p90 {f['p90_abs_error']:.0%}; {order}{regret}{noise}",
                hang=24,
            )
