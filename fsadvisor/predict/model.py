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
from typing import Any, Iterable, Sequence

import numpy as np

from fsadvisor.domain import Device, FsConfig, Observation, Prediction, Workload
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


def calibration_path() -> Path:
    """Where `calibrate` writes the user's calibration (preferred over the shipped one)."""
    import platformdirs
    return Path(platformdirs.user_data_dir("fsadvisor")) / "calibration.json"


@dataclass(frozen=True)
class ModelSettings:
    priors: dict[str, Any]
    devices: dict[str, dict[str, float]]
    prior_scale: float = 1.0  # multiplies the prior sd of configuration effects
    calibration_source: str = "none"

    @staticmethod
    def load(prior_scale: float | None = None) -> "ModelSettings":
        d = data_dir("models")
        with open(d / "priors.toml", "rb") as f:
            priors = tomllib.load(f)
        with open(d / "devices.toml", "rb") as f:
            devices = tomllib.load(f)
        source = "argument"
        if prior_scale is None:
            prior_scale, source = 1.0, "none (priors.toml as written)"
            for cand in (calibration_path(), d / "calibration.json"):
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
        """(mean, sd) of a coefficient's prior: longest matching prefix in priors.toml."""
        cache = self.__dict__.setdefault("_prior_cache", {})
        hit = cache.get(name)
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


# --------------------------------------------------------------------------- features

def _fsync_per_op(w: Workload) -> float:
    n = w.writes_per_fsync
    return (1.0 - w.read_pct / 100.0) / n if n else 0.0


def roofline_iops(w: Workload, kind: str, settings: ModelSettings, plp: str = "unknown") -> float:
    """What the bare device could sustain for this workload: a soft minimum of the
    latency-bound (Little's law), IOPS-bound and bandwidth-bound rates."""
    return _roofline(w, kind, settings, plp)[0]


def _roofline(w: Workload, kind: str, settings: ModelSettings,
              plp: str = "unknown") -> tuple[float, float]:
    """(iops, share of per-op device latency spent in cache flushes)."""
    p = settings.device_params(kind)
    rf = w.read_pct / 100.0
    wf = 1.0 - rf
    conc = min(max(w.concurrency, 1), p["parallelism"])
    flush = p["flush_latency_us_plp"] if plp == "yes" else p["flush_latency_us"]
    flush_us = _fsync_per_op(w) * flush
    lat_us = rf * p["read_latency_us"] + wf * p["write_latency_us"] + flush_us
    if w.metadata_frac > 0:
        # A create/delete is a small synchronous-ish metadata update; its cost is learned.
        lat_us = (1 - w.metadata_frac) * lat_us + w.metadata_frac * 2 * p["write_latency_us"]
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


def device_ceiling_iops(w: Workload, kind: str, settings: ModelSettings) -> float:
    """The hard limit of the device's IOPS and bandwidth for this mix. Buffered reads may be
    served from the page cache, so they are not capped; everything else reaches the device."""
    p = settings.device_params(kind)
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


def workload_features(w: Workload, kind: str, flush_share: float) -> dict[str, float]:
    """Corrections to the roofline's shape, learned per device kind: 2010 HDD and SATA data
    must never bend an NVMe prediction, so each kind has its own terms. The fsync term is
    scaled by the share of device time the roofline spends in flushes, so a workload that
    fsyncs rarely is not treated like one that fsyncs every write."""
    t = _workload_terms(w)
    t["fsync"] = flush_share if t["fsync"] else 0.0
    f = {f"k:{kind}": 1.0}
    for term in ("wf", "rnd", "lc", "meta", "fsync", "small", "buffered"):
        if t[term]:
            f[f"w:{kind}:{term}"] = t[term]
    return f


def perf_features(cfg: FsConfig | None, w: Workload, kind: str,
                  flush_share: float = 0.0) -> dict[str, float]:
    f = workload_features(w, kind, flush_share)
    f.update(config_features(cfg, w, kind))
    return f


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


def _obs_rows(obs: Observation, s: ModelSettings) -> list[_Row]:
    """Turn one observation into linear equations a . theta = b (empty if not usable)."""
    if not (obs.value == obs.value) or math.isinf(obs.value):
        return []
    w, kind = obs.workload, obs.device_kind
    rel = obs.relative_to is not None
    m = obs.metric
    cf = config_features(obs.config, w, kind)
    scope = obs.power_scope or "system"

    def diff(fn) -> dict[str, float]:
        a = fn(obs.config)
        if rel:
            for k, v in fn(obs.relative_to).items():
                a[k] = a.get(k, 0.0) - v
        return {k: v for k, v in a.items() if v}

    roof_iops, flush_share = _roofline(w, kind, s, obs.device_plp)
    P = lambda c: perf_features(c, w, kind, flush_share)  # noqa: E731
    W = lambda c: power_features(c, w, kind, scope)  # noqa: E731
    T = lambda c: tail_features(c, w, kind)  # noqa: E731
    weight = s.weight(obs)
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

    if m in _RATE_METRICS or m in _BANDWIDTH_UNITS:
        if m in _BANDWIDTH_UNITS:
            if w.metadata_frac >= 1.0:
                return []
            if not rel:
                per_unit = _BANDWIDTH_UNITS[m].get(obs.unit)
                if per_unit is None:
                    return []
                b += math.log(per_unit / max(w.bs_bytes, 512))
        return [_Row(diff(P), b - roof, weight, obs.source)]
    if m in _LATENCY_MEAN_METRICS:
        a = {k: -v for k, v in diff(P).items()}
        if not rel:
            b = b - math.log(1e6) - conc + roof  # log(lat_s) = log(conc) - log(iops)
        return [_Row(a, b, weight, obs.source)]
    if m == "p99_latency_us":
        a = {k: -v for k, v in diff(P).items()}
        for k, v in diff(T).items():
            a[k] = a.get(k, 0.0) + v
        if not rel:
            b = b - math.log(1e6) - conc + roof
        return [_Row(a, b, weight, obs.source)]
    if m == "watts":
        return [_Row(diff(W), b, weight, obs.source)]
    if m in _EFFICIENCY_METRICS:
        a = dict(diff(P))
        for k, v in diff(W).items():
            a[k] = a.get(k, 0.0) - v
        return [_Row(a, b - roof, weight, obs.source)]
    del cf
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
    if source.startswith("imported "):
        return " ".join(source.split()[:4])  # "imported fio-json sha256 <files>": one import
    return re.sub(r"\s*\([^()]*\d[^()]*\)$", "", source).strip() or source


def save_model(m: FittedModel, path: Path) -> None:
    """Cache a fit (numpy arrays + JSON metadata in one .npz) for the next process."""
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"names": m.names, "noise_sd": m.noise_sd, "n_rows": m.n_rows,
            "n_observations": m.n_observations, "sources": m.sources,
            "data_hash": m.data_hash, "measured_power": m.measured_power}
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
                       n_rows=meta["n_rows"], n_observations=meta["n_observations"],
                       sources=meta["sources"], data_hash=meta["data_hash"],
                       measured_power=meta["measured_power"])


def settings_fingerprint(s: ModelSettings) -> str:
    return hashlib.sha256(json.dumps([s.priors, s.devices, s.prior_scale], sort_keys=True,
                                     default=str).encode()).hexdigest()[:16]


def observations_hash(observations: Sequence[Observation]) -> str:
    h = hashlib.sha256()
    for o in observations:
        h.update(repr((o.source, o.device_kind, o.config.key(), o.workload, o.metric, o.value,
                       o.relative_to.key() if o.relative_to else None, o.power_scope,
                       o.energy_source, o.weight)).encode())
    return h.hexdigest()[:16]


def fit(observations: Sequence[Observation], settings: ModelSettings | None = None) -> FittedModel:
    """Posterior of theta given the observations (weighted ridge = Gaussian prior)."""
    s = settings or ModelSettings.load()
    rows: list[_Row] = []
    used = 0
    measured_power: dict[str, int] = {}
    for o in observations:
        r = _obs_rows(o, s)
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
    sources: dict[str, set[str]] = {}
    for i, r in enumerate(rows):
        for k, v in r.a.items():
            X[i, index[k]] = v
            if not k.startswith(("k:", "w:", "pw:", "pww:", "t:0")):
                sources.setdefault(k, set()).add(source_group(r.source))
        y[i] = r.b
        wts[i] = r.weight
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
    for _ in range(2):  # re-estimate the noise once from the residuals
        Wd = wts / sd ** 2
        A = (X.T * Wd) @ X + np.diag(prior_prec)
        rhs = (X.T * Wd) @ y + prior_prec * prior_mean
        cov = np.linalg.inv(A)
        theta = cov @ rhs
        if n:
            resid = y - X @ theta
            sd = max(floor, float(math.sqrt(np.sum(wts * resid ** 2) / max(np.sum(wts), 1e-9))))
    return FittedModel(names=names, index=index, theta=theta, cov=cov, noise_sd=sd, settings=s,
                       n_rows=n, n_observations=used,
                       sources={k: sorted(v) for k, v in sources.items()},
                       data_hash=observations_hash(observations), measured_power=measured_power)


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
    _, flush_share = _roofline(w, kind, model.settings, device.plp)
    space = _Space(model)
    cfs = [config_features(cfg, w, kind) for cfg in cfgs]
    cnames = sorted({k for cf in cfs for k in cf})
    cidx = {n: j for j, n in enumerate(cnames)}
    C = np.zeros((len(cfgs), len(cnames)))
    for r, cf in enumerate(cfs):
        for k, v in cf.items():
            C[r, cidx[k]] = v
    # Block-constant parts (identical for every configuration of this workload).
    const = {
        "perf": workload_features(w, kind, flush_share),
        "power": power_features(None, w, kind, scope, {}),
        "tail": tail_features(None, w, kind, {}),
    }
    # Where each configuration feature lands in each block.
    maps = {"perf": [(j, space.col(n)) for n, j in cidx.items()],
            "power": [(j, space.col(f"pwf:{n}")) for n, j in cidx.items()],
            "tail": [(j, space.col(f"t:{n}")) for n, j in cidx.items()
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


def with_device_params(model: FittedModel, params) -> FittedModel:
    """The model with ``params`` (a predict.device_params.DeviceParams: this device's
    calibration or its kind's prior) in place of devices.toml's figures for its kind, so the
    roofline and the ceilings are this device's."""
    if params is None:
        return model
    from dataclasses import replace
    s = model.settings
    table = {**s.device_params(params.kind), **params.values}
    return replace(model, settings=replace(s, devices={**s.devices, params.kind: table}))


def predict_many(model: FittedModel, cfgs: Sequence[FsConfig], w: Workload, device: Device,
                 scope: str = "system", idle_watts: float | None = None,
                 design_out: dict | None = None, device_params=None) -> list[Prediction]:
    """Predictions for many configurations of one workload on one device, vectorised.
    With ``design_out`` (a dict), also hands back the design of log ops/J ("X", "cov"):
    the sd of a difference between two rows is the uncertainty of their *ranking*, in which
    every shared term cancels (recommend uses it to tell real leads from noise).
    ``device_params`` (DeviceParams) replaces the kind's devices.toml figures."""
    model = with_device_params(model, device_params)
    kind = device.kind
    s = model.settings
    roof = math.log(_roofline(w, kind, s, device.plp)[0])
    Xp, Xw, Xt, theta, cov = _block_designs(model, cfgs, w, device, scope)
    if design_out is not None:
        design_out["X"], design_out["cov"] = Xp - Xw, cov
    noise2 = model.noise_sd ** 2

    def mv(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return X @ theta, np.sum((X @ cov) * X, axis=1)

    mu_p, var_p = mv(Xp)
    mu_w, var_w = mv(Xw)
    mu_e, var_e = mv(Xp - Xw)
    mu_t, var_t = mv(Xt - Xp)
    conc = max(w.concurrency, 1)
    mu_p = mu_p + roof
    mu_e = mu_e + roof
    mu_t = mu_t + math.log(conc) - roof + math.log(1000.0)  # log p99 in ms
    sd_p, sd_e = np.sqrt(var_p + noise2), np.sqrt(var_e + noise2)
    sd_t, sd_w = np.sqrt(var_t + noise2), np.sqrt(var_w + noise2)
    ceiling = device_ceiling_iops(w, kind, s)
    measured = model.measured_power.get(f"{scope}/{kind}", 0)
    if idle_watts is None:
        idle_watts = float(s.priors["idle_watts"].get(scope, 0.0))
    basis = {
        "observations": model.n_observations,
        "power_level": ("measured" if measured else "assumed") + f" ({scope} scope, {kind}: "
                       f"{measured} measured absolute power observations)",
        "idle_watts": idle_watts,
    }
    if device_params is not None:
        basis["device_params"] = {"identity": device_params.device_id, "kind": device_params.kind,
                                  "source": device_params.source, "n_runs": device_params.n_runs,
                                  "fitted_at": device_params.details.get("fitted_at"),
                                  "values": dict(device_params.values),
                                  "log_sd": dict(device_params.log_sd)}
    bs = w.bs_bytes if w.metadata_frac < 1.0 else 0
    ex = np.exp
    # No filesystem makes the device faster than its hardware: the learned log-linear terms
    # can overshoot the bandwidth or IOPS ceiling (seen: 64 KiB buffered appends at 17 GB/s on
    # a 6.2 GB/s device), so every quantile passes through the same smooth cap. Throughput
    # lost to the cap is lost to ops/joule and added to latency (Little's law).
    iops_raw, lo_raw, hi_raw = ex(mu_p), ex(mu_p - Z90 * sd_p), ex(mu_p + Z90 * sd_p)
    iops, lo_p, hi_p = (_cap(x, ceiling) for x in (iops_raw, lo_raw, hi_raw))
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


def predict(model: FittedModel, cfg: FsConfig, w: Workload, device: Device,
            scope: str = "system", idle_watts: float | None = None,
            device_params=None) -> Prediction:
    return predict_many(model, [cfg], w, device, scope, idle_watts,
                        device_params=device_params)[0]


def contributions(model: FittedModel, cfg: FsConfig, base: FsConfig, w: Workload,
                  kind: str, scope: str = "system") -> list[tuple[str, float, float, float]]:
    """Per feature of ``cfg`` against ``base``: (name, delta log perf, delta log ops/J, sd of
    that ops/J delta). The sd treats the performance and power coefficients as independent,
    an approximation good enough to say whether an effect is known or only hoped for."""
    cf = config_features(cfg, w, kind)
    bf = config_features(base, w, kind)
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
            for r in _obs_rows(o, s):
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
