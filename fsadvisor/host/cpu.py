"""What this host's CPU adds to every I/O: how fast it runs the kernel's read path, and how
many cores share the work.

The model prices filesystem, scheduler and metadata work in microseconds of CPU measured on
the reference machine (the 2-core VM the reference matrix in datasets/reference/ ran on).
A calibration measures the host it runs on, so those prices follow the host's speed:

- ``host_cpu_factor``: the time of one 4 KiB ``pread`` of a file in RAM (tmpfs: no device
  behind it, only the system call, the VFS and the page-cache copy), best of several rounds,
  divided by the reference machine's. 2.0 means this host takes twice as long per call, so
  a filesystem's per-I/O work costs twice the reference machine's microseconds.
- ``host_cores``: the CPUs this process may run on (the threads of a workload share up to
  that many).

The timing is done from Python: the interpreter's call overhead is part of each round, and
it scales with the core's speed as the kernel path does. It is a speed ratio, never shown
as a latency.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
import time
from typing import Any

# Nanoseconds per 4 KiB pread of a tmpfs file on the reference machine (AMD EPYC VM, 2
# cores, kernel 6.18, CPython 3.11), best of 7 rounds of 4,000 calls: `python -m
# fsadvisor.host.cpu` printed 443-470 ns (median 451) in five runs there at load 0.36.
REFERENCE_PREAD_NS = 450.0
_ROUNDS = 7
_CALLS = 4000


def pread_ns(rounds: int = _ROUNDS, calls: int = _CALLS) -> float:
    """Best-of-``rounds`` nanoseconds per 4 KiB pread at a random 4 KiB offset of a 1 MiB
    file in /dev/shm (or $TMPDIR when there is no /dev/shm). The best round, not the mean:
    another process's time slice only ever makes a round slower."""
    where = (
        "/dev/shm"
        if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK)
        else tempfile.gettempdir()
    )
    fd, path = tempfile.mkstemp(prefix="fsadvisor-cpu-", dir=where)
    try:
        os.unlink(path)  # nothing is left behind, whatever happens next
        os.write(fd, os.urandom(1 << 20))
        rng = random.Random(0)
        offsets = [rng.randrange(256) * 4096 for _ in range(calls)]
        pread, clock = os.pread, time.perf_counter_ns
        best = float("inf")
        for _ in range(rounds):
            t0 = clock()
            for off in offsets:
                pread(fd, 4096, off)
            best = min(best, (clock() - t0) / calls)
        return best
    finally:
        os.close(fd)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def host_id() -> str:
    """The name this host's figures are stored under: systemd's machine id (one per
    installed system, kept across renames and reboots), else the host name."""
    try:
        with open("/etc/machine-id", encoding="ascii") as f:
            mid = f.read().strip()
    except (OSError, UnicodeDecodeError):
        mid = ""
    return f"machine-id:{mid}" if mid else f"hostname:{socket.gethostname()}"


HOW = f"4 KiB pread of a tmpfs file, best of {_ROUNDS} rounds of {_CALLS:,} calls"


def measurement() -> dict[str, Any]:
    """This host's figures with what a stored copy needs to be read later: which host, how
    and when they were measured, and the load beside the measurement."""
    ns = pread_ns()
    return {
        "host": host_id(),
        "hostname": socket.gethostname(),
        "host_cpu_factor": ns / REFERENCE_PREAD_NS,
        "host_cores": float(cores()),
        "pread_ns": ns,
        "reference_pread_ns": REFERENCE_PREAD_NS,
        "how": HOW,
        "load_1min": os.getloadavg()[0],
        "measured_at": time.time(),
    }


if __name__ == "__main__":
    ns = pread_ns()
    print(
        f"{ns:.0f} ns per 4 KiB pread of a tmpfs file (reference {REFERENCE_PREAD_NS:.0f}): "
        f"host_cpu_factor {ns / REFERENCE_PREAD_NS:.2f}, {cores()} cores; load "
        f"{os.getloadavg()[0]:.2f}"
    )
