"""This machine's kernel against seed 002's barrier: a cache flush does not hold back the
I/O beside it. Seed 002 says the barrier "serialises the device's internal pipeline,
draining all in-flight writes before the fsync completes"; the block layer since 2.6.37
issues flushes (Documentation/block/writeback_cache_control.rst) that make earlier completed
writes durable and order nothing else, and the simulator models that (predict/sim.py: a
flush is one at a time beside the channels). Measured here: on a direct-I/O loop device on
disk, one job reads 4 KiB at queue depth 1 while another writes with an fsync after every
write (the loop device has a write-back cache, so each fsync is a real flush of its
backing file), against the same writer without fsync. Root; one loop device; ~30 s."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess

import pytest

pytestmark = pytest.mark.device

RUNTIME_S = 5
ROUNDS = 2  # alternated pairs: the machine is shared, and its drift hits both sides


def _run(dev: str, fsync: int) -> dict[str, float]:
    half = "128M"
    cmd = [
        "fio",
        "--output-format=json",
        "--time_based",
        f"--runtime={RUNTIME_S}",
        "--direct=1",
        "--ioengine=psync",
        "--bs=4k",
        f"--filename={dev}",
        "--name=reader",
        "--rw=randread",
        "--offset=0",
        f"--size={half}",
        "--name=writer",
        "--rw=randwrite",
        f"--offset={half}",
        f"--size={half}",
        f"--fsync={fsync}",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    reader, writer = json.loads(out[out.index("{") :])["jobs"]
    sync = writer.get("sync") or {}
    return {
        "read_lat_us": reader["read"]["clat_ns"]["mean"] / 1e3,
        "write_iops": writer["write"]["iops"],
        "sync_lat_us": (sync.get("lat_ns") or {}).get("mean", 0.0) / 1e3,
        "syncs": float(sync.get("total_ios", 0)),
    }


def test_reads_beside_a_flushing_writer_do_not_wait_for_its_flushes(loop_device):
    if os.geteuid() != 0 or shutil.which("fio") is None:
        pytest.skip("needs root and fio")
    dev = loop_device(256 << 20)
    with open(f"/sys/block/{os.path.basename(dev)}/queue/write_cache") as f:
        assert f.read().strip() == "write back"  # so an fsync sends a real flush
    plain, flushing = [], []
    for _ in range(ROUNDS):
        plain.append(_run(dev, 0))
        flushing.append(_run(dev, 1))
    base = statistics.median(r["read_lat_us"] for r in plain)
    with_flush = statistics.median(r["read_lat_us"] for r in flushing)
    flush_us = statistics.median(r["sync_lat_us"] for r in flushing)
    syncs_per_s = statistics.median(r["syncs"] for r in flushing) / RUNTIME_S
    assert flush_us > 0 and syncs_per_s > 0
    # A barrier that held the queue would make a read that arrives during a flush wait for
    # its rest: on average the share of time a flush runs x half a flush. The reads wait
    # for less than half of that (the writer's own writes still share the device with them,
    # as without fsync).
    busy = min(1.0, syncs_per_s * flush_us / 1e6)
    barrier_wait = busy * flush_us / 2
    report = (
        f"reads {base:.1f} us beside a plain writer, {with_flush:.1f} us beside one that "
        f"fsyncs ({syncs_per_s:,.0f} flushes/s of {flush_us:.1f} us, busy {busy:.0%}); "
        f"a barrier would add about {barrier_wait:.1f} us"
    )
    assert barrier_wait > 5.0, report  # the flushes are long enough to tell the two apart
    assert with_flush - base < 0.5 * barrier_wait, report
