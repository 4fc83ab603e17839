"""Benchmark: `fsadvisor predict --batch` lines per second on 10,000 lines.

Covers: the whole batch path through the CLI (start-up, model from the warm fit cache, JSON
in and out). Scenarios, 10,000 lines each: "shared" — the catalog's configurations
(stride-sampled) under 4 presets, so lines share workloads and devices but are each a
distinct request; "repeated" — 16 distinct requests repeated; "distinct" — every line its own
workload (random fio shapes), nothing shared. Alternating with `python3 -c 'import numpy'`
as a yardstick of the machine's current speed; printed: per-scenario median and min-max
lines/s over REPEATS runs. Target: >= 3,000 lines/s.

    python benchmarks/batch_rate.py [--repeats 3] [--lines 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

from _cli import fsadvisor_cmd, remove_scratch, scratch_env

PROFILES = ("oltp", "analytics-scan", "build-unpack", "fio-randread-4k-j4")


def scenarios(n: int) -> dict[str, str]:
    from fsadvisor import catalog
    base = [c.to_dict() for c in catalog.candidates(1 << 40)]
    rnd = random.Random(13)
    # (configuration, profile) pairs all distinct for up to 4 x the catalog (11,008 lines)
    shared = [{"id": i, "config": base[i % len(base)], "profile": PROFILES[i // len(base) % 4]}
              for i in range(n)]
    few = [{"filesystem": "ext4"}, {"filesystem": "xfs", "mount": ["noatime"]},
           {"filesystem": "btrfs"}, {"filesystem": "xfs", "ag_count": 16}]
    repeated = [{"id": i, "config": few[i % 4], "profile": PROFILES[(i // 4) % 4]}
                for i in range(n)]
    distinct = [{"id": i, "config": few[i % 3],
                 "workload": {"rw": "randrw", "bs": f"{rnd.choice([4, 8, 16, 64])}k",
                              "numjobs": rnd.randint(1, 64), "iodepth": rnd.randint(1, 64),
                              "rwmixread": rnd.randint(1, 99)}} for i in range(n)]
    return {name: "".join(json.dumps(x) + "\n" for x in lines)
            for name, lines in (("shared", shared), ("repeated", repeated),
                                ("distinct", distinct))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--lines", type=int, default=10_000)
    args = ap.parse_args()
    env = scratch_env()
    cmd = fsadvisor_cmd("predict", "--batch")
    inputs = scenarios(args.lines)
    rates: dict[str, list[float]] = {k: [] for k in inputs}
    t_np: list[float] = []
    try:
        subprocess.run(cmd, input=inputs["repeated"][:2000], capture_output=True, text=True,
                       env=env, check=True)  # seeds the store, fills the fit cache
        for r in range(args.repeats):
            for name in (inputs if r % 2 == 0 else list(inputs)[::-1]):
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-c", "import numpy"], env=env, check=True)
                t_np.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                out = subprocess.run(cmd, input=inputs[name], capture_output=True, text=True,
                                     env=env, check=True).stdout
                rates[name].append(args.lines / (time.perf_counter() - t0))
                errors = sum('"error"' in x for x in out.splitlines())
                assert len(out.splitlines()) == args.lines and not errors, (name, errors)
    finally:
        remove_scratch(env)
    # The machine is shared: how busy it was during the run belongs with the figures.
    print(f"load average (1/5/15 min) at the end: "
          f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"python3 -c 'import numpy': median {statistics.median(t_np) * 1000:.0f} ms "
          f"(min-max {min(t_np) * 1000:.0f}-{max(t_np) * 1000:.0f})")
    for name, rs in rates.items():
        print(f"{name:<9} {args.lines} lines: median {statistics.median(rs):8.0f} lines/s "
              f"(min-max {min(rs):.0f}-{max(rs):.0f}; target >= 3000)")


if __name__ == "__main__":
    main()
