"""`fsadvisor profiles capture` against a real fio workload on a loop device this test
creates: the captured mix, request size and rate match what fio ran.

fio runs 70% random reads of 16 KiB with O_DIRECT at a fixed rate (rate_iops 1400 reads +
600 writes = 2,000 IOPS), so what the device should have seen is known in advance. The
capture samples 3 s starting 1.5 s into a 7 s run (past fio's start-up, before its end).
Tolerances: read share within 5 points (fio picks each I/O's direction at random with
p=0.7, 6,000 draws: sd 0.6 points; the rate limiter keeps each direction near its own
rate), mean request size within 5% (O_DIRECT random 16 KiB requests reach the loop device
unmerged; 5% leaves room for the odd merge), IOPS within 15% of 2,000 (fio's rate limiter
and the 2-core machine shared with other work), queue depth between 0 and fio's iodepth 8.
"""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from fsadvisor.service.capture import capture

pytestmark = pytest.mark.device


def test_capture_matches_the_fio_workload_it_observed(loop_device, tmp_path):
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    dev = loop_device(256 << 20)
    fio = subprocess.Popen(
        [
            "fio",
            "--name=capture",
            f"--filename={dev}",
            "--rw=randrw",
            "--rwmixread=70",
            "--bs=16k",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=8",
            "--time_based",
            "--runtime=7",
            "--rate_iops=1400,600",
            "--size=200m",
            "--output-format=json",
            f"--output={tmp_path / 'fio.json'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        time.sleep(1.5)
        out = tmp_path / "captured.toml"
        r = capture(dev, 3.0, out=str(out))
    finally:
        _, err = fio.communicate(timeout=60)
    assert fio.returncode == 0, err.decode()[-500:]
    assert abs(r["read_pct"] - 70) <= 5, r
    for mean in (r["mean_read_bytes"], r["mean_write_bytes"]):
        assert abs(mean - 16384) <= 0.05 * 16384, r
    assert abs(r["iops"] - 2000) <= 0.15 * 2000, r
    assert 0 <= r["effective_queue_depth"] <= 8, r
    w = r["profile"]["workload"]
    assert (w["rw"], w["bs_bytes"]) == ("randrw", 16384)
    assert out.read_text().startswith("# captured by fsadvisor profiles capture")
