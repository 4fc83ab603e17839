"""`fsadvisor profiles list|show`."""

from __future__ import annotations

from typing import Annotated

import typer

from fsadvisor.cli import app, domain_errors, emit_json

profiles_app = typer.Typer(no_args_is_help=True, help="Workload profiles (presets and TOML files).")
app.add_typer(profiles_app, name="profiles")


@profiles_app.command("list")
@domain_errors
def list_(as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False) -> None:
    """List the shipped preset profiles."""
    from fsadvisor.service import advice

    profs = advice.list_profiles()
    if as_json:
        emit_json([p.to_dict() for p in profs])
        return
    width = max(len(p.name) for p in profs)
    for p in profs:
        typer.echo(f"{p.name:<{width}}  {p.description}")


@profiles_app.command("show")
@domain_errors
def show(
    name: Annotated[str, typer.Argument(help="Preset name or path to a profile TOML.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show one profile: workload, constraints and source."""
    from fsadvisor.service import advice

    p = advice.get_profile(name)
    if as_json:
        emit_json(p.to_dict())
    else:
        typer.echo(advice.profile_toml(p))
