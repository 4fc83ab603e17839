"""Observations -> linear equations -> the Bayesian fit (weighted ridge with Gaussian priors),
with per-device terms, replicate variances and two noise levels; the on-disk fit cache."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from fsadvisor.domain import (
    BACKED_KINDS,
    TIMING_ONLY,
    Device,
    FsConfig,
    Workload,
    identity_of,
    kind_of,
)
from fsadvisor.errors import FsAdvisorError
from fsadvisor.predict import mechanisms, spec
from fsadvisor.catalog.device_params import DeviceParams, submitter_scale
from fsadvisor.predict.features import (
    cfg_features,
    device_roofline,
    config_features,
    device_config_features,
    power_features,
    tail_features,
    workload_features,
    device_share,
)
from fsadvisor.predict.settings import (
    BANDWIDTH_UNITS,
    EFFICIENCY_METRICS,
    LATENCY_MEAN_METRICS,
    RATE_METRICS,
    ModelSettings,
)

if TYPE_CHECKING:  # records.py: not built by a recommend from a cached fit
    from fsadvisor.records import Observation


@dataclass
class _Row:
    """One equation of the fit: features ``a`` (name -> value) against the log-scale value
    ``b``, with its weight, source and kind (point value, bound or within-study ratio)."""

    a: dict[str, float]
    b: float
    weight: float
    source: str
    extra_var: float = 0.0  # variance of b beyond the model noise (replicate spread)
    own: bool = False  # measured here (probe, reference matrix): its own noise level
    bound: int = 0  # +1: b is an upper bound of a . theta, -1: a lower bound, 0: a point value
    relative: bool = False  # a within-study ratio ("+23% vs default"): device levels cancel


# A feature name under this prefix is an offset in its row: the coefficient of the named
# feature, as the rest of the data fits it, times the value (a "cut": the row uses the
# coefficient but does not move it).
FIXED_PREFIX = "fixed|"

# Log-scale variance of one run where the source states no spread: rep-to-rep variation of
# this VM's loop and RAM devices (an assumption of ~15% 1-sd until the reference matrix's
# spread replaces it); a single run can then never pin an effect tighter than that.
SINGLE_RUN_LOG_SD = 0.15


def measured_here(obs: Observation) -> bool:
    """A cell measured on this kind of machine by fsadvisor itself (a probe or the reference
    matrix): one equation per cell, its replicate spread, its own noise level."""
    return bool(obs.device_id) and obs.source.startswith(("probe ", "reference"))


def cell_tag(cfg: FsConfig, w: Workload) -> str:
    """A measured cell's identity for the tie rule: the configuration without its scheduler
    (a scheduler alternative is the same recommendation) and the workload."""
    return f"{cfg.with_(scheduler='none').key()}\t{w.key()}"


def _replicate_var(obs: Observation) -> float:
    """Variance of log(value) of a cell mean over ``n`` runs with sample sd ``sd``."""
    if obs.relative_to is not None or not measured_here(obs):
        return 0.0  # the seeds' transcribed figures: the fitted noise covers them
    n = max(int(obs.n or 1), 1)
    if obs.sd is not None and n > 1 and obs.value > 0:
        return (obs.sd / obs.value) ** 2 / n
    return SINGLE_RUN_LOG_SD**2 / n


def obs_rows(
    obs: Observation,
    s: ModelSettings,
    fitted: Mapping[str, DeviceParams] | None = None,
    timed_devices: frozenset[str] | set[str] | None = None,
) -> list[_Row]:
    """Turn one observation into linear equations a . theta = b (empty if not usable).
    ``timed_devices``: the devices measured here whose own device times are known (they have
    raw-device runs); None: every device counts as timed."""
    if not (obs.value == obs.value) or math.isinf(obs.value) or TIMING_ONLY in obs.note:
        return []
    w, kind = obs.workload, obs.device_kind
    rel = obs.relative_to is not None
    m = obs.metric
    own = measured_here(obs)
    if own and m in EFFICIENCY_METRICS | LATENCY_MEAN_METRICS | {"mb_s", "p99_latency_us"}:
        # A probe or reference cell is one measurement, so it is one equation: its IOPS (and
        # its watts, for the power block). Its MB/s and mean latency restate the IOPS
        # (bs x IOPS, Little's law) and would count it three times with fio's own
        # inconsistencies (a filecreate's clat is not 1/IOPS); its ops/J is IOPS / watts and
        # would let an energy import move performance terms; its p99 would move them too.
        return []
    dev = obs.device_id
    scope = obs.power_scope or "system"
    params = s.params_for(kind, dev, fitted)
    pv = params.values

    def diff(fn) -> dict[str, float]:
        a = fn(obs.config)
        if rel:
            for k, v in fn(obs.relative_to).items():
                a[k] = a.get(k, 0.0) - v
        return {k: v for k, v in a.items() if v}

    roof_iops, flush_share = device_roofline(w, pv, obs.device_plp)
    dev_share = device_share(w, pv, obs.device_plp)

    def P(c):
        f = workload_features(w, kind, flush_share, dev, dev_share)
        cf = cfg_features(c, w, kind, pv, obs.device_plp)
        f.update(cf)
        if own:
            # A device measured here has its own deviations from the shared effects: its
            # findings reach another device only through the shared part (priors.toml "d:")
            # and the mechanisms. (The seeds' cited drives do not: held-out-table
            # cross-validation showed their per-device deviations, learned from one table,
            # failing on the same drive's other tables -- median x1.32 against x1.19.)
            f.update(device_config_features(cf, dev, c.fs if c is not None else None, w))
            if c is not None and c.fs not in ("raw", None):
                # What a filesystem shows of a workload's shape on this device is its own
                # (its journal, its metadata, its writeback): the device's and its kind's
                # shape terms stay offsets here, set by the raw-device runs and the other
                # devices, and the deviation goes to d:<dev>|fs:<fs>*<term>
                # (spec.FS_SHAPE_TERMS). Otherwise a btrfs fsync collapse with several
                # writers (x0.1) would pull the device's fsync term, and with it ext4's and
                # xfs's predictions, far below their own runs; and btrfs's and data=journal's
                # slow buffered appends would halve XFS's predicted appends there.
                for k in [k for k in f if k.startswith("w:")]:
                    f[FIXED_PREFIX + k] = f.pop(k)
            if timed_devices is not None and dev not in timed_devices:
                # A mechanism's feature is a share of this device's own time per op; with no
                # raw-device run those times are its kind's datasheet-order guess (a factor
                # e either way), so what it shows stays in its own d:<dev>|m: terms and does
                # not move the mechanism every other device shares.
                # (The row still carries the mechanism, at the value the other devices fit:
                # FIXED_PREFIX marks it an offset, not a column -- see fit().)
                for k in [k for k in f if k.startswith("m:")]:
                    f[FIXED_PREFIX + k] = f.pop(k)
        return f

    def W(c):
        f = power_features(c, w, kind, scope)
        if own:
            # The device's own deviations of the power effects (priors.toml "pd:").
            f.update(
                {
                    f"p{k}": v
                    for k, v in device_config_features(config_features(c, w, kind), dev).items()
                }
            )
        return f

    T = lambda c: tail_features(c, w, kind)  # noqa: E731
    weight = s.weight(obs)
    xv = _replicate_var(obs)
    # A source's bound ("f2fs remains below 3 GB/s", seed 000 Obs. 3) constrains the fit only
    # where the fit would break it (censored, see fit()). Every row's b rises with the value.
    bound = 1 if "[upper-bound]" in obs.note else -1 if "[lower-bound]" in obs.note else 0
    if rel:
        if obs.value <= -1:
            return []
        b = math.log1p(obs.value)
    else:
        if obs.value <= 0:
            return []
        b = math.log(obs.value)
    roof = 0.0 if rel else math.log(roof_iops)
    conc = math.log(max(w.concurrency, 1))

    def row(a: dict[str, float], b: float) -> list[_Row]:
        return [_Row(a, b, weight, obs.source, xv, own, bound, rel)]

    if m in RATE_METRICS or m in BANDWIDTH_UNITS:
        if m in BANDWIDTH_UNITS:
            if w.metadata_frac >= 1.0:
                return []
            if not rel:
                per_unit = BANDWIDTH_UNITS[m].get(obs.unit)
                if per_unit is None:
                    return []
                b += math.log(per_unit / max(w.bs_bytes, 512))
        return row(diff(P), b - roof)
    if m in LATENCY_MEAN_METRICS:
        a = {k: -v for k, v in diff(P).items()}
        if not rel:
            b = b - math.log(1e6) - conc + roof  # log(lat_s) = log(conc) - log(iops)
        return row(a, b)
    if m == "p99_latency_us":
        a = {k: -v for k, v in diff(P).items()}
        for k, v in diff(T).items():
            a[k] = a.get(k, 0.0) + v
        if not rel:
            b = b - math.log(1e6) - conc + roof
        return row(a, b)
    if m == "watts":
        return row(diff(W), b)
    if m in EFFICIENCY_METRICS:
        a = dict(diff(P))
        for k, v in diff(W).items():
            a[k] = a.get(k, 0.0) - v
        return row(a, b - roof)
    return []


@dataclass
class FittedModel:
    """The fitted coefficients (``theta``, posterior ``cov``, by ``names``), the noise, the
    settings and data they were fitted with, and the devices the fit knows by identity."""

    names: list[str]
    index: dict[str, int]
    theta: np.ndarray
    cov: np.ndarray
    noise_sd: float
    settings: ModelSettings
    n_rows: int
    n_observations: int
    sources: dict[str, list[str]] = field(default_factory=dict)  # feature -> citations
    data_hash: str = ""
    measured_power: dict[str, int] = field(default_factory=dict)  # "scope/kind" -> count
    # Fitted parameters of the devices the fit knows by identity (DeviceParams per device_id);
    # a device not in here is predicted from its kind's prior (devices.toml).
    device_params: dict[str, DeviceParams] = field(default_factory=dict)
    # Residual sd of the rows measured here (probe, reference): the noise of a prediction
    # for a device the fit has its own terms for. None: same as noise_sd.
    noise_sd_measured: float | None = None
    # Per device identity, where its runs come from: "measured" (a probe here), "reference"
    # (the shipped reference matrix) or "imported" (fio results measured elsewhere only).
    device_origins: dict[str, str] = field(default_factory=dict)
    # Per device identity, the cells a probe here measured: "<configuration key without its
    # scheduler>\t<workload key>". The tie rule puts a configuration measured on this
    # device for this workload before one the model only predicts.
    measured_cells: dict[str, list[str]] = field(default_factory=dict)
    # Per device identity, the bandwidth (bytes/s, by "read"/"write") its own cells in this
    # fit demonstrably moved through the device (:func:`demonstrated_bandwidth`): a ceiling
    # the predictions for that device are never capped below.
    demonstrated: dict[str, dict[str, float]] = field(default_factory=dict)

    def measured_here(self, device: Device, cfg: FsConfig, w: Workload) -> bool:
        """Whether a probe of this device (its own identity, or its loop/zram class) ran
        ``cfg`` (under any scheduler) with workload ``w``."""
        ident = self.known_device(device)
        return bool(ident) and cell_tag(cfg, w) in self._measured_sets().get(ident, ())

    def _measured_sets(self) -> dict[str, frozenset[str]]:
        sets = self.__dict__.get("_measured_cache")
        if sets is None:
            sets = {k: frozenset(v) for k, v in self.measured_cells.items()}
            self.__dict__["_measured_cache"] = sets
        return sets

    def params_for(self, device: Device) -> DeviceParams:
        return self.settings.params_for(kind_of(device), identity_of(device), self.device_params)

    def known_device(self, device: Device) -> str:
        """The device's identity when the fit has its own terms for it, else "" (then it is
        predicted from its kind's level and the shared effects only). A device given only by
        its kind (a spec such as nvme:1T, identity "kind:nvme") is never known: runs tagged
        with a spec describe some drive of that kind, not the one being asked about."""
        ident = identity_of(device)
        if ident.startswith("kind:"):
            return ""
        return ident if f"k:dev:{ident}" in self.index else ""

    def measured_basis(self, device: Device) -> str:
        """What stands behind this device's own terms, in the words the answer uses:
        "this device" (probed here, its own identity), "this device class" (a loop or zram
        device: its identity is its backing class, shared by every device backed the same
        way), "imported" (only fio results measured elsewhere), "" (none: predicted)."""
        ident = self.known_device(device)
        origin = self.device_origins.get(ident, "") if ident else ""
        if not origin:
            return ""
        if origin == "imported":
            return "imported"
        return "this device class" if ident.split(":")[0] in BACKED_KINDS else "this device"

    # ---- linear algebra on sparse feature dicts
    def _mean_var(self, a: dict[str, float]) -> tuple[float, float]:
        idx, vals, extra_mean, extra_var = [], [], 0.0, 0.0
        # A row's offsets (FIXED_PREFIX: coefficients the row may not move) still predict
        # with the coefficient as fitted: scoring a held-out row must not drop them.
        merged: dict[str, float] = {}
        for k, v in a.items():
            k = k.removeprefix(FIXED_PREFIX)
            merged[k] = merged.get(k, 0.0) + v
        for k, v in merged.items():
            i = self.index.get(k)
            if i is None:
                m, sd = self.settings.predictive_prior(k)
                extra_mean += m * v
                extra_var += (sd * v) ** 2
            else:
                idx.append(i)
                vals.append(v)
        if idx:
            ii = np.asarray(idx)
            x = np.asarray(vals)
            mean = float(x @ self.theta[ii]) + extra_mean
            var = float(x @ self.cov[np.ix_(ii, ii)] @ x) + extra_var
        else:
            mean, var = extra_mean, extra_var
        return mean, var

    def coef(self, name: str) -> tuple[float, float]:
        i = self.index.get(name)
        if i is None:
            return self.settings.prior(name)
        return float(self.theta[i]), float(math.sqrt(self.cov[i, i]))


def source_group(source: str) -> str:
    """The table a row comes from: "Sehgal et al., FAST'10, Table 2 (004-0001)" -> without the
    row id. Cross-validation holds out whole groups; explanations cite groups, not rows."""
    if source.startswith("probe "):
        return " ".join(source.split()[:2])  # "probe <matrix id>": one probe session
    if source.startswith("imported "):
        return " ".join(source.split()[:4])  # "imported fio-json sha256 <files>": one import
    return re.sub(r"\s*\([^()]*\d[^()]*\)$", "", source).strip() or source


# A cached fit is one file: this line, a line of JSON metadata (with the full cache key the
# caller gave), then theta and cov as one float64 array in numpy's .npy format. Not an
# .npz: importing zipfile for it alone was a visible share of a `recommend`'s start-up.
_MODEL_MAGIC = b"fsadvisor-model 1\n"


def save_model(m: FittedModel, path: Path, key: str = "") -> None:
    """Cache a fit for the next process; ``key`` is what load_model must be given back."""
    # tempfile (random, shutil) only when a fit is cached (start-up of a warm recommend)
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "key": key,
        "names": m.names,
        "noise_sd": m.noise_sd,
        "n_rows": m.n_rows,
        "noise_sd_measured": m.noise_sd_measured,
        "n_observations": m.n_observations,
        "sources": m.sources,
        "data_hash": m.data_hash,
        "measured_power": m.measured_power,
        "device_origins": m.device_origins,
        "measured_cells": m.measured_cells,
        "demonstrated": m.demonstrated,
        "device_params": {k: _params_to_json(v) for k, v in m.device_params.items()},
    }
    n = len(m.names)
    arrays = np.empty((n + 1, n), dtype="<f8")
    arrays[0], arrays[1:] = m.theta, m.cov
    # A private temp file, then an atomic rename: two processes saving at once never
    # leave a half-written cache behind.
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_MODEL_MAGIC)
            f.write(json.dumps(meta).encode() + b"\n")  # json escapes newlines: one line
            np.save(f, arrays, allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_model(path: Path, settings: ModelSettings, key: str = "") -> FittedModel | None:
    """The cached fit saved under ``key``, or None (then the caller refits). A file saved
    under another key (its name's short hash collided) is a miss and left alone; a damaged
    cache file of any kind is a miss, and removed, never an error: it is only a cache."""
    try:
        f = open(path, "rb")
    except OSError:
        return None
    try:
        with f:
            if f.read(len(_MODEL_MAGIC)) != _MODEL_MAGIC:
                raise ValueError("not a cached fit")
            meta = json.loads(f.readline())
            if meta.get("key", "") != key:
                return None
            arrays = np.load(f, allow_pickle=False)
        names = list(meta["names"])
        n = len(names)
        if arrays.shape != (n + 1, n):
            raise ValueError("shape mismatch")
        theta, cov = arrays[0].copy(), arrays[1:]
    except Exception:  # noqa: BLE001 - npy, JSON, shape: all mean "refit"
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return FittedModel(
        names=names,
        index={n: i for i, n in enumerate(names)},
        theta=theta,
        cov=cov,
        noise_sd=meta["noise_sd"],
        settings=settings,
        noise_sd_measured=meta.get("noise_sd_measured"),
        n_rows=meta["n_rows"],
        n_observations=meta["n_observations"],
        sources=meta["sources"],
        data_hash=meta["data_hash"],
        measured_power=meta["measured_power"],
        device_origins=meta.get("device_origins", {}),
        measured_cells=meta.get("measured_cells", {}),
        demonstrated=meta.get("demonstrated", {}),
        device_params={k: _params_from_json(v) for k, v in meta.get("device_params", {}).items()},
    )


def _params_to_json(d: DeviceParams) -> dict[str, Any]:
    return {
        "device_id": d.device_id,
        "kind": d.kind,
        "values": d.values,
        "log_sd": d.log_sd,
        "source": d.source,
        "n_runs": d.n_runs,
    }


def _params_from_json(d: dict[str, Any]) -> DeviceParams:
    return DeviceParams(
        device_id=d["device_id"],
        kind=d["kind"],
        values=dict(d["values"]),
        log_sd=dict(d["log_sd"]),
        source=d["source"],
        n_runs=int(d["n_runs"]),
    )


# Bumped when the fit itself (this file) changes meaning; a change to the features or to a
# declared effect changes spec.fingerprint() by itself.
MODEL_VERSION = "device-aware-6"  # 6: the host's CPU speed and cores price CPU work


def settings_key(s: ModelSettings) -> str:
    """The model's version, a hash of the feature code and declared effects, and everything
    in the settings that changes a fit, as canonical JSON: what a cached fit is keyed by
    (with the store's data version), so a cached fit of other features is never read back."""
    return json.dumps(
        [MODEL_VERSION, spec.fingerprint(), s.priors, s.devices, s.prior_scale, mechanisms.PRIORS],
        sort_keys=True,
        default=str,
    )


def observations_hash(observations: Sequence[Observation]) -> str:
    import hashlib  # lazily: OpenSSL's import would be part of every `recommend`

    h = hashlib.sha256()
    for o in observations:
        h.update(
            repr(
                (
                    o.source,
                    o.device_kind,
                    o.config.key(),
                    o.workload,
                    o.metric,
                    o.value,
                    o.relative_to.key() if o.relative_to else None,
                    o.power_scope,
                    o.energy_source,
                    o.weight,
                    o.device_id,
                    o.n,
                    o.sd,
                    o.thread_cpu_pct,
                    o.host_cpu_busy_pct,
                )
            ).encode()
        )
    return h.hexdigest()[:16]


CAP_KEYS = ("read_iops_cap", "write_iops_cap", "read_bw_bytes_s", "write_bw_bytes_s")


def _iops_of(o: Observation) -> float | None:
    """An absolute rate observation as operations per second (None if it is not one)."""
    if o.metric == "iops":
        return o.value
    per_unit = BANDWIDTH_UNITS.get(o.metric, {}).get(o.unit)
    if per_unit is None:
        return None
    return o.value * per_unit / max(o.workload.bs_bytes, 512)


def demonstrated_bandwidth(
    observations: Sequence[Observation],
    scale: Callable[[Observation], float] | None = None,
) -> dict[str, dict[str, float]]:
    """Per device, the largest read and write bandwidth (bytes/s) one of its own cells moved
    through the device: direct I/O of one direction, or buffered writes with an fsync at
    least every 64 writes (each batch is on the device before the next one starts, so the
    run's bytes reached it within its window). A calibration measures bandwidth with one
    submitting job; a multi-queue SSD may move more with several jobs than with one. Per
    submitter, as the device's ceilings are: ``scale`` gives a cell's
    device_params.submitter_scale (zram compresses in the writer's context, so its
    several-writer cells moved that many submitters' bandwidth). Compression by the
    filesystem is left out (its bytes on the device are fewer than the application's), so is
    any cell whose rate is not a rate of its requests (metadata operations,
    application-level operations)."""
    out: dict[str, dict[str, float]] = {}
    for o in observations:
        w = o.workload
        if (
            not o.device_id
            or o.relative_to is not None
            or o.value <= 0
            or w.op != "io"
            or w.metadata_frac > 0
            or any(m.startswith("compress") for m in o.config.mount)
        ):
            continue
        iops = _iops_of(o)
        if iops is None:
            continue
        if w.read_pct >= 99 and w.direct:
            side = "read"
        elif w.read_pct <= 1 and (w.direct or 0 < w.writes_per_fsync <= 64):
            side = "write"
        else:
            continue
        bw = iops * max(w.bs_bytes, 512) / (scale(o) if scale else 1.0)
        mine = out.setdefault(o.device_id, {})
        mine[side] = max(mine.get(side, 0.0), bw)
    return out


def _fit_raw(raw: Sequence[Observation], base: DeviceParams, s: ModelSettings) -> DeviceParams:
    """`fsadvisor calibrate`'s fit (predict/device_fit.fit_device_params) of a device's
    raw-device cells. A stored cell is its mean, so it enters as one run: the fit then gives
    it a single run's spread, never the false confidence of n identical values."""
    # Imported here: only a device with raw-device runs needs it, and a warm `recommend`
    # never loads it (tests/unit/test_startup_imports.py).
    from fsadvisor.predict.device_fit import RawRun, fit_device_params

    runs = [
        RawRun(
            rw=o.workload.rw,
            bs_bytes=o.workload.bs_bytes,
            iops=o.value,
            iodepth=o.workload.iodepth,
            numjobs=o.workload.numjobs,
            fsync_every=o.workload.fsync_every,
            thread_cpu_pct=o.thread_cpu_pct,
            host_cpu_busy_pct=o.host_cpu_busy_pct,
        )
        for o in raw
        if o.metric == "iops" and o.value > 0
    ]
    if not runs:
        return base
    return fit_device_params(runs, base.kind, s.devices, base.device_id)


def raw_lifted_params(
    observations: Sequence[Observation], s: ModelSettings
) -> dict[str, DeviceParams]:
    """Until a device has fitted parameters (``fsadvisor calibrate``), its kind's prior moved
    by its own runs: every ceiling a direct-I/O run exceeded (raw or through a filesystem) is
    lifted to what it measured, and the bare device's queue-depth-1 runs set the service times (1/IOPS; with an fsync per write, write +
    flush). A shipped figure is a prior that data moves, never a cap on what the device
    demonstrably did."""
    seen: dict[str, list[Observation]] = {}
    for o in observations:
        if (
            o.device_id
            and o.relative_to is None
            and o.value > 0
            and o.workload.direct
            and o.workload.metadata_frac == 0
            and _iops_of(o) is not None
        ):
            seen.setdefault(o.device_id, []).append(o)
    out = {}
    for dev, runs in seen.items():
        base = s.params_for(runs[0].device_kind, dev)
        raw = [o for o in runs if o.config.fs == "raw"]
        if raw:
            # `fsadvisor calibrate`'s own fit of the raw-device runs (catalog/device_params.py)
            # when it is installed; the lifting below then only adds what runs through a
            # filesystem demonstrated beyond it.
            try:
                base = _fit_raw(raw, base, s)
            except (FsAdvisorError, ValueError, KeyError, ZeroDivisionError):
                pass
        v, sd = dict(base.values), dict(base.log_sd)
        moved: set[str] = set()

        # put and level (below) run only within their own loop iteration: the loop variables
        # they read are the current ones (ruff's B023 cannot tell).
        def put(key: str, value: float, log_sd: float) -> None:
            v[key], sd[key] = value, log_sd  # noqa: B023
            moved.add(key)  # noqa: B023

        flush_key = "flush_latency_us_plp" if runs[0].device_plp == "yes" else "flush_latency_us"
        fsync_per_op_us = []
        qd1_us: dict[str, list[float]] = {}
        little_us: dict[str, list[float]] = {}
        for o in runs:
            w = o.workload
            iops = _iops_of(o)
            rf = w.read_pct / 100.0
            side = "read" if rf >= 0.99 else "write" if rf <= 0.01 else None
            if side is None or iops is None:  # (seen holds rates only: iops is never None)
                continue
            # Any direct-I/O rate on the device, through a filesystem or not, is a rate the
            # device demonstrably sustained: a ceiling below it is lifted to it (per
            # submitter, as the ceilings are: a device whose work is the submitter's moved
            # a several-job cell's rate with that many submitters' CPU).
            per_submitter = iops / submitter_scale(v, w)
            if per_submitter > v[f"{side}_iops_cap"]:
                put(f"{side}_iops_cap", per_submitter, 0.3)
            if per_submitter * w.bs_bytes > v[f"{side}_bw_bytes_s"]:
                put(f"{side}_bw_bytes_s", per_submitter * w.bs_bytes, 0.3)
            if o.config.fs != "raw" or o.metric != "iops" or base.measured:
                continue  # service times only from the bare device's own runs, when the
                # calibration fit has not set them already
            if not w.writes_per_fsync and w.bs_bytes <= 8192:
                if w.concurrency == 1:
                    qd1_us.setdefault(side, []).append(1e6 / iops)
                else:
                    # Little's law: at this queue depth (up to the device's parallelism) the
                    # device turned each I/O around in at most this long.
                    c = min(w.concurrency, v["parallelism"])
                    little_us.setdefault(side, []).append(c * 1e6 / iops)
            elif side == "write" and w.writes_per_fsync == 1 and w.concurrency == 1:
                fsync_per_op_us.append(1e6 / iops)
        for side in ("read", "write"):
            key = f"{side}_latency_us"
            if side in qd1_us:
                put(key, min(qd1_us[side]), 0.2)
            elif side in little_us and min(little_us[side]) < v[key]:
                put(key, min(little_us[side]), 0.4)  # only ever faster than the prior
        if fsync_per_op_us:
            per_op = min(fsync_per_op_us)
            wl = v["write_latency_us"]
            if "write_latency_us" in moved:
                put(flush_key, max(per_op - wl, 0.05 * per_op), 0.3)
            else:  # split write + flush as the prior does
                total = wl + v[flush_key]
                put("write_latency_us", per_op * wl / total, 0.5)
                put(flush_key, per_op * (total - wl) / total, 0.5)
        if base.measured and not moved:
            out[dev] = base
        elif moved:
            out[dev] = DeviceParams(
                dev,
                base.kind,
                v,
                sd,
                f"{base.source}; from its raw-device runs: " + ", ".join(sorted(moved)),
                sum(max(int(o.n or 1), 1) for o in runs),
            )
    return out


class _Gram:
    """X'WX for a design whose rows each name a few of the model's many coefficients: summed
    over each row's non-zero pairs (a row has about ten, the model about a thousand), the
    same sums as the dense product in a few hundredths of its arithmetic. The pairs are
    found once; each pass of the fit brings only new row weights."""

    def __init__(self, X: np.ndarray):
        self.p = X.shape[1]
        rows, cols = np.nonzero(X)
        vals = X[rows, cols]
        starts = np.searchsorted(rows, np.arange(X.shape[0] + 1))
        first, second, weight_row, product = [], [], [], []
        for i in range(X.shape[0]):
            c, v = cols[starts[i] : starts[i + 1]], vals[starts[i] : starts[i + 1]]
            if len(c):
                first.append(np.repeat(c, len(c)))
                second.append(np.tile(c, len(c)))
                product.append(np.outer(v, v).ravel())
                weight_row.append(np.full(len(c) * len(c), i))
        cat = lambda parts, dt: np.concatenate(parts) if parts else np.zeros(0, dt)  # noqa: E731
        self.cell = cat(first, np.intp) * self.p + cat(second, np.intp)
        self.product = cat(product, float)
        self.row = cat(weight_row, np.intp)

    def __call__(self, weights: np.ndarray) -> np.ndarray:
        flat = np.bincount(
            self.cell, weights=self.product * weights[self.row], minlength=self.p * self.p
        )
        return flat.reshape(self.p, self.p)


def fit(
    observations: Sequence[Observation],
    settings: ModelSettings | None = None,
    device_params: Mapping[str, DeviceParams] | None = None,
) -> FittedModel:
    """Posterior of theta given the observations (weighted ridge = Gaussian prior).
    ``device_params``: fitted parameters per device_id (the roofline of that device's rows);
    without them a device with raw-device runs gets its kind's prior lifted by those runs
    (:func:`raw_lifted_params`)."""
    s = settings or ModelSettings.load()
    fitted = dict(device_params or {})
    fitted.update({k: v for k, v in raw_lifted_params(observations, s).items() if k not in fitted})
    rows: list[_Row] = []
    used = 0
    measured_power: dict[str, int] = {}
    timed = frozenset(
        o.device_id
        for o in observations
        if o.device_id and o.config.fs == "raw" and o.relative_to is None
    )
    for o in observations:
        r = obs_rows(o, s, fitted, timed)
        if r:
            used += 1
            rows.extend(r)
            if (
                (o.metric == "watts" or o.metric in EFFICIENCY_METRICS)
                and o.relative_to is None
                and o.energy_source not in (None, "estimate")
            ):
                key = f"{o.power_scope or 'system'}/{o.device_kind}"
                measured_power[key] = measured_power.get(key, 0) + 1
    names = sorted({k.removeprefix(FIXED_PREFIX) for r in rows for k in r.a})
    index = {n: i for i, n in enumerate(names)}
    n, p = len(rows), len(names)
    X = np.zeros((n, p))
    X_fixed = np.zeros((n, p))  # offsets: the coefficient as fitted on the other rows
    y = np.zeros(n)
    wts = np.zeros(n)
    xvar = np.zeros(n)
    own = np.zeros(n, dtype=bool)
    bound = np.zeros(n)
    relative = np.zeros(n, dtype=bool)
    sources: dict[str, set[str]] = {}
    for i, row in enumerate(rows):
        for k, v in row.a.items():
            if k.startswith(FIXED_PREFIX):
                X_fixed[i, index[k.removeprefix(FIXED_PREFIX)]] = v
                continue
            X[i, index[k]] = v
            if not k.startswith(("k:", "w:", "pw:", "pww:", "t:0")):
                sources.setdefault(k, set()).add(source_group(row.source))
        y[i] = row.b
        wts[i] = row.weight
        xvar[i] = row.extra_var
        own[i] = row.own
        bound[i] = row.bound
        relative[i] = row.relative
    prior_mean = np.zeros(p)
    prior_prec = np.zeros(p)
    for k, i in index.items():
        m, sd = s.prior(k)
        prior_mean[i] = m
        prior_prec[i] = 1.0 / sd**2
    sd = float(s.priors["noise"]["initial_sd"])
    floor = float(s.priors["noise"]["floor_sd"])
    theta = prior_mean.copy()
    cov: np.ndarray = np.diag(1.0 / prior_prec) if p else np.zeros((0, 0))
    gram = _Gram(X)
    A = np.diag(prior_prec)
    # Three noise levels: transcribed absolute figures scatter far more around any model
    # (other machines, other decades) than a study's own ratios ("+23% vs default", where the
    # device level cancels) or cells measured here (this machine's spread). One shared level
    # would drown a table of precise ratios and a device's own runs in the seeds' scatter.
    own_floor = float(s.priors["noise"].get("floor_sd_measured", floor))
    sd_own = sd_rel = sd
    lit_abs, lit_rel = ~own & ~relative, ~own & relative
    point = bound == 0
    active = point.copy()
    has_fixed = bool(X_fixed.any())
    for _ in range(5):  # re-estimate the noise levels; activate the bounds the fit breaks
        # Each row's variance: model noise (scaled by the row's weight) plus the spread of a
        # cell mean over its replicates (sd^2/n on log scale): three agreeing runs pin a
        # level, one run is never a confident effect.
        row_sd = np.where(own, sd_own, np.where(relative, sd_rel, sd))
        Wd = active / (row_sd**2 / np.maximum(wts, 1e-12) + xvar)
        # The offsets at the previous iteration's coefficients (the prior's at the first):
        # rows that may not move a coefficient still use it. Those coefficients are set by
        # the other rows alone, so they settle with the noise levels.
        y_eff = y - X_fixed @ theta if has_fixed else y
        A = gram(Wd) + np.diag(prior_prec)
        rhs = X.T @ (Wd * y_eff) + prior_prec * prior_mean
        # A is symmetric positive definite (a prior precision on every coefficient): a solve
        # per pass, and the posterior covariance once, from the last pass's A
        theta = np.linalg.solve(A, rhs)
        if n:
            resid = y - X_fixed @ theta - X @ theta if has_fixed else y - X @ theta

            def level(mask: np.ndarray, lo: float) -> float:
                # Robust (1.4826 x median |weighted residual|): the seeds' residuals are
                # heavy-tailed (a few rows off by x3 for reasons no feature names), and an
                # rms level would let those few drown every precise ratio of a table.
                r = np.abs(resid[mask]) * np.sqrt(wts[mask])  # noqa: B023 (called in this pass)
                return max(lo, 1.4826 * float(np.median(r)))

            if (lit_abs & point).sum() >= 5:
                sd = level(lit_abs & point, floor)
            sd_rel = level(lit_rel & point, floor) if (lit_rel & point).sum() >= 5 else sd
            # Too few cells measured here to estimate their own level: the literature floor
            # (they are this machine's replicated runs, not another study's figures).
            sd_own = level(own & point, own_floor) if (own & point).sum() >= 5 else floor
            # A bound is an equation at its value while the fit would break it (a Tobit-like
            # active set: a bound the fit respects costs nothing).
            active = point | (active & (bound != 0)) | (bound * resid < 0)
    if p:
        # The means are the last pass's. The covariance states each device's own deviations
        # (d:) at their predictive width (settings.predictive_prior), the width an unseen
        # one is stated at, so a device's first run never widens its other cells' sd.
        scale = s.device_predictive_scale
        if scale != 1.0:
            narrow = np.array([k.startswith("d:") for k in names])
            A = A + np.diag(np.where(narrow, prior_prec * (scale**-2 - 1.0), 0.0))
        cov = np.linalg.inv(A)
    origins: dict[str, str] = {}
    cells: dict[str, set[str]] = {}
    rank_of = {"imported": 0, "reference": 1, "measured": 2}
    for o in observations:
        if o.device_id:
            origin = (
                "measured"
                if o.source.startswith("probe ")
                else "reference"
                if o.source.startswith("reference")
                else "imported"
            )
            if rank_of[origin] > rank_of.get(origins.get(o.device_id, ""), -1):
                origins[o.device_id] = origin
            if origin == "measured" and o.relative_to is None:
                cells.setdefault(o.device_id, set()).add(cell_tag(o.config, o.workload))
    return FittedModel(
        names=names,
        index=index,
        theta=theta,
        cov=cov,
        noise_sd=sd,
        noise_sd_measured=sd_own,
        settings=s,
        device_origins=origins,
        measured_cells={k: sorted(v) for k, v in cells.items()},
        n_rows=n,
        n_observations=used,
        sources={k: sorted(v) for k, v in sources.items()},
        data_hash=observations_hash(observations),
        measured_power=measured_power,
        device_params=fitted,
        demonstrated=demonstrated_bandwidth(
            observations,
            lambda o: submitter_scale(
                s.params_for(o.device_kind, o.device_id, fitted).values, o.workload
            ),
        ),
    )
