"""datasets/reference/runs-schedulers.csv: the fourth reference matrix, the blk-mq schedulers
(none, mq-deadline, kyber, bfq) on the RAM-backed loop, with the raw device under each.

Its contract is the first matrix's columns on one of its device classes (zram has no
scheduler). The claims datasets/reference/README.md makes about it are checked as orderings
of means over several cells, so that each compares figures whose own spread (rep-to-rep CV
1-9%, n = 3 per cell) is a fraction of the difference; and the model, fitted with these rows,
prices a scheduler as they show: a cost, larger for an fsync per write than for a deep queue."""

from __future__ import annotations

import csv
import statistics

import pytest
from _reference_rows import HERE, cell_means, rows_of

from fsadvisor.domain import Device, FsConfig
from fsadvisor.predict.mechanism_fit import fit_shipped
from fsadvisor.predict.predict import predict

CSV = HERE / "runs-schedulers.csv"
SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")
FS = {"raw": "", "ext4": "", "xfs": "", "btrfs": "nodiscard"}
DEEP = ("4k-randread-qd32", "4k-randwrite-qd32")
FSYNC = "4k-randwrite-fsync1"


@pytest.fixture(scope="module")
def rows():
    return rows_of(CSV)


@pytest.fixture(scope="module")
def mean(rows):
    return cell_means(rows, "filesystem", "mount_options", "scheduler", "workload")


def _ratio(mean, fs: str, sched: str, workload: str) -> float:
    return mean[(fs, FS[fs], sched, workload)] / mean[(fs, FS[fs], "none", workload)]


def test_the_first_matrix_contract_on_the_ram_backed_loop_only(rows):
    first = rows_of(HERE / "runs.csv")
    with CSV.open(newline="") as f:
        assert csv.DictReader(f).fieldnames == list(first[0].keys())
    assert all(r["status"] == "ok" for r in rows)
    assert {r["device_class"] for r in rows} == {"shm-loop"}
    assert {r["scheduler"] for r in rows} == set(SCHEDULERS)
    assert {r["matrix_id"] for r in rows}.isdisjoint({r["matrix_id"] for r in first})


def test_every_cell_under_every_scheduler_is_there(mean):
    for fs in FS:
        for sched in SCHEDULERS:
            for w in (*DEEP, FSYNC, "128k-write-qd8"):
                assert mean[(fs, FS[fs], sched, w)] > 0, (fs, sched, w)


def test_mq_deadline_costs_an_fsync_per_write_more_than_a_deep_queue(mean):
    # An fsync per write sends its data, the commit's writes and the flushes through the
    # queue one after another; a QD32 queue hands the scheduler its requests in batches.
    fsync = statistics.fmean(
        _ratio(mean, fs, "mq-deadline", FSYNC) for fs in ("raw", "ext4", "xfs")
    )
    deep = statistics.fmean(
        _ratio(mean, fs, "mq-deadline", w) for fs in ("raw", "ext4", "xfs") for w in DEEP
    )
    assert fsync < 0.96 < deep


def test_bfq_costs_the_bare_device_at_a_deep_queue(mean):
    # bfq's per-request work shows even in batches: the raw device's QD32 reads and writes.
    for w in DEEP:
        assert _ratio(mean, "raw", "bfq", w) < 0.96, w
        assert _ratio(mean, "raw", "bfq", w) < _ratio(mean, "raw", "mq-deadline", w), w


@pytest.fixture(scope="module")
def model():
    return fit_shipped()


def test_the_fitted_model_prices_a_scheduler_as_a_cost_that_grows_with_the_requests(model):
    from fsadvisor.domain import Workload

    loop = Device(path=None, size_bytes=3 << 30, kind="ram-loop")
    fsync = Workload(rw="randwrite", bs_bytes=4096, iodepth=1, fsync_every=1, direct=True)
    deep = Workload(rw="randread", bs_bytes=4096, iodepth=32, ioengine="io_uring", direct=True)

    def ratio(fs: str, sched: str, w: Workload) -> float:
        cfg = FsConfig.make(fs)
        return (
            predict(model, cfg.with_(scheduler=sched), w, loop).iops
            / predict(model, cfg, w, loop).iops
        )

    for fs in ("ext4", "xfs"):
        for sched in ("mq-deadline", "kyber", "bfq"):
            # never a gain: a scheduler only adds work on a device without seeks
            assert ratio(fs, sched, fsync) < 1.0 and ratio(fs, sched, deep) <= 1.0
        # an fsync per write pays for its several requests, a deep queue little
        assert ratio(fs, "mq-deadline", fsync) < ratio(fs, "mq-deadline", deep)
        assert ratio(fs, "mq-deadline", fsync) < 0.98
