"""What one device can do on its own, before any filesystem: the parameters the model keys
every prediction for that device on.

Two origins, one shape. A device nobody has measured gets its kind's figures from
``models/devices.toml`` as a *prior* (wide log-scale sd: a datasheet-order guess, never a
cap that data cannot move). A device with raw-device runs in the store (``fsadvisor
calibrate DEVICE`` or a probe's baseline) gets them *fitted* from those runs, each with its
own interval from the repetitions. The keys are those of ``models/devices.toml``.

The fitting itself (RawRun, fit_device_params) is in predict/device_fit.py: a prediction
reads a device's parameters, and only a calibration or a fleet fit needs the code that
learns them (`-X importtime` shows what importing it would add to a `recommend`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from fsadvisor.domain import Workload
from fsadvisor.infra.resources import data_dir, read_toml

# The device's own keys (models/devices.toml's per-kind keys).
DEVICE_KEYS = (
    "read_latency_us",
    "write_latency_us",
    "flush_latency_us",
    "flush_latency_us_plp",
    "read_iops_cap",
    "write_iops_cap",
    "read_bw_bytes_s",
    "write_bw_bytes_s",
    "parallelism",
    "bw_submitters",
)
# A device key a kind's table may leave out, and what leaving it out means: nothing scales
# with the submitters (a table written before the key, or a user's own).
DEVICE_DEFAULTS = {"bw_submitters": 1.0}
# What the host it is attached to adds (fsadvisor/host/cpu.py): its CPU time per call
# relative to the reference machine's, and its cores. Not a property of a device kind: an
# unmeasured host is the reference machine, with a width for how far a server may be from
# it (a factor of e^0.5 = 1.6 either way in speed, e^1 in cores). A calibration measures it.
HOST_KEYS = ("host_cpu_factor", "host_cores")
HOST_PRIOR = {"host_cpu_factor": 1.0, "host_cores": 2.0}
HOST_PRIOR_LOG_SD = {"host_cpu_factor": 0.5, "host_cores": 1.0}
# A host figure as measured (host/cpu.py): the best of 7 pread rounds repeats within ~2% on
# a quiet host; how well a pread loop stands for a filesystem's own code path is the wider
# question, left to the mechanisms' coefficients.
HOST_MEASURED_LOG_SD = 0.05
# The keys every DeviceParams carries.
PARAM_KEYS = DEVICE_KEYS + HOST_KEYS
# Measured only, never a prior: the CPU time one raw 4K random read at the deep-queue ceiling
# took in fio's submitting thread and on the whole host, microseconds. They say how much of a
# read's time the CPU already worked: a filesystem's CPU work per read is nearly free while a
# deep queue keeps the device the bottleneck, and adds in full where the raw reads already
# kept the CPU busy (mechanisms.Ctx.cpu_log). Absent (not measured), the model prices CPU work
# in series with the device's time, as at queue depth 1.
CPU_KEYS = ("submit_cpu_us_read", "host_cpu_us_read")
# Measured only, never a prior: the shape of the device's read sweep between its QD1 latency
# and its ceiling (mechanisms.queue_rate): 1 for one server behind a fixed delay (a loop
# device on a file: every extra I/O in flight waits one ceiling-time), large for many
# independent channels (a sharp knee at cap x latency). Absent, the roofline keeps its
# sharp knee at ``parallelism``.
SHAPE_KEYS = ("knee_power",)
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


def devices_table() -> dict[str, dict[str, float]]:
    """models/devices.toml: the per-kind priors."""
    return read_toml(data_dir("models") / "devices.toml")


def prior_params(
    kind: str, devices: dict[str, dict[str, float]], device_id: str = ""
) -> DeviceParams:
    """The kind's figures from models/devices.toml as a wide prior (unknown kinds fall back to
    nvme, and the source says so)."""
    known = kind in devices
    table = devices[kind] if known else devices["nvme"]
    values = {k: float(table[k] if k in table else DEVICE_DEFAULTS[k]) for k in DEVICE_KEYS}
    src = (
        f"prior: models/devices.toml [{kind}]"
        if known
        else f"prior: models/devices.toml [nvme] (no figures for device kind {kind!r})"
    )
    log_sd = {k: PRIOR_LOG_SD for k in DEVICE_KEYS}
    with_host_prior(values, log_sd)
    return DeviceParams(
        device_id=device_id or f"kind:{kind}", kind=kind, values=values, log_sd=log_sd, source=src
    )


def with_host(params: DeviceParams, host: Mapping[str, object] | None) -> DeviceParams:
    """``params`` of a device on this host that has no calibration of its own, with this
    host's stored CPU figures (``fsadvisor calibrate --host``, or a calibration of another
    of its devices) in place of the reference machine's prior: the model then prices
    filesystem and metadata CPU work at this host's speed. Unchanged without them, and for
    a calibrated device (its calibration measured the host itself)."""
    if not host or params.measured:
        return params
    values, log_sd = dict(params.values), dict(params.log_sd)
    used = {}
    for k in HOST_KEYS:
        v = host.get(k)
        if isinstance(v, (int, float)) and v > 0:
            values[k], log_sd[k] = float(v), HOST_MEASURED_LOG_SD
            used[k] = float(v)
    if not used:
        return params
    details = {**params.details, "host": {**{k: host.get(k) for k in HOST_FIELDS}, **used}}
    return DeviceParams(
        params.device_id,
        params.kind,
        values,
        log_sd,
        params.source,
        params.n_runs,
        details,
    )


# What a stored host measurement keeps beside its figures (host/cpu.py measurement()).
HOST_FIELDS = ("host", "hostname", "how", "measured_at", "load_1min", "pread_ns")


def calibrated_at(details: dict) -> object:
    """When the device was measured: the first fit's time, which a refit from the same runs
    keeps (``details["refitted_from"]``, service/calibration.refit_stored)."""
    earlier = details.get("refitted_from")
    return earlier.get("calibrated_at") if isinstance(earlier, dict) else details.get("fitted_at")


# The ceilings a device's throughput has per submitting thread where it is that thread's
# own work (submitter_scale).
SUBMITTER_SCALED = ("read_iops_cap", "write_iops_cap", "read_bw_bytes_s", "write_bw_bytes_s")


def submitters(w: Workload) -> int:
    """The threads that hand this workload's I/O to the device: its jobs, except for
    buffered writes nobody fsyncs, which the kernel's flusher writes back."""
    if not w.direct and w.read_pct < 100 and not w.writes_per_fsync:
        return 1
    return max(1, int(w.numjobs))


def submitter_scale(values: Mapping[str, float], w: Workload) -> float:
    """How many times its one-job ceilings the device moves for this workload: where the
    device's work is done in the submitting thread's context (zram compresses a write in
    the context that submits it), each submitter up to the host's cores brings its own
    CPU, up to ``bw_submitters`` (a calibration's 128 KiB writes from several jobs against
    one; 1 for a device with its own limit, the prior of every kind but zram). 1 when
    nothing scales."""
    n = float(values.get("bw_submitters", 1.0))
    if n <= 1.0 or w.numjobs <= 1:
        return 1.0
    cores = float(values.get("host_cores", HOST_PRIOR["host_cores"]))
    return max(1.0, min(float(submitters(w)), cores, n))


def for_submitters(values: Mapping[str, float], w: Workload) -> Mapping[str, float]:
    """The device figures as this workload's submitters see them: every ceiling times
    :func:`submitter_scale` (``values`` itself when that is 1)."""
    k = submitter_scale(values, w)
    if k == 1.0:
        return values
    out = dict(values)
    for key in SUBMITTER_SCALED:
        if key in out:
            out[key] = out[key] * k
    return out


def with_host_prior(values: dict[str, float], log_sd: dict[str, float]) -> None:
    """Fill the host keys a set of parameters lacks (a prior, or a calibration stored before
    the host was measured) with the reference machine's figures and their prior width."""
    for k in HOST_KEYS:
        if k not in values:
            values[k], log_sd[k] = HOST_PRIOR[k], HOST_PRIOR_LOG_SD[k]
