"""Rank candidate configurations for a workload by operations (or bytes) per joule.

The catalog proposes, the profile's constraints dispose: a configuration with a durability
hazard is only a candidate when the profile allows it (power-loss protection confirmed, or
durability explicitly waived), required features (snapshots, checksums) must be present, and
predicted throughput/latency must meet the stated minimums. What survives is ranked by the
model's predicted efficiency, each with the mechanisms and data behind it and its warnings.
Ranking never mixes power scopes: every candidate is predicted in the one scope asked for.
"""

from __future__ import annotations

import math
import shlex
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from fsadvisor import catalog
from fsadvisor.domain import Device, FsConfig, Prediction, Profile, kind_of
from fsadvisor.errors import FsAdvisorError
from fsadvisor.predict.confidence import Confidence, decision_confidence
from fsadvisor.predict.model import FittedModel, contributions, predict_many
from fsadvisor.resources import data_dir

DEVICE_PLACEHOLDER = "/dev/DEVICE"


@dataclass
class Ranked:
    rank: int
    config: FsConfig
    prediction: Prediction
    score: float
    why: list[str]
    warnings: list[str]
    commands: dict[str, Any]
    scheduler_alternatives: dict[str, float] = field(default_factory=dict)
    ag_count: int | None = None  # the AG count mkfs.xfs will use (its default when unset)

    def to_dict(self) -> dict[str, Any]:
        p = self.prediction
        return {
            "rank": self.rank,
            "filesystem": self.config.fs,
            "mkfs_command": self.commands["mkfs"],
            "mkfs_command_line": shlex.join(self.commands["mkfs"]),
            "mount_options": self.commands["mount_options"],
            "mount_command": self.commands["mount"],
            "fstab": self.commands["fstab"],
            "scheduler": self.config.scheduler,
            "scheduler_udev_rule": self.commands["udev"],
            "scheduler_alternatives": self.scheduler_alternatives,
            "ag_count": self.ag_count,
            "config": self.config.to_dict(),
            "score": self.score,
            "predicted": p.to_dict(),
            "uncertainty": dict(p.uncertainty),
            "basis": dict(p.basis),
            "why": self.why,
            "warnings": self.warnings,
        }


@dataclass
class Recommendation:
    profile: Profile
    device: Device
    rank_by: str  # ops_per_joule | bytes_per_joule
    energy_basis: str  # total | active
    scope: str
    considered: int
    excluded: dict[str, int]
    ranked: list[Ranked]
    best_per_filesystem: dict[str, Ranked]
    notes: list[str] = field(default_factory=list)
    # P(#1 is the best) and each leader's P(best), from the posterior (predict/confidence.py)
    confidence: Confidence | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile.name,
            "device": self.device.to_dict(),
            "rank_by": self.rank_by,
            "energy_basis": self.energy_basis,
            "power_scope": self.scope,
            "candidates_considered": self.considered,
            "excluded": self.excluded,
            "notes": self.notes,
            "recommendations": [r.to_dict() for r in self.ranked],
            "best_per_filesystem": {fs: r.to_dict() for fs, r in self.best_per_filesystem.items()},
            "confidence": self.confidence.to_dict() if self.confidence else None,
        }


@lru_cache(maxsize=1)
def _mechanisms() -> dict[str, dict[str, str]]:
    with open(data_dir("models") / "mechanisms.toml", "rb") as f:
        return tomllib.load(f)


def _mechanism(feature: str) -> dict[str, str] | None:
    best = ""
    for prefix in _mechanisms():
        if feature.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return _mechanisms().get(best) if best else None


def udev_rule(scheduler: str) -> str:
    # Persistent scheduler choice (domain notes §5); applies to whole NVMe namespaces only.
    return ('ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", '
            f'KERNEL=="nvme[0-9]*n[0-9]*", ATTR{{queue/scheduler}}="{scheduler}"')


def commands_for(cfg: FsConfig, device_path: str | None) -> dict[str, Any]:
    dev = device_path or DEVICE_PLACEHOLDER
    return {
        "mkfs": catalog.mkfs_argv(cfg, dev),
        "mount": catalog.mount_argv(cfg, dev, "/srv/data"),
        "mount_options": catalog.mount_options_string(cfg),
        "fstab": catalog.fstab_line(cfg),
        "udev": udev_rule(cfg.scheduler),
    }


@dataclass(frozen=True)
class CommandTarget:
    """The device path printed into mkfs/mount commands, decided by the caller (the service
    runs the safety check; ranking stays a pure function of model, profile and device).
    ``path`` None prints the placeholder; ``warning`` is added to every recommendation."""

    path: str | None = None
    warning: str | None = None


PLACEHOLDER_TARGET = CommandTarget()


def permitted(cfg: FsConfig, profile: Profile, device: Device) -> tuple[bool, list[str]]:
    """Whether the profile allows this configuration's hazards; warnings for the ones it does.

    Power-loss protection is "unknown" unless the user says so, and while it is unknown
    nothing risky is recommended at all (a decision of this project, stricter than the
    catalog's own "allow_risky" escape). With PLP confirmed, flush-skipping options are safe
    (seed 002); other hazards still need the profile to waive durability or allow risk."""
    c = profile.constraints
    plp = device.plp if device.plp != "unknown" else c.plp
    warnings: list[str] = []
    for r in catalog.risks(cfg):
        if plp == "unknown":
            return False, []
        if r.hazard == "needs-plp":
            ok = plp == "yes"
        elif r.hazard == "no-checksums" and "checksums" in c.features:
            ok = False
        else:
            ok = r.permitted(c, plp)
        if not ok:
            return False, []
        warnings.append(f"{r.option}: {r.reason}"
                        + (" — acceptable here: PLP confirmed" if r.hazard == "needs-plp"
                           else f" — acceptable here because {r.acceptable_if}"))
    missing = set(c.features) - set(catalog.features(cfg))
    if missing:
        return False, []
    return True, warnings


def _why(model: FittedModel, cfg: FsConfig, profile: Profile, device: Device, scope: str,
         limit: int = 4) -> list[str]:
    base = catalog.default_config("ext4", device.size_bytes, "none")
    out = []
    if cfg.fs == "ext4" and not cfg.mount and not cfg.mkfs and cfg.scheduler == "none":
        out.append("ext4 with defaults: the baseline every other candidate is compared with")
    for feat, d_perf, d_opj, sd_opj in contributions(model, cfg, base, profile.workload,
                                                     kind_of(device), scope)[:limit]:
        if abs(d_opj) < 0.01 and abs(d_perf) < 0.01:
            continue
        mech = _mechanism(feat)
        text = mech["text"] if mech else feat
        data = model.sources.get(feat, [])
        data_txt = "; data: " + ", ".join(data[:3]) if data else "; no stored data (prior only)"
        cite = f" ({mech['cite']}{data_txt})" if mech else f" ({data_txt[2:]})"
        out.append(f"{text}: {math.expm1(d_opj):+.0%} ops/J (1 sd {math.expm1(sd_opj):.0%}), "
                   f"{math.expm1(d_perf):+.0%} perf vs ext4 defaults [{feat}]{cite}")
    return out


# Differences below this are not worth a non-default setting: the seeds' repetitions
# (seed 000: 10 runs) rarely pin an effect tighter, and this model's effects are smaller still.
TIE_TOLERANCE = 0.01


def complexity(cfg: FsConfig, device: Device) -> int:
    """How many settings differ from what mkfs, mount and the kernel do by default."""
    n = len(cfg.mkfs) + len([o for o in cfg.mount if o not in ("defaults", "relatime")])
    n += cfg.scheduler != "none"
    if cfg.fs == "xfs" and cfg.ag_count is not None:
        n += cfg.ag_count != catalog.default_ag_count(device.size_bytes)
    return n


def _order(kept: list, device: Device, top: int, X: np.ndarray | None = None,
           cov: np.ndarray | None = None, measured: Callable[[FsConfig], bool] | None = None
           ) -> tuple[list, dict[FsConfig, dict[str, float]]]:
    """The first ``top`` distinct configurations, then the best of every other filesystem.

    Best first — but a candidate whose lead over a simpler one is within the model's own
    uncertainty of that difference (rows of ``X`` with ``cov``: the sd of the log ops/J
    difference, in which shared terms cancel) or within TIE_TOLERANCE has not earned its
    extra settings: among such statistically equal candidates the one with the fewest
    non-default settings comes first. The same configuration under another scheduler is not
    a separate recommendation: it becomes a scheduler alternative, scored against the one
    chosen. Among equals, a filesystem with data behind its effects goes before one that
    only has priors (``measured``): an unmeasured configuration never wins a tie on the
    strength of its prior."""
    score_of: dict[FsConfig, dict[str, float]] = {}
    for val, cfg, _, _ in kept:
        score_of.setdefault(cfg.with_(scheduler="none"), {})[cfg.scheduler] = val
    cx = np.array([complexity(item[1], device) for item in kept])
    prior_only = np.array([0 if measured is None or measured(item[1]) else 1 for item in kept])
    bares = [item[1].with_(scheduler="none") for item in kept]
    logv = np.log(np.maximum([item[0] for item in kept], 1e-300))
    tol = -math.log(1 - TIE_TOLERANCE)

    # var(x_i - x_0) = q_i + q_0 - 2 x_i.cov.x_0 with q = diag(X cov X'): one matrix product
    # up front, then a matrix-vector product per pick.
    q = np.sum((X @ cov) * X, axis=1) if X is not None and cov is not None else None

    def pick(indices: list[int]) -> int:
        idx = np.asarray(indices)
        gap = logv[idx[0]] - logv[idx]
        limit = np.full(len(idx), tol)
        if q is not None:
            cross = X[idx] @ (cov @ X[idx[0]])
            var = q[idx] + q[idx[0]] - 2 * cross
            limit = np.maximum(limit, np.sqrt(np.maximum(var, 0.0)))
        band = idx[gap <= limit]
        return int(min(band, key=lambda i: (cx[i], prior_only[i], -logv[i])))

    ordered = []
    remaining = list(range(len(kept)))  # kept is sorted by score, best first
    while remaining and len(ordered) < top:
        i = pick(remaining)
        remaining = [j for j in remaining if bares[j] != bares[i]]
        ordered.append(kept[i])
    for fs in dict.fromkeys(item[1].fs for item in kept):
        rest = [j for j in remaining if kept[j][1].fs == fs]
        if rest and not any(o[1].fs == fs for o in ordered):
            ordered.append(kept[pick(rest)])
    alternatives = {}
    for item in ordered:
        bare = item[1].with_(scheduler="none")
        alternatives[bare] = {"_best": item[0], **{
            s: v / item[0] for s, v in score_of[bare].items()
            if s != item[1].scheduler and item[0]}}
    return ordered, alternatives


def _has_data(model: FittedModel, cfg: FsConfig) -> bool:
    """Whether the fit saw data on this filesystem (ext4 is the baseline every effect is
    measured against, so it always has)."""
    return cfg.fs == "ext4" or bool(model.sources.get(f"fs:{cfg.fs}"))


def difference_sd(design: dict, i: int, j: int) -> float:
    """The model's sd of the log ops/J (equally bytes/J) difference between rows ``i`` and
    ``j`` of a design from ``predict_many(..., design_out=design)``: every term the two
    candidates share cancels, so this is the uncertainty of their *order*, much narrower
    than either prediction's own interval. recommend's tie note and ``compare`` use it."""
    d = design["X"][i] - design["X"][j]
    return math.sqrt(max(float(d @ design["cov"] @ d), 0.0))


def rank(model: FittedModel, profile: Profile, device: Device, top: int = 5,
         scope: str = "system", energy_basis: str = "total",
         candidates: list[FsConfig] | None = None,
         kernel_has: dict[str, bool] | None = None,
         target: CommandTarget = PLACEHOLDER_TARGET, device_params=None) -> Recommendation:
    """Rank the candidates for ``profile`` on ``device``. Pure: the host facts it reports
    come in as arguments, ``kernel_has`` (filesystem -> this kernel mounts it; None: not
    checked), ``target`` (where the printed commands point; the placeholder by default,
    so nothing unchecked is ever printed ready to run) and ``device_params`` (the device's
    calibration or datasheet prior; None: what the fit knows of it)."""
    if energy_basis not in ("total", "active"):
        raise FsAdvisorError(f"energy basis must be 'total' or 'active', not {energy_basis!r}")
    cands = candidates if candidates is not None else catalog.candidates(
        device.size_bytes, sector_size=device.logical_block_size)
    w = profile.workload
    c = profile.constraints
    rank_by = "bytes_per_joule" if w.rank_by == "bytes" else "ops_per_joule"
    excluded = {"durability_hazard_not_allowed": 0, "missing_required_feature": 0,
                "o_direct_not_honoured": 0,
                "fails_min_iops": 0, "fails_min_mb_s": 0, "fails_max_p99_ms": 0}
    allowed: list[tuple[FsConfig, list[str]]] = []
    for cfg in cands:
        if w.direct and cfg.mount_value("data") == "journal":
            excluded["o_direct_not_honoured"] += 1
            continue
        ok, warns = permitted(cfg, profile, device)
        if not ok:
            missing = set(c.features) - set(catalog.features(cfg))
            excluded["missing_required_feature" if missing else "durability_hazard_not_allowed"] += 1
            continue
        allowed.append((cfg, warns))
    design: dict = {}
    preds = predict_many(model, [a[0] for a in allowed], w, device, scope, design_out=design,
                         device_params=device_params)
    row_of = {cfg: i for i, (cfg, _) in enumerate(allowed)}
    kept: list[tuple[float, FsConfig, Prediction, list[str]]] = []
    best_unconstrained: tuple[float, FsConfig, Prediction] | None = None
    for (cfg, warns), p in zip(allowed, preds):
        if energy_basis == "active":
            idle = float(p.basis.get("idle_watts") or 0.0)
            active_w = max(p.watts - idle, 0.05 * p.watts)
            val = (p.iops * (w.bs_bytes if rank_by == "bytes_per_joule" else 1)) / active_w
        else:
            val = p.bytes_per_joule if rank_by == "bytes_per_joule" else p.ops_per_joule
        if best_unconstrained is None or val > best_unconstrained[0]:
            best_unconstrained = (val, cfg, p)
        if c.min_iops is not None and p.iops < c.min_iops:
            excluded["fails_min_iops"] += 1
            continue
        if c.min_mb_s is not None and p.mb_s < c.min_mb_s:
            excluded["fails_min_mb_s"] += 1
            continue
        if c.max_p99_ms is not None and p.p99_latency_ms > c.max_p99_ms:
            excluded["fails_max_p99_ms"] += 1
            continue
        kept.append((val, cfg, p, warns))
    if not kept:
        parts = [f"{k}={v}" for k, v in (("min_iops", c.min_iops), ("min_mb_s", c.min_mb_s),
                                          ("max_p99_ms", c.max_p99_ms)) if v is not None]
        hint = ""
        if best_unconstrained:
            _, cfg, p = best_unconstrained
            hint = (f"; best allowed candidate predicts {p.iops:.0f} IOPS, {p.mb_s:.0f} MB/s, "
                    f"p99 {p.p99_latency_ms:.2f} ms ({cfg.key()})")
        raise FsAdvisorError(
            f"no configuration satisfies profile {profile.name!r} "
            f"({', '.join(parts) or 'durability/feature constraints'}; "
            f"{len(cands)} candidates considered){hint}")
    kept.sort(key=lambda t: -t[0])
    X = design["X"][[row_of[k[1]] for k in kept]]
    ordered, alternatives = _order(kept, device, top, X, design["cov"],
                                   measured=lambda cfg: _has_data(model, cfg))

    def make(i: int, item) -> Ranked:
        val, cfg, p, warns = item
        warns = list(warns)
        if cfg.fs == "f2fs":
            here = ("not checked" if kernel_has is None else
                    "supported" if kernel_has.get("f2fs") else "NOT supported")
            warns.append(f"f2fs: check that the target host's kernel supports f2fs "
                         f"(/proc/filesystems); this machine's kernel: {here}")
        if "nodiscard" in cfg.mount:
            warns.append("nodiscard: no online TRIM; schedule fstrim (e.g. systemctl enable "
                         "--now fstrim.timer) so the SSD learns which blocks are free")
        if device.kind in ("loop", "ram-loop"):
            warns.append("loop device: figures describe the backing file, not an SSD")
        if target.warning:
            warns.append(target.warning)
        alts = {k: round(v, 4) for k, v in alternatives[cfg.with_(scheduler="none")].items()
                if k != "_best"}
        return Ranked(rank=i + 1, config=cfg, prediction=p, score=val,
                      why=_why(model, cfg, profile, device, scope), warnings=warns,
                      commands=commands_for(cfg, target.path), scheduler_alternatives=alts,
                      ag_count=(cfg.ag_count or catalog.default_ag_count(device.size_bytes))
                      if cfg.fs == "xfs" else None)

    ranked = [make(i, item) for i, item in enumerate(ordered[:top])]
    best_fs: dict[str, Ranked] = {}
    for i, item in enumerate(ordered):
        fs = item[1].fs
        if fs not in best_fs:
            best_fs[fs] = ranked[i] if i < len(ranked) else make(i, item)
    notes = [f"ranked by {rank_by.replace('_', ' ')} ({energy_basis} energy, {scope} scope); "
             f"power level: {ranked[0].prediction.basis.get('power_level')}",
             "a candidate ahead by less than the model's uncertainty of the difference (or "
             f"{TIE_TOLERANCE:.0%}) is not preferred for its extra settings: among such equals "
             "the one with the fewest non-default settings ranks first"]
    if len(ordered) > 1:
        a, b = ordered[0], ordered[1]
        # the same design the ordering used: sd of the log ops/J difference of #1 and #2
        sd = difference_sd(design, row_of[a[1]], row_of[b[1]])
        gap = math.log(a[0] / b[0]) if a[0] > 0 and b[0] > 0 else 0.0
        if abs(gap) < sd:
            notes.append(f"#1 and #2 differ by {math.expm1(gap):+.1%} in predicted efficiency, "
                         f"within the model's 1-sigma uncertainty of that difference "
                         f"({math.expm1(sd):.1%}): probe both to decide")
    params = model.params_for(device)
    if params.measured or "no figures for device kind" in params.source:
        # Say which device figures the ranking rests on when they are this device's own
        # (fitted from its runs) or a stand-in for an unknown kind.
        notes.append(f"device figures: {params.source}")
    if model.known_device(device):
        notes.append("this device's own measurements are in the fit: its own level and "
                     "option effects apply, on top of the shared ones")
    if c.plp == "unknown" and device.plp == "unknown":
        notes.append("PLP unknown: no option with a durability hazard was considered (say "
                     "--plp yes or no to widen the search)")
    if excluded.get("o_direct_not_honoured"):
        notes.append("data=journal candidates were left out: they silently turn this "
                     "profile's O_DIRECT I/O into buffered I/O (verified on this kernel)")
    # over every kept candidate (scheduler variants too), not only the ones displayed
    conf = decision_confidence([item[1].key() for item in kept],
                               [math.log(max(item[0], 1e-300)) for item in kept],
                               X, design["cov"], first=kept.index(ordered[0]),
                               tolerance=-math.log(1 - TIE_TOLERANCE))
    return Recommendation(profile=profile, device=device, rank_by=rank_by,
                          energy_basis=energy_basis, scope=scope, considered=len(cands),
                          excluded=excluded, ranked=ranked, best_per_filesystem=best_fs,
                          notes=notes, confidence=conf)
