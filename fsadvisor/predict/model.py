"""The offline performance/energy model: a device roofline times learned filesystem effects.

Picture a bare device with a ceiling (IOPS, bandwidth, per-op latency at a queue depth: the
"roofline", ``models/devices.toml``). A filesystem configuration only ever takes a share of
it away or, with a scheduler or an option, gives some back. So the model is

    log(iops)  = log(roofline(workload, device)) + phi_p(config, workload, kind) . theta_p
    log(watts) = phi_w(scope, kind, config, workload) . theta_w
    log(p99)   = log(Little's-law mean latency) + phi_t(config, workload) . theta_t

a Bayesian linear model on log scale fitted with numpy on every observation in the store.
Each stored number is one linear equation in theta: an absolute figure pins the level, a
relative one ("+23% vs default", seed 004 Table 2) pins a difference of two feature vectors,
an ops/joule figure ties the performance and the power blocks together. Priors
(``models/priors.toml``) keep effects without data at "no effect" with a wide sd, and
observations from HDD/SATA-era devices count with small weights, so they shape relative
option effects without ever posing as NVMe figures. The posterior covariance gives every
prediction its uncertainty; :func:`cross_validate` reports the real out-of-sample error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from fsadvisor.domain import Device, FsConfig, Observation, Prediction, Workload, identity_of
from fsadvisor.predict import mechanisms
from fsadvisor.predict.device_params import DeviceParams, prior_params
from fsadvisor.resources import data_dir

# Metrics whose observations carry performance information, and how.
_RATE_METRICS = {"iops", "ops_per_s", "files_per_s", "db_ops_per_s", "transactions_per_s"}
_LATENCY_MEAN_METRICS = {"mean_latency_us", "fsync_latency_us"}
_EFFICIENCY_METRICS = {"ops_per_joule", "ai_iops_per_watt", "iops_per_watt", "energy_efficiency"}
# Bytes per unit for bandwidth metrics, by the unit the source states (seed 002's "MB/s"
# column is MiB/s: its harness divides by 1024*1024, so the dataset says MiB/s).
_BANDWIDTH_UNITS = {"mb_s": {"MB/s": 1e6, "MiB/s": 1 << 20},
                    "gb_s": {"GB/s": 1e9, "GiB/s": 1 << 30}}
_HISTORIC_SCHEDULERS = {"cfq": "bfq", "deadline": "mq-deadline", "noop": "none", "": "none"}
_FAMILY = {"ext2": "ext", "ext3": "ext", "ext4": "ext"}


def _family(fs: str) -> str:
    return _FAMILY.get(fs, fs)


# --------------------------------------------------------------------------- parameters

# Coefficients describing configurations (as opposed to devices and workload shapes): the
# ones whose prior width `calibrate` tunes by cross-validation.
CONFIG_PREFIXES = ("fs:", "opt:", "ag:", "sched:", "pwf:", "t:fs:", "t:sched:")
PRIOR_SCALES = (0.1, 0.25, 0.5, 1.0)


def calibration_path(db: str | Path | None = None) -> Path | None:
    """Where `calibrate` writes the calibration of the store ``db``: beside it, as
    ``<db>.calibration.json``, so `--db A` and `--db B` never influence each other. None for
    an in-memory store (nothing to write beside)."""
    if db is not None and str(db) == ":memory:":
        return None
    from fsadvisor.store import default_path
    path = Path(db).expanduser() if db is not None else default_path()
    return path.with_name(path.name + ".calibration.json")


@dataclass(frozen=True)
class ModelSettings:
    priors: dict[str, Any]
    devices: dict[str, dict[str, float]]
    prior_scale: float = 1.0  # multiplies the prior sd of configuration effects
    calibration_source: str = "none"

    @staticmethod
    def load(prior_scale: float | None = None, db: str | Path | None = None,
             use_store_calibration: bool = True) -> "ModelSettings":
        """Priors, device figures and the prior width. The width comes from the calibration
        of the store ``db`` (beside it) when there is one, else from the shipped
        models/calibration.json; never from a file shared by every store."""
        d = data_dir("models")
        with open(d / "priors.toml", "rb") as f:
            priors = tomllib.load(f)
        with open(d / "devices.toml", "rb") as f:
            devices = tomllib.load(f)
        source = "argument"
        if prior_scale is None:
            prior_scale, source = 1.0, "none (priors.toml as written)"
            beside = calibration_path(db) if use_store_calibration else None
            for cand in (beside, d / "calibration.json"):
                if cand is None:
                    continue
                try:
                    prior_scale = float(json.loads(cand.read_text())["prior_scale"])
                    source = str(cand)
                    break
                except (OSError, ValueError, KeyError, TypeError):
                    continue
        return ModelSettings(priors=priors, devices=devices, prior_scale=prior_scale,
                             calibration_source=source)

    def scaled(self, prior_scale: float) -> "ModelSettings":
        return ModelSettings(self.priors, self.devices, prior_scale, "argument")

    def prior(self, name: str) -> tuple[float, float]:
        """(mean, sd) of a coefficient's prior: longest matching prefix in priors.toml, or for
        a mechanism (``m:``) its prior in predict/mechanisms.py."""
        cache = self.__dict__.setdefault("_prior_cache", {})
        hit = cache.get(name)
        if hit is None and name.startswith(("m:", "pwf:m:")):
            from fsadvisor.predict import mechanisms
            mp = mechanisms.prior(name) if name.startswith("m:") else None
            hit = cache[name] = mp if mp is not None else (0.0, 0.05)
        if hit is None:
            mean, best_m = 0.0, ""
            for prefix, v in self.priors.get("prior_mean", {}).items():
                if name.startswith(prefix) and len(prefix) > len(best_m):
                    best_m, mean = prefix, float(v)
            best, sd = "", 1.0
            for prefix, spec in self.priors["prior"].items():
                if name.startswith(prefix) and len(prefix) > len(best):
                    best, sd = prefix, float(spec["sd"])
            if name.startswith(CONFIG_PREFIXES):
                sd *= self.prior_scale
            hit = cache[name] = (mean, sd)
        return hit

    def weight(self, obs: Observation) -> float:
        w = self.priors["weights"]
        weight = float(w.get(obs.device_kind, 0.3)) * obs.weight
        if "[cv_over_40pct]" in obs.note or "cv>40%" in obs.note:
            weight *= float(w["cv_over_40pct"])
        if obs.energy_source == "estimate" and obs.metric in (
                {"watts"} | _EFFICIENCY_METRICS):
            weight *= float(w["estimate_energy"])
        return weight

    def device_params(self, kind: str) -> dict[str, float]:
        return self.devices.get(kind) or self.devices["nvme"]

    def params_for(self, kind: str, device_id: str = "",
                   fitted: Mapping[str, DeviceParams] | None = None) -> DeviceParams:
        """The device's fitted parameters when there are some, else its kind's prior."""
        if fitted and device_id in fitted:
            return fitted[device_id]
        return prior_params(kind, self.devices, device_id)


# --------------------------------------------------------------------------- features

def _fsync_per_op(w: Workload) -> float:
    n = w.writes_per_fsync
    return (1.0 - w.read_pct / 100.0) / n if n else 0.0


def roofline_iops(w: Workload, kind: str, settings: ModelSettings, plp: str = "unknown",
                  params: DeviceParams | None = None) -> float:
    """What the bare device could sustain for this workload: a soft minimum of the
    latency-bound (Little's law), IOPS-bound and bandwidth-bound rates. ``params``: the
    device's own (fitted) parameters; default its kind's prior from devices.toml."""
    p = params.values if params is not None else settings.device_params(kind)
    return _roofline(w, p, plp)[0]


def _roofline(w: Workload, p: Mapping[str, float],
              plp: str = "unknown") -> tuple[float, float]:
    """(iops, share of per-op device latency spent in cache flushes) on a device with
    parameters ``p`` (the keys of models/devices.toml)."""
    rf = w.read_pct / 100.0
    wf = 1.0 - rf
    conc = min(max(w.concurrency, 1), p["parallelism"])
    flush = p["flush_latency_us_plp"] if plp == "yes" else p["flush_latency_us"]
    flush_us = _fsync_per_op(w) * flush
    lat_us = rf * p["read_latency_us"] + wf * p["write_latency_us"] + flush_us
    if w.metadata_frac > 0:
        # A create/stat/delete without fsync is CPU- and journal-bound (tens of thousands per
        # second on this machine, issue 10), not two synchronous device writes; with fsync it
        # pays a journal commit (one write) and a flush on top.
        meta_us = mechanisms.META_CPU_US + (
            (p["write_latency_us"] + flush) / w.writes_per_fsync if w.writes_per_fsync else 0.0)
        lat_us = (1 - w.metadata_frac) * lat_us + w.metadata_frac * meta_us
    rates = [conc / (lat_us * 1e-6),
             1.0 / (rf / p["read_iops_cap"] + wf / p["write_iops_cap"])]
    if w.metadata_frac < 1.0:
        bw = 1.0 / (rf / p["read_bw_bytes_s"] + wf / p["write_bw_bytes_s"])
        rates.append(bw / max(w.bs_bytes, 512))
    return float(sum(r ** -4 for r in rates) ** -0.25), flush_us / lat_us


def _workload_terms(w: Workload) -> dict[str, float]:
    rf = w.read_pct / 100.0
    return {
        "wf": 1.0 - rf,
        "rf": rf,
        "rnd": 1.0 if w.random else 0.0,
        "lc": math.log2(max(w.concurrency, 1)) / 6.0,  # 1 at 64 outstanding I/Os
        "meta": w.metadata_frac,
        "fsync": 1.0 if (w.fsync_every > 0 or w.fsync_mode != "none") else 0.0,
        "small": 1.0 if w.bs_bytes <= 8192 else 0.0,
        "buffered": 0.0 if w.direct else 1.0,
        "smallfiles": 1.0 if w.file_size_bytes <= 64 << 10 else 0.0,
    }


def config_features(cfg: FsConfig | None, w: Workload, kind: str) -> dict[str, float]:
    """Features of the configuration (and its interactions with the workload), shared by the
    performance, power and tail blocks. ext4 with defaults and scheduler none is all-zero."""
    t = _workload_terms(w)
    f: dict[str, float] = {}
    fs = cfg.fs if cfg is not None else "raw"
    if fs != "ext4":
        f[f"fs:{fs}"] = 1.0
        for term in ("wf", "meta", "fsync", "lc"):
            f[f"fs:{fs}*{term}"] = t[term]
        f[f"fs:{fs}*rndw"] = t["rnd"] * t["wf"]
        f[f"fs:{fs}*smallw"] = t["small"] * t["wf"]
    if cfg is None:
        return f
    fam = _family(fs)
    era2010 = kind in ("hdd", "sata-ssd")
    mk = cfg.mkfs_dict
    # ---- mount options
    for opt in cfg.mount:
        key, _, val = opt.partition("=")
        if key in ("relatime", "defaults", "rw", "ordered") or opt == "data=ordered":
            continue
        if key == "noatime":
            f["opt:noatime"] = 1.0
            f["opt:noatime*rf"] = t["rf"]
            f["opt:noatime*meta"] = t["meta"]
        elif key == "data" and val in ("writeback", "journal"):
            f[f"opt:{fam}.data={val}"] = 1.0
            f[f"opt:{fam}.data={val}*wf"] = t["wf"]
            f[f"opt:{fam}.data={val}*fsync"] = t["fsync"]
        elif opt in ("nobarrier", "barrier=0") or opt == "fsync_mode=nobarrier":
            f["opt:nobarrier*fsync"] = t["fsync"]
            f["opt:nobarrier*wf"] = t["wf"]
        elif key == "commit" and val.isdigit() and int(val) > 5:
            f["opt:commit_long*wf"] = t["wf"] * math.log2(int(val) / 5) / 4
        elif key in ("compress", "compress-force", "compress_algorithm"):
            f["opt:compress"] = 1.0
            f["opt:compress*wf"] = t["wf"]
        elif key == "discard" and val != "async":
            f["opt:discard*wf"] = t["wf"]
        elif key in ("nodatacow",):
            f["opt:btrfs.nodatacow*rndw"] = t["rnd"] * t["wf"]
            f["opt:btrfs.nodatacow"] = 1.0
        elif key == "logbsize":
            from fsadvisor.sizes import parse_size
            f["opt:xfs.logbsize*sync"] = math.log2(parse_size(val) / 32768) / 3 * (
                t["fsync"] + t["meta"])
        else:
            f[f"opt:{fs}.{opt}"] = 1.0
    # ---- mkfs options
    block = int(mk.get("block_size", 4096) or 4096)
    if block != 4096:
        f[f"opt:{fam}.blk_small"] = math.log2(4096 / block)
    if w.bs_bytes < 4096 and block <= w.bs_bytes:
        # Seed 004 §5.5: a block size matching 2 KB OLTP I/O avoids read-modify-write.
        f["opt:rmw_avoided"] = 1.0
    isz_default = {"ext": 128 if era2010 else 256, "xfs": 256 if era2010 else 512}.get(fam)
    if "inode_size" in mk and isz_default:
        r = math.log2(int(mk["inode_size"]) / isz_default)
        if r:
            f[f"opt:{fam}.isz_large"] = r
            f[f"opt:{fam}.isz_large*smallfiles"] = r * t["smallfiles"]
    if "blocks_per_group" in mk:
        f["opt:ext.bg_small"] = math.log2(32768 / int(mk["blocks_per_group"]))
    if str(mk.get("journal", "true")).lower() in ("false", "0", "no"):
        f["opt:ext.nojournal"] = 1.0
        f["opt:ext.nojournal*wf"] = t["wf"]
    for k, v in mk.items():
        if k in ("block_size", "inode_size", "blocks_per_group", "journal"):
            continue
        f[f"opt:{fs}.mkfs.{k}={v}"] = 1.0
    # ---- XFS allocation groups (seed 000 §IV.D, seed 004 Table 2)
    if fs == "xfs" and cfg.ag_count:
        ref = 16 if era2010 else 4
        r = math.log2(cfg.ag_count / ref)
        if r:
            f["ag:log"] = r
            f["ag:log*meta"] = r * t["meta"]
            f["ag:log*lc"] = r * t["lc"]
            f["ag:log*wf"] = r * t["wf"]
    # ---- scheduler (seed 003's CFQ/Deadline/NOOP map only loosely onto blk-mq's)
    sched = _HISTORIC_SCHEDULERS.get(cfg.scheduler, cfg.scheduler)
    if sched != "none":
        f[f"sched:{sched}"] = 1.0
        f[f"sched:{sched}*lc"] = t["lc"]
        f[f"sched:{sched}*rnd"] = t["rnd"]
    return f


def device_ceiling_iops(w: Workload, kind: str, settings: ModelSettings,
                        params: DeviceParams | None = None) -> float:
    """The limit of the device's IOPS and bandwidth for this mix (its fitted figures, else its
    kind's prior). Buffered reads may be served from the page cache, so they are not capped;
    everything else reaches the device."""
    p = params.values if params is not None else settings.device_params(kind)
    rf = w.read_pct / 100.0 if w.direct else 0.0
    wf = 1.0 - w.read_pct / 100.0
    if rf + wf <= 0:
        return math.inf
    cap = 1.0 / (rf / p["read_iops_cap"] + wf / p["write_iops_cap"]) / (rf + wf)
    if w.metadata_frac < 1.0:
        bw = 1.0 / (rf / p["read_bw_bytes_s"] + wf / p["write_bw_bytes_s"]) / (rf + wf)
        cap = min(cap, bw / max(w.bs_bytes, 512))
    return cap


def _cap(x: np.ndarray, ceiling: float, sharpness: float = 8.0) -> np.ndarray:
    """Smooth minimum of x and the ceiling (sharp enough to leave values far below alone)."""
    if not math.isfinite(ceiling):
        return x
    return (x ** -sharpness + ceiling ** -sharpness) ** (-1.0 / sharpness)


def workload_features(w: Workload, kind: str, flush_share: float,
                      device_id: str = "") -> dict[str, float]:
    """Corrections to the roofline's shape, learned per device kind: 2010 HDD and SATA data
    must never bend an NVMe prediction, so each kind has its own terms. The fsync term is
    scaled by the share of device time the roofline spends in flushes, so a workload that
    fsyncs rarely is not treated like one that fsyncs every write."""
    t = _workload_terms(w)
    t["fsync"] = flush_share if t["fsync"] else 0.0
    f = {f"k:{kind}": 1.0}
    if device_id:
        # The device's own level around its kind's (hierarchical): one device's runs move its
        # own k:dev/w:dev terms and, partially, the kind's mean -- never another kind's.
        f[f"k:dev:{device_id}"] = 1.0
    for term in ("wf", "rnd", "lc", "meta", "fsync", "small", "buffered"):
        if t[term]:
            f[f"w:{kind}:{term}"] = t[term]
            if device_id:
                f[f"w:dev:{device_id}:{term}"] = t[term]
    return f


def perf_features(cfg: FsConfig | None, w: Workload, kind: str,
                  flush_share: float = 0.0, device_id: str = "") -> dict[str, float]:
    f = workload_features(w, kind, flush_share, device_id)
    f.update(config_features(cfg, w, kind))
    return f


def device_config_features(cf: Mapping[str, float], device_id: str) -> dict[str, float]:
    """One device's own deviations from the shared configuration effects (``d:<id>|feat``).
    A probe or reference device's rows load on both, so with prior sds sigma_shared and
    tau (priors.toml "d:") only sigma^2 / (sigma^2 + tau^2) of what one device shows moves the
    shared effect that other devices use; mechanisms (``m:``) are shared outright."""
    return {f"d:{device_id}|{k}": v for k, v in cf.items() if not k.startswith("m:")}


def power_features(cfg: FsConfig | None, w: Workload, kind: str, scope: str,
                   cfg_feats: dict[str, float] | None = None) -> dict[str, float]:
    t = _workload_terms(w)
    # One power level per (scope, kind): a 2010 server's 250 W says nothing about an NVMe box.
    f = {f"pw:{scope}:{kind}": 1.0}
    for term in ("wf", "lc", "meta", "rnd"):
        if t[term]:
            f[f"pww:{kind}:{term}"] = t[term]
    for k, v in (cfg_feats if cfg_feats is not None else config_features(cfg, w, kind)).items():
        f[f"pwf:{k}"] = v
    return f


def tail_features(cfg: FsConfig | None, w: Workload, kind: str,
                  cfg_feats: dict[str, float] | None = None) -> dict[str, float]:
    t = _workload_terms(w)
    f = {"t:0": 1.0}
    for term in ("fsync", "lc", "wf"):
        if t[term]:
            f[f"t:{term}"] = t[term]
    for k, v in (cfg_feats if cfg_feats is not None else config_features(cfg, w, kind)).items():
        if k.startswith(("fs:", "sched:")) and "*" not in k:
            f[f"t:{k}"] = v
    return f


# --------------------------------------------------------------------------- fitting

@dataclass
class _Row:
    a: dict[str, float]
    b: float
    weight: float
    source: str
    extra_var: float = 0.0  # variance of b beyond the model noise (replicate spread)
    own: bool = False  # measured here (probe, reference matrix): its own noise level


# Log-scale variance of one run where the source states no spread: rep-to-rep variation of
# this VM's loop and RAM devices (an assumption of ~15% 1-sd until the reference matrix's
# spread replaces it); a single run can then never pin an effect tighter than that.
SINGLE_RUN_LOG_SD = 0.15


def own_effects(obs: Observation) -> bool:
    """Measured here (a probe or the reference matrix): the device gets its own deviations
    from the shared configuration effects. The seeds' rows are the literature the shared
    effects are built from, so they load on the shared effects directly."""
    return bool(obs.device_id) and obs.source.startswith(("probe ", "reference"))


def _replicate_var(obs: Observation) -> float:
    """Variance of log(value) of a cell mean over ``n`` runs with sample sd ``sd``."""
    if obs.relative_to is not None or not own_effects(obs):
        return 0.0  # the seeds' transcribed figures: the fitted noise covers them
    n = max(int(obs.n or 1), 1)
    if obs.sd is not None and n > 1 and obs.value > 0:
        return (obs.sd / obs.value) ** 2 / n
    return SINGLE_RUN_LOG_SD ** 2 / n


def _cfg_features(cfg: FsConfig | None, w: Workload, kind: str, p: Mapping[str, float],
                  plp: str) -> dict[str, float]:
    """Configuration features plus the mechanisms in this device's terms."""
    f = config_features(cfg, w, kind)
    f.update(mechanisms.features(cfg, w, p, plp))
    return f


def _obs_rows(obs: Observation, s: ModelSettings,
              fitted: Mapping[str, DeviceParams] | None = None) -> list[_Row]:
    """Turn one observation into linear equations a . theta = b (empty if not usable)."""
    if not (obs.value == obs.value) or math.isinf(obs.value):
        return []
    w, kind = obs.workload, obs.device_kind
    rel = obs.relative_to is not None
    m = obs.metric
    own = own_effects(obs)
    if own and m in _EFFICIENCY_METRICS | _LATENCY_MEAN_METRICS | {"mb_s", "p99_latency_us"}:
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

    roof_iops, flush_share = _roofline(w, pv, obs.device_plp)

    def P(c):
        f = workload_features(w, kind, flush_share, dev)
        cf = _cfg_features(c, w, kind, pv, obs.device_plp)
        f.update(cf)
        if own:
            f.update(device_config_features(cf, dev))
        return f

    W = lambda c: power_features(c, w, kind, scope)  # noqa: E731
    T = lambda c: tail_features(c, w, kind)  # noqa: E731
    weight = s.weight(obs)
    xv = _replicate_var(obs)
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
        return [_Row(a, b, weight, obs.source, xv, own)]

    if m in _RATE_METRICS or m in _BANDWIDTH_UNITS:
        if m in _BANDWIDTH_UNITS:
            if w.metadata_frac >= 1.0:
                return []
            if not rel:
                per_unit = _BANDWIDTH_UNITS[m].get(obs.unit)
                if per_unit is None:
                    return []
                b += math.log(per_unit / max(w.bs_bytes, 512))
        return row(diff(P), b - roof)
    if m in _LATENCY_MEAN_METRICS:
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
    if m in _EFFICIENCY_METRICS:
        a = dict(diff(P))
        for k, v in diff(W).items():
            a[k] = a.get(k, 0.0) - v
        return row(a, b - roof)
    return []


@dataclass
class FittedModel:
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

    def params_for(self, device: Device) -> DeviceParams:
        return self.settings.params_for(device.kind, identity_of(device), self.device_params)

    def known_device(self, device: Device) -> str:
        """The device's identity when the fit has its own terms for it, else "" (then it is
        predicted from its kind's level and the shared effects only)."""
        ident = identity_of(device)
        return ident if f"k:dev:{ident}" in self.index else ""

    # ---- linear algebra on sparse feature dicts
    def _mean_var(self, a: dict[str, float]) -> tuple[float, float]:
        idx, vals, extra_mean, extra_var = [], [], 0.0, 0.0
        for k, v in a.items():
            i = self.index.get(k)
            if i is None:
                m, sd = self.settings.prior(k)
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
    return re.sub(r"\s*\([^()]*\d[^()]*\)$", "", source).strip() or source


def save_model(m: FittedModel, path: Path) -> None:
    """Cache a fit (numpy arrays + JSON metadata in one .npz) for the next process."""
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"names": m.names, "noise_sd": m.noise_sd, "n_rows": m.n_rows,
            "noise_sd_measured": m.noise_sd_measured,
            "n_observations": m.n_observations, "sources": m.sources,
            "data_hash": m.data_hash, "measured_power": m.measured_power,
            "device_params": {k: _params_to_json(v) for k, v in m.device_params.items()}}
    # A private temp file, then an atomic rename: two processes saving at once never
    # leave a half-written cache behind.
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp.npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, theta=m.theta, cov=m.cov, meta=np.array(json.dumps(meta)))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_model(path: Path, settings: ModelSettings) -> FittedModel | None:
    """The cached fit, or None (then the caller refits). A damaged cache file of any kind is
    a miss, and removed, never an error: it is only a cache."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            theta, cov = np.array(z["theta"]), np.array(z["cov"])
        names = list(meta["names"])
        if theta.shape != (len(names),) or cov.shape != (len(names), len(names)):
            raise ValueError("shape mismatch")
    except Exception:  # noqa: BLE001 - zip, pickle, JSON, shape: all mean "refit"
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return FittedModel(names=names, index={n: i for i, n in enumerate(names)}, theta=theta,
                       cov=cov, noise_sd=meta["noise_sd"], settings=settings,
                       noise_sd_measured=meta.get("noise_sd_measured"),
                       n_rows=meta["n_rows"], n_observations=meta["n_observations"],
                       sources=meta["sources"], data_hash=meta["data_hash"],
                       measured_power=meta["measured_power"],
                       device_params={k: _params_from_json(v)
                                      for k, v in meta.get("device_params", {}).items()})


def _params_to_json(d: DeviceParams) -> dict[str, Any]:
    return {"device_id": d.device_id, "kind": d.kind, "values": d.values, "log_sd": d.log_sd,
            "source": d.source, "n_runs": d.n_runs}


def _params_from_json(d: dict[str, Any]) -> DeviceParams:
    return DeviceParams(device_id=d["device_id"], kind=d["kind"], values=dict(d["values"]),
                        log_sd=dict(d["log_sd"]), source=d["source"], n_runs=int(d["n_runs"]))


def settings_fingerprint(s: ModelSettings) -> str:
    return hashlib.sha256(json.dumps([s.priors, s.devices, s.prior_scale], sort_keys=True,
                                     default=str).encode()).hexdigest()[:16]


def observations_hash(observations: Sequence[Observation]) -> str:
    h = hashlib.sha256()
    for o in observations:
        h.update(repr((o.source, o.device_kind, o.config.key(), o.workload, o.metric, o.value,
                       o.relative_to.key() if o.relative_to else None, o.power_scope,
                       o.energy_source, o.weight, o.device_id, o.n, o.sd)).encode())
    return h.hexdigest()[:16]


_CAP_KEYS = ("read_iops_cap", "write_iops_cap", "read_bw_bytes_s", "write_bw_bytes_s")


def raw_lifted_params(observations: Sequence[Observation], s: ModelSettings
                      ) -> dict[str, DeviceParams]:
    """Until a device has fitted parameters (``fsadvisor calibrate``), its kind's prior moved
    by its own raw-device runs: every ceiling a run exceeded is lifted to what it measured,
    and queue-depth-1 runs set the service times (1/IOPS; with an fsync per write, write +
    flush). A shipped figure is a prior that data moves, never a cap on what the device
    demonstrably did."""
    seen: dict[str, list[Observation]] = {}
    for o in observations:
        if (o.config.fs == "raw" and o.device_id and o.relative_to is None
                and o.metric == "iops" and o.value > 0 and o.workload.direct
                and o.workload.metadata_frac == 0):
            seen.setdefault(o.device_id, []).append(o)
    out = {}
    for dev, runs in seen.items():
        base = s.params_for(runs[0].device_kind, dev)
        v, sd = dict(base.values), dict(base.log_sd)
        moved: set[str] = set()

        def put(key: str, value: float, log_sd: float) -> None:
            v[key], sd[key] = value, log_sd
            moved.add(key)

        flush_key = "flush_latency_us_plp" if runs[0].device_plp == "yes" else "flush_latency_us"
        fsync_per_op_us = []
        for o in runs:
            w = o.workload
            rf = w.read_pct / 100.0
            side = "read" if rf >= 0.99 else "write" if rf <= 0.01 else None
            if side is None:
                continue
            if not w.writes_per_fsync:
                if o.value > v[f"{side}_iops_cap"]:
                    put(f"{side}_iops_cap", o.value, 0.3)  # a lower bound it reached
                if o.value * w.bs_bytes > v[f"{side}_bw_bytes_s"]:
                    put(f"{side}_bw_bytes_s", o.value * w.bs_bytes, 0.3)
                if w.concurrency == 1 and w.bs_bytes <= 8192:
                    put(f"{side}_latency_us", 1e6 / o.value, 0.2)
            elif side == "write" and w.writes_per_fsync == 1 and w.concurrency == 1:
                fsync_per_op_us.append(1e6 / o.value)
        if fsync_per_op_us:
            per_op = min(fsync_per_op_us)
            wl = v["write_latency_us"]
            if "write_latency_us" in moved:
                put(flush_key, max(per_op - wl, 0.05 * per_op), 0.3)
            else:  # split write + flush as the prior does
                total = wl + v[flush_key]
                put("write_latency_us", per_op * wl / total, 0.5)
                put(flush_key, per_op * (total - wl) / total, 0.5)
        if moved:
            out[dev] = DeviceParams(dev, base.kind, v, sd,
                                    f"{base.source}; from its raw-device runs: "
                                    + ", ".join(sorted(moved)),
                                    sum(max(int(o.n or 1), 1) for o in runs))
    return out


def fit(observations: Sequence[Observation], settings: ModelSettings | None = None,
        device_params: Mapping[str, DeviceParams] | None = None) -> FittedModel:
    """Posterior of theta given the observations (weighted ridge = Gaussian prior).
    ``device_params``: fitted parameters per device_id (the roofline of that device's rows);
    without them a device with raw-device runs gets its kind's prior lifted by those runs
    (:func:`raw_lifted_params`)."""
    s = settings or ModelSettings.load()
    fitted = dict(device_params or {})
    fitted.update({k: v for k, v in raw_lifted_params(observations, s).items()
                   if k not in fitted})
    rows: list[_Row] = []
    used = 0
    measured_power: dict[str, int] = {}
    for o in observations:
        r = _obs_rows(o, s, fitted)
        if r:
            used += 1
            rows.extend(r)
            if (o.metric == "watts" or o.metric in _EFFICIENCY_METRICS) and \
                    o.relative_to is None and o.energy_source not in (None, "estimate"):
                key = f"{o.power_scope or 'system'}/{o.device_kind}"
                measured_power[key] = measured_power.get(key, 0) + 1
    names = sorted({k for r in rows for k in r.a})
    index = {n: i for i, n in enumerate(names)}
    n, p = len(rows), len(names)
    X = np.zeros((n, p))
    y = np.zeros(n)
    wts = np.zeros(n)
    xvar = np.zeros(n)
    own = np.zeros(n, dtype=bool)
    sources: dict[str, set[str]] = {}
    for i, r in enumerate(rows):
        for k, v in r.a.items():
            X[i, index[k]] = v
            if not k.startswith(("k:", "w:", "pw:", "pww:", "t:0")):
                sources.setdefault(k, set()).add(source_group(r.source))
        y[i] = r.b
        wts[i] = r.weight
        xvar[i] = r.extra_var
        own[i] = r.own
    prior_mean = np.zeros(p)
    prior_prec = np.zeros(p)
    for k, i in index.items():
        m, sd = s.prior(k)
        prior_mean[i] = m
        prior_prec[i] = 1.0 / sd ** 2
    sd = float(s.priors["noise"]["initial_sd"])
    floor = float(s.priors["noise"]["floor_sd"])
    theta = prior_mean.copy()
    cov = np.diag(1.0 / prior_prec) if p else np.zeros((0, 0))
    # Two noise levels: transcribed literature figures scatter far more around any model
    # (other machines, other decades) than cells measured here, whose spread is that of this
    # machine. One shared level would drown a device's own runs in the seeds' scatter.
    own_floor = float(s.priors["noise"].get("floor_sd_measured", floor))
    sd_own = sd
    for _ in range(3):  # re-estimate the noise levels from the residuals
        # Each row's variance: model noise (scaled by the row's weight) plus the spread of a
        # cell mean over its replicates (sd^2/n on log scale): three agreeing runs pin a
        # level, one run is never a confident effect.
        row_sd = np.where(own, sd_own, sd)
        Wd = 1.0 / (row_sd ** 2 / np.maximum(wts, 1e-12) + xvar)
        A = (X.T * Wd) @ X + np.diag(prior_prec)
        rhs = (X.T * Wd) @ y + prior_prec * prior_mean
        cov = np.linalg.inv(A)
        theta = cov @ rhs
        if n:
            resid = y - X @ theta

            def level(mask: np.ndarray, lo: float) -> float:
                ww = wts[mask]
                return max(lo, float(math.sqrt(np.sum(ww * resid[mask] ** 2)
                                               / max(np.sum(ww), 1e-9))))
            if (~own).sum() >= 5:
                sd = level(~own, floor)
            sd_own = level(own, own_floor) if own.sum() >= 5 else sd
    return FittedModel(names=names, index=index, theta=theta, cov=cov, noise_sd=sd,
                       noise_sd_measured=sd_own, settings=s,
                       n_rows=n, n_observations=used,
                       sources={k: sorted(v) for k, v in sources.items()},
                       data_hash=observations_hash(observations), measured_power=measured_power,
                       device_params=fitted)


# --------------------------------------------------------------------------- prediction

Z90 = 1.6449


class _Space:
    """The fitted coefficients plus, appended, any feature the fit never saw (it keeps its
    prior: mean from priors.toml, independent variance sd^2)."""

    def __init__(self, model: FittedModel):
        self.model = model
        self.index = dict(model.index)
        self.extra: list[str] = []

    def col(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.model.names) + len(self.extra)
            self.extra.append(name)
        return i

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        m = self.model
        pri = [m.settings.prior(n) for n in self.extra]
        theta = np.concatenate([m.theta, [p[0] for p in pri]])
        cov = np.zeros((len(theta), len(theta)))
        k = len(m.names)
        cov[:k, :k] = m.cov
        cov[range(k, len(theta)), range(k, len(theta))] = [p[1] ** 2 for p in pri]
        return theta, cov


def _block_designs(model: FittedModel, cfgs: Sequence[FsConfig], w: Workload, device: Device,
                   scope: str):
    """Design matrices of the performance, power and tail blocks for many configurations of
    one workload, in the fitted coefficients' space (plus unseen features at their prior):
    the configuration features are laid out once, then mapped into each block."""
    kind = device.kind
    pv = model.params_for(device).values
    _, flush_share = _roofline(w, pv, device.plp)
    dev = model.known_device(device)
    space = _Space(model)
    cfs = [_cfg_features(cfg, w, kind, pv, device.plp) for cfg in cfgs]
    if dev and any(n.startswith(f"d:{dev}|") for n in model.index):
        # A device measured here: its own deviations from the shared effects apply.
        for cf in cfs:
            cf.update(device_config_features(cf, dev))
    cnames = sorted({k for cf in cfs for k in cf})
    cidx = {n: j for j, n in enumerate(cnames)}
    C = np.zeros((len(cfgs), len(cnames)))
    for r, cf in enumerate(cfs):
        for k, v in cf.items():
            C[r, cidx[k]] = v
    # Block-constant parts (identical for every configuration of this workload).
    const = {
        "perf": workload_features(w, kind, flush_share, dev),
        "power": power_features(None, w, kind, scope, {}),
        "tail": tail_features(None, w, kind, {}),
    }
    # Where each configuration feature lands in each block.
    maps = {"perf": [(j, space.col(n)) for n, j in cidx.items()],
            "power": [(j, space.col(f"pwf:{n}")) for n, j in cidx.items()
                      if not n.startswith(("d:", "m:"))],
            "tail": [(j, space.col(f"t:{n}")) for n, j in cidx.items()
                     if not n.startswith("d:")
                     if n.startswith(("fs:", "sched:")) and "*" not in n]}
    for block in const.values():
        for n in block:
            space.col(n)
    theta, cov = space.moments()
    p = len(theta)

    def design(block: str) -> np.ndarray:
        X = np.zeros((len(cfgs), p))
        for n, v in const[block].items():
            X[:, space.col(n)] += v
        for j, col in maps[block]:
            X[:, col] += C[:, j]
        return X

    return design("perf"), design("power"), design("tail"), theta, cov


def predict_many(model: FittedModel, cfgs: Sequence[FsConfig], w: Workload, device: Device,
                 scope: str = "system", idle_watts: float | None = None,
                 design_out: dict | None = None) -> list[Prediction]:
    """Predictions for many configurations of one workload on one device, vectorised.
    With ``design_out`` (a dict), also hands back the design of log ops/J ("X", "cov"):
    the sd of a difference between two rows is the uncertainty of their *ranking*, in which
    every shared term cancels (recommend uses it to tell real leads from noise)."""
    kind = device.kind
    s = model.settings
    params = model.params_for(device)
    roof = math.log(_roofline(w, params.values, device.plp)[0])
    # The uncertainty of a measured device's own figures enters every prediction for it
    # (delta method on log scale); an unmeasured device's spread around its kind is what
    # the fitted kind level and the priors already carry.
    roof_var = _roofline_var(w, params, device.plp) if params.measured else 0.0
    Xp, Xw, Xt, theta, cov = _block_designs(model, cfgs, w, device, scope)
    if design_out is not None:
        design_out["X"], design_out["cov"] = Xp - Xw, cov
    noise2 = model.noise_sd ** 2
    if model.known_device(device) and model.noise_sd_measured is not None:
        noise2 = model.noise_sd_measured ** 2

    def mv(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return X @ theta, np.sum((X @ cov) * X, axis=1)

    mu_p, var_p = mv(Xp)
    mu_w, var_w = mv(Xw)
    mu_e, var_e = mv(Xp - Xw)
    mu_t, var_t = mv(Xt - Xp)
    conc = max(w.concurrency, 1)
    mu_p = mu_p + roof
    mu_e = mu_e + roof
    var_p, var_e = var_p + roof_var, var_e + roof_var
    mu_t = mu_t + math.log(conc) - roof + math.log(1000.0)  # log p99 in ms
    sd_p, sd_e = np.sqrt(var_p + noise2), np.sqrt(var_e + noise2)
    sd_t, sd_w = np.sqrt(var_t + noise2), np.sqrt(var_w + noise2)
    ceiling = device_ceiling_iops(w, kind, s, params)
    # The ceiling is the device's fitted (or prior) figure with its own uncertainty: each
    # quantile of IOPS passes through the same quantile of the ceiling.
    c_sd = max((params.log_sd.get(k, 0.0) for k in _CAP_KEYS), default=0.0)
    measured = model.measured_power.get(f"{scope}/{kind}", 0)
    if idle_watts is None:
        idle_watts = float(s.priors["idle_watts"].get(scope, 0.0))
    basis = {
        "observations": model.n_observations,
        "device_params": params.source,
        "power_level": ("measured" if measured else "assumed") + f" ({scope} scope, {kind}: "
                       f"{measured} measured absolute power observations)",
        "idle_watts": idle_watts,
    }
    bs = w.bs_bytes if w.metadata_frac < 1.0 else 0
    ex = np.exp
    # No filesystem makes the device faster than its hardware: the learned log-linear terms
    # can overshoot the bandwidth or IOPS ceiling (seen: 64 KiB buffered appends at 17 GB/s on
    # a 6.2 GB/s device), so every quantile passes through the same smooth cap. Throughput
    # lost to the cap is lost to ops/joule and added to latency (Little's law).
    iops_raw, lo_raw, hi_raw = ex(mu_p), ex(mu_p - Z90 * sd_p), ex(mu_p + Z90 * sd_p)
    iops = _cap(iops_raw, ceiling)
    lo_p = _cap(lo_raw, ceiling * math.exp(-Z90 * c_sd))
    hi_p = _cap(hi_raw, ceiling * math.exp(Z90 * c_sd))
    f_mid, f_lo, f_hi = iops / iops_raw, lo_p / lo_raw, hi_p / hi_raw
    opj, watts, p99 = ex(mu_e) * f_mid, ex(mu_w), ex(mu_t) / f_mid
    # A machine under load never draws less than at idle: the lower bound of the power
    # interval is clamped there (the log-normal tail would otherwise go below it).
    idle_floor = float(s.priors["idle_watts"].get(scope, 0.0)) if idle_watts is None else idle_watts
    lo_e, hi_e = ex(mu_e - Z90 * sd_e) * f_lo, ex(mu_e + Z90 * sd_e) * f_hi
    lo_t, hi_t = ex(mu_t - Z90 * sd_t) / f_hi, ex(mu_t + Z90 * sd_t) / f_lo
    lo_w, hi_w = np.maximum(ex(mu_w - Z90 * sd_w), min(idle_floor, 0.99 * watts.min())), \
        ex(mu_w + Z90 * sd_w)
    f_p, f_e = ex(sd_p), ex(sd_e)
    source = "model" if measured else "model (assumed power level)"
    out = []
    for i in range(len(cfgs)):
        unc = {
            "model": "log-normal; factor = exp(1 sd), interval = 90%",
            "iops_factor": float(f_p[i]),
            "iops_90": [float(lo_p[i]), float(hi_p[i])],
            "ops_per_joule_factor": float(f_e[i]),
            "ops_per_joule_90": [float(lo_e[i]), float(hi_e[i])],
            "p99_latency_ms_90": [float(lo_t[i]), float(hi_t[i])],
            "watts_90": [float(lo_w[i]), float(hi_w[i])],
        }
        io = float(iops[i])
        out.append(Prediction(
            iops=io, mb_s=io * bs / 1e6, mean_latency_ms=conc / io * 1000.0,
            p99_latency_ms=float(p99[i]), watts=float(watts[i]), ops_per_joule=float(opj[i]),
            bytes_per_joule=float(opj[i]) * bs, uncertainty=unc, power_scope=scope,
            energy_source=source, basis=basis))
    return out


def _roofline_var(w: Workload, params: DeviceParams, plp: str) -> float:
    """Variance of log roofline from the log-sd of each device figure (numerical gradient)."""
    base = math.log(_roofline(w, params.values, plp)[0])
    var = 0.0
    for k, sd in params.log_sd.items():
        if not sd or k not in params.values:
            continue
        bumped = dict(params.values)
        bumped[k] = bumped[k] * math.exp(0.01)
        g = (math.log(_roofline(w, bumped, plp)[0]) - base) / 0.01
        var += (g * sd) ** 2
    return var


def predict(model: FittedModel, cfg: FsConfig, w: Workload, device: Device,
            scope: str = "system", idle_watts: float | None = None) -> Prediction:
    return predict_many(model, [cfg], w, device, scope, idle_watts)[0]


def contributions(model: FittedModel, cfg: FsConfig, base: FsConfig, w: Workload,
                  kind: str, scope: str = "system") -> list[tuple[str, float, float, float]]:
    """Per feature of ``cfg`` against ``base``: (name, delta log perf, delta log ops/J, sd of
    that ops/J delta). The sd treats the performance and power coefficients as independent,
    an approximation good enough to say whether an effect is known or only hoped for."""
    pv = model.settings.device_params(kind)
    cf = _cfg_features(cfg, w, kind, pv, "unknown")
    bf = _cfg_features(base, w, kind, pv, "unknown")
    out = []
    for k in set(cf) | set(bf):
        d = cf.get(k, 0.0) - bf.get(k, 0.0)
        if not d:
            continue
        (mp, sp), (mw, sw) = model.coef(k), model.coef(f"pwf:{k}")
        out.append((k, d * mp, d * (mp - mw), abs(d) * math.hypot(sp, sw)))
    out.sort(key=lambda t: -abs(t[2]))
    return out


# --------------------------------------------------------------------------- validation

def cross_validate(observations: Sequence[Observation], folds: int = 5, seed: int = 0,
                   settings: ModelSettings | None = None,
                   group_by: str = "source") -> dict[str, Any]:
    """k-fold cross-validation. ``group_by="source"`` holds out whole source tables at once,
    so a fold tests transfer to data from a study the model has not seen; ``"row"`` holds out
    random rows, testing interpolation within studies it has seen. Reports the held-out error
    of every equation (absolute levels and relative effects) against a prior-only model."""
    s = settings or ModelSettings.load()
    if group_by not in ("source", "row"):
        raise ValueError(f"group_by must be 'source' or 'row', not {group_by!r}")
    key = source_group if group_by == "source" else (lambda src: src)
    groups = sorted({key(o.source) for o in observations})
    rng = np.random.default_rng(seed)
    order = list(rng.permutation(len(groups)))
    k = max(2, min(folds, len(groups)))
    fold_of = {groups[j]: pos % k for pos, j in enumerate(order)}
    group = {o.source: key(o.source) for o in observations}
    errs: list[float] = []
    base_errs: list[float] = []
    per_metric: dict[str, list[float]] = {}
    for f in range(k):
        train = [o for o in observations if fold_of[group[o.source]] != f]
        test = [o for o in observations if fold_of[group[o.source]] == f]
        if not train or not test:
            continue
        m = fit(train, s)
        prior_only = fit([], s)
        for o in test:
            for r in _obs_rows(o, s, m.device_params):
                pred, _ = m._mean_var(r.a)
                pred0, _ = prior_only._mean_var(r.a)
                e = abs(pred - r.b)
                errs.append(e)
                base_errs.append(abs(pred0 - r.b))
                per_metric.setdefault(o.metric, []).append(e)

    def summary(e: Iterable[float]) -> dict[str, float]:
        a = np.asarray(list(e))
        if not a.size:
            return {"n": 0}
        return {"n": int(a.size), "median_abs_log_error": float(np.median(a)),
                "median_factor": float(math.exp(np.median(a))),
                "p90_factor": float(math.exp(np.quantile(a, 0.9)))}

    return {"folds": k, "grouped_by": "source table" if group_by == "source" else "row",
            "prior_scale": s.prior_scale, "model": summary(errs),
            "prior_only": summary(base_errs),
            "per_metric": {m: summary(v) for m, v in sorted(per_metric.items())}}


def choose_prior_scale(observations: Sequence[Observation], folds: int = 5,
                       settings: ModelSettings | None = None) -> tuple[float, list[dict]]:
    """Empirical Bayes by cross-validation: the width of the configuration-effect priors that
    predicts held-out source tables best. Wide priors trust each study's effects; narrow ones
    say "effects seen in one study do not carry over"; the data choose."""
    base = settings or ModelSettings.load()
    table = []
    for scale in PRIOR_SCALES:
        rep = cross_validate(observations, folds=folds, settings=base.scaled(scale))
        table.append({"prior_scale": scale, **rep["model"]})
    best = min((r for r in table if r.get("n")), key=lambda r: r["median_abs_log_error"],
               default={"prior_scale": 1.0})
    return float(best["prior_scale"]), table
