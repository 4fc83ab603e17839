"""`fsadvisor import fio-json`: bring in fio results measured elsewhere
(fsadvisor.service.importing)."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from fsadvisor.cli.app import app, domain_errors, emit_json
from fsadvisor.cli.options import DbOpt, JsonOpt, profile_option

# The service is imported by the command, saying what it loads (start-up): --help, shell
# completion and the man page import this module without running it.

import_app = typer.Typer(
    no_args_is_help=True, help="Bring results measured elsewhere into the store."
)
app.add_typer(import_app, name="import")


@import_app.command("fio-json")
@domain_errors
def fio_json(
    files: Annotated[
        List[str],
        typer.Argument(
            metavar="FILE...", help="fio JSON output files, or folders of them (bench-fio)."
        ),
    ],
    device: Annotated[
        str,
        typer.Option(
            "--device",
            "-d",
            help="What they ran on: a device path, a spec like nvme:1.92T, "
            "or a device-library name.",
        ),
    ],
    config: Annotated[
        str,
        typer.Option(
            "--config", "-c", help='The configuration they ran on, e.g. {"filesystem": "xfs"}.'
        ),
    ],
    workload: Annotated[
        Optional[str],
        typer.Option(
            "--workload",
            "-w",
            help='The workload they ran, as JSON: {"rw": "randread", '
            '"bs_bytes": 4096, "iodepth": 32}.',
        ),
    ] = None,
    profile: Annotated[
        Optional[str], profile_option("...or the profile whose workload they ran.")
    ] = None,
    plp: Annotated[Optional[str], typer.Option("--plp", help="yes|no|unknown")] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import fio results (JSON, json+, normal,json; fio 2.x and 3.x), all or none."""
    # the import service (the catalog, the store): on use (see the top)
    from fsadvisor.service.importing import import_fio_json

    out = import_fio_json(
        files, device=device, config=config, workload=workload, profile=profile, db=db, plp=plp
    )
    if as_json:
        emit_json(out)
        return
    for f in out["files"]:
        typer.echo(
            f"{f['status']:16} run {f['run_id']}  {f['file']}  "
            f"(sha256 {f['sha256'][:12]}, {f['fio_version'] or 'fio ?'}"
            f"{', host ' + f['host'] if f['host'] else ''})"
        )
