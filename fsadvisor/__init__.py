"""fsadvisor: pick a filesystem configuration for an SSD by operations per joule.

The core (domain, catalog, profile, store, model, recommend, probe, energy, service) imports
neither textual nor typer; the CLI and TUI are thin front ends over ``fsadvisor.service``.
"""

__version__ = "0.1.0"
