""" "Measured on this device" means runs of this device's own identity, probed here. A spec
(nvme:1T) never claims it, whatever was imported under that spec; a loop or zram device says
"this device class" (its identity is its backing class, shared by every device backed the same
way); runs only imported say "imported"."""

from __future__ import annotations

import pytest

from fsadvisor.domain import Device, FsConfig, Workload
from fsadvisor.predict.fit import fit
from fsadvisor.predict.settings import ModelSettings
from fsadvisor.records import Observation

S = ModelSettings.load(use_store_calibration=False)
W = Workload(rw="randwrite", bs_bytes=4096, iodepth=32)
SPEC = Device(None, 1 << 40, kind="nvme")  # identity "kind:nvme"
DRIVE = Device("/dev/nvme9n1", 1 << 40, kind="nvme", model="ACME X1", serial="S123")
LOOPC = Device("/dev/loop7", 1 << 30, kind="loop", model="loop on ext4 (/dev/vda1), direct I/O")


def _obs(device: Device, source: str, fs: str = "ext4", value: float = 50_000.0):
    return Observation(
        source=source,
        device_kind=device.kind,
        config=FsConfig.make(fs),
        workload=W,
        metric="iops",
        value=value,
        unit="IOPS",
        device_id=device.identity,
        n=3,
        sd=0.02 * value,
    )


@pytest.mark.parametrize(
    "device,source,basis",
    [
        (SPEC, "imported fio-json sha256 abc run(s) 1", ""),  # a spec never claims it
        (SPEC, "probe m-1 run(s) 1,2,3", ""),
        (DRIVE, "imported fio-json sha256 abc run(s) 1", "imported"),
        (DRIVE, "probe m-1 run(s) 1,2,3", "this device"),
        (LOOPC, "probe m-1 run(s) 1,2,3", "this device class"),
    ],
)
def test_what_stands_behind_a_devices_own_terms(device, source, basis):
    m = fit([_obs(device, source), _obs(device, source, "xfs", 60_000.0)], S)
    assert m.measured_basis(device) == basis
    # another device of the same kind never inherits the claim
    other = Device("/dev/nvme8n1", 1 << 40, kind="nvme", model="ACME X1", serial="S999")
    assert m.measured_basis(other) == ""


def test_an_import_tagged_with_a_spec_leaves_the_default_recommend_predicted(tmp_db):
    from fsadvisor.predict.rank import rank
    from fsadvisor.profiles import load_profile
    from fsadvisor.service import answer

    m = fit([_obs(SPEC, "imported fio-json sha256 abc run(s) 1")], S)
    rec = rank(m, load_profile("oltp"), SPEC, top=2)
    assert rec.lead["measured_here"] is False and rec.lead["measured_basis"] == ""
    assert "measured on this device" not in " ".join(answer.headline(rec))
