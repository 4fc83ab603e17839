"""`fsadvisor apply`: mkfs command, fstab line, udev rule, mount unit and Ansible tasks for a
configuration on a device (fsadvisor.service.apply); --execute also formats it."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fsadvisor.cli.app import app, domain_errors, emit_json
from fsadvisor.cli.options import (
    ConfigOpt,
    ForceOpt,
    JsonOpt,
    YesWipeOpt,
    bounded,
    profile_option,
    store_option,
)

# The service is imported by the command, saying what it loads (start-up): --help, shell
# completion and the man page import this module without running it.


@app.command("apply")
@domain_errors
def apply_cmd(
    device: Annotated[
        str, typer.Option("--device", "-d", help="The block device, e.g. /dev/nvme0n1.")
    ],
    config: ConfigOpt = None,
    rank: Annotated[
        Optional[int],
        bounded("--rank", help="...or the N-th configuration of the recommendation for --profile."),
    ] = None,
    profile: Annotated[Optional[str], profile_option("Profile for --rank.")] = None,
    mountpoint: Annotated[
        str, typer.Option("--mountpoint", help="Where it is mounted.")
    ] = "/srv/data",
    out: Annotated[
        Optional[str],
        typer.Option(
            "--out", "-o", metavar="DIR", help="Write the files here instead of printing them."
        ),
    ] = None,
    mount_unit: Annotated[
        bool,
        typer.Option(
            "--mount-unit",
            help="Also write a systemd .mount unit (the Ansible tasks then use it "
            "instead of fstab).",
        ),
    ] = False,
    execute: Annotated[
        bool,
        typer.Option(
            "--execute/--dry-run",
            help="--execute formats the device (after the safety check and "
            "confirmation); the default only writes the artifacts.",
        ),
    ] = False,
    yes_wipe: YesWipeOpt = None,
    force: ForceOpt = False,
    db: Annotated[Optional[str], store_option("Store file (for --rank).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write the artifacts a configuration-management user drops in (dry run by default)."""
    # the apply service (the catalog, its artifacts, the host): on use (see the top)
    from fsadvisor.service.apply import apply

    confirm = yes_wipe
    if execute and confirm is None:
        typer.echo(f"This DESTROYS all data on {device}.", err=True)
        confirm = typer.prompt("Type the device path to continue", err=True)
    out_doc = apply(
        config=config,
        rank=rank,
        profile=profile,
        device=device,
        mountpoint=mountpoint,
        out=out,
        execute=execute,
        confirm=confirm,
        force=force,
        mount_unit=mount_unit,
        db=db,
    )
    if as_json:
        emit_json(out_doc)
        return
    for line in out_doc["done"]:
        typer.echo(f"fsadvisor: {line}", err=True)
    if out is not None:
        for p in out_doc["written"]:
            typer.echo(p)
        return
    for name, text in out_doc["files"].items():
        typer.echo(f"# ---- {name}")
        typer.echo(text, nl=False)
