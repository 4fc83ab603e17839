"""Rank candidate configurations for a workload by operations (or bytes) per joule.

The catalog proposes, the profile's constraints dispose: a configuration with a durability
hazard is only a candidate when the profile allows it (power-loss protection confirmed, or
durability explicitly waived), required features (snapshots, checksums) must be present, and
predicted throughput/latency must meet the stated minimums. What survives is ranked by the
model's predicted efficiency, each with the mechanisms and data behind it and its warnings.
Ranking never mixes power scopes: every candidate is predicted in the one scope asked for.
"""

from __future__ import annotations

import gc
import math
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, NamedTuple

import numpy as np

from fsadvisor import catalog
from fsadvisor.domain import (
    BACKED_KINDS,
    Device,
    FsConfig,
    Prediction,
    Profile,
    Workload,
    kind_of,
)
from fsadvisor.errors import ConfigError, FsAdvisorError
from fsadvisor.predict import ceilings, mechanisms, spec
from fsadvisor.predict.confidence import Confidence, decision_confidence
from fsadvisor.predict.design import DesignRows, difference_sd, row_variances
from fsadvisor.predict.fit import FittedModel
from fsadvisor.predict.predict import Z90, Predictions, contributions, predict_lazily
from fsadvisor.infra.resources import data_dir, read_toml

DEVICE_PLACEHOLDER = "/dev/DEVICE"


@dataclass(frozen=True)
class Reason:
    """One mechanism's share of a configuration's difference from ext4 defaults, on the log
    scale: efficiency (``d_opj``, with its sd) and performance (``d_perf``); the mechanism's
    words and citation, and how many stored sources measured it (0: its prior alone). The
    model terms that share a mechanism are summed into one reason. service/answer.py says
    it in words."""

    text: str
    cite: str
    d_perf: float
    d_opj: float
    sd_opj: float
    sources: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.text,
            "cite": self.cite or None,
            "efficiency_change": round(math.expm1(self.d_opj), 4),
            "efficiency_sd": round(math.expm1(self.sd_opj), 4),
            "performance_change": round(math.expm1(self.d_perf), 4),
            "stored_sources": self.sources,
        }


@dataclass
class Ranked:
    """One recommended configuration: its rank and score, prediction, reasons (the
    mechanisms behind its difference from ext4 defaults; ``why`` is them in words, written
    by service/answer.py), warnings, the commands that make it, and how its tie group and
    order were decided."""

    rank: int
    config: FsConfig
    prediction: Prediction
    score: float
    reasons: list[Reason]
    warnings: list[str]
    commands: dict[str, Any]
    scheduler_alternatives: dict[str, float] = field(default_factory=dict)
    ag_count: int | None = None  # the AG count mkfs.xfs will use (its default when unset)
    # "1=" when statistically tied with the entries around it (tie group of the first one's
    # rank), else the plain rank; ``order_note`` says why it is listed above a higher score.
    tie_label: str = ""
    order_note: str | None = None
    # which rule put it there: "measured" (data behind it, the other rests on priors),
    # "simpler" (fewer non-default settings) or "uncertainty"; None when nothing scores higher
    order_rule: str | None = None
    ag_note: str | None = None  # the AG count's own effect, where allocation concurrency matters
    why: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.tie_label or str(self.rank)

    def to_dict(self) -> dict[str, Any]:
        p = self.prediction
        return {
            "rank": self.rank,
            "filesystem": self.config.fs,
            "mkfs_command": self.commands["mkfs"],
            "mkfs_command_line": shlex.join(self.commands["mkfs"]),
            "mount_options": self.commands["mount_options"],
            "mount_command": self.commands["mount"],
            "mount_setup": self.commands.get("mount_setup"),
            "uuid_command": self.commands.get("uuid_command"),
            "fstab": self.commands["fstab"],
            "scheduler": self.config.scheduler,
            "scheduler_udev_rule": self.commands["udev"],
            "scheduler_udev_file": self.commands.get("udev_file"),
            "scheduler_alternatives": self.scheduler_alternatives,
            "ag_count": self.ag_count,
            "ag_count_note": self.ag_note,
            "tie_label": self.label,
            "order_note": self.order_note,
            "config": self.config.to_dict(),
            "config_label": self.config.label(),
            "score": self.score,
            "predicted": p.to_dict(),
            "uncertainty": dict(p.uncertainty),
            "basis": dict(p.basis),
            "why": self.why,
            "reasons": [x.to_dict() for x in self.reasons],
            "warnings": self.warnings,
        }


@dataclass
class Recommendation:
    """A ranking's answer for one profile on one device: the ranked configurations, the
    best of each filesystem, what was excluded and why, notes, the lead and the confidence."""

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
    # How #1 stands against the rest (see _lead): gap to #2, sd of that difference, how many
    # other candidates are statistically tied with it, whether this device's runs are in.
    lead: dict[str, Any] = field(default_factory=dict)
    # Each leader's P(within the tolerance of the best), from the posterior (confidence.py)
    confidence: Confidence | None = None
    # The answer in words (service/answer.headline, written by the service that asked)
    summary: list[str] = field(default_factory=list)
    # ext4 defaults, sched none as this ranking predicted it (the same device figures, set
    # and ceiling as every entry), the baseline the yearly savings are measured against;
    # None when the profile's constraints left it out before prediction.
    baseline: Prediction | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": " ".join(self.summary),
            "lead": dict(self.lead),
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
    return read_toml(data_dir("models") / "mechanisms.toml")


def _mechanism(feature: str) -> dict[str, str] | None:
    effect = spec.effect_of(feature) or mechanisms.describe(feature)
    if effect is not None:  # a declared option effect or mechanism carries its own words
        return {"text": effect.text, "cite": effect.cite}
    best = ""
    for prefix in _mechanisms():
        if feature.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return _mechanisms().get(best) if best else None


def udev_rule(scheduler: str, target: Any = None) -> str:
    """The scheduler rule for the target device itself (catalog/udev.py, the rule
    `fsadvisor apply` writes: matched by ID_WWN, else ID_SERIAL, else its kernel name, with the
    kernel-name pattern of its kind). Without a device the rule names DEVICE and says how
    to get one that matches by identity."""
    # the udev rule's builder only when a configuration's commands are built (compare
    # imports this module for its statistics alone)
    from fsadvisor.catalog import udev
    from fsadvisor.infra.scripttext import comment

    if target is None:
        return "".join(
            line + "\n"
            for line in comment(
                "replace DEVICE with the whole disk's kernel name (lsblk -dno NAME), or run "
                "`fsadvisor apply --device /dev/...` for a rule matched by its WWN or serial"
            )
        ) + udev.udev_rule(udev.Target(DEVICE_PLACEHOLDER, "DEVICE"), scheduler)
    return udev.udev_rule(target, scheduler)


# Where the printed commands mount the filesystem (the fstab line's mount point too).
MOUNT_POINT = "/srv/data"


def commands_for(cfg: FsConfig, device_path: str | None, udev_target: Any = None) -> dict[str, Any]:
    # the udev rule's builder only when a configuration's commands are built (compare
    # imports this module for its statistics alone)
    from fsadvisor.catalog.udev import UDEV_RULE_PATH

    dev = device_path or DEVICE_PLACEHOLDER
    mount = catalog.mount_argv(cfg, dev, MOUNT_POINT)
    return {
        "mkfs": catalog.mkfs_argv(cfg, dev),
        "mount": mount,
        # What a sysadmin types after mkfs: the mount point first (mount fails without
        # it), then the filesystem's UUID for the fstab line (mkfs made a new one).
        "mount_setup": f"mkdir -p {shlex.quote(MOUNT_POINT)} && {shlex.join(mount)}",
        "uuid_command": shlex.join(["blkid", "-s", "UUID", "-o", "value", dev]),
        "mount_options": catalog.mount_options_string(cfg),
        "fstab": catalog.fstab_line(cfg),
        "udev": udev_rule(cfg.scheduler, udev_target if device_path else None),
        "udev_file": UDEV_RULE_PATH,
    }


@dataclass(frozen=True)
class CommandTarget:
    """The device path printed into mkfs/mount commands, decided by the caller (the service
    runs the safety check; ranking stays a pure function of model, profile and device).
    ``path`` None prints the placeholder; ``warning`` is added to every recommendation."""

    path: str | None = None
    warning: str | None = None
    udev: Any = None  # catalog.udev.Target of ``path`` (its kernel name, WWN, serial)


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
        warnings.append(
            f"{r.option}: {r.reason}"
            + (
                " — acceptable here: PLP confirmed"
                if r.hazard == "needs-plp"
                else f" — acceptable here because {r.acceptable_if}"
            )
        )
    missing = set(c.features) - set(catalog.features(cfg))
    if missing:
        return False, []
    return True, warnings


def is_baseline(cfg: FsConfig) -> bool:
    """ext4 with defaults and no scheduler (``baseline_config``): what every reason is
    measured against and every yearly saving is counted from."""
    return cfg.fs == "ext4" and not cfg.mount and not cfg.mkfs and cfg.scheduler == "none"


def baseline_config(device_size_bytes: int | None = None) -> FsConfig:
    """The configuration ``is_baseline`` names: what a distribution's mkfs.ext4 and mount
    give, scheduler none."""
    return catalog.default_config("ext4", device_size_bytes, "none")


def _reasons(
    model: FittedModel, cfg: FsConfig, profile: Profile, device: Device, scope: str
) -> list[Reason]:
    """The mechanisms behind ``cfg``'s difference from ext4 defaults, largest effect on
    efficiency first: the model's terms that share a mechanism are summed into one reason
    (so none repeats), with the stored sources that measured any of them."""
    if is_baseline(cfg):
        return []
    base = baseline_config(device.size_bytes)
    merged: dict[str, list] = {}
    for feat, d_perf, d_opj, sd_opj in contributions(
        model, cfg, base, profile.workload, kind_of(device), scope
    ):
        mech = _mechanism(feat)
        text = mech["text"] if mech else _plain_feature(feat)
        m = merged.setdefault(text, [0.0, 0.0, 0.0, (mech or {}).get("cite", ""), set()])
        m[0] += d_perf
        m[1] += d_opj
        m[2] += sd_opj**2  # independent-terms approximation of the summed reason's sd
        m[4].update(model.sources.get(feat, []))
    out = [
        Reason(text, cite, d_perf, d_opj, var**0.5, len(data))
        for text, (d_perf, d_opj, var, cite, data) in merged.items()
    ]
    return sorted(out, key=lambda r: -abs(r.d_opj))


_FEATURE_WORDS = {
    "fs": "filesystem",
    "opt": "option",
    "m": "mechanism",
    "ag": "allocation groups",
}


def _plain_feature(feat: str) -> str:
    """A model term without a mechanism entry, in words (never the internal tag itself):
    ``fs:xfs*smallw`` -> "filesystem xfs with small writes"."""
    head, _, rest = feat.partition(":")
    name, _, inter = rest.partition("*")
    words = {
        "smallw": "small writes",
        "rf": "reads",
        "meta": "metadata-heavy work",
        "fsync": "frequent fsync",
        "rnd": "random access",
        "wf": "writes",
        "lc": "many concurrent jobs",
        "small": "small requests",
        "buffered": "buffered I/O",
    }
    txt = f"{_FEATURE_WORDS.get(head, head)} {name.replace(':', ' ').replace('_', ' ')}"
    if inter:
        txt += " with " + " and ".join(words.get(x, x) for x in inter.split("*"))
    return txt.strip()


# Differences below this are not worth a non-default setting: the seeds' repetitions
# (seed 000: 10 runs) rarely pin an effect tighter, and this model's effects are smaller still.
TIE_TOLERANCE = 0.01


def rotational(device: Device) -> bool:
    return bool(device.rotational) or device.kind == "hdd"


def seeks(device: Device) -> bool:
    """A disk whose requests a scheduler has to sort: a rotational drive. Not a loop or zram
    device, whose rotational flag is its backing's (a direct-I/O loop on a file on a virtio
    disk reports 1): its requests go to a file, and the backing disk's own scheduler sorts
    what reaches it, so scheduler none on the loop device leaves nothing unsorted."""
    return rotational(device) and device.kind not in BACKED_KINDS


def exclusion(
    cfg: FsConfig, profile: Profile, device: Device, kernel_has: dict[str, bool] | None = None
) -> str | None:
    """Why this configuration may not be recommended for this profile on this device (a key
    of Recommendation.excluded), None when it may: the one eligibility rule of recommend,
    report, compare and fleet (through rank) and of the adaptive probe.
    - a device on this host gets only a filesystem its kernel mounts (``kernel_has``);
    - a rotational disk never gets scheduler none (a loop or zram device is no disk: seeks);
    - an O_DIRECT workload never gets ext4 data=journal (it silently turns buffered);
    - the profile's durability, PLP and feature constraints (permitted)."""
    why = _device_exclusion(cfg, profile, device, kernel_has)
    if why is not None:
        return why
    ok, _ = permitted(cfg, profile, device)
    if not ok:
        missing = set(profile.constraints.features) - set(catalog.features(cfg))
        return "missing_required_feature" if missing else "durability_hazard_not_allowed"
    return None


def _device_exclusion(
    cfg: FsConfig, profile: Profile, device: Device, kernel_has: dict[str, bool] | None
) -> str | None:
    """exclusion's checks of the device and the workload (cheap, per candidate); the
    profile's constraints are permitted's, which rank judges once per configuration."""
    if device.path and kernel_has is not None and not kernel_has.get(cfg.fs, True):
        return "not_supported_by_this_kernel"
    if seeks(device) and cfg.scheduler == "none":
        # a disk that seeks needs its requests sorted: never advise no scheduler for it
        return "scheduler_none_on_rotational_disk"
    if profile.workload.direct and cfg.mount_value("data") == "journal":
        return "o_direct_not_honoured"
    return None


def default_scheduler(device: Device) -> str:
    """The kernel's choice: none for multi-queue SSDs, mq-deadline for a rotational disk
    (block/elevator.c elevator_get_default: no scheduler only for non-rotational
    multi-queue devices; Debian's udev rules keep mq-deadline on disks)."""
    return "mq-deadline" if rotational(device) else "none"


def complexity(cfg: FsConfig, device: Device) -> int:
    """How many settings differ from what mkfs, mount and the kernel do by default."""
    return _settings_complexity(cfg, device) + (cfg.scheduler != default_scheduler(device))


def _settings_complexity(cfg: FsConfig, device: Device) -> int:
    """complexity() without the scheduler: the mkfs, mount and AG-count settings."""
    n = len(cfg.mkfs) + len([o for o in cfg.mount if o not in ("defaults", "relatime")])
    if cfg.fs == "xfs" and cfg.ag_count is not None:
        n += cfg.ag_count != catalog.default_ag_count(device.size_bytes)
    return n


class Ordering(NamedTuple):
    ordered: list  # the kept entries to show, in order
    alternatives: dict[FsConfig, dict[str, float]]  # each one's other schedulers
    tied: int  # distinct configurations in the tie set (listed first; 1: #1 stands alone)
    twins: np.ndarray  # per kept entry: the same score as a simpler one of its filesystem


def _order(
    kept: list,
    device: Device,
    top: int,
    X: np.ndarray | DesignRows | None = None,
    cov: np.ndarray | None = None,
    measured: Callable[[FsConfig], bool] | None = None,
    q: np.ndarray | None = None,
    here: Callable[[FsConfig], bool] | None = None,
) -> Ordering:
    """The first ``top`` distinct configurations, then the best of every other filesystem.

    The tie set comes first: every configuration statistically equal to the highest-scoring
    candidate (the one tie rule of the answer: lead.tied_with, the ``1=`` labels, the
    headline and the confidence all read it). Then best first — but a candidate whose lead over a simpler one is within the model's own
    uncertainty of that difference (rows of ``X`` with ``cov``: the sd of the log ops/J
    difference, in which shared terms cancel) or within TIE_TOLERANCE has not earned its
    extra settings: among such statistically equal candidates the one with the fewest
    non-default settings comes first. The same configuration under another scheduler is not
    a separate recommendation: it becomes a scheduler alternative, scored against the one
    chosen. Among equals, a filesystem with data behind its effects goes before one that
    only has priors (``measured``): an unmeasured configuration never wins a tie on the
    strength of its prior; and before both, a configuration a probe of this very device ran
    with this workload (``here``): among equals, what was measured on the user's drive is
    the answer, not a simpler one the model only predicts. ``q``: the rows' x cov x' when
    the caller has them already."""
    # A configuration with its scheduler left out, as a plain tuple (FsConfig's fields but
    # the scheduler): grouping by it costs a hash, not a dataclasses.replace per candidate.
    # complexity() per candidate, its settings' part worked out once per configuration
    # (the same for each of its schedulers).
    bare_ids: dict[tuple, int] = {}
    score_of: dict[tuple, dict[str, float]] = {}
    settings_cx: list[int] = []
    default_sched = default_scheduler(device)
    bare_l: list[int] = []
    cx_l: list[int] = []
    for val, cfg, _, _ in kept:
        key = (cfg.fs, cfg.mkfs, cfg.mount, cfg.ag_count)
        b = bare_ids.get(key)
        if b is None:
            b = bare_ids[key] = len(bare_ids)
            settings_cx.append(_settings_complexity(cfg, device))
            score_of[key] = {}
        score_of[key][cfg.scheduler] = val
        bare_l.append(b)
        cx_l.append(settings_cx[b] + (cfg.scheduler != default_sched))
    bare = np.array(bare_l, dtype=np.intp)
    cx = np.array(cx_l)
    prior_only = np.array([0 if measured is None or measured(item[1]) else 1 for item in kept])
    not_here = np.array([0 if here is not None and here(item[1]) else 1 for item in kept])
    fs_of = np.array([item[1].fs for item in kept])
    logv = np.log(np.maximum([item[0] for item in kept], 1e-300))
    tol = -math.log(1 - TIE_TOLERANCE)

    # var(x_i - x_0) = q_i + q_0 - 2 x_i.cov.x_0 with q = diag(X cov X'): one matrix product
    # up front (or the caller's q), then a matrix-vector product per pick over every kept
    # row, read at the rows still in play (no copy of those rows: X may be a DesignRows).
    if X is not None and cov is not None:
        if q is None:
            q = row_variances(X, cov)
    else:
        q = None

    def tie_band(idx: np.ndarray) -> np.ndarray:
        """Which of ``idx`` (best-scored first) are statistically equal to its first."""
        gap = logv[idx[0]] - logv[idx]
        limit = np.full(len(idx), tol)
        if q is not None and X is not None and cov is not None:  # q: only with X and cov
            cross = (X @ (cov @ X[idx[0]]))[idx]
            var = q[idx] + q[idx[0]] - 2 * cross
            limit = np.maximum(limit, np.sqrt(np.maximum(var, 0.0)))
        return gap <= limit

    def pick(idx: np.ndarray) -> int:
        band = idx[tie_band(idx)]
        # measured on this device first, then a filesystem with data before prior-only (an
        # unmeasured configuration never wins a tie on the strength of its prior), then
        # fewest settings, then the higher score; on a full tie the earlier (better-scored)
        return int(band[np.lexsort((-logv[band], cx[band], prior_only[band], not_here[band]))[0]])

    # A twin: a candidate the model cannot tell apart at all from a simpler one of its
    # filesystem (the same score: a setting whose mechanism does not act here, an AG count for
    # a reader). It is never listed, never counted in the tie set, never a leader.
    twins = np.zeros(len(kept), dtype=bool)
    simplest: dict[tuple, int] = {}
    for i in np.lexsort((np.arange(len(kept)), cx)):  # simplest first, then best-scored
        same = (fs_of[i], round(float(logv[i]), 12))
        if same in simplest:
            twins[i] = True
        else:
            simplest[same] = int(i)
    ordered: list = []  # kept entries (score, configuration, row, warnings), as Ordering
    alive = ~twins  # kept is sorted by score, best first
    # The tie set (TIE RULE): every candidate within max(TIE_TOLERANCE, 1 sd of the
    # difference) of the highest-scoring one, less those clearly below another such
    # candidate by the same measure (_undominated). It is listed first, in the rule's order
    # (measured here > data > fewest settings > score); every tie the answer states is it.
    everyone = np.flatnonzero(alive)
    tie = everyone[tie_band(everyone)] if len(everyone) else everyone
    if len(tie) > 1 and X is not None and cov is not None:
        tie = _undominated(tie, logv, tol, X, cov)
    tie_set = set(bare[tie].tolist())
    in_tie = np.isin(np.arange(len(kept)), tie)
    while (alive & in_tie).any() and len(ordered) < top:
        idx = np.flatnonzero(alive & in_tie)
        i = int(idx[np.lexsort((-logv[idx], cx[idx], prior_only[idx], not_here[idx]))[0]])
        alive &= bare != bare[i]
        ordered.append(kept[i])
    while alive.any() and len(ordered) < top:
        i = pick(np.flatnonzero(alive))
        alive &= bare != bare[i]
        ordered.append(kept[i])
    for fs in dict.fromkeys(item[1].fs for item in kept):
        rest = np.flatnonzero(alive & (fs_of == fs))
        if len(rest) and not any(o[1].fs == fs for o in ordered):
            ordered.append(kept[pick(rest)])
    alternatives = {}
    for item in ordered:
        cfg = item[1]
        alternatives[cfg.with_(scheduler="none")] = {
            "_best": item[0],
            **{
                s: v / item[0]
                for s, v in score_of[(cfg.fs, cfg.mkfs, cfg.mount, cfg.ag_count)].items()
                if s != cfg.scheduler and item[0]
            },
        }
    return Ordering(ordered, alternatives, len(tie_set), twins)


def _has_data(model: FittedModel, cfg: FsConfig, w: Workload | None = None) -> bool:
    """Whether the fit saw data on this filesystem for this kind of workload (ext4 is the
    baseline every effect is measured against, so it always has). A filesystem measured only
    on plain reads and writes rests on priors for a metadata or fsync workload: f2fs's
    metadata cost is otherwise the pooled mean of the filesystems that were measured, which
    2010's ext2 pulls below ext4's and xfs's -- no reason to prefer it."""
    if cfg.fs == "ext4":
        return True
    if not model.sources.get(f"fs:{cfg.fs}"):
        return False
    if w is None:
        return True
    return all(
        any(model.sources.get(k) for k in alts) for alts in mechanisms.own_data_terms(cfg.fs, w)
    )


def _undominated(idx: np.ndarray, logv: np.ndarray, tol: float, X, cov: np.ndarray) -> np.ndarray:
    """The members of a tie band (``idx``, best-scored first) that no higher-scoring member
    kept before them beats by more than max(``tol``, 1 sd of *their* difference). The band
    is measured against the leader alone, and a wide leader-vs-rival sd (XFS against ext4 on
    a device nobody measured) can hold a variant its own base configuration clearly beats:
    ext4 with data=journal, 15% below ext4's defaults on a Postgres-style workload with a
    sign the model is sure of (every block written twice), is no "1=" beside them."""
    R = np.asarray(X[idx])
    Q = R @ cov @ R.T
    keep = [0]
    for a in range(1, len(idx)):
        k = np.array(keep)
        var = np.maximum(Q[a, a] + Q[k, k] - 2.0 * Q[a, k], 0.0)
        if not np.any(logv[idx[k]] - logv[idx[a]] > np.maximum(tol, np.sqrt(var))):
            keep.append(a)
    return idx[keep]


def rank(
    model: FittedModel,
    profile: Profile,
    device: Device,
    top: int = 5,
    scope: str = "system",
    energy_basis: str = "total",
    candidates: list[FsConfig] | None = None,
    kernel_has: dict[str, bool] | None = None,
    target: CommandTarget = PLACEHOLDER_TARGET,
    device_params=None,
    predict: Callable[..., list[Prediction]] | None = None,
) -> Recommendation:
    """Rank the candidates for ``profile`` on ``device``. Pure: the host facts it reports
    come in as arguments, ``kernel_has`` (filesystem -> this kernel mounts it; None: not
    checked), ``target`` (where the printed commands point; the placeholder by default,
    so nothing unchecked is ever printed ready to run) and ``device_params`` (the device's
    calibration or datasheet prior; None: what the fit knows of it). ``predict`` stands in
    for predict_many with the same signature (the TUI's what-if passes one that answers
    from predictions it already made for this workload).

    The cyclic garbage collector is paused while it runs (and restored after, also on an
    error): a ranking makes a few long-lived containers per candidate and no reference
    cycles, and each full collection it triggered walked every object the process holds
    (the caller's candidate lists too), so ranking grew faster than the candidate count
    (benchmarks/rank_scaling.py shows it, against a run without the collector)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _rank(
            model,
            profile,
            device,
            top,
            scope,
            energy_basis,
            candidates,
            kernel_has,
            target,
            device_params,
            predict,
        )
    finally:
        if was_enabled:
            gc.enable()


def first_choice(
    model: FittedModel, cfgs: list[FsConfig], w: Workload, device: Device
) -> tuple[FsConfig, list[FsConfig]] | None:
    """The configuration a ranking puts first among ``cfgs`` for workload ``w``, as a
    sysadmin who has said nothing more gets it: durability required, power-loss protection
    as the device's record says (else unknown, so nothing risky), the tie rule (statistically
    equal candidates give way to one measured on this device with this workload, then to the
    one with the fewest settings). Returns it with the
    candidates it was chosen from (``exclusion``'s eligible ones), None when none is: held-out
    validation (validate.leave_one_device_out's ``pick``) judges the answer against the best
    of those, not against a configuration the answer may never give."""
    profile = Profile(name="validation", description="", workload=w)
    eligible = [c for c in cfgs if exclusion(c, profile, device) is None]
    if not eligible:
        return None
    rec = rank(model, profile, device, top=1, candidates=eligible)
    if not rec.ranked:
        raise FsAdvisorError(f"no candidate ranked for {w.key()}: excluded {rec.excluded}")
    return rec.ranked[0].config, eligible


def _rank(
    model: FittedModel,
    profile: Profile,
    device: Device,
    top: int,
    scope: str,
    energy_basis: str,
    candidates: list[FsConfig] | None,
    kernel_has: dict[str, bool] | None,
    target: CommandTarget,
    device_params,
    predict: Callable[..., list[Prediction]] | None,
) -> Recommendation:
    if energy_basis not in ("total", "active"):
        raise FsAdvisorError(f"energy basis must be 'total' or 'active', not {energy_basis!r}")
    cands = (
        candidates
        if candidates is not None
        else catalog.candidates(device.size_bytes, sector_size=device.logical_block_size)
    )
    w = profile.workload
    c = profile.constraints
    rank_by = "bytes_per_joule" if w.rank_by == "bytes" else "ops_per_joule"
    excluded = {
        "durability_hazard_not_allowed": 0,
        "missing_required_feature": 0,
        "o_direct_not_honoured": 0,
        "scheduler_none_on_rotational_disk": 0,
        "not_supported_by_this_kernel": 0,
        "fails_min_iops": 0,
        "fails_min_mb_s": 0,
        "fails_max_p99_ms": 0,
    }
    allowed: list[tuple[FsConfig, list[str]]] = []
    verdicts: dict[tuple, tuple[bool, list[str], bool]] = {}
    # A device on this host can only get a filesystem this kernel mounts; offline (a spec, a
    # library drive) every filesystem stays, with a note to check the target's kernel.
    unmountable = (
        {fs for fs, ok in kernel_has.items() if not ok}
        if device.path and kernel_has is not None
        else set()
    )
    for cfg in cands:
        why = _device_exclusion(cfg, profile, device, kernel_has)  # exclusion's own checks
        if why is not None:
            excluded[why] += 1
            continue
        # A configuration's hazards and features are its filesystem's settings, whatever
        # the scheduler (tests/unit/test_rank_shared_products.py holds the catalog to it):
        # judged once per configuration, not once per scheduler.
        bare = (cfg.fs, cfg.mkfs, cfg.mount, cfg.ag_count)
        verdict = verdicts.get(bare)
        if verdict is None:
            ok, warns = permitted(cfg, profile, device)
            verdict = verdicts[bare] = (
                ok,
                warns,
                not ok and bool(set(c.features) - set(catalog.features(cfg))),
            )
        ok, warns, missing = verdict
        if not ok:
            excluded[
                "missing_required_feature" if missing else "durability_hazard_not_allowed"
            ] += 1
            continue
        # The verdict's own list, shared by the configuration's schedulers: make() copies
        # it before adding to it (a copy per candidate cost a tracked object each).
        allowed.append((cfg, warns))
    design: dict = {}
    preds = (predict or predict_lazily)(
        model,
        [a[0] for a in allowed],
        w,
        device,
        scope,
        design_out=design,
        device_params=device_params,
    )
    # The hard cap changes a figure only where a prediction is over the device's ceiling;
    # elsewhere it annotates the basis and clips the intervals, which only the shown
    # entries need (make() caps those): same scores, a dataclasses.replace per shown entry
    # instead of per candidate.
    capped: set[int] = set()
    if isinstance(preds, Predictions):
        # predict_many's own answer: scored from its columns; a Prediction is built only
        # for an entry over the ceiling (capped here, as below) and for the entries shown.
        # One basis for all of them, so one limit.
        cols = preds.columns
        iops_c, p99_c, watts_c, opj_c = (
            list(cols[k]) for k in ("iops", "p99_latency_ms", "watts", "ops_per_joule")
        )
        bs = preds.bs
        mbs_c = [io * bs / 1e6 for io in iops_c]
        bpj_c = [e * bs for e in opj_c]
        idle_c: list[float] = []  # no predictions: nothing allowed to score
        if len(preds):
            limit = ceilings.iops_limit(preds[0], w)
            for n in [n for n, io in enumerate(iops_c) if io > limit]:
                p = ceilings.cap(preds[n], w)
                preds.replace(n, p)
                capped.add(id(p))
                iops_c[n], mbs_c[n], p99_c[n] = p.iops, p.mb_s, p.p99_latency_ms
                watts_c[n], opj_c[n], bpj_c[n] = p.watts, p.ops_per_joule, p.bytes_per_joule
            idle_c = [float(preds[0].basis.get("idle_watts") or 0.0)] * len(preds)
    else:  # a stand-in's list (the TUI's what-if): cap and read each one
        limit_of: dict[int, float] = {}  # by basis: predict_many gives one to all it predicts
        for n, p in enumerate(preds):
            ceiling = limit_of.get(id(p.basis))
            if ceiling is None:
                ceiling = limit_of[id(p.basis)] = ceilings.iops_limit(p, w)
            if p.iops > ceiling:
                preds[n] = ceilings.cap(p, w)
                capped.add(id(preds[n]))
        iops_c, mbs_c, p99_c, watts_c, opj_c, bpj_c = (
            [getattr(p, k) for p in preds]
            for k in ("iops", "mb_s", "p99_latency_ms", "watts", "ops_per_joule", "bytes_per_joule")
        )
        idle_c = [float(p.basis.get("idle_watts") or 0.0) for p in preds]

    def shown(p: Prediction) -> Prediction:  # cap once: a second cap would say "not capped"
        return p if id(p) in capped else ceilings.cap(p, w)

    # (score, configuration, its row in preds, warnings)
    kept: list[tuple[float, FsConfig, int, list[str]]] = []
    best_unconstrained: tuple[float, FsConfig, int] | None = None
    mult = w.bs_bytes if rank_by == "bytes_per_joule" else 1
    for n, (cfg, warns) in enumerate(allowed):
        if energy_basis == "active":
            watts = watts_c[n]
            active_w = max(watts - idle_c[n], 0.05 * watts)
            val = (iops_c[n] * mult) / active_w
        else:
            val = bpj_c[n] if rank_by == "bytes_per_joule" else opj_c[n]
        if best_unconstrained is None or val > best_unconstrained[0]:
            best_unconstrained = (val, cfg, n)
        if c.min_iops is not None and iops_c[n] < c.min_iops:
            excluded["fails_min_iops"] += 1
            continue
        if c.min_mb_s is not None and mbs_c[n] < c.min_mb_s:
            excluded["fails_min_mb_s"] += 1
            continue
        if c.max_p99_ms is not None and p99_c[n] > c.max_p99_ms:
            excluded["fails_max_p99_ms"] += 1
            continue
        kept.append((val, cfg, n, warns))
    if not kept:
        parts = [
            f"{k}={v}"
            for k, v in (
                ("min_iops", c.min_iops),
                ("min_mb_s", c.min_mb_s),
                ("max_p99_ms", c.max_p99_ms),
            )
            if v is not None
        ]
        hint = ""
        if best_unconstrained:
            _, cfg, n = best_unconstrained
            p = shown(preds[n])
            hint = (
                f"; best allowed candidate predicts {p.iops:.0f} IOPS, {p.mb_s:.0f} MB/s, "
                f"p99 {p.p99_latency_ms:.2f} ms ({cfg.label()})"
            )
        raise FsAdvisorError(
            f"no configuration satisfies profile {profile.name!r} "
            f"({', '.join(parts) or 'durability/feature constraints'}; "
            f"{len(cands)} candidates considered){hint}"
        )
    kept.sort(key=lambda t: -t[0])
    # A kept entry carries its row of the design (equal configurations have equal rows).
    kept_rows = [k[2] for k in kept]
    # The kept rows, best first: of a factored design (predict_lazily) without building
    # them, else (a stand-in's ndarray) a copy. What follows takes only X @ v and rows.
    X = (
        design["X"].take(kept_rows)
        if isinstance(design["X"], DesignRows)
        else design["X"][kept_rows]
    )
    # x cov x' of every kept row: from predict_many when it gave them (a stand-in for it
    # may not), else computed once here; _order, _lead and the confidence all use it.
    q = np.asarray(design["q"])[kept_rows] if "q" in design else row_variances(X, design["cov"])
    evidence: dict[str, bool] = {}  # _has_data depends on the filesystem alone here

    def has_data(cfg: FsConfig) -> bool:
        if cfg.fs not in evidence:
            evidence[cfg.fs] = _has_data(model, cfg, w)
        return evidence[cfg.fs]

    def here(cfg: FsConfig) -> bool:
        return model.measured_here(device, cfg, w)

    ordered, alternatives, n_tied, twins = _order(
        kept, device, top, X, design["cov"], measured=has_data, q=q, here=here
    )

    unit = "bytes/J" if rank_by == "bytes_per_joule" else "ops/J"
    tol = -math.log(1 - TIE_TOLERANCE)

    def tied(a, b) -> bool:
        gap = abs(math.log(a[0] / b[0])) if a[0] > 0 and b[0] > 0 else 0.0
        return gap <= max(tol, difference_sd(design, a[2], b[2]))

    def make(i: int, item) -> Ranked:
        val, cfg, n, warns = item
        p = shown(preds[n])
        warns = list(warns)
        if cfg.fs == "f2fs":
            here = (
                "not checked"
                if kernel_has is None
                else "supported"
                if kernel_has.get("f2fs")
                else "NOT supported"
            )
            warns.append(
                f"f2fs: check that the target host's kernel supports f2fs "
                f"(/proc/filesystems); this machine's kernel: {here}"
            )
        if "nodiscard" in cfg.mount:
            warns.append(
                "nodiscard: no online TRIM; schedule fstrim (e.g. systemctl enable "
                "--now fstrim.timer) so the SSD learns which blocks are free"
            )
        if device.kind in ("loop", "ram-loop"):
            warns.append("loop device: figures describe the backing file, not an SSD")
        if target.warning:
            warns.append(target.warning)
        alts = {
            k: round(v, 4)
            for k, v in alternatives[cfg.with_(scheduler="none")].items()
            if k != "_best"
        }
        return Ranked(
            rank=i + 1,
            config=cfg,
            prediction=p,
            score=val,
            reasons=_reasons(model, cfg, profile, device, scope),
            warnings=warns,
            commands=commands_for(cfg, target.path, target.udev),
            scheduler_alternatives=alts,
            ag_count=(cfg.ag_count or catalog.default_ag_count(device.size_bytes))
            if cfg.fs == "xfs"
            else None,
        )

    ranked = [make(i, item) for i, item in enumerate(ordered[:top])]
    baseline = next((shown(preds[n]) for n, a in enumerate(allowed) if is_baseline(a[0])), None)
    _mark_ties(ranked, ordered, tied, device, has_data, n_tied, here)
    sans_ag = _sans_ag(kept) if allocation_heavy(w) else {}
    for r in ranked:
        r.ag_note = _ag_note(r, sans_ag, design, w, device, unit)
    best_fs: dict[str, Ranked] = {}
    for i, item in enumerate(ordered):
        fs = item[1].fs
        if fs not in best_fs:
            best_fs[fs] = ranked[i] if i < len(ranked) else make(i, item)
    notes = [
        f"ranked by {rank_by.replace('_', ' ')} ({energy_basis} energy, {scope} scope); "
        f"power level: {ranked[0].prediction.basis.get('power_level')}",
    ]
    lead = _lead(ordered, design, n_tied)
    # "measured on this device" only for runs of this device's own identity, probed here;
    # a loop/zram class, imported runs and a spec say what they are (fit.measured_basis)
    lead["measured_basis"] = model.measured_basis(device)
    lead["measured_here"] = lead["measured_basis"] == "this device"
    lead["worth"] = _knob_worth(kept, design, device, ordered[0][1])
    params = model.params_for(device)
    if params.measured or "no figures for device kind" in params.source:
        # Say which device figures the ranking rests on when they are this device's own
        # (fitted from its runs) or a stand-in for an unknown kind.
        notes.append(f"device figures: {params.source}")
    if model.known_device(device):
        notes.append(
            "this device's own measurements are in the fit: its own level and "
            "option effects apply, on top of the shared ones"
        )
    if c.plp == "unknown" and device.plp == "unknown":
        notes.append(
            "PLP unknown: no option with a durability hazard was considered (say "
            "--plp yes or no to widen the search)"
        )
    if unmountable and excluded["not_supported_by_this_kernel"]:
        notes.append(
            f"not supported by this kernel, so left out for {device.path}: "
            f"{', '.join(sorted(unmountable))} (/proc/filesystems)"
        )
    if excluded.get("o_direct_not_honoured"):
        notes.append(
            "data=journal candidates were left out: they silently turn this "
            "profile's O_DIRECT I/O into buffered I/O (verified on this kernel)"
        )
    # over every kept candidate (scheduler variants too), not only the ones displayed; a
    # twin of a simpler candidate (_order) is never a leader
    conf = decision_confidence(
        lambda i: kept[i][1].label(),
        [math.log(max(item[0], 1e-300)) for item in kept],
        X,
        design["cov"],
        first=kept.index(ordered[0]),
        tolerance=-math.log(1 - TIE_TOLERANCE),
        q=q,
        tie_set=n_tied,
        eligible=~twins,
    )
    return Recommendation(
        profile=profile,
        device=device,
        rank_by=rank_by,
        energy_basis=energy_basis,
        scope=scope,
        considered=len(cands),
        excluded=excluded,
        ranked=ranked,
        best_per_filesystem=best_fs,
        notes=notes,
        lead=lead,
        confidence=conf,
        baseline=baseline,
    )


def _mark_ties(
    ranked: list[Ranked],
    ordered: list,
    tied: Callable,
    device: Device,
    measured: Callable[[FsConfig], bool],
    n_tied: int = 1,
    here: Callable[[FsConfig], bool] | None = None,
) -> None:
    """Tie groups over the shown list: the first ``n_tied`` entries are the tie set of #1
    (``1=``; _order's rule); below it an entry joins the group of the entry that opened it
    when the two are statistically equal. An entry listed above a higher-scoring one gets an
    ``order_note`` naming the rule that put it there."""
    first = min(max(n_tied, 1), len(ranked))
    groups: list[int] = [0] * first
    head = first
    scores = [r.score for r in ranked]
    for i in range(first, len(ranked)):
        # An entry joins the open group when it is tied with the group's first, or when
        # anything from here on outscores something already in the group: _order only puts
        # a lower score first among statistical equals, so those are one tie.
        if i > head and not (
            tied(ordered[head], ordered[i]) or max(scores[i:]) > min(scores[head:i])
        ):
            head = i
        groups.append(head)
    # the label each heading shows ("#1=", "#4"): an order note names an entry by it and
    # its configuration, as the heading (and --json's tie_label and config_label) do
    labels = [
        f"{groups[i] + 1}=" if groups.count(groups[i]) > 1 else str(r.rank)
        for i, r in enumerate(ranked)
    ]
    for i, r in enumerate(ranked):
        r.tie_label = labels[i]
        above = [(j, o) for j, o in enumerate(ranked) if j > i and o.score > r.score]
        if not above:
            continue
        j, o = above[0]
        ci, co = complexity(r.config, device), complexity(o.config, device)
        if here is not None and here(r.config) and not here(o.config):
            r.order_rule = "measured here"
            why = "measured on this device with this workload (that one is predicted only)"
        elif measured(r.config) and not measured(o.config):
            r.order_rule = "measured"
            why = (
                "measured data behind it (that one's filesystem rests on priors only for "
                "this kind of workload)"
            )
        elif ci < co:
            r.order_rule = "simpler"
            why = f"fewer non-default settings ({ci} vs {co}) among statistically equal candidates"
        else:
            r.order_rule = "uncertainty"
            why = "within the uncertainty of the difference"
        r.order_note = (
            f"listed above #{labels[j]} {o.config.label()} (score {o.score / r.score - 1:.1%} "
            f"higher): {why}"
        )


def _lead(ordered: list, design: dict, n_tied: int) -> dict[str, Any]:
    """How #1 stands: how many other distinct configurations share its tie set (_order's),
    and its gap to #2 with the sd of that difference (log scale, shared terms cancel). #1 is
    clearly ahead exactly when it is alone in its tie set."""
    first = ordered[0]
    out: dict[str, Any] = {
        "tied_with": max(n_tied - 1, 0),
        "runner_up": None,
        "runner_up_gap": None,
        "difference_sd": None,
        "clearly_ahead": False,
    }
    if len(ordered) > 1:
        second = ordered[1]
        g = math.log(first[0] / second[0]) if first[0] > 0 and second[0] > 0 else 0.0
        s = difference_sd(design, first[2], second[2])
        out.update(
            runner_up=second[1].label(),
            runner_up_gap=math.expm1(g),
            difference_sd=math.expm1(s),
            clearly_ahead=n_tied <= 1,
        )
    return out


def _knob_worth(kept: list, design: dict, device: Device, top: FsConfig) -> dict[str, Any]:
    """What each knob is worth for this workload, from the predictions of the candidates the
    profile allows: the best filesystem's defaults against ext4's (filesystem); the best
    options of #1's filesystem against its defaults (options); the best AG count of that
    configuration against mkfs.xfs's (AG count); the best scheduler of #1 against the kernel's
    default (scheduler). Each with its 90% interval, from the sd of the log difference (in
    which the shared terms cancel); ``resolved`` when the whole interval is above the tie
    tolerance: the knob matters here."""
    sched0 = default_scheduler(device)
    tol = -math.log(1 - TIE_TOLERANCE)
    by_cfg = {item[1]: item for item in kept}

    def knob(better, base) -> dict[str, Any] | None:
        if better is None or base is None:
            return None
        g = math.log(better[0] / base[0]) if better[0] > 0 and base[0] > 0 else 0.0
        sd = difference_sd(design, better[2], base[2]) if better is not base else 0.0
        return {
            "best": better[1].label(),
            "against": base[1].label(),
            "gain": math.expm1(g),
            "low": math.expm1(g - Z90 * sd),
            "high": math.expm1(g + Z90 * sd),
            "resolved": g - Z90 * sd > tol,
        }

    out: dict[str, Any] = {}
    defaults = []
    for fs in dict.fromkeys(item[1].fs for item in kept):
        try:
            d = by_cfg.get(catalog.default_config(fs, device.size_bytes, sched0))
        except ConfigError:  # a filesystem this device is too small for
            d = None
        if d is not None:
            defaults.append(d)
    if len(defaults) > 1:
        # against ext4's defaults, what a server gets unless someone chooses (or, where ext4's
        # are the best, against the next filesystem's)
        best = max(defaults, key=lambda k: k[0])
        others = [d for d in defaults if d is not best]
        against = next((d for d in others if d[1].fs == "ext4"), max(others, key=lambda k: k[0]))
        out["filesystem"] = knob(best, against)
    fs_default = next((d for d in defaults if d[1].fs == top.fs), None)
    ag0 = (None, catalog.default_ag_count(device.size_bytes))
    same_fs = [
        k for k in kept if k[1].fs == top.fs and k[1].scheduler == sched0 and k[1].ag_count in ag0
    ]
    if same_fs and fs_default is not None:
        out["options"] = knob(max(same_fs, key=lambda k: k[0]), fs_default)
    if top.fs == "xfs":
        base = by_cfg.get(top.with_(ag_count=None, scheduler=sched0))
        ags = [
            k
            for k in kept
            if k[1].fs == "xfs"
            and k[1].mkfs == top.mkfs
            and k[1].mount == top.mount
            and k[1].scheduler == sched0
        ]
        if base is not None and len(ags) > 1:
            out["ag_count"] = knob(max(ags, key=lambda k: k[0]), base)
    base = by_cfg.get(top.with_(scheduler=sched0))
    # (compared as plain tuples, as _order does: a dataclasses.replace per candidate is not)
    bare = (top.fs, top.mkfs, top.mount, top.ag_count)
    scheds = [k for k in kept if (k[1].fs, k[1].mkfs, k[1].mount, k[1].ag_count) == bare]
    if base is not None and len(scheds) > 1:
        out["scheduler"] = knob(max(scheds, key=lambda k: k[0]), base)
    return {k: v for k, v in out.items() if v is not None}


def allocation_heavy(w) -> bool:
    """Several writers allocating at once: the condition through which XFS allocation groups
    act (predict/spec.py concurrent_allocation); elsewhere the AG count changes nothing."""
    return spec.concurrent_allocation(w) > 0


def _ag_free_key(cfg: FsConfig) -> tuple:
    return (cfg.fs, cfg.mkfs, cfg.mount, cfg.scheduler)


def _sans_ag(kept: list) -> dict[tuple, list]:
    """The kept candidates grouped by everything but the AG count, built once per ranking
    instead of a dataclasses.replace per candidate for every entry shown (that was 40% of
    ranking 10,000 candidates)."""
    groups: dict[tuple, list] = {}
    for k in kept:
        groups.setdefault(_ag_free_key(k[1]), []).append(k)
    return groups


def _ag_note(
    r: Ranked, sans_ag: dict[tuple, list], design: dict, w, device: Device, unit: str
) -> str | None:
    """For an xfs entry of an allocation-heavy workload: the AG count the model prefers for
    this otherwise identical configuration, its effect against the one shown and the sd of
    that difference."""
    if r.config.fs != "xfs" or not allocation_heavy(w):
        return None
    default = catalog.default_ag_count(device.size_bytes)
    shown = r.config.ag_count or default
    same = sans_ag.get(_ag_free_key(r.config), [])
    if len(same) < 2:
        return None
    best = max(same, key=lambda k: k[0])
    best_ag = best[1].ag_count or default
    mine = next(k for k in same if k[1] == r.config)
    sd = difference_sd(design, best[2], mine[2])
    if best_ag == shown:
        others = [k for k in same if (k[1].ag_count or default) != shown]
        ref = next((k for k in others if (k[1].ag_count or default) == default), others[0])
        ref_ag = ref[1].ag_count or default
        sd = difference_sd(design, mine[2], ref[2])
        return (
            f"AG count {shown} is the model's choice for this many concurrent writers: "
            f"{mine[0] / ref[0] - 1:+.1%} {unit} vs {ref_ag} (1 sd {math.expm1(sd):.1%})"
        )
    verdict = (
        "within the uncertainty, so the simpler setting is kept"
        if math.log(best[0] / mine[0]) <= sd
        else "worth probing"
    )
    return (
        f"AG count: the model prefers {best_ag} for this many concurrent writers, "
        f"{best[0] / mine[0] - 1:+.1%} {unit} vs {shown} (1 sd {math.expm1(sd):.1%}) — "
        f"{verdict}"
    )
