"""`fsadvisor profiles list|show|capture`."""

from __future__ import annotations

from typing import Annotated

import typer

from fsadvisor.cli.app import app, domain_errors, emit_json
from fsadvisor.cli.layout import say
from fsadvisor.cli.options import JsonOpt, bounded

# The service is imported by the command that calls it, each import saying what it loads
# (start-up): --help, shell completion and the man page import this module without running one.

profiles_app = typer.Typer(no_args_is_help=True, help="Workload profiles (presets and TOML files).")
app.add_typer(profiles_app, name="profiles")


@profiles_app.command("list")
@domain_errors
def list_(
    as_json: JsonOpt = False,
) -> None:
    """List the shipped preset profiles."""
    from fsadvisor.service import advice  # the advice service (numpy): on use (see the top)

    profs = advice.list_profiles()
    if as_json:
        emit_json([p.to_dict() for p in profs])
        return
    width = max(len(p.name) for p in profs)
    for p in profs:
        say(f"{p.name:<{width}}  {p.description}", hang=width + 2)


@profiles_app.command("show")
@domain_errors
def show(
    name: Annotated[
        str, typer.Argument(metavar="NAME|FILE", help="Preset name or path to a profile TOML.")
    ],
    as_json: JsonOpt = False,
) -> None:
    """Show one profile: workload, constraints and source."""
    from fsadvisor.service import advice  # the advice service (numpy): on use (see the top)

    p = advice.get_profile(name)
    if as_json:
        emit_json(p.to_dict())
    else:
        typer.echo(advice.profile_toml(p))


@profiles_app.command("capture")
@domain_errors
def capture(
    device: Annotated[
        str,
        typer.Option(
            "--device", help="Block device to sample (/dev/nvme0n1 or nvme0n1); read-only."
        ),
    ],
    seconds: Annotated[
        float, bounded("--seconds", help="How long to sample /proc/diskstats.")
    ] = 10.0,
    out: Annotated[
        str | None, typer.Option("-o", "--out", help="Write the profile TOML here.")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Profile name (default captured-DEV).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Capture a workload profile from a running system: read/write mix, mean request
    sizes, IOPS and effective queue depth from /proc/diskstats; what the kernel cannot tell
    (randomness, fsync policy) is written as assumptions to confirm."""
    # the capture service (/proc/diskstats sampling): on use (see the top)
    from fsadvisor.service.capture import capture as run_capture

    r = run_capture(device, seconds, out=out, name=name)
    if as_json:
        emit_json({k: v for k, v in r.items() if k != "toml"})
        return
    typer.echo(
        f"{device}: {r['iops']:,.0f} IOPS, {r['read_pct']}% reads, mean read "
        f"{r['mean_read_bytes'] / 1024:,.1f} KiB, mean write "
        f"{r['mean_write_bytes'] / 1024:,.1f} KiB, {r['effective_queue_depth']:.2f} "
        f"in flight, {r['utilisation']:.0%} busy over {r['seconds']:.1f} s"
    )
    typer.echo("assumptions to confirm:")
    for a in r["assumptions"]:
        typer.echo(f"  - {a}")
    typer.echo(f"wrote {out}" if out else r["toml"])
