"""The offline performance/energy model: a device's own roofline, filesystem mechanisms in
device terms, and learned configuration effects, with per-device levels.

    log(iops)  = log(roofline(workload, device params)) + mechanisms(config, workload, device)
                 + kind and device level terms + shared configuration effects
                 + (for a device measured here) its own deviations from those effects
    log(watts) = phi_w(scope, kind, config, workload) . theta_w
    log(p99)   = log(Little's-law mean latency) + phi_t(config, workload) . theta_t

a Bayesian linear model on log scale fitted with numpy on every observation in the store.
The roofline comes from the device's parameters (predict/device_params.py: fitted from its
raw-device runs, else its kind's figures in models/devices.toml as a prior). Mechanisms
(predict/mechanisms.py: btrfs copy-on-write, data=journal double writes, per-filesystem fsync
cost, CPU per operation) are features computed from those device parameters with one shared
coefficient each, so what RAM-backed reference devices teach transfers to an NVMe drive in
that drive's own time shares. Every observation carries its device's identity: a device's
runs set its own level terms (``k:dev:``, ``w:dev:``) and deviations (``d:<id>|``) and move
other devices only through the shared effects, by a weight the priors state. Replicated cells
enter as their mean with variance sd^2/n. Priors (``models/priors.toml``) keep effects without
data at "no effect" with a wide sd; HDD/SATA-era observations count with small weights.

The implementation is split along these sections (issue 8 layout): settings.py, features.py,
mechanisms.py, fit.py, predict.py, crossval.py and validate.py (leave-one-device-out). This
module re-exports them so ``fsadvisor.predict.model`` keeps working for every caller.
"""

from __future__ import annotations

from fsadvisor.predict.crossval import *  # noqa: F401,F403
from fsadvisor.predict.crossval import choose_prior_scale, cross_validate  # noqa: F401
from fsadvisor.predict.features import *  # noqa: F401,F403
from fsadvisor.predict.features import (_cap, _cfg_features, _family, _fsync_per_op,  # noqa: F401
                                        _roofline, _workload_terms)
from fsadvisor.predict.fit import *  # noqa: F401,F403
from fsadvisor.predict.fit import (_CAP_KEYS, _obs_rows, _params_from_json,  # noqa: F401
                                   _params_to_json, _replicate_var, _Row)
from fsadvisor.predict.predict import *  # noqa: F401,F403
from fsadvisor.predict.predict import Z90, _block_designs, _roofline_var, _Space  # noqa: F401
from fsadvisor.predict.settings import *  # noqa: F401,F403
from fsadvisor.predict.settings import (_BANDWIDTH_UNITS, _EFFICIENCY_METRICS,  # noqa: F401
                                        _LATENCY_MEAN_METRICS, _RATE_METRICS)
