"""benchmarks/uncertainty_calibration.py --device-sd-scale F: the results it backs
(benchmarks/results/uncertainty_calibration-2026-11-30b.txt) say every device-deviation prior
was narrowed and nothing else; this holds the option to that."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import uncertainty_calibration as U  # noqa: E402

from fsadvisor.predict.settings import ModelSettings  # noqa: E402

DEVICE_KEYS = ("d:", "d:|m:", "d:|fs:*", "d:|fs:*mediated")


def test_the_scale_narrows_the_device_deviation_priors_and_nothing_else():
    base = ModelSettings.load(use_store_calibration=False)
    half = U._scaled(base, 0.5)
    assert U._scaled(base, 1.0) is base
    before, after = base.priors["prior"], half.priors["prior"]
    assert all(k in before for k in DEVICE_KEYS)
    for key, entry in before.items():
        factor = 0.5 if key in DEVICE_KEYS else 1.0
        assert after[key]["sd"] == float(entry["sd"]) * factor, key
    # what a fit reads: a device's deviation from a mechanism and from a filesystem's shape
    for name in ("d:dev|m:fsync:btrfs", "d:dev|fs:btrfs*fsync", "d:dev|opt:xfs.noatime"):
        assert half.prior(name)[1] == base.prior(name)[1] * 0.5, name
    # a mechanism's own declared device width (m:dispatch) and the shared effects stay
    assert half.prior("d:dev|m:dispatch:kyber") == base.prior("d:dev|m:dispatch:kyber")
    assert half.prior("fs:xfs") == base.prior("fs:xfs")
    assert base.priors["prior"]["d:"]["sd"] == before["d:"]["sd"]  # the original untouched
