"""Issue 12 §3: no prediction a person reads exceeds the device's own IOPS or bandwidth
ceiling, for any workload kind (metadata and page-cached ones included)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from fsadvisor.catalog.device_params import for_submitters
from fsadvisor.domain import Prediction, Workload
from fsadvisor.predict.ceilings import cap, ceilings
from fsadvisor.profiles import list_presets
from fsadvisor.service import advice

KINDS = ["nvme:1T", "sata-ssd:480G", "hdd:4T", "loop:10G", "ram-loop:4G", "zram:4G"]
SLACK = 1.0 + 1e-9  # float rounding only


def _under(p: Prediction, w: Workload) -> None:
    # the device's ceilings as this workload's submitters see them (zram: each writer up to
    # the host's cores brings its own CPU, tests/unit/test_submitters.py)
    values = for_submitters(p.basis["device_params"]["values"], w)
    lim = ceilings(w, values)
    assert p.iops <= lim["iops"] * SLACK, (p.iops, lim)
    assert p.iops * w.bs_bytes <= lim["bandwidth_bytes_s"] * SLACK, (p.iops, w.bs_bytes, lim)
    assert p.mb_s * 1e6 <= lim["bandwidth_bytes_s"] * SLACK
    assert p.uncertainty["iops_90"][1] <= lim["iops_limit"] * SLACK


@pytest.mark.parametrize("kind", KINDS)
def test_every_preset_stays_under_the_device_ceilings(kind):
    for prof in list_presets():
        rec = advice.recommend(prof.name, device=kind, top=3)
        for r in rec.ranked + list(rec.best_per_filesystem.values()):
            _under(r.prediction, prof.workload)
            # the score is what the list prints: it must come from the capped prediction
            per = (
                r.prediction.bytes_per_joule
                if rec.rank_by == "bytes_per_joule"
                else r.prediction.ops_per_joule
            )
            assert r.score == pytest.approx(per, rel=1e-9)


def test_predict_one_is_capped_too():
    out = advice.predict_one(
        {"filesystem": "xfs", "mkfs": {"inode_size": 2048}},
        profile="filebench-webserver-004",
        device="sata-ssd:480G",
    )
    w = advice.get_profile("filebench-webserver-004").workload
    lim = ceilings(w, out["basis"]["device_params"]["values"])
    assert out["predicted"]["iops"] <= lim["iops_limit"] * SLACK
    assert out["basis"]["ceiling"]["capped"] is True


VALUES = {
    "read_iops_cap": 1e6,
    "write_iops_cap": 5e5,
    "read_bw_bytes_s": 7e9,
    "write_bw_bytes_s": 6e9,
}


@settings(max_examples=200, deadline=None)
@given(
    iops=st.floats(1.0, 1e8),
    rw=st.sampled_from(["randread", "randwrite", "randrw", "read", "write"]),
    bs=st.sampled_from([512, 4096, 65536, 1 << 20]),
    f=st.floats(1.01, 50.0),
)
def test_cap_never_exceeds_and_keeps_energy_consistent(iops, rw, bs, f):
    w = Workload(rw=rw, bs_bytes=bs)
    p = Prediction(
        iops=iops,
        mb_s=iops * bs / 1e6,
        mean_latency_ms=1.0,
        p99_latency_ms=2.0,
        watts=50.0,
        ops_per_joule=iops / 50.0,
        bytes_per_joule=iops * bs / 50.0,
        uncertainty={
            "iops_90": [iops / f, iops * f],
            "ops_per_joule_90": [iops / f / 50, iops * f / 50],
        },
        basis={"device_params": {"values": VALUES}},
    )
    c = cap(p, w)
    lim = ceilings(w, VALUES)
    assert c.iops <= lim["iops_limit"] * SLACK
    assert c.uncertainty["iops_90"][0] <= c.uncertainty["iops_90"][1] * SLACK
    # watts unchanged: ops/J falls with the capped throughput
    assert c.ops_per_joule == pytest.approx(c.iops / 50.0, rel=1e-9)
    assert c.bytes_per_joule == pytest.approx(c.iops * bs / 50.0, rel=1e-9)
    if iops <= lim["iops_limit"]:
        assert c.iops == iops
    assert not c.basis["ceiling"]["capped"] or c.p99_latency_ms > 2.0
    assert math.isfinite(c.p99_latency_ms)


@settings(max_examples=200, deadline=None)
@given(
    iops=st.floats(1.0, 1e8),
    rw=st.sampled_from(["randread", "randwrite", "randrw", "read", "write"]),
    bs=st.sampled_from([512, 4096, 65536, 1 << 20]),
)
def test_changes_figures_says_exactly_when_cap_moves_a_figure(iops, rw, bs):
    # ranking caps in full only what it shows: it relies on this to compare the same scores
    from fsadvisor.predict.ceilings import changes_figures

    w = Workload(rw=rw, bs_bytes=bs)
    p = Prediction(
        iops=iops,
        mb_s=iops * bs / 1e6,
        mean_latency_ms=1.0,
        p99_latency_ms=2.0,
        watts=50.0,
        ops_per_joule=iops / 50.0,
        bytes_per_joule=iops * bs / 50.0,
        uncertainty={},
        basis={"device_params": {"values": VALUES}},
    )
    c = cap(p, w)
    moved = (c.iops, c.mb_s, c.ops_per_joule, c.p99_latency_ms) != (
        p.iops,
        p.mb_s,
        p.ops_per_joule,
        p.p99_latency_ms,
    )
    assert changes_figures(p, w) == moved == c.basis["ceiling"]["capped"]
    assert not changes_figures(
        Prediction(
            iops=iops,
            mb_s=0,
            mean_latency_ms=1,
            p99_latency_ms=1,
            watts=1,
            ops_per_joule=1,
            bytes_per_joule=1,
            uncertainty={},
        ),
        w,
    )  # no figures


def test_shown_entries_are_capped_once_with_the_flag_of_their_raw_prediction():
    from fsadvisor.predict.ceilings import changes_figures
    from fsadvisor.predict.predict import predict

    rec = advice.recommend("filebench-webserver-004", device="sata-ssd:480G", top=5)
    w = rec.profile.workload
    params = advice.device_params_of(rec.device, None)
    flags = []
    for r in rec.ranked + list(rec.best_per_filesystem.values()):
        raw = predict(advice.get_model(), r.config, w, rec.device, device_params=params)
        assert "ceiling" in r.prediction.basis
        assert r.prediction.basis["ceiling"]["capped"] is changes_figures(raw, w)
        flags.append(changes_figures(raw, w))
    assert any(flags)  # the case this guards: capped before ranking, not capped again
