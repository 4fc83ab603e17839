"""Ranking reads predict_many's columns and builds a Prediction only for what it shows
(predict_lazily, issue 13): the same predictions, the same ranking as from the full list."""

from __future__ import annotations

import pytest

from fsadvisor import catalog
from fsadvisor.predict import ceilings
from fsadvisor.predict.predict import Predictions, predict_lazily, predict_many
from fsadvisor.predict.rank import rank
from fsadvisor.service import advice


def _setup(profile="oltp", device="nvme:1T", plp="yes"):
    model = advice.get_model()
    prof = advice.get_profile(profile)
    dev = advice.resolve_device(device, plp)
    cfgs = catalog.candidates(dev.size_bytes)[::7]
    return model, prof, dev, cfgs


def test_lazy_predictions_are_predict_manys_one_by_one():
    model, prof, dev, cfgs = _setup()
    full = predict_many(model, cfgs, prof.workload, dev, "system")
    lazy = predict_lazily(model, cfgs, prof.workload, dev, "system")
    assert isinstance(lazy, Predictions) and len(lazy) == len(full) == len(cfgs)
    # built on access: nothing yet
    assert not lazy._made
    assert lazy[3] == full[3] and lazy[3] is lazy[3]  # built once, then kept
    assert lazy[-1] == full[-1]
    assert lazy[2:5] == full[2:5]
    assert list(lazy) == full
    with pytest.raises(IndexError):
        lazy[len(full)]
    cols = lazy.columns
    for k in ("iops", "p99_latency_ms", "watts", "ops_per_joule"):
        assert cols[k] == [getattr(p, k) for p in full], k
    assert [io * lazy.bs / 1e6 for io in cols["iops"]] == [p.mb_s for p in full]
    assert [e * lazy.bs for e in cols["ops_per_joule"]] == [p.bytes_per_joule for p in full]
    capped = ceilings.cap(full[0], prof.workload)
    lazy.replace(0, capped)
    assert lazy[0] is capped


@pytest.mark.parametrize("profile,device,plp,basis", [
    ("oltp", "nvme:1T", "yes", "total"),
    ("build-unpack", "nvme:1T", None, "active"),
    ("analytics-scan", "sata-ssd:480G", None, "total"),  # bytes/J, a slow device's ceiling
    ("fio-randread-4k-j8", "sata-ssd:480G", "no", "active"),
    # entries over the slow drive's ceiling: capped before scoring on both paths
    ("filebench-webserver-004", "sata-ssd:480G", None, "total"),
    ("filebench-webserver-004", "sata-ssd:480G", None, "active"),
])
def test_ranking_from_columns_equals_ranking_from_the_full_list(profile, device, plp, basis):
    model, prof, dev, _ = _setup(profile, device, plp)
    lazy = rank(model, prof, dev, energy_basis=basis).to_dict()
    # a stand-in predictor that returns a plain list takes the per-object path
    full = rank(model, prof, dev, energy_basis=basis, predict=predict_many).to_dict()
    assert lazy == full


def test_some_predictions_in_the_ranking_cases_are_over_the_ceiling():
    # what the webserver cases above guard: the cap applied before ranking
    model, prof, dev, _ = _setup("filebench-webserver-004", "sata-ssd:480G", None)
    cfgs = catalog.candidates(dev.size_bytes)
    lazy = predict_lazily(model, cfgs, prof.workload, dev, "system")
    limit = ceilings.iops_limit(lazy[0], prof.workload)
    assert any(io > limit for io in lazy.columns["iops"])


@pytest.mark.parametrize("constraint,profile,device", [
    # on the slow drive every webserver IOPS is capped to one figure: oltp's spread instead
    ("min_iops", "oltp", "nvme:1T"),
    ("min_mb_s", "filebench-webserver-004", "sata-ssd:480G"),
    ("max_p99_ms", "filebench-webserver-004", "sata-ssd:480G"),
])
def test_constraints_exclude_alike_on_both_paths(constraint, profile, device):
    from dataclasses import replace
    model, prof, dev, _ = _setup(profile, device, None)
    preds = predict_many(model, catalog.candidates(dev.size_bytes), prof.workload, dev)
    attr = {"min_iops": "iops", "min_mb_s": "mb_s", "max_p99_ms": "p99_latency_ms"}[constraint]
    vals = [getattr(ceilings.cap(p, prof.workload), attr) for p in preds]
    cut = (min(vals) + max(vals)) / 2  # some on each side (many IOPS sit at the ceiling)
    prof = replace(prof, constraints=replace(prof.constraints, **{constraint: cut}))
    lazy = rank(model, prof, dev).to_dict()
    full = rank(model, prof, dev, predict=predict_many).to_dict()
    assert lazy == full
    assert lazy["excluded"][f"fails_{constraint}"] > 0
