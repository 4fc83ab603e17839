"""A device's own deviations are fitted at one width and stated at another: the fit's prior
(models/priors.toml [prior] "d:...") sets the means, how far one device's findings move the
effects every device shares; the predictive width ([predictive] device_sd_scale) is what a
prediction states for them, measured or not, so that the stated sd matches how far held-out
devices land (benchmarks/uncertainty_calibration.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fsadvisor.predict.fit import fit
from fsadvisor.predict.settings import ModelSettings
from fsadvisor.service import advice


def _with_scale(s: ModelSettings, scale: float) -> ModelSettings:
    return ModelSettings(
        {**s.priors, "predictive": {"device_sd_scale": scale}},
        s.devices,
        s.prior_scale,
        s.calibration_source,
    )


@pytest.fixture(scope="module")
def fits():
    obs = advice._observations(None)
    shipped = ModelSettings.load()
    return shipped, fit(obs, _with_scale(shipped, 1.0)), fit(obs, shipped)


def test_the_shipped_width_is_narrower_than_the_fits(fits):
    shipped, _, _ = fits
    assert 0 < shipped.device_predictive_scale < 1


def test_the_means_are_the_fits_and_only_device_deviations_narrow(fits):
    shipped, wide, stated = fits
    assert wide.names == stated.names
    np.testing.assert_allclose(stated.theta, wide.theta, rtol=0, atol=1e-12)
    sd_wide, sd_stated = np.sqrt(np.diag(wide.cov)), np.sqrt(np.diag(stated.cov))
    device = np.array([n.startswith("d:") for n in stated.names])
    assert device.sum() > 50, "the shipped data has devices with their own deviations"
    assert np.all(sd_stated <= sd_wide * (1 + 1e-9))
    assert np.median(sd_stated[device] / sd_wide[device]) < 0.6
    # a shared effect narrows only through what it shared with the device terms
    assert np.median(sd_stated[~device] / sd_wide[~device]) > 0.9


def test_no_measured_deviation_is_stated_wider_than_an_unmeasured_one(fits):
    """A device's first runs never widen its cells' sd: every fitted deviation's sd is at
    most the width an unseen one of the same kind is stated at."""
    shipped, _, stated = fits
    for i, name in enumerate(stated.names):
        if name.startswith("d:"):
            unseen = shipped.predictive_prior(name)[1]
            assert math.sqrt(stated.cov[i, i]) <= unseen * (1 + 1e-9), name


def test_an_unseen_deviation_is_stated_at_the_predictive_width(fits):
    shipped, _, stated = fits
    name = "d:never-measured-device|fs:btrfs*fsync"
    assert name not in stated.index
    mean, var = stated._mean_var({name: 1.0})
    prior_mean, prior_sd = shipped.prior(name)
    assert mean == prior_mean
    assert math.sqrt(var) == pytest.approx(prior_sd * shipped.device_predictive_scale)
    other = "opt:never-declared-option"
    assert stated._mean_var({other: 1.0})[1] == pytest.approx(shipped.prior(other)[1] ** 2)
