"""What one device can do on its own, before any filesystem: the parameters the model keys
every prediction for that device on.

Two origins, one shape. A device nobody has measured gets its kind's figures from
``models/devices.toml`` as a *prior* (wide log-scale sd: a datasheet-order guess, never a
cap that data cannot move). A device with raw-device runs in the store (``fsadvisor
calibrate DEVICE`` or a probe's baseline) gets them *fitted* from those runs, each with its
own interval from the repetitions. The keys are those of ``models/devices.toml``.

The fitting itself (RawRun, fit_device_params) is in predict/device_fit.py: a prediction
reads a device's parameters, and only a calibration or a fleet fit needs the code that
learns them (its import was ~0.9 ms of a `recommend`'s start-up by -X importtime, 1.56 ms
for the whole module before the split against 0.70 ms after; issue 13).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The keys every DeviceParams carries (models/devices.toml's per-kind keys).
PARAM_KEYS = ("read_latency_us", "write_latency_us", "flush_latency_us", "flush_latency_us_plp",
              "read_iops_cap", "write_iops_cap", "read_bw_bytes_s", "write_bw_bytes_s",
              "parallelism")
# Log-scale 1-sd of a devices.toml figure used as a prior for a device of that kind that has
# not been measured: a factor of e^1 = 2.7 either way, since one kind spans drives that
# differ that much (a QLC SATA SSD and a TLC data-centre one are both "sata-ssd").
PRIOR_LOG_SD = 1.0


@dataclass(frozen=True)
class DeviceParams:
    """``values[key]`` with a 1-sd uncertainty ``log_sd[key]`` on log scale. ``source`` says
    where the figures come from, in words the output can show."""

    device_id: str
    kind: str
    values: dict[str, float]
    log_sd: dict[str, float]
    source: str
    n_runs: int = 0  # raw-device runs the values were fitted on (0: prior only)
    details: dict[str, object] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        return self.n_runs > 0


def prior_params(kind: str, devices: dict[str, dict[str, float]], device_id: str = "") -> DeviceParams:
    """The kind's figures from models/devices.toml as a wide prior (unknown kinds fall back to
    nvme, and the source says so)."""
    known = kind in devices
    table = devices[kind] if known else devices["nvme"]
    values = {k: float(table[k]) for k in PARAM_KEYS}
    src = (f"prior: models/devices.toml [{kind}]" if known
           else f"prior: models/devices.toml [nvme] (no figures for device kind {kind!r})")
    return DeviceParams(device_id=device_id or f"kind:{kind}", kind=kind, values=values,
                        log_sd={k: PRIOR_LOG_SD for k in PARAM_KEYS}, source=src)
