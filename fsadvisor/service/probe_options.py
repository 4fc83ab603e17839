"""The probe's options as declared once (fsadvisor/probe/options.py), for the front ends:
the CLI builds ``fsadvisor probe``'s options from them and imports only the service
(tests/unit/test_front_end_imports.py). A module of its own, so a command without probe
options does not load them."""

from fsadvisor.probe.options import (
    Declared,
    ProbeOptions,
    RunChoices,
    cli_order,
    declared,
)

# What the front ends use of the declaration (they may not import fsadvisor.probe).
__all__ = ["Declared", "ProbeOptions", "RunChoices", "cli_order", "declared"]
