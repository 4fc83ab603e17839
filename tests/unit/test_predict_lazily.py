"""Ranking reads predict_many's columns and builds a Prediction only for what it shows
(predict_lazily): the same predictions, the same ranking as from the full list."""

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


@pytest.mark.parametrize(
    "profile,device,plp,basis",
    [
        ("oltp", "nvme:1T", "yes", "total"),
        ("build-unpack", "nvme:1T", None, "active"),
        ("analytics-scan", "sata-ssd:480G", None, "total"),  # bytes/J, a slow device's ceiling
        ("fio-randread-4k-j8", "sata-ssd:480G", "no", "active"),
        # entries over the slow drive's ceiling: capped before scoring on both paths
        ("filebench-webserver-004", "sata-ssd:480G", None, "total"),
        ("filebench-webserver-004", "sata-ssd:480G", None, "active"),
    ],
)
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


@pytest.mark.parametrize(
    "constraint,profile,device",
    [
        # on the slow drive every webserver IOPS is capped to one figure: oltp's spread instead
        ("min_iops", "oltp", "nvme:1T"),
        # (on the 480G SATA drive every webserver MB/s sits at its bandwidth ceiling: no spread)
        ("min_mb_s", "oltp", "nvme:1T"),
        ("max_p99_ms", "filebench-webserver-004", "sata-ssd:480G"),
    ],
)
def test_constraints_exclude_alike_on_both_paths(constraint, profile, device):
    from dataclasses import replace

    model, prof, dev, _ = _setup(profile, device, None)
    preds = predict_many(model, catalog.candidates(dev.size_bytes), prof.workload, dev)
    attr = {"min_iops": "iops", "min_mb_s": "mb_s", "max_p99_ms": "p99_latency_ms"}[constraint]
    vals = [getattr(ceilings.cap(p, prof.workload), attr) for p in preds]
    # some on each side: the median of the distinct values (many IOPS sit at the ceiling,
    # and one outlier can put the midpoint of the range below every permitted candidate)
    distinct = sorted(set(vals))
    cut = distinct[len(distinct) // 2]
    prof = replace(prof, constraints=replace(prof.constraints, **{constraint: cut}))
    lazy = rank(model, prof, dev).to_dict()
    full = rank(model, prof, dev, predict=predict_many).to_dict()
    assert lazy == full
    assert lazy["excluded"][f"fails_{constraint}"] > 0


def test_a_ranking_gets_the_design_factored_and_it_equals_predict_manys_matrix():
    # predict_lazily hands ranking the design of log ops/J as DesignRows (X = 1 k' + C M,
    # never built out); predict_many hands every other caller the ndarray. The same design.
    import numpy as np

    from fsadvisor.predict.design import DesignRows

    model, prof, dev, _ = _setup()
    cfgs = catalog.candidates(dev.size_bytes)
    lazy_d: dict = {}
    full_d: dict = {}
    predict_lazily(model, cfgs, prof.workload, dev, "system", design_out=lazy_d)
    predict_many(model, cfgs, prof.workload, dev, "system", design_out=full_d)
    X, Xf = lazy_d["X"], full_d["X"]
    assert isinstance(X, DesignRows) and isinstance(Xf, np.ndarray)
    assert X.shape == Xf.shape and len(X) == len(cfgs)
    # each entry of X is one feature value, or a constant plus one: built out, bit for bit
    assert np.array_equal(np.asarray(X), Xf)
    assert np.array_equal(X[17], Xf[17])
    rows = [5, 2000, 3, 3]
    assert np.array_equal(X[rows], Xf[rows])
    v = np.random.default_rng(1).normal(size=Xf.shape[1])
    assert np.allclose(X @ v, Xf @ v, rtol=1e-12, atol=1e-12 * np.abs(Xf).sum(axis=1).max())
    sub = X.take(rows)
    assert len(sub) == 4 and np.array_equal(np.asarray(sub), Xf[rows])
    assert np.allclose(sub @ v, (Xf @ v)[rows], rtol=1e-12, atol=1e-9)
    assert np.array_equal(sub.take([1, 0])[0], Xf[2000])
    assert np.allclose(lazy_d["q"], full_d["q"], rtol=1e-12, atol=1e-15)
    assert np.array_equal(lazy_d["cov"], full_d["cov"])


def test_a_handful_of_configurations_keeps_the_built_design():
    # Below _PARTS_FROM configurations the design is built (the factored form costs more
    # than it saves there): ranking copes with either.
    import numpy as np

    model, prof, dev, cfgs = _setup()
    d: dict = {}
    predict_lazily(model, cfgs[:5], prof.workload, dev, "system", design_out=d)
    assert isinstance(d["X"], np.ndarray) and d["X"].shape[0] == 5


def test_the_factored_moments_are_the_built_designs_moments():
    # _Factored computes each row's mean and variance from C without building X; _Dense
    # builds X. Over the whole catalog, every block and block difference, they agree.
    import numpy as np

    from fsadvisor.predict.predict import _block_designs, _Dense, _Factored

    model, prof, dev, _ = _setup()
    cfgs = catalog.candidates(dev.size_bytes)
    fac = _block_designs(model, cfgs, prof.workload, dev, "system")
    assert isinstance(fac, _Factored)
    dense = _Dense(fac.C, fac.k, fac.maps, fac.pos, fac.theta, fac.cov)
    for a, b in (("perf", None), ("power", None), ("perf", "power"), ("tail", "perf")):
        (mu_f, var_f), (mu_d, var_d) = fac.moments(a, b), dense.moments(a, b)
        assert np.allclose(mu_f, mu_d, rtol=1e-12, atol=1e-12), (a, b)
        assert np.allclose(var_f, var_d, rtol=1e-10, atol=1e-14), (a, b)
        assert np.array_equal(fac.matrix(a, b), dense.matrix(a, b)), (a, b)
