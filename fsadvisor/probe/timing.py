"""How long a probe takes: its measurement window, cool-down and repetitions, the time a
cell spends outside its window, and the fill of its data set.

Pure and light on purpose: `recommend` says how long a probe would take to settle a tie
(service/advice.settle_cells) and how long an adaptive probe would take (service/answer)
from these figures without loading the probe's planning (probe/plan.py builds its cells
and its estimate on them; importing it would add to every `recommend`, `-X importtime`
shows by how much).
"""

from __future__ import annotations

MIB, GIB = 1 << 20, 1 << 30

# Seed 000 §III used a 30 s measurement window and a 30 s idle period after each test.
DEFAULT_RUNTIME_S = 30.0
DEFAULT_COOLDOWN_S = 30.0
DEFAULT_REPS = 3
# A --quick run's measurement window (s), and the seconds a cell spends outside it (discard,
# mkfs, mount, umount) on an NVMe or a loop device here (measured: 1.6-1.8 s per cell on a
# 512 MiB loop).
QUICK_RUNTIME_S = 10.0
CELL_OVERHEAD_S = 3.0
FILL_BYTES_PER_S = 500 * MIB  # conservative sequential write rate for the fill estimate


def default_size_bytes(device_size_bytes: int) -> int:
    """Per-job data set: an eighth of the device, at most 4 GiB, at least 16 MiB. Large enough
    to leave the drive's DRAM cache behind on a real SSD (seed 002 uses 2 GiB), small enough
    that the largest job (numjobs x size) stays well inside the device."""
    return int(max(16 * MIB, min(4 * GIB, device_size_bytes // 8)) // MIB * MIB)


def cell_seconds(
    read_pct: float,
    size_bytes: int,
    runtime_s: float = DEFAULT_RUNTIME_S,
    cooldown_s: float = DEFAULT_COOLDOWN_S,
    overhead_s: float = CELL_OVERHEAD_S,
) -> float:
    """One cell's wall time: its window, its cool-down, its overhead, and the fill of a
    ``size_bytes`` data set first when the workload reads (a read needs data to read)."""
    fill = size_bytes / FILL_BYTES_PER_S if read_pct > 0 else 0.0
    return runtime_s + cooldown_s + overhead_s + fill
