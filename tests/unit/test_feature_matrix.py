"""features.config_matrix: the matrix of cfg_features, built from each
configuration's distinct parts, equals laying every merged dict out."""

from __future__ import annotations

import numpy as np
import pytest

from fsadvisor import catalog
from fsadvisor.domain import FsConfig
from fsadvisor.predict.features import (
    cfg_features,
    config_matrix,
    device_config_features,
    matrix_of,
)
from fsadvisor.service import advice


@pytest.mark.parametrize(
    "profile,device,plp",
    [
        ("oltp", "nvme:1T", "yes"),
        ("build-unpack", "sata-ssd:480G", None),
        ("analytics-scan", "hdd:4T", "no"),
        ("filebench-varmail-004", "nvme:1T", None),
    ],
)
def test_the_matrix_equals_the_merged_dicts_over_the_catalog(profile, device, plp):
    model = advice.get_model()
    w = advice.get_profile(profile).workload
    dev = advice.resolve_device(device, plp)
    pv = model.params_for(dev).values
    kind = dev.kind
    # every scheduler, and configurations that differ only in mkfs options or AG count
    # (the mechanisms' part is shared between them) -- but not in the journal, which the
    # mechanisms read (an ext4 without one pays no commit flush)
    cfgs = catalog.candidates(dev.size_bytes)
    cfgs = (
        cfgs
        + [c.with_(scheduler="bfq") for c in cfgs[::5]]
        + [FsConfig("ext4"), FsConfig("ext4", mkfs=(("journal", False),))]
    )
    C, names = config_matrix(cfgs, w, kind, pv, dev.plp)
    C0, names0 = matrix_of([cfg_features(c, w, kind, pv, dev.plp) for c in cfgs])
    assert names == names0
    assert np.array_equal(C, C0)
    # and with a device's own deviations, as every ranking predicts (predict._block_designs)
    C, names = config_matrix(cfgs, w, kind, pv, dev.plp, device_id="dev")
    C0, names0 = matrix_of([with_device(c, w, kind, pv, dev.plp) for c in cfgs])
    assert names == names0 and any(n.startswith("d:dev|m:") for n in names)
    assert any(n.startswith("d:dev|fs:ext4*") for n in names)
    assert np.array_equal(C, C0)


def with_device(c, w, kind, pv, plp):
    f = cfg_features(c, w, kind, pv, plp)
    f.update(device_config_features(f, "dev", c.fs if c is not None else None, w))
    return f


def test_unhashable_options_and_the_raw_device_take_the_merged_path():
    model = advice.get_model()
    w = advice.get_profile("oltp").workload
    dev = advice.resolve_device("nvme:1T", None)
    pv = model.params_for(dev).values
    odd = FsConfig("xfs", mount=("noatime",))
    object.__setattr__(odd, "mkfs", [("crc", "1")])  # as JSON can hand it over: a list
    cfgs = [FsConfig("btrfs"), odd, None, FsConfig("ext4", mount=("noatime",))]
    C, names = config_matrix(cfgs, w, dev.kind, pv, dev.plp)
    C0, names0 = matrix_of([cfg_features(c, w, dev.kind, pv, dev.plp) for c in cfgs])
    assert names == names0 and np.array_equal(C, C0)
    C, names = config_matrix(cfgs, w, dev.kind, pv, dev.plp, device_id="dev")
    C0, names0 = matrix_of([with_device(c, w, dev.kind, pv, dev.plp) for c in cfgs])
    assert names == names0 and np.array_equal(C, C0)


def test_parts_that_would_share_a_name_fall_back_to_the_merged_dicts(monkeypatch):
    # Should the mechanisms ever name a configuration feature, merging keeps the mechanism's
    # value (dict.update); the parts' matrix would not, so config_matrix merges instead.
    from fsadvisor.predict import mechanisms

    real = mechanisms.features
    monkeypatch.setattr(
        mechanisms, "features", lambda *a, **k: {**real(*a, **k), "opt:noatime": 7.0}
    )
    model = advice.get_model()
    w = advice.get_profile("oltp").workload
    dev = advice.resolve_device("nvme:1T", None)
    pv = model.params_for(dev).values
    cfgs = [FsConfig("ext4", mount=("noatime",)), FsConfig("xfs")]
    C, names = config_matrix(cfgs, w, dev.kind, pv, dev.plp)
    assert C[0, names.index("opt:noatime")] == 7.0 == C[1, names.index("opt:noatime")]
