"""Ranking reuses predict_many's x cov x' of every candidate ("q") and still ranks
the same when a stand-in predictor does not hand it over."""

from __future__ import annotations


import numpy as np
import pytest

from fsadvisor.predict import confidence as C
from fsadvisor.predict.predict import predict_many
from fsadvisor.predict.rank import rank
from fsadvisor.service import advice

from _jsonclose import assert_close


@pytest.mark.parametrize("profile,plp", [("oltp", "yes"), ("build-unpack", None)])
def test_q_from_predict_many_or_computed_here_rank_alike(profile, plp):
    model = advice.get_model()
    prof = advice.get_profile(profile)
    dev = advice.resolve_device("nvme:1T", plp)
    seen = {}

    def without_q(*a, design_out=None, **k):
        out = predict_many(*a, design_out=design_out, **k)
        X, cov = design_out["X"], design_out["cov"]
        assert np.allclose(design_out.pop("q"), np.sum((X @ cov) * X, axis=1), rtol=1e-12, atol=0)
        seen["called"] = True
        return out

    a = rank(model, prof, dev).to_dict()
    b = rank(model, prof, dev, predict=without_q).to_dict()
    assert seen
    assert_close(a, b)


def test_leaders_with_q_given_match():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 5))
    A = rng.normal(size=(5, 5))
    cov = A @ A.T * 0.001
    mu = rng.normal(scale=0.05, size=30)
    q = np.sum((X @ cov) * X, axis=1)
    for first in (0, 4, int(np.argmax(mu))):
        assert C._leaders_from_design(mu, X, cov, first, q) == C.leaders(
            mu, C.covariance(X, cov), first
        )


@pytest.mark.parametrize("plp", ["yes", "no", "unknown"])
def test_the_catalogs_hazards_and_features_do_not_depend_on_the_scheduler(plp):
    # rank() judges each configuration once for all its schedulers: this is what allows it
    from fsadvisor import catalog
    from fsadvisor.predict.rank import permitted

    dev = advice.resolve_device("nvme:1T", plp)
    profiles = [advice.get_profile(n) for n in ("oltp", "build-unpack", "analytics-scan")]
    for cfg in catalog.candidates(dev.size_bytes):
        for s in ("mq-deadline", "kyber", "bfq"):
            other = cfg.with_(scheduler=s)
            assert catalog.risks(other) == catalog.risks(cfg)
            assert catalog.features(other) == catalog.features(cfg)
            for prof in profiles:
                assert permitted(other, prof, dev) == permitted(cfg, prof, dev)


def test_the_comparison_catches_a_changed_number():
    assert_close({"a": [1.0, {"b": 2.0}]}, {"a": [1.0, {"b": 2.0 * (1 + 1e-14)}]})
    with pytest.raises(AssertionError):
        assert_close({"a": [1.0, {"b": 2.0}]}, {"a": [1.0, {"b": 2.0 * (1 + 1e-9)}]})
    with pytest.raises(AssertionError):
        assert_close({"a": 1, "b": 2}, {"b": 2, "a": 1})  # key order is part of the JSON


@pytest.mark.parametrize("spec", ["nvme:1T", "hdd:8T"])
def test_order_counts_complexity_per_configuration_plus_its_scheduler(spec):
    # _order works out the settings' part of complexity() once per configuration and adds
    # the scheduler's: the same count as complexity() for every candidate
    from fsadvisor import catalog
    from fsadvisor.predict.rank import _settings_complexity, complexity, default_scheduler

    dev = advice.resolve_device(spec, None)
    for cfg in catalog.candidates(dev.size_bytes):
        assert complexity(cfg, dev) == _settings_complexity(cfg, dev) + (
            cfg.scheduler != default_scheduler(dev)
        )


def test_rank_pauses_the_collector_and_restores_it_also_on_error():
    import gc

    model = advice.get_model()
    prof = advice.get_profile("oltp")
    dev = advice.resolve_device("nvme:1T", None)
    seen = []

    def spy(*a, **k):
        seen.append(gc.isenabled())
        return predict_many(*a, **k)

    assert gc.isenabled()
    rank(model, prof, dev, predict=spy)
    assert seen == [False] and gc.isenabled()

    def boom(*a, **k):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        rank(model, prof, dev, predict=boom)
    assert gc.isenabled()
    gc.disable()  # a caller that had it off keeps it off
    try:
        rank(model, prof, dev)
        assert not gc.isenabled()
    finally:
        gc.enable()
