"""Probing a real device: plan a matrix of configurations x workloads x repetitions, run each
cell (precondition, mkfs, mount, scheduler, fill, measure, cool down, unmount), store every
repetition, and leave the machine as it was found even after Ctrl-C or a kill.

- :mod:`.options`: every option of ``fsadvisor probe``, declared once (pure)
- :mod:`.plan`: the matrix, its cells and their keys (pure)
- :mod:`.cell`: one cell's steps and their execution
- :mod:`.run`: the whole matrix, signals, resume, cleanup
- :mod:`.report`: the dry-run preview, progress events and the summary
- :mod:`.state`: the state file and the cleanup after a probe that died
- :mod:`.commands`: the steps' executor over fsadvisor/host/run.py
- :mod:`.measure`: /proc/stat, block-layer deltas, write amplification, direct-I/O check

Nothing here prints; progress goes to a callback.
"""

import importlib

__all__ = [
    "MICRO",
    "Cell",
    "Plan",
    "WorkloadSpec",
    "build_plan",
    "cell_key",
    "CellOutcome",
    "Interruptions",
    "MatrixRun",
    "ProbeInterrupted",
    "ProbeSummary",
    "ProgressEvent",
    "dry_run_lines",
    "results_from_store",
    "CleanupReport",
    "ProbeState",
    "StateFile",
    "cleanup_stale",
    "state_path_for",
]

# The names above load on first use (PEP 562): `recommend` reads the pure plan's per-cell time
# to say how long a probe would take to settle a tie, and must not pay for the machinery
# (run, cell, state) that importing this package eagerly would load.
_HOME = {
    "MICRO": "plan",
    "Cell": "plan",
    "Plan": "plan",
    "WorkloadSpec": "plan",
    "build_plan": "plan",
    "cell_key": "plan",
    "CellOutcome": "report",
    "ProbeSummary": "report",
    "ProgressEvent": "report",
    "dry_run_lines": "report",
    "results_from_store": "report",
    "Interruptions": "run",
    "MatrixRun": "run",
    "ProbeInterrupted": "run",
    "CleanupReport": "state",
    "ProbeState": "state",
    "StateFile": "state",
    "cleanup_stale": "state",
    "state_path_for": "state",
}


def __getattr__(name: str):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
