"""Features of the log-linear model: the device roofline (from a device's parameters),
workload-shape and per-device level terms, configuration effects and the mechanisms."""

from __future__ import annotations

import functools
import math
from typing import Mapping

import numpy as np

from fsadvisor.domain import FsConfig, Workload
from fsadvisor.predict import ceilings, mechanisms, spec
from fsadvisor.catalog.device_params import DeviceParams, for_submitters
from fsadvisor.predict.settings import ModelSettings


_FAMILY = {"ext2": "ext", "ext3": "ext", "ext4": "ext"}


def _family(fs: str) -> str:
    return _FAMILY.get(fs, fs)


def _fsync_per_op(w: Workload) -> float:
    n = w.writes_per_fsync
    return (1.0 - w.read_pct / 100.0) / n if n else 0.0


def roofline_iops(
    w: Workload,
    kind: str,
    settings: ModelSettings,
    plp: str = "unknown",
    params: DeviceParams | None = None,
) -> float:
    """What the bare device could sustain for this workload: a soft minimum of the
    latency-bound (Little's law), IOPS-bound and bandwidth-bound rates. ``params``: the
    device's own (fitted) parameters; default its kind's prior from devices.toml."""
    p = params.values if params is not None else settings.device_params(kind)
    return device_roofline(w, p, plp)[0]


def device_roofline(
    w: Workload, p: Mapping[str, float], plp: str = "unknown"
) -> tuple[float, float]:
    """(iops, share of per-op device latency spent in cache flushes) on a device with
    parameters ``p`` -- :func:`mechanisms.roofline`, which the mechanisms price their extra
    work against."""
    return mechanisms.roofline(w, p, plp)


def _workload_terms(w: Workload) -> dict[str, float]:
    # Once per workload, not once per configuration (ranking asks for every candidate):
    # a fresh dict each time, as callers may keep it.
    return dict(_workload_terms_of(w))


@functools.lru_cache(maxsize=256)
def _workload_terms_of(w: Workload) -> dict[str, float]:
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
    }


def config_features(cfg: FsConfig | None, w: Workload, kind: str) -> dict[str, float]:
    """Features of the configuration (and its interactions with the workload), shared by the
    performance, power and tail blocks. ext4 with defaults is all-zero. The scheduler has no
    term of its own here: it acts only through its mechanism (``m:sched``, the work it adds
    per request in the device's own time, mechanisms.py), which is zero under ``none`` and
    can only cost -- a bare per-device scheduler offset let two runs of one noisy cell turn
    mq-deadline into a gain on a RAM-backed loop where it measured 4-11% below none."""
    if cfg is None:
        return _settings_features(None, (), (), None, w, kind)
    # The settings' part is remembered, so a ranking computes it once per configuration, not
    # once per scheduler (the catalog offers each configuration under every scheduler). A
    # copy: callers add to the dict they get.
    try:
        return dict(_settings_features_of(cfg.fs, cfg.mkfs, cfg.mount, cfg.ag_count, w, kind))
    except TypeError:  # an unhashable mkfs value (a list from JSON): nothing to remember
        return _settings_features(cfg.fs, cfg.mkfs, cfg.mount, cfg.ag_count, w, kind)


@functools.lru_cache(maxsize=8192)
def _settings_features_of(
    fs: str, mkfs: tuple, mount: tuple, ag_count: int | None, w: Workload, kind: str
) -> dict[str, float]:
    # Read-only once cached: config_features hands out copies.
    return _settings_features(fs, mkfs, mount, ag_count, w, kind)


def _settings_features(
    fs: str | None, mkfs: tuple, mount: tuple, ag_count: int | None, w: Workload, kind: str
) -> dict[str, float]:
    """config_features without the scheduler: the filesystem (``None``: the raw device),
    its mkfs and mount options and the XFS allocation-group count."""
    t = _workload_terms(w)
    f: dict[str, float] = {}
    cfg = fs is not None
    fs = fs if fs is not None else "raw"
    if fs != "ext4":
        f[f"fs:{fs}"] = 1.0
        for term in ("wf", "meta", "fsync", "lc"):
            f[f"fs:{fs}*{term}"] = t[term]
        f[f"fs:{fs}*rndw"] = t["rnd"] * t["wf"]
        f[f"fs:{fs}*smallw"] = t["small"] * t["wf"]
        if kind in spec.ERA_2010_KINDS:
            # A 2010-era row (HDD, first SATA SSDs, 2.6.x kernels) also loads on a wide era
            # twin of each term, so its filesystem gaps (XFS against ext3 under 100 threads on
            # a 15K-RPM disk) inform today's effect in direction, not as a tight figure.
            for k in list(f):  # only this filesystem's terms so far
                f[k + spec.ERA_SUFFIX] = f[k]
    if not cfg:
        return f
    # Every option effect acts through a declared mechanism where the workload does that
    # work (predict/spec.py), and is absent elsewhere.
    f.update(spec.option_features(fs, dict(mkfs), mount, ag_count, w, kind))
    return f


def device_ceiling_iops(
    w: Workload,
    kind: str,
    settings: ModelSettings,
    params: DeviceParams | None = None,
    demonstrated: Mapping[str, float] | None = None,
) -> float:
    """The limit of the device's IOPS and bandwidth for this mix (its fitted figures, else its
    kind's prior). Buffered reads may be served from the page cache, so they are not capped;
    everything else reaches the device. An application-level operation (a Filebench file op,
    a database transaction) is not one device I/O of ``bs`` bytes -- a stat or a delete moves
    no data, the page cache merges appends -- so the device's figures do not cap it.
    ``demonstrated``: the bandwidth ("read", "write", bytes/s) the device's own cells moved
    (fit.demonstrated_bandwidth); the ceiling is never below what the device did."""
    if w.op != "io":
        return math.inf
    p = for_submitters(
        ceilings.lifted_ceilings(
            params.values if params is not None else settings.device_params(kind), demonstrated
        ),
        w,
    )
    rf = w.read_pct / 100.0 if w.direct else 0.0
    wf = 1.0 - w.read_pct / 100.0
    if rf + wf <= 0:
        return math.inf
    cap = 1.0 / (rf / p["read_iops_cap"] + wf / p["write_iops_cap"]) / (rf + wf)
    if w.metadata_frac < 1.0:
        bw = 1.0 / (rf / p["read_bw_bytes_s"] + wf / p["write_bw_bytes_s"]) / (rf + wf)
        cap = min(cap, bw / max(w.bs_bytes, 512))
    return cap


def soft_cap(x: np.ndarray, ceiling: float, sharpness: float = 8.0) -> np.ndarray:
    """Smooth minimum of x and the ceiling (sharp enough to leave values far below alone)."""
    if not math.isfinite(ceiling):
        return x
    return (x**-sharpness + ceiling**-sharpness) ** (-1.0 / sharpness)


def workload_features(
    w: Workload, kind: str, flush_share: float, device_id: str = "", device_share: float = 1.0
) -> dict[str, float]:
    """Corrections to the roofline's shape, learned per device kind: 2010 HDD and SATA data
    must never bend an NVMe prediction, so each kind has its own terms. The fsync term is
    scaled by the share of device time the roofline spends in flushes, so a workload that
    fsyncs rarely is not treated like one that fsyncs every write. Every term is scaled by
    ``device_share``, the share of the operation's time that is the device's
    (:func:`device_share`): they correct the device's figures, so they do not reach the
    host CPU time of a create that never waits for the device."""
    t = _workload_terms(w)
    t["fsync"] = flush_share if t["fsync"] else 0.0
    f = {f"k:{kind}": device_share}
    if device_id:
        # The device's own level around its kind's (hierarchical): one device's runs move its
        # own k:dev/w:dev terms and, partially, the kind's mean -- never another kind's.
        f[f"k:dev:{device_id}"] = device_share
    for term in ("wf", "rnd", "lc", "meta", "fsync", "small", "buffered"):
        if t[term] and device_share:
            f[f"w:{kind}:{term}"] = t[term] * device_share
            if device_id:
                f[f"w:dev:{device_id}:{term}"] = t[term] * device_share
    return f


def device_share(w: Workload, p: Mapping[str, float], plp: str = "unknown") -> float:
    """The share of one operation's roofline time that is the device's, not host CPU."""
    return 1.0 - mechanisms.host_cpu_share(w, p, plp)


def perf_features(
    cfg: FsConfig | None, w: Workload, kind: str, flush_share: float = 0.0, device_id: str = ""
) -> dict[str, float]:
    f = workload_features(w, kind, flush_share, device_id)
    f.update(config_features(cfg, w, kind))
    return f


def device_config_features(
    cf: Mapping[str, float], device_id: str, fs: str | None = None, w: Workload | None = None
) -> dict[str, float]:
    """One device's own deviations from the shared configuration effects (``d:<id>|feat``).
    A probe or reference device's rows load on both, so with prior sds sigma_shared and
    tau (priors.toml "d:") only sigma^2 / (sigma^2 + tau^2) of what one device shows moves the
    shared effect that other devices use. Mechanisms (``m:``) get deviations too: a device
    whose own figures are off (a loop device priced from its kind's datasheet-order prior)
    then absorbs the misfit itself instead of bending the coefficient every device shares.
    With a filesystem ``fs`` and its workload ``w``, the filesystem's own deviations on the
    shape terms (spec.FS_SHAPE_TERMS) are added where its features lack them: ext4, the
    baseline, has no fs: terms, and no filesystem has a shared buffered-I/O term."""
    # A mechanism with a filesystem's own twin (m:fsync and m:fsync:btrfs) deviates on this
    # device through the twin only: btrfs's fsync cost here says nothing of ext4's.
    twins = {k.rpartition(":")[0] for k in cf if k.startswith("m:") and k.count(":") == 2}
    f = {f"d:{device_id}|{k}": v for k, v in cf.items() if k not in twins}
    if fs not in (None, "raw") and w is not None:
        for term, v in _shape_terms_of(w).items():
            key = f"d:{device_id}|fs:{fs}*{term}"
            if v and (fs == "ext4" or term == "buffered") and key not in f:
                f[key] = v
    return f


@functools.lru_cache(maxsize=256)
def _shape_terms_of(w: Workload) -> dict[str, float]:
    # spec.FS_SHAPE_TERMS' values for a workload, as config_features spells the fs: terms.
    t = _workload_terms_of(w)
    both = {"rndw": t["rnd"] * t["wf"], "smallw": t["small"] * t["wf"]}
    return {term: both.get(term, t.get(term, 0.0)) for term in spec.FS_SHAPE_TERMS}


def power_features(
    cfg: FsConfig | None,
    w: Workload,
    kind: str,
    scope: str,
    cfg_feats: dict[str, float] | None = None,
) -> dict[str, float]:
    t = _workload_terms(w)
    # One power level per (scope, kind): a 2010 server's 250 W says nothing about an NVMe box.
    f = {f"pw:{scope}:{kind}": 1.0}
    for term in ("wf", "lc", "meta", "rnd"):
        if t[term]:
            f[f"pww:{kind}:{term}"] = t[term]
    for k, v in (cfg_feats if cfg_feats is not None else config_features(cfg, w, kind)).items():
        f[f"pwf:{k}"] = v
    return f


def tail_features(
    cfg: FsConfig | None, w: Workload, kind: str, cfg_feats: dict[str, float] | None = None
) -> dict[str, float]:
    t = _workload_terms(w)
    f = {"t:0": 1.0}
    for term in ("fsync", "lc", "wf"):
        if t[term]:
            f[f"t:{term}"] = t[term]
    for k, v in (cfg_feats if cfg_feats is not None else config_features(cfg, w, kind)).items():
        if k.startswith("fs:") and "*" not in k:
            f[f"t:{k}"] = v
    return f


def cfg_features(
    cfg: FsConfig | None, w: Workload, kind: str, p: Mapping[str, float], plp: str
) -> dict[str, float]:
    """Configuration features plus the mechanisms in this device's terms."""
    f = config_features(cfg, w, kind)
    f.update(mechanisms.features(cfg, w, p, plp, era2010=kind in ("hdd", "sata-ssd")))
    return f


def config_matrix(
    cfgs,
    w: Workload,
    kind: str,
    p: Mapping[str, float],
    plp: str,
    device_id: str | None = None,
) -> tuple[np.ndarray, list[str]]:
    """The matrix of :func:`cfg_features` over ``cfgs`` (a row per configuration, a column
    per feature name, sorted) and the names. The same matrix as laying each configuration's
    merged dict out, built from its two parts instead: the filesystem settings' features
    (one per distinct settings) and the mechanisms' (one per filesystem, mount options,
    scheduler, journal and block size, the only parts of a configuration mechanisms.features
    reads; tests/unit/test_feature_matrix.py holds it to that). The two name their own
    features ("m:" and the rest), so each fills its own columns: a small matrix per part
    kind, its rows gathered per configuration by index. A configuration costs a few dict
    lookups, not a merged dict and a pass over its ~20 features (ranking 10,000 candidates
    spent a third of its time there).

    With ``device_id``, each row also carries that device's own deviations
    (:func:`device_config_features` of its merged dict), built per part as well: the
    settings part's deviations and its filesystem's shape terms, and the mechanisms' own
    (a twin, m:a:b, only ever sits beside its m:a in the mechanisms' part)."""
    era2010 = kind in ("hdd", "sata-ssd")

    def whole(c: FsConfig | None) -> dict[str, float]:
        f = cfg_features(c, w, kind, p, plp)
        if device_id is not None:
            f.update(device_config_features(f, device_id, c.fs if c is not None else None, w))
        return f

    mine = f"d:{device_id}|m:" if device_id is not None else None
    s_of: dict[tuple, int] = {}
    m_of: dict[tuple, int] = {}
    s_parts: list[dict[str, float]] = []
    m_parts: list[dict[str, float]] = []
    s_idx: list[int] = []
    m_idx: list[int] = []
    for cfg in cfgs:
        if cfg is None:  # the raw device: no parts
            return matrix_of([whole(c) for c in cfgs])
        try:
            key = (cfg.fs, cfg.mkfs, cfg.mount, cfg.ag_count)
            i = s_of.get(key)
            if i is None:
                i = s_of[key] = len(s_parts)
                part = _settings_features_of(*key, w, kind)
                if device_id is not None:
                    part = {**part, **device_config_features(part, device_id, cfg.fs, w)}
                s_parts.append(part)
            mkey = (
                cfg.fs,
                cfg.mount,
                cfg.scheduler,
                mechanisms.journaled(cfg),
                mechanisms.block_bytes(cfg),
            )
            k = m_of.get(mkey)
            if k is None:
                k = m_of[mkey] = len(m_parts)
                part = mechanisms.features(cfg, w, p, plp, era2010=era2010)
                if device_id is not None:
                    part = {**part, **device_config_features(part, device_id)}
                m_parts.append(part)
        except TypeError:  # an unhashable mkfs or mount value (a list from JSON)
            return matrix_of([whole(c) for c in cfgs])
        s_idx.append(i)
        m_idx.append(k)
    groups = [(s_parts, s_idx), (m_parts, m_idx)]
    keys = [set().union(*parts) for parts, _ in groups]

    # Each part kind must name only its own features (else merging the dicts would let one
    # overwrite another's): otherwise, the merged dicts.
    def mechanism(k: str) -> bool:
        return k.startswith("m:") or (mine is not None and k.startswith(mine))

    if any(mechanism(k) for k in keys[0]) or not all(mechanism(k) for k in keys[1]):
        return matrix_of([whole(c) for c in cfgs])
    names = sorted(keys[0] | keys[1])
    idx = {n: j for j, n in enumerate(names)}
    C = np.zeros((len(s_idx), len(names)))
    for (parts, rows), own in zip(groups, keys):
        if not own:
            continue
        # this kind's features as a small matrix (a row per distinct part), in C's columns
        cols = sorted(idx[k] for k in own)
        local = {c: n for n, c in enumerate(cols)}
        P, _ = matrix_of(parts, {n: local[idx[n]] for n in own}, len(cols))
        C[:, cols] = P[rows]
    return C, names


def matrix_of(
    cfs: list[dict[str, float]], idx: dict[str, int] | None = None, width: int | None = None
) -> tuple[np.ndarray, list[str]]:
    """The matrix of the feature dicts ``cfs`` and its sorted column names (or, with
    ``idx``, the given columns and ``width``, names left empty). One fancy-indexed
    assignment from flat (row, column, value) lists: a numpy scalar store per feature cost
    more than computing the features. Within a row every column is distinct (one per
    feature name), so this is the same matrix."""
    names: list[str] = []
    if idx is None:
        names = sorted({k for cf in cfs for k in cf})
        idx = {n: j for j, n in enumerate(names)}
        width = len(names)
    elif width is None:
        raise TypeError("matrix_of: given columns (idx) need the matrix's width")
    rows = [r for r, cf in enumerate(cfs) for _ in range(len(cf))]
    cols = [idx[k] for cf in cfs for k in cf]
    C = np.zeros((len(cfs), width))
    C[rows, cols] = [v for cf in cfs for v in cf.values()]
    return C, names
