"""What the benchmarks that time the `fsadvisor` command share: a scratch store and cache (so
a user's store never shapes a figure) and the command line of the installed CLI."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def scratch_env() -> dict[str, str]:
    """The environment for a timed run: a fresh store and fit cache in a temporary directory.
    Measure an installation as users have it: byte-compiled modules (pip compiles them on
    install). Some shells export PYTHONDONTWRITEBYTECODE, which would make every run
    recompile fsadvisor from source; each benchmark's warm-up run writes the .pyc files."""
    tmp = tempfile.mkdtemp(prefix="fsadvisor-bench-")
    env = dict(os.environ, FSADVISOR_DB=os.path.join(tmp, "bench.db"),
               XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def fsadvisor_cmd(*args: str) -> list[str]:
    """The installed `fsadvisor` (the venv's, when it is on PATH) with ``args``."""
    exe = shutil.which("fsadvisor")
    return ([exe] if exe else [sys.executable, "-m", "fsadvisor.cli"]) + list(args)


def remove_scratch(env: dict[str, str]) -> None:
    """Remove what :func:`scratch_env` created."""
    shutil.rmtree(os.path.dirname(env["FSADVISOR_DB"]), ignore_errors=True)


def import_floor(modules: str, repeats: int) -> float:
    """How long ``python3 -c 'import <modules>'`` takes as a multiple of ``import numpy``
    alone: the median of ``repeats`` alternating pairs. What a missed start-up target owes
    to libraries fsadvisor does not control (numpy, the CLI framework, simpy); the rest is
    fsadvisor's own imports and work."""
    env = scratch_env()
    floor_cmd = [sys.executable, "-c", f"import {modules}"]
    numpy_cmd = [sys.executable, "-c", "import numpy"]
    t_floor: list[float] = []
    t_np: list[float] = []
    try:
        for i in range(repeats):
            pair = [(t_np, numpy_cmd), (t_floor, floor_cmd)]
            for out, cmd in (pair if i % 2 == 0 else pair[::-1]):
                t0 = time.perf_counter()
                subprocess.run(cmd, capture_output=True, env=env, check=True)
                out.append(time.perf_counter() - t0)
    finally:
        remove_scratch(env)
    return statistics.median(f / n for f, n in zip(t_floor, t_np))
