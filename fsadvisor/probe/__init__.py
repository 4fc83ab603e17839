"""Probing a real device: plan a matrix of configurations x workloads x repetitions, run each
cell (precondition, mkfs, mount, scheduler, fill, measure, cool down, unmount), store every
repetition, and leave the machine as it was found even after Ctrl-C or a kill.

- :mod:`.plan`: the matrix, its cells and their keys (pure)
- :mod:`.cell`: one cell's steps and their execution
- :mod:`.run`: the whole matrix, signals, resume, cleanup
- :mod:`.report`: the dry-run preview, progress events and the summary
- :mod:`.state`: the state file and the cleanup after a probe that died
- :mod:`.commands`: the steps' executor over fsadvisor/host/run.py
- :mod:`.measure`: /proc/stat, block-layer deltas, write amplification, direct-I/O check

Nothing here prints; progress goes to a callback.
"""

from fsadvisor.probe.plan import MICRO, Cell, Plan, WorkloadSpec, build_plan, cell_key
from fsadvisor.probe.report import (CellOutcome, ProbeSummary, ProgressEvent, dry_run_lines,
                                    results_from_store)
from fsadvisor.probe.run import Interruptions, MatrixRun, ProbeInterrupted
from fsadvisor.probe.state import CleanupReport, ProbeState, StateFile, cleanup_stale, state_path_for

__all__ = [
    "MICRO", "Cell", "Plan", "WorkloadSpec", "build_plan", "cell_key", "CellOutcome",
    "Interruptions", "MatrixRun", "ProbeInterrupted", "ProbeSummary", "ProgressEvent",
    "dry_run_lines", "results_from_store", "CleanupReport", "ProbeState", "StateFile",
    "cleanup_stale", "state_path_for",
]
