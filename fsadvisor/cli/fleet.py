"""`fsadvisor fleet recommend`: one recommendation per device model of a merged store
(fsadvisor.service.fleet); `db merge` brings the hosts' stores together."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fsadvisor.cli.app import app, domain_errors, emit_json
from fsadvisor.cli.layout import say
from fsadvisor.cli.options import JsonOpt, ProfileOpt, bounded, store_option

# The service is imported by the command, saying what it loads (start-up): --help, shell
# completion and the man page import this module without running it.

fleet_app = typer.Typer(no_args_is_help=True, help="Results from many hosts (see runner/ansible/).")
app.add_typer(fleet_app, name="fleet")


@fleet_app.command("recommend")
@domain_errors
def recommend(
    profile: ProfileOpt,
    db: Annotated[Optional[str], store_option("The merged store.")] = None,
    top: Annotated[int, bounded("--top", help="Configurations per device model.")] = 1,
    as_json: JsonOpt = False,
) -> None:
    """Per device model across hosts: its calibration (fitted from every host's raw-device
    runs of that model) and the best configuration for the profile."""
    # the fleet service (the model, numpy, and the store): on use (see the top)
    from fsadvisor.service.fleet import recommend_per_model

    out = recommend_per_model(profile, db=db, top=top)
    if as_json:
        emit_json(
            {
                **out,
                "devices": [
                    {k: v for k, v in d.items() if k != "recommendation"}
                    | {"recommendations": d["recommendation"]["recommendations"]}
                    for d in out["devices"]
                ],
            }
        )
        return
    for d in out["devices"]:
        say(
            f"{d['kind']} {d['model']}: {len(d['hosts'])} host(s) "
            f"({', '.join(d['hosts'])}), {d['runs']} run(s)",
            hang=2,
        )
        say(f"  device parameters: {d['device_parameters']}", hang=4)
        if d["note"]:
            say(f"  note: {d['note']}", hang=8)
        say(f"  best: {d['headline']}", hang=8)
