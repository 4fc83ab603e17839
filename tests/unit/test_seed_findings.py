"""The seeds' findings as regression tests: fitted on the shipped data with the
shipped calibration, the model reproduces what each source observed on its own device. Each
test names its source. Findings the transcribed data cannot teach yet are strict xfails that
say why (they turn into failures the day the model reproduces them, so they get promoted)."""

import pytest

from fsadvisor.domain import Device, FsConfig
from fsadvisor.predict.settings import ModelSettings
from fsadvisor.predict.fit import fit
from fsadvisor.predict.predict import predict_many
from fsadvisor.store.datasets import load_observations, load_workloads

SEED000_DEVICE = "Samsung 990 PRO 2 TB PCIe 4.0 NVMe (heatsink)"
SEED002_DEVICE = "Samsung PM9A3 3.84 TB NVMe PCIe Gen4 (PLP)"
SEED004_DEVICE = "Maxtor ATLAS15K 18 GB 15K RPM SCSI (ATLAS15K_18WLS) in a Dell PowerEdge SC1425"


@pytest.fixture(scope="module")
def model():
    return fit(
        load_observations(include=("upper-bound", "lower-bound")),
        ModelSettings.load(use_store_calibration=False),
    )


@pytest.fixture(scope="module")
def workloads():
    return load_workloads()


def _seed000(fs):  # seed 000 ran every filesystem with noatime, XFS with 4 AGs
    return FsConfig.make(fs, {}, ("noatime",), "none", 4 if fs == "xfs" else None)


D000 = Device(path=None, size_bytes=2 * 10**12, kind="nvme", device_id=SEED000_DEVICE)
D002 = Device(path=None, size_bytes=3840 * 10**9, kind="nvme", plp="yes", device_id=SEED002_DEVICE)
D004 = Device(path=None, size_bytes=18 * 10**9, kind="hdd", device_id=SEED004_DEVICE)
SEED000_WORKLOADS = [
    f"fio-{rw}-128k-j{j}"
    for rw in ("randread", "read", "randwrite", "write", "randrw")
    for j in (1, 4, 8)
]


def test_seed000_obs4_xfs_has_the_best_ops_per_joule_overall(model, workloads):
    """Massie et al. 2025 (seed 000), Observation 4: XFS the most energy-efficient overall."""
    cfgs = [_seed000(fs) for fs in ("ext4", "xfs", "f2fs")]
    wins = 0
    for name in SEED000_WORKLOADS + ["fio-write-4k-j8"]:
        p = predict_many(model, cfgs, workloads[name], D000)
        wins += max(range(3), key=lambda i: p[i].ops_per_joule) == 1
    assert wins >= 0.8 * (len(SEED000_WORKLOADS) + 1)


@pytest.mark.xfail(
    strict=True,
    reason=(
        "seed 000 Obs. 3 is transcribed only as an upper bound (000-0005: f2fs < 3 GiB/s) that the "
        "fit treats as censored; with the shipped prior width (0.1) one bound cannot move f2fs's "
        "shared effects below ext4/xfs"
    ),
)
def test_seed000_obs3_f2fs_is_worst_for_high_concurrency_4k_writes(model, workloads):
    """Massie et al. 2025 (seed 000), Observation 3: f2fs below half of ext4/xfs at 4K x 8."""
    p = predict_many(
        model, [_seed000(fs) for fs in ("ext4", "xfs", "f2fs")], workloads["fio-write-4k-j8"], D000
    )
    assert p[2].iops < min(p[0].iops, p[1].iops)


@pytest.mark.xfail(
    strict=True,
    reason=(
        "seed 000 Obs. 1-2 (f2fs most efficient at low-IOPS 128K random mixed) are in the paper's "
        "figures; datasets/seed000 transcribes those cells only as the shared ~54K IOPS upper "
        "bound, so no number says f2fs is ahead"
    ),
)
def test_seed000_obs1_f2fs_is_best_for_low_iops_128k_random_mixed(model, workloads):
    """Massie et al. 2025 (seed 000), Observations 1-2."""
    p = predict_many(
        model,
        [_seed000(fs) for fs in ("ext4", "xfs", "f2fs")],
        workloads["fio-randrw-128k-j1"],
        D000,
    )
    assert p[2].ops_per_joule > max(p[0].ops_per_joule, p[1].ops_per_joule)


def test_seed002_data_journal_lowers_random_write_iops(model, workloads):
    """Seed 002 (filesystem overhead): ext4 data=journal writes every data block twice
    (16 vs 12 KB written per 4 KB write); random-write IOPS drop with it."""
    w = workloads["fs-overhead-randwrite-4k-qd32"]
    plain, journal = predict_many(
        model, [FsConfig.make("ext4"), FsConfig.make("ext4", mount=("data=journal",))], w, D002
    )
    assert journal.iops < 0.85 * plain.iops


def test_btrfs_is_far_below_ext4_and_xfs_for_4k_random_writes(model, workloads):
    """The copy-on-write mechanism (seed 002, allocator section; a probe of this
    machine: btrfs 5-10x below ext4/xfs for 4K random writes)."""
    w = workloads["fs-overhead-randwrite-4k-qd32"]
    ext4, xfs, btrfs = predict_many(
        model, [FsConfig.make(f) for f in ("ext4", "xfs", "btrfs")], w, D002
    )
    assert btrfs.iops < 0.3 * min(ext4.iops, xfs.iops)


@pytest.mark.xfail(
    strict=True,
    reason=(
        "seed 004 Table 2 (fileserver: +23% at 64 AGs, ops/J +25% at 64 but +8% at 128) is one "
        "study's ratio on one 2010 HDD; at the shipped prior width (0.1: AG effects sd 0.025) and "
        "without per-device deviations for the seeds' drives (held-out-table cross-validation "
        "showed those do not carry over), the fitted AG effect stays near 0"
    ),
)
def test_seed004_xfs_ag_count_helps_fileserver_up_to_64_then_ops_per_joule_drops(model, workloads):
    """Sehgal et al. FAST'10 (seed 004), Table 2 and Sec. 5.6."""
    cfgs = [FsConfig.make("xfs", ag_count=a) for a in (16, 64, 256)]
    p = predict_many(model, cfgs, workloads["filebench-fileserver-004"], D004)
    assert p[1].iops > p[0].iops
    assert p[1].ops_per_joule > p[2].ops_per_joule
