"""Predictions from a fitted model: vectorised over configurations, with the uncertainty of
the fit, of the device's own parameters and of the model noise."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from fsadvisor.domain import Device, FsConfig, Prediction, Workload, kind_of
from fsadvisor.predict.design import DesignRows
from fsadvisor.catalog.device_params import DeviceParams
from fsadvisor.predict.features import (
    config_matrix,
    soft_cap,
    cfg_features,
    matrix_of,
    device_roofline,
    device_ceiling_iops,
    device_config_features,
    power_features,
    tail_features,
    workload_features,
    device_share,
)
from fsadvisor.predict.fit import CAP_KEYS, FittedModel


Z90 = 1.6449


# The identity the deviation terms of a device the fit has no terms for are named by: no
# device's runs carry it, so they are always unseen and stated at their predictive width.
UNMEASURED_DEVICE = "(not measured)"


class _Space:
    """The fitted coefficients plus, appended, any feature the fit never saw (it keeps its
    prior: mean from priors.toml, independent variance sd^2)."""

    def __init__(self, model: FittedModel):
        self.model = model
        # The fit's index is read, never copied (~600 names: a copy per prediction cost
        # more than a single prediction's features); unseen names get their own.
        self.unseen: dict[str, int] = {}
        self.extra: list[str] = []

    def col(self, name: str) -> int:
        i = self.model.index.get(name)
        if i is None:
            i = self.unseen.get(name)
            if i is None:
                i = self.unseen[name] = len(self.model.names) + len(self.extra)
                self.extra.append(name)
        return i

    def moments(self, used: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance of the coefficients, or of those at the sorted columns
        ``used`` only (sliced out, never built at full size: a single prediction would
        otherwise copy the whole ~600 x 600 covariance)."""
        m = self.model
        k = len(m.names)
        if used is None:
            used = list(range(k + len(self.extra)))
        fitted = [c for c in used if c < k]
        pri = [m.settings.predictive_prior(self.extra[c - k]) for c in used if c >= k]
        theta = np.concatenate([m.theta[fitted], [p[0] for p in pri]])
        cov = np.zeros((len(theta), len(theta)))
        f = len(fitted)
        cov[:f, :f] = m.cov[np.ix_(fitted, fitted)]
        cov[range(f, len(theta)), range(f, len(theta))] = [p[1] ** 2 for p in pri]
        return theta, cov


# From this many configurations on, their feature matrix is built from each one's parts
# (features.config_matrix) and the blocks' designs are kept factored; below it, from their
# feature dicts, built out. The same matrix either way (tests/unit/test_feature_matrix.py).
# For predict --batch's all-distinct lines (one configuration each) the parts cost more
# than they save (benchmarks/batch_rate.py); a ranking has thousands, where the parts save
# about a quarter of the time per candidate (benchmarks/rank_scaling.py). 16 is a round
# number between the two, not tuned.
_PARTS_FROM = 16


def _block_designs(
    model: FittedModel,
    cfgs: Sequence[FsConfig],
    w: Workload,
    device: Device,
    scope: str,
    params: DeviceParams | None = None,
    roofline: tuple[float, float] | None = None,
):
    """The designs of the performance, power and tail blocks for many configurations of one
    workload, in the fitted coefficients' space (plus unseen features at their prior): the
    configuration features are laid out once, then mapped into each block. Returned as
    :class:`_Dense` (a few configurations) or :class:`_Factored` (many), which give each
    row's moments (``moments``) and the design itself (``matrix``)."""
    kind = kind_of(device)
    pv = (params or model.params_for(device)).values
    # (the caller's device_roofline of the same workload and figures, when it has it)
    _, flush_share = roofline or device_roofline(w, pv, device.plp)
    dev = model.known_device(device)
    space = _Space(model)
    # Every device deviates from the shared effects. One measured here by its own fitted
    # terms; any other (the user's drive, named by kind or library name, or one without
    # configuration runs) by terms the fit never saw, at their predictive width
    # (settings.predictive_prior: how far held-out devices land). Configurations sharing a
    # filesystem or mechanism share that uncertainty, which the adaptive probe needs to
    # know that one ext4 run also teaches it about the other ext4 cells.
    ident = dev or UNMEASURED_DEVICE
    if len(cfgs) < _PARTS_FROM:
        # A handful (predict --batch's one line, predict): the features directly; mapping
        # each candidate's parts costs more than it saves below a few dozen.
        cfs = [cfg_features(cfg, w, kind, pv, device.plp) for cfg in cfgs]
        for cfg, cf in zip(cfgs, cfs):
            cf.update(device_config_features(cf, ident, cfg.fs if cfg is not None else None, w))
        C, cnames = matrix_of(cfs)
    else:
        C, cnames = config_matrix(cfgs, w, kind, pv, device.plp, device_id=ident)
    cidx = {n: j for j, n in enumerate(cnames)}
    # Block-constant parts (identical for every configuration of this workload).
    const = {
        "perf": workload_features(w, kind, flush_share, dev, device_share(w, pv, device.plp)),
        "power": power_features(None, w, kind, scope, {}),
        "tail": tail_features(None, w, kind, {}),
    }
    # Where each configuration feature lands in each block.
    maps = {
        "perf": [(j, space.col(n)) for n, j in cidx.items()],
        "power": [
            (j, space.col(f"pwf:{n}" if not n.startswith("d:") else f"p{n}"))
            for n, j in cidx.items()
            if not n.startswith("m:") and "|m:" not in n
        ],
        "tail": [
            (j, space.col(f"t:{n}"))
            for n, j in cidx.items()
            if not n.startswith("d:")
            if n.startswith("fs:") and "*" not in n
        ],
    }
    const_cols = {block: [space.col(n) for n in names] for block, names in const.items()}
    # Only the coefficients these configurations touch (a fifth of the ~600 with the
    # per-device terms) get a column: every product below is then N*k or N*k^2, not p, and
    # the designs of tens of thousands of candidates stay small. Columns keep the
    # coefficients' order; unused coefficients only ever multiplied zeros.
    used = sorted(
        {c for cols in const_cols.values() for c in cols}
        | {col for m in maps.values() for _, col in m}
    )
    pos = {col: k for k, col in enumerate(used)}
    theta, cov = space.moments(used)
    # Each block's design is X = 1 k' + C M: its workload constants k (one row for all) plus
    # the configuration features C mapped into the block's columns by M (0/1, one 1 per
    # mapped feature).
    k = {}
    for block, names in const.items():
        k[block] = np.zeros(len(used))
        if names:
            k[block][[pos[c] for c in const_cols[block]]] += np.fromiter(
                names.values(), float, len(names)
            )
    if len(cfgs) < _PARTS_FROM:
        return _Dense(C, k, maps, pos, theta, cov)
    M = {}
    for block, m in maps.items():
        M[block] = np.zeros((C.shape[1], len(used)))
        if m:
            js, cols = zip(*m)
            M[block][list(js), [pos[c] for c in cols]] = 1.0
    return _Factored(C, k, M, maps, pos, theta, cov)


class _Dense:
    """The blocks' designs of a few configurations, built out (N x k each); the moments of
    a row are its products with the coefficients."""

    def __init__(self, C, k, maps, pos, theta, cov):
        self.C, self.k, self.maps, self.pos = C, k, maps, pos
        self.theta, self.cov = theta, cov
        self._X: dict[str, np.ndarray] = {}

    def design(self, block: str) -> np.ndarray:
        X = self._X.get(block)
        if X is None:
            X = self._X[block] = np.repeat(self.k[block][None, :], self.C.shape[0], axis=0)
            self._add_mapped(X, block)
        return X

    def _add_mapped(self, X: np.ndarray, block: str, sign: float = 1.0) -> None:
        # One fancy-indexed add of the block's configuration features: its columns are
        # distinct (one per feature name), the same sum as adding column by column.
        if self.maps[block]:
            js, cols = zip(*self.maps[block])
            X[:, [self.pos[c] for c in cols]] += sign * self.C[:, list(js)]

    def _k(self, a: str, b: str | None) -> np.ndarray:
        """The constants of block ``a`` (minus block ``b``'s)."""
        return self.k[a] if b is None else self.k[a] - self.k[b]

    def matrix(self, a: str, b: str | None = None) -> np.ndarray:
        """The design of block ``a`` (minus block ``b``'s), N x k."""
        return self.design(a) if b is None else self.design(a) - self.design(b)

    def moments(self, a: str, b: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each row's mean x.theta and variance x cov x' for block ``a`` (minus ``b``)."""
        X = self.matrix(a, b)
        # Fewer than _PARTS_FROM rows: the products over all k columns cost less than
        # picking out the columns this block uses (np.ix_ and friends were a fifth of
        # predict --batch's all-distinct lines, one configuration each).
        return X @ self.theta, np.sum((X @ self.cov) * X, axis=1)


class _Factored(_Dense):
    """The same designs for many configurations, never built out: X = 1 k' + C M, so
    x.theta = k.theta + c.(M theta) and x cov x' = k cov k' + 2 c.(M cov k') + c (M cov M') c'.
    For a few thousand candidates that is N x ~100 products instead of five N x ~190 designs
    of megabytes each, and their copies: about a fifth of a one-shot `recommend`'s
    in-process time (benchmarks/recommend_vs_numpy.py).
    The design of log ops/J is built out only for predict_many (``matrix``); a ranking
    gets it as :class:`DesignRows` (``rows``)."""

    def __init__(self, C, k, M, maps, pos, theta, cov):
        super().__init__(C, k, maps, pos, theta, cov)
        self.M = M

    def matrix(self, a: str, b: str | None = None) -> np.ndarray:
        X = np.repeat(self._k(a, b)[None, :], self.C.shape[0], axis=0)
        self._add_mapped(X, a)
        if b is not None:
            self._add_mapped(X, b, -1.0)
        return X

    def _M(self, a: str, b: str | None) -> np.ndarray:
        return self.M[a] if b is None else self.M[a] - self.M[b]

    def rows(self, a: str, b: str | None = None) -> DesignRows:
        """The design of block ``a`` (minus ``b``'s) as :class:`DesignRows`: not built."""
        return DesignRows(self._k(a, b), self.C, self._M(a, b))

    def moments(self, a: str, b: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        k, M = self._k(a, b), self._M(a, b)
        nz = np.flatnonzero(k.astype(bool) | M.any(axis=0))  # the block's columns
        # All of C's columns (a feature this block does not map has a zero row in M):
        # gathering C's columns cost more than the products they would save.
        k, M = k[nz], M[:, nz]
        C, theta, cov = self.C, self.theta[nz], self.cov[np.ix_(nz, nz)]
        ck = cov @ k
        mu = k @ theta + C @ (M @ theta)
        var = (
            k @ ck + 2.0 * (C @ (M @ ck)) + np.einsum("ij,ij->i", C @ (M @ cov @ M.T), C)
        )  # row-wise, no N x K temporary
        return mu, var


class Predictions(Sequence):
    """predict_many's answer for a ranking: the same Prediction objects, each built on first
    access (and kept), with the columns a ranking filters and scores by as plain lists
    (``columns``: iops, p99_latency_ms, watts, ops_per_joule; ``bs``: the bytes per
    operation that mb_s and bytes_per_joule are iops and ops_per_joule times). A ranking of
    thousands builds objects only for the entries it shows: building one with its
    uncertainty dict for every candidate was an eighth of ranking 10,000."""

    def __init__(self, n: int, build, columns: dict[str, list[float]], bs: float):
        self._n, self._build, self.columns, self.bs = n, build, columns, bs
        self._made: dict[int, Prediction] = {}

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        p = self._made.get(i)
        if p is None:
            p = self._made[i] = self._build(i)
        return p

    def __iter__(self):
        return (self[i] for i in range(self._n))

    def replace(self, i: int, p: Prediction) -> None:
        """Put ``p`` (e.g. ``ceilings.cap`` of the one there) in place ``i``."""
        self._made[i] = p


def predict_many(
    model: FittedModel,
    cfgs: Sequence[FsConfig],
    w: Workload,
    device: Device,
    scope: str = "system",
    idle_watts: float | None = None,
    design_out: dict | None = None,
    device_params: DeviceParams | None = None,
    alone: bool = False,
) -> list[Prediction]:
    """Predictions for many configurations of one workload on one device, vectorised.
    The lower end of the power interval is floored at 99% of the lowest predicted power of
    the set; with ``alone``, each at its own, as if predicted by itself (``predict``: what
    `predict --batch` computes for many lines at once).
    With ``design_out`` (a dict), also hands back the design of log ops/J ("X", "cov"):
    the sd of a difference between two rows is the uncertainty of their *ranking*, in which
    every shared term cancels (recommend uses it to tell real leads from noise).
    ``device_params`` overrides what the fit knows of the device (the service passes the
    store's calibration of it, or a library drive's datasheet prior). Every device's own
    deviations from the shared effects enter the uncertainty, fitted or at their predictive
    width (see _block_designs)."""
    return _predict(
        model,
        cfgs,
        w,
        device,
        scope,
        idle_watts,
        design_out,
        device_params,
        alone,
        lazy=False,
    )


def predict_lazily(
    model: FittedModel,
    cfgs: Sequence[FsConfig],
    w: Workload,
    device: Device,
    scope: str = "system",
    idle_watts: float | None = None,
    design_out: dict | None = None,
    device_params: DeviceParams | None = None,
    alone: bool = False,
) -> Predictions:
    """predict_many's predictions, built on access (:class:`Predictions`); the same numbers."""
    return _predict(
        model, cfgs, w, device, scope, idle_watts, design_out, device_params, alone, lazy=True
    )


def _predict(
    model: FittedModel,
    cfgs: Sequence[FsConfig],
    w: Workload,
    device: Device,
    scope: str,
    idle_watts: float | None,
    design_out: dict | None,
    device_params: DeviceParams | None,
    alone: bool,
    lazy: bool,
):
    """predict_many's work; with ``lazy``, as :class:`Predictions`."""
    kind = kind_of(device)
    s = model.settings
    params = device_params or model.params_for(device)
    roofline = device_roofline(w, params.values, device.plp)
    roof = math.log(roofline[0])
    # The uncertainty of a measured device's own figures enters every prediction for it
    # (delta method on log scale); an unmeasured device's spread around its kind is what
    # the fitted kind level and the priors already carry.
    roof_var = _roofline_var(w, params, device.plp) if params.measured else 0.0
    designs = _block_designs(model, cfgs, w, device, scope, params, roofline=roofline)
    noise2 = model.noise_sd**2
    if model.known_device(device) and model.noise_sd_measured is not None:
        noise2 = model.noise_sd_measured**2

    mu_p, var_p = designs.moments("perf")
    mu_w, var_w = designs.moments("power")
    mu_e, var_e = designs.moments("perf", "power")
    if design_out is not None:
        # "q": each row's quadratic form x cov x' (the model's variance of its log ops/J,
        # before the device's and the noise's): ranking needs it for every candidate, and
        # it is the costliest product here (N x k^2), so it is handed over, not redone.
        # A ranking (lazy) takes the design in factored form when there is one; every
        # other caller gets the ndarray.
        design_out["X"] = (
            designs.rows("perf", "power")
            if lazy and isinstance(designs, _Factored)
            else designs.matrix("perf", "power")
        )
        design_out["cov"], design_out["q"] = designs.cov, var_e
    mu_t, var_t = designs.moments("tail", "perf")
    conc = max(w.concurrency, 1)
    mu_p = mu_p + roof
    mu_e = mu_e + roof
    var_p, var_e = var_p + roof_var, var_e + roof_var
    mu_t = mu_t + math.log(conc) - roof + math.log(1000.0)  # log p99 in ms
    sd_p, sd_e = np.sqrt(var_p + noise2), np.sqrt(var_e + noise2)
    sd_t, sd_w = np.sqrt(var_t + noise2), np.sqrt(var_w + noise2)
    demonstrated = model.demonstrated.get(model.known_device(device), {})
    ceiling = device_ceiling_iops(w, kind, s, params, demonstrated)
    # The ceiling is the device's fitted (or prior) figure with its own uncertainty: each
    # quantile of IOPS passes through the same quantile of the ceiling.
    c_sd = max((params.log_sd.get(k, 0.0) for k in CAP_KEYS), default=0.0)
    measured = model.measured_power.get(f"{scope}/{kind}", 0)
    if idle_watts is None:
        idle_watts = float(s.priors["idle_watts"].get(scope, 0.0))
    basis = {
        "observations": model.n_observations,
        "device_params": {
            "identity": params.device_id,
            "kind": params.kind,
            "source": params.source,
            "n_runs": params.n_runs,
            "fitted_at": params.details.get("fitted_at"),
            "values": dict(params.values),
            "log_sd": dict(params.log_sd),
        },
        # what this device's own cells moved, which the hard cap (ceilings.cap) honours too
        **({"demonstrated_bw_bytes_s": dict(demonstrated)} if demonstrated else {}),
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
    iops = soft_cap(iops_raw, ceiling)
    lo_p = soft_cap(lo_raw, ceiling * math.exp(-Z90 * c_sd))
    hi_p = soft_cap(hi_raw, ceiling * math.exp(Z90 * c_sd))
    f_mid, f_lo, f_hi = iops / iops_raw, lo_p / lo_raw, hi_p / hi_raw
    opj, watts, p99 = ex(mu_e) * f_mid, ex(mu_w), ex(mu_t) / f_mid
    # A machine under load never draws less than at idle: the lower bound of the power
    # interval is clamped there (the log-normal tail would otherwise go below it).
    idle_floor = float(s.priors["idle_watts"].get(scope, 0.0)) if idle_watts is None else idle_watts
    lo_e, hi_e = ex(mu_e - Z90 * sd_e) * f_lo, ex(mu_e + Z90 * sd_e) * f_hi
    lo_t, hi_t = ex(mu_t - Z90 * sd_t) / f_hi, ex(mu_t + Z90 * sd_t) / f_lo
    floor_w = np.minimum(idle_floor, 0.99 * watts) if alone else min(idle_floor, 0.99 * watts.min())
    lo_w, hi_w = np.maximum(ex(mu_w - Z90 * sd_w), floor_w), ex(mu_w + Z90 * sd_w)
    f_p, f_e = ex(sd_p), ex(sd_e)
    source = "model" if measured else "model (assumed power level)"
    # Python floats column by column (tolist: one conversion per array, not per element).
    (f_p, lo_p, hi_p, f_e, lo_e, hi_e, lo_t, hi_t, lo_w, hi_w, iops, p99, watts, opj) = (
        a.tolist()
        for a in (f_p, lo_p, hi_p, f_e, lo_e, hi_e, lo_t, hi_t, lo_w, hi_w, iops, p99, watts, opj)
    )
    unc_model = "log-normal; factor = exp(1 sd), interval = 90%"
    if lazy:

        def build(i: int) -> Prediction:
            # The same expressions as the list below, for row i. (One function for both cost
            # the eager list a call per row: 5-10% of predict --batch on shared lines.)
            io, e = iops[i], opj[i]
            return Prediction(
                iops=io,
                mb_s=io * bs / 1e6,
                mean_latency_ms=conc / io * 1000.0,
                p99_latency_ms=p99[i],
                watts=watts[i],
                ops_per_joule=e,
                bytes_per_joule=e * bs,
                uncertainty={
                    "model": unc_model,
                    "iops_factor": f_p[i],
                    "iops_90": [lo_p[i], hi_p[i]],
                    "ops_per_joule_factor": f_e[i],
                    "ops_per_joule_90": [lo_e[i], hi_e[i]],
                    "p99_latency_ms_90": [lo_t[i], hi_t[i]],
                    "watts_90": [lo_w[i], hi_w[i]],
                },
                power_scope=scope,
                energy_source=source,
                basis=basis,
            )

        return Predictions(
            len(iops),
            build,
            {"iops": iops, "p99_latency_ms": p99, "watts": watts, "ops_per_joule": opj},
            bs,
        )
    # One pass over the columns together (zip, not 14 list indexings per candidate).
    return [
        Prediction(
            iops=io,
            mb_s=io * bs / 1e6,
            mean_latency_ms=conc / io * 1000.0,
            p99_latency_ms=t99,
            watts=wt,
            ops_per_joule=e,
            bytes_per_joule=e * bs,
            uncertainty={
                "model": unc_model,
                "iops_factor": fp,
                "iops_90": [lp, hp],
                "ops_per_joule_factor": fe,
                "ops_per_joule_90": [le, he],
                "p99_latency_ms_90": [lt, ht],
                "watts_90": [lw, hw],
            },
            power_scope=scope,
            energy_source=source,
            basis=basis,
        )
        for io, t99, wt, e, fp, lp, hp, fe, le, he, lt, ht, lw, hw in zip(
            iops, p99, watts, opj, f_p, lo_p, hi_p, f_e, lo_e, hi_e, lo_t, hi_t, lo_w, hi_w
        )
    ]


def _roofline_var(w: Workload, params: DeviceParams, plp: str) -> float:
    """Variance of log roofline from the log-sd of each device figure (numerical gradient)."""
    base = math.log(device_roofline(w, params.values, plp)[0])
    var = 0.0
    for k, sd in params.log_sd.items():
        if not sd or k not in params.values:
            continue
        bumped = dict(params.values)
        bumped[k] = bumped[k] * math.exp(0.01)
        g = (math.log(device_roofline(w, bumped, plp)[0]) - base) / 0.01
        var += (g * sd) ** 2
    return var


def predict(
    model: FittedModel,
    cfg: FsConfig,
    w: Workload,
    device: Device,
    scope: str = "system",
    idle_watts: float | None = None,
    device_params: DeviceParams | None = None,
) -> Prediction:
    return predict_many(model, [cfg], w, device, scope, idle_watts, device_params=device_params)[0]


def contributions(
    model: FittedModel, cfg: FsConfig, base: FsConfig, w: Workload, kind: str, scope: str = "system"
) -> list[tuple[str, float, float, float]]:
    """Per feature of ``cfg`` against ``base``: (name, delta log perf, delta log ops/J, sd of
    that ops/J delta). The sd treats the performance and power coefficients as independent,
    an approximation good enough to say whether an effect is known or only hoped for."""
    pv = model.settings.device_params(kind)
    cf = cfg_features(cfg, w, kind, pv, "unknown")
    bf = cfg_features(base, w, kind, pv, "unknown")
    out = []
    for k in set(cf) | set(bf):
        d = cf.get(k, 0.0) - bf.get(k, 0.0)
        if not d:
            continue
        (mp, sp), (mw, sw) = model.coef(k), model.coef(f"pwf:{k}")
        out.append((k, d * mp, d * (mp - mw), abs(d) * math.hypot(sp, sw)))
    out.sort(key=lambda t: -abs(t[2]))
    return out
