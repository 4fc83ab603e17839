"""Benchmark: wall time of the what-if simulator per simulated request.

Covers: fsadvisor.predict.sim.run, the simpy loop itself (no model fit, no calibration). Scenario:
the bare-NVMe device of models/devices.toml under three workload shapes (no fsync; the oltp
preset's commit every 8 writes; fsync on every write at queue depth 32, where barriers drain
the device and merge), REQUESTS requests each, REPEATS times; the median is printed as
microseconds of wall time per request and seconds per 50,000 requests (the CLI's default).
Target: a 50,000-request variant in well under 2 s, so `fsadvisor simulate --vary` with a
handful of values answers in seconds.

    python benchmarks/sim_speed.py [--requests 50000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from fsadvisor.predict import sim
from fsadvisor.domain import Workload
from fsadvisor.predict.settings import ModelSettings

SCENARIOS = {
    "4k randread 4x8, no fsync": Workload(rw="randread", bs_bytes=4096, numjobs=4, iodepth=8),
    "oltp 8k 70% read 16x1, commit/8 writes": Workload(
        rw="randrw", bs_bytes=8192, numjobs=16, rwmixread=70, fsync_every=1,
        fsync_mode="per_transaction"),
    "4k randwrite 1x32, fsync every write": Workload(rw="randwrite", bs_bytes=4096,
                                                     iodepth=32, fsync_every=1),
}
DEFAULT_REQUESTS = 50_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=DEFAULT_REQUESTS)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    params = ModelSettings.load().device_params("nvme")
    print(f"{'scenario':<42} {'us/request':>10} {'s per 50k':>10} {'sim ops/s':>12}")
    for name, w in SCENARIOS.items():
        times = sim.device_times(params, w, "unknown")
        walls = []
        for rep in range(args.repeats):
            t0 = time.perf_counter()
            st = sim.run(times, sim.job_specs(w), args.requests, seed=rep)
            walls.append(time.perf_counter() - t0)
        per_req_us = statistics.median(walls) / args.requests * 1e6
        print(f"{name:<42} {per_req_us:>10.1f} {per_req_us * 0.05:>10.2f} "
              f"{st.throughput_ops_s:>12,.0f}")


if __name__ == "__main__":
    main()
