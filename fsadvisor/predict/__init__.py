"""Prediction: the device-aware model (fit, predict, cross-validate), the ranking of candidates
and the simpy what-if simulator, and the adaptive probe's choice of the next cell. Pure
computation: nothing here touches the machine.

The model:
The offline performance/energy model: a device's own roofline, filesystem mechanisms in
device terms, and learned configuration effects, with per-device levels.

    log(iops)  = log(roofline(workload, device params)) + mechanisms(config, workload, device)
                 + kind and device level terms + shared configuration effects
                 + (for a device measured here) its own deviations from those effects
    log(watts) = phi_w(scope, kind, config, workload) . theta_w
    log(p99)   = log(Little's-law mean latency) + phi_t(config, workload) . theta_t

a Bayesian linear model on log scale fitted with numpy on every observation in the store.
The roofline comes from the device's parameters (catalog/device_params.py: fitted from its
raw-device runs, else its kind's figures in models/devices.toml as a prior). Mechanisms
(predict/mechanisms.py: btrfs copy-on-write, data=journal double writes, per-filesystem fsync
cost, CPU per operation) are features computed from those device parameters with one shared
coefficient each, so what RAM-backed reference devices teach transfers to an NVMe drive in
that drive's own time shares. Every observation carries its device's identity: a device's
runs set its own level terms (``k:dev:``, ``w:dev:``) and deviations (``d:<id>|``) and move
other devices only through the shared effects, by a weight the priors state. Replicated cells
enter as their mean with variance sd^2/n. Priors (``models/priors.toml``) keep effects without
data at "no effect" with a wide sd; HDD/SATA-era observations count with small weights.

Layers, each importing only the ones before it (tests/unit/test_predict_layers.py):
spec, mechanisms and settings (what the model is: option effects, mechanisms, priors) ->
features -> fit -> predict -> validate/crossval and the ranking (rank, confidence) and the
simulator (sim). Import a name from the module that defines it; there is no facade.
"""
