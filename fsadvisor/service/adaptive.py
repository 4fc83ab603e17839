"""`fsadvisor probe --adaptive`: measure only what can change the answer, stop when settled.

The matrix is the one ``probe --profile P`` would plan (its configurations x the profile's
workload), but no cell runs because it is next in the list: after every stored run the model
is refitted on the store (a fit takes ~0.2 s on the seeded store), the candidates' posterior
on this device is recomputed, and predict/adaptive.py picks the cell with the most expected
reduction of P(wrong choice) per second of device time — or stops, at the target confidence,
when nothing is worth measuring, or at the budget. The cells run through the probe's own
MatrixRun (one matrix, one scratch device, the state file, interruption and cleanup, every
run stored with its provenance), so ``--resume`` continues an interrupted adaptive probe.

An uncalibrated device is calibrated first (service/calibration.py's short raw matrix), so
the roofline the model reasons from is this device's. Nothing here prints.

Several profiles (``--profile a --profile b``) are one session, not one probe after another:
one calibration, one matrix (the configurations x each profile's workload), one budget. At
each step every profile's posterior and stop rule is computed from one model fit
(JointChooser), and joint_pick measures the cell of any profile with the most value per
second -- the single-profile rule's, weighted by the profile's --profile-weights -- so a
profile whose leaders are apart gets few cells and one whose leaders are close gets more.
Two profiles with the same workload share its cells: a run counts for both. The session
stops when every profile's stop rule has fired or nothing fits the budget; the answer
(leader, confidence, why it stopped) is per profile.
"""

from __future__ import annotations

import functools
import math
import os
import re
import shlex
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from fsadvisor import catalog, limits
from fsadvisor.domain import Device, Plp, device_identity
from fsadvisor.errors import ConfigError, DeviceRefused, FsAdvisorError, NotSupported
from fsadvisor.host import cpu, device as devmod
from fsadvisor.infra.scripttext import COLUMNS, UNFOLDED, fold_comments
from fsadvisor.predict.fit import fit
from fsadvisor.predict.predict import predict_many
from fsadvisor.predict.settings import ModelSettings
from fsadvisor.predict.rank import TIE_TOLERANCE, default_scheduler, exclusion
from fsadvisor.predict import adaptive as sel
from fsadvisor.probe import plan as planmod
from fsadvisor.probe import calibration_plan as cplan
from fsadvisor.probe.calibration_plan import DEFAULT_RUNTIME_S as CALIBRATION_WINDOW_S
from fsadvisor.probe.report import ProgressEvent
from fsadvisor.probe.timing import DEFAULT_REPS
from fsadvisor.profiles import load_profile
from fsadvisor.service import calibration, probing
from fsadvisor.service.advice import stored_device_params
from fsadvisor.service.device_figures import device_params_for
from fsadvisor.probe.options import RunChoices
from fsadvisor.service.request import ProbeRequest
from fsadvisor.predict import confidence as C
from fsadvisor.probe.report import results_from_store
from fsadvisor.probe.run import MatrixRun
from fsadvisor.probe.state import StateFile, state_path_for
from fsadvisor.store import open_store

DEFAULT_TARGET = RunChoices().target_confidence  # --target-confidence, declared once
# Repetitions of one cell beyond which another adds little: seed 000 ran 10; the full
# matrix's default is 3, so the adaptive probe may go a bit beyond it where it matters.
MAX_REPS = 6
# Without --budget the probe spends at most this share of the exhaustive matrix's estimated
# device time, a calibration it has to run included (never less than the calibration and
# least_deciding: a small matrix's fifth can be less). It is a default for a decision under a
# budget, not a proof of settledness: on a device whose one run scatters by more than its
# configurations differ, no stop rule fires early and the budget is what ends the probe.
# Replayed on the stored exhaustive matrix of a disk-backed loop device (9 configurations x
# 7 workloads x 3 runs, run-to-run cv 5-14%) and the reference matrices (`python
# benchmarks/adaptive_replay.py --db benchmarks/data/fidelity-diskloop.sql.gz --seeds 32
# --shares 0.15,0.2,0.25 --truth reference --noise runs`,
# benchmarks/results/adaptive_replay-2026-11-29e.txt), the adaptive choice's regret on the
# disk-backed loop was <= 3% on 6 of 7 workloads at a fifth of the matrix (mean 2.0%) and at
# a quarter (mean 1.2%), and on the RAM loop and zram a fifth gave up at most 0.5% more than a
# quarter; a fifth keeps a real drive's 98-run matrix (bench-fio's example, ~1 h 38) to
# about 20 minutes. `--budget` sets any other.
DEFAULT_BUDGET_SHARE = 0.2


def _within(groups) -> tuple[float, int]:
    """Sum of squares within groups and its degrees of freedom."""
    ss, df = 0.0, 0
    for g in groups:
        g = list(g)
        if len(g) >= 2:
            m = sum(g) / len(g)
            ss += sum((x - m) ** 2 for x in g)
            df += len(g) - 1
    return ss, df


def pooled_sd(groups) -> float | None:
    """Pooled within-group sd (None below 2 degrees of freedom)."""
    ss, df = _within(groups)
    return math.sqrt(ss / df) if df >= 2 else None


def planning_noise_sd(groups) -> float | None:
    """The run-to-run sd the probe's posterior plans with: the pooled sd (``pooled_sd``) with
    its variance scaled by df / (df - 2), the mean of the variance given the repetitions under
    the reference prior. A variance estimated from few repetitions falls below the true one
    more often than above (from 2 degrees of freedom, 63% of the time: P(chi2_2 < 2)), and a
    probe that trusts it states more confidence than its choices bear out. Below 3 degrees of
    freedom (no finite mean) the 3-df factor, 3; None below 2, as ``pooled_sd``."""
    ss, df = _within(groups)
    if df < 2:
        return None
    nu = max(df, 3)
    return math.sqrt(ss / df * nu / (nu - 2))


# Degrees of freedom the pooled run-to-run variance counts for against one cell's own
# repetitions: with 3 runs (2 df) a cell's own scatter gets a third of the weight, with 9 runs
# two thirds; a cell with one run keeps the pooled figure.
NOISE_PRIOR_DF = 4.0


def cell_noise_var(values: list[float], pooled_var: float) -> float:
    """One run's variance (log scale) for a cell with repetitions ``values``: its own sample
    variance shrunk toward the pooled one (a scaled-inverse-chi-square prior of
    NOISE_PRIOR_DF degrees of freedom), so that two runs that happen to agree do not make a
    cell look exact, and one that scatters is measured more before its mean is trusted."""
    n = len(values)
    if n < 2:
        return pooled_var
    m = sum(values) / n
    ss = sum((x - m) ** 2 for x in values)
    return (NOISE_PRIOR_DF * pooled_var + ss) / (NOISE_PRIOR_DF + n - 1)


def parse_budget(text: str | float | None) -> float | None:
    """``90``, ``90s``, ``3m``, ``1h30m`` -> seconds."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        t = str(text).strip().lower()
        m = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?", t)
        if not t or not m or not any(m.groups()):
            raise ConfigError(f"--budget {text!r} is not a duration (e.g. 90s, 3m, 1h30m)")
        h, mi, s = (float(g) if g else 0.0 for g in m.groups())
        value = h * 3600 + mi * 60 + s
    if not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"--budget must be a positive duration, not {text!r}")
    return limits.check("budget", value)


def check_target(target: float) -> float:
    return float(limits.check("target-confidence", target))


@dataclass
class AdaptivePlan(planmod.Plan):
    """A probe plan whose cells are chosen as it goes (what --resume needs to continue)."""

    target: float = DEFAULT_TARGET
    budget_s: float | None = None
    max_reps: int = MAX_REPS
    calibration_s: float = 0.0  # device time the calibration took (counted in the budget)
    full_estimate_s: float = 0.0  # the exhaustive matrix's estimate, for comparison
    # Without --budget: the budget is this share of the exhaustive matrix's estimate, and it
    # follows the estimate as this device's measured cell times replace the plan's guess.
    budget_share: float | None = None
    full_reps: int = DEFAULT_REPS  # repetitions of the exhaustive matrix compared to
    # Several profiles in one session (JointChooser): each profile's name, the workload of
    # the plan it is measured with (profiles whose workloads are the same share one, and
    # its cells) and its weight in the choice. Empty for a single profile.
    profiles: list[str] = field(default_factory=list)
    profile_workloads: list[str] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    # The calibration workloads the decision was found to depend on when the probe started
    # (calibration_workloads): a resumed probe keeps them, so the cells it has stored since
    # cannot re-size the calibration its budget was set with. None: a plan saved before it
    # was recorded (the resume decides again).
    decided_calibration: list[str] | None = None
    # A single profile as the user gave it (a preset's name or a file): the plan's own
    # ``profile`` is the name the file holds, which loads nothing when it is not a preset.
    profile_ref: str | None = None

    @property
    def joint(self) -> bool:
        return len(self.profiles) > 1

    def profiles_of(self, workload: str) -> tuple[str, ...]:
        """The name of every profile measured with ``workload``: a run of a cell they share
        counts for each of them, so `recommend`, `report` and `compare` of any of them find
        it (by name: a profile given as a file is looked up by the name it holds)."""
        if not self.joint:
            return ()
        return tuple(
            profile_name(p) for p, w in zip(self.profiles, self.profile_workloads) if w == workload
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **super().to_dict(),
            "purpose": "adaptive",
            "adaptive": {
                "target": self.target,
                "budget_s": self.budget_s,
                "max_reps": self.max_reps,
                "calibration_s": self.calibration_s,
                "full_estimate_s": self.full_estimate_s,
                "budget_share": self.budget_share,
                "full_reps": self.full_reps,
                "profiles": list(self.profiles),
                "profile_workloads": list(self.profile_workloads),
                "weights": list(self.weights),
                "profile_ref": self.profile_ref,
                "decided_calibration": self.decided_calibration,
            },
        }

    def estimate_full(self, times: "CellTimes", schedulers: set[str] | None) -> None:
        """The exhaustive matrix's device time (``full_reps`` of every runnable cell) at
        ``times``' cell costs: what the adaptive probe is compared with."""
        self.full_estimate_s = times.matrix_s(
            runnable(replace(self, reps=self.full_reps), schedulers)
        )

    def default_budget(
        self,
        times: "CellTimes",
        schedulers: set[str] | None,
        calibration_s: float | None = None,
    ) -> None:
        """With no --budget: re-estimate the exhaustive matrix from ``times`` and set the
        budget to its share of it, the calibration's time (``calibration_s``, by default the
        one it took) included; never below the calibration and the least that decides
        (least_deciding)."""
        if self.budget_share is None:
            return
        self.estimate_full(times, schedulers)
        calib = self.calibration_s if calibration_s is None else calibration_s
        self.budget_s = max(self.budget_share * self.full_estimate_s, calib + least_deciding(times))

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "AdaptivePlan":
        base = planmod.Plan.from_dict(d)
        a = d.get("adaptive") or {}
        return AdaptivePlan(
            **{f: getattr(base, f) for f in base.__dataclass_fields__},
            target=float(a.get("target", DEFAULT_TARGET)),
            budget_s=a.get("budget_s"),
            max_reps=int(a.get("max_reps", MAX_REPS)),
            calibration_s=float(a.get("calibration_s") or 0.0),
            full_estimate_s=float(a.get("full_estimate_s") or 0.0),
            budget_share=a.get("budget_share"),
            full_reps=int(a.get("full_reps") or DEFAULT_REPS),
            profiles=list(a.get("profiles") or []),
            profile_workloads=list(a.get("profile_workloads") or []),
            weights=[float(w) for w in a.get("weights") or []],
            profile_ref=a.get("profile_ref"),
            decided_calibration=(
                None
                if a.get("decided_calibration") is None
                else [str(n) for n in a["decided_calibration"]]
            ),
        )


@functools.lru_cache(maxsize=64)
def profile_name(ref: str) -> str:
    """The name of the profile ``ref`` (a preset's name, or a file) loads."""
    return load_profile(ref).name


@dataclass
class AdaptiveSetup:
    plan: AdaptivePlan
    calibration: Any | None  # a CalibrationPlan when the device needs one first
    calibration_estimate_s: float
    device: Device  # what the model predicts for (a guess for a scratch device not yet made)
    # The most device time the calibration may take: the budget less one run of each
    # filesystem (None: the calibration's own budget). Judged from its own first runs.
    calibration_deadline_s: float | None = None
    # What the preview says of the calibration: which figures, why only those, or why none.
    calibration_note: str = ""


def _scratch_device(size_bytes: int, scratch_dir: str | None, plp: Plp) -> Device:
    """The Device a scratch loop device in ``scratch_dir`` will be (its backing class), for
    planning before it exists. The probe attaches it with direct I/O."""
    d = scratch_dir or tempfile.gettempdir()
    try:
        st = os.stat(d)
        with open("/proc/self/mountinfo") as f:
            found = devmod.parse_mountinfo_fs(f.read(), os.major(st.st_dev), os.minor(st.st_dev))
    except OSError:
        found = None
    fstype, source = found if found else (None, None)
    kind, model = devmod.loop_class(fstype, source, True)
    return Device(path=None, size_bytes=size_bytes, kind=kind, model=model, plp=plp)


class CellTimes:
    """Seconds one run of a cell costs on this device: the plan's window and cool-down plus
    the per-run overhead outside the window (discard, mkfs, mount, fill, fio start, umount)
    as measured by this device identity's stored runs.

    The plan's fixed PROBE_CELL_OVERHEAD_S (3 s) applies only while nothing is stored: on a
    RAM-backed loop device the measured overhead of a 1 s run was ~1 s (the first smoke run
    of benchmarks/adaptive_vs_full.py: estimates ran ~2x the actual cell times), which made
    the default budget, the reported share and every choice's cost wrong by that factor.
    Samples of the same workload are preferred (a read workload's fill is part of its
    overhead), then any filesystem run on this device; per filesystem when it has its own
    samples (btrfs's mkfs is not ext4's), else the pooled median."""

    def __init__(
        self,
        plan: planmod.Plan,
        overheads_by_fs: Mapping[str, list[float]],
        window_fractions: Sequence[float] = (),
    ):
        self.plan = plan
        self.by_fs = {fs: sorted(v) for fs, v in overheads_by_fs.items() if v}
        self.pooled = sorted(x for v in self.by_fs.values() for x in v)
        # The measured window over the planned --runtime of this workload's runs: below 1
        # for a bounded job that ends before its time (a file-create workload done early)
        self.window_fraction = (
            min(1.0, float(np.median(window_fractions))) if len(window_fractions) else 1.0
        )

    @staticmethod
    def from_store(store: Any, plan: planmod.Plan, identity: str) -> "CellTimes":
        name = plan.workloads[0].name if plan.workloads else None
        planned: dict[str | None, tuple[float, float | None]] = {}

        def cooldown_runtime(mid: str | None) -> tuple[float, float | None]:
            """(cool-down, planned runtime) of matrix ``mid``."""
            if mid not in planned:
                if mid is not None and mid == plan.matrix_id:
                    planned[mid] = (float(plan.cooldown_s), float(plan.runtime_s))
                else:
                    try:
                        p = (store.matrix(mid).get("plan") or {}) if mid else {}
                    except FsAdvisorError:
                        p = {}
                    planned[mid] = (
                        float(p.get("cooldown_s") or 0.0),
                        float(p["runtime_s"]) if p.get("runtime_s") else None,
                    )
            return planned[mid]

        same: dict[str, list[float]] = {}
        other: dict[str, list[float]] = {}
        fractions: list[float] = []
        for r in store.runs(device_identity=identity, status="ok"):
            fs, wall, window = r.get("filesystem"), r.get("wall_s"), r.get("runtime_s")
            if not fs or wall is None or window is None:
                continue  # a raw calibration run has no mkfs/mount: not a cell's overhead
            cooldown, runtime = cooldown_runtime(r.get("matrix_id"))
            over = float(wall) - float(window) - cooldown
            if over < 0:
                continue
            if r.get("workload_name") == name:
                same.setdefault(fs, []).append(over)
                if runtime:
                    fractions.append(float(window) / runtime)
            else:
                other.setdefault(fs, []).append(over)
        return CellTimes(plan, same or other, fractions)

    @property
    def measured(self) -> bool:
        return bool(self.pooled)

    def overhead_s(self, fs: str) -> float | None:
        v = self.by_fs.get(fs) or self.pooled
        return float(np.median(v)) if v else None

    def cell_s(self, cell: planmod.Cell) -> float:
        over = self.overhead_s(cell.config.fs) if cell.config is not None else None
        if over is None:
            return self.plan.cell_estimate_s(cell)
        return self.plan.runtime_s * self.window_fraction + self.plan.cooldown_s + over

    def config_s(self, cfg: Any) -> float:
        return self.cell_s(planmod.Cell(cfg, cfg.scheduler, self.plan.workloads[0], 1))

    def cheapest_per_fs(self) -> dict[str, float]:
        """One run of each filesystem's cheapest configuration: the least a budget must
        leave room for, so that every filesystem of the plan is measured once."""
        out: dict[str, float] = {}
        for c in self.plan.configs:
            if c.fs not in self.plan.unsupported:  # never run here: costs nothing
                out[c.fs] = min(out.get(c.fs, math.inf), self.config_s(c))
        return out

    def matrix_s(self, plan: planmod.Plan) -> float:
        """``plan``'s whole matrix (as Plan.estimated_seconds, with measured overheads)."""
        return sum(self.cell_s(c) for c in plan.cells() if not c.skip_reason)


class JointTimes(CellTimes):
    """Cell costs of a plan with several profiles' workloads: each workload's cells at its
    own measured overhead (a read workload's fill is part of its cost, a write workload has
    none), so the full matrix, the default budget and the least budget add up the profiles'."""

    def __init__(self, plan: planmod.Plan, parts: Mapping[str, CellTimes]):
        super().__init__(plan, {})
        self.parts = dict(parts)

    @staticmethod
    def from_store(store: Any, plan: planmod.Plan, identity: str) -> "CellTimes":
        return JointTimes(
            plan,
            {
                w.name: CellTimes.from_store(store, replace(plan, workloads=[w]), identity)
                for w in plan.workloads
            },
        )

    @property
    def measured(self) -> bool:
        return any(t.measured for t in self.parts.values())

    def cell_s(self, cell: planmod.Cell) -> float:
        part = self.parts.get(cell.workload.name)
        return part.cell_s(cell) if part is not None else super().cell_s(cell)

    def cheapest_per_fs(self) -> dict[str, float]:
        """One run of each filesystem for every workload: each profile compares them all."""
        out: dict[str, float] = {}
        for t in self.parts.values():
            for fs, s in t.cheapest_per_fs().items():
                out[fs] = out.get(fs, 0.0) + s
        return out


def least_deciding(times: CellTimes) -> float:
    """The least device time after the calibration from which a probe states a decision: one
    run of each filesystem, and the repetitions of the cheapest that show the device's
    run-to-run noise (predict.adaptive's MIN_NOISE_DF; until then its confidence rests on an
    assumed noise)."""
    per_fs = times.cheapest_per_fs()
    return sum(per_fs.values()) + sel.MIN_NOISE_DF * min(per_fs.values(), default=0.0)


def times_for(store: Any, plan: planmod.Plan, identity: str) -> CellTimes:
    """CellTimes of ``plan``: per workload when it has several (a joint probe)."""
    kind = JointTimes if len(plan.workloads) > 1 else CellTimes
    return kind.from_store(store, plan, identity)


def available_schedulers(path: str | None) -> set[str] | None:
    """The I/O schedulers ``path`` can run (a bio-based device such as zram: only "none");
    None when there is no device yet (a scratch loop device: loop devices have them all)."""
    if not path:
        return None
    try:
        return set(devmod.read_scheduler(path)[1])
    except NotSupported:
        return {devmod.NO_SCHEDULER}
    except (FsAdvisorError, OSError):
        return None


def runnable(plan: planmod.Plan, schedulers: set[str] | None) -> planmod.Plan:
    """``plan`` without the configurations whose scheduler the device lacks: the probe
    skips their cells (0 s), so they are neither candidates nor part of the full matrix's
    time (on zram, half of the default matrix)."""
    if schedulers is None:
        return plan
    return replace(plan, configs=[c for c in plan.configs if c.scheduler in schedulers])


def resumes_adaptive(request: ProbeRequest) -> bool:
    """Whether ``request`` (with --resume) continues an adaptive probe: then it must run
    adaptively again (a plain resume would run its plan's cells() — every configuration x
    MAX_REPS — as a full matrix)."""
    if not request.resume:
        return False
    entry = (
        probing.state_file_for(request.db)
        .load()
        .matrices.get("scratch" if request.scratch is not None else str(request.device))
    )
    if not entry:
        return False
    return (entry.get("plan") or {}).get("purpose") == "adaptive"


def _cell_times(plan: planmod.Plan, device: Device, db: str | None) -> CellTimes:

    path = probing.store_path(db)
    if not path.exists():
        return (
            JointTimes(
                plan, {w.name: CellTimes(replace(plan, workloads=[w]), {}) for w in plan.workloads}
            )
            if len(plan.workloads) > 1
            else CellTimes(plan, {})
        )
    with open_store(path) as store:
        return times_for(store, plan, device.identity)


@dataclass(frozen=True)
class StoredCalibration:
    """What a device's stored calibration already measured: its runs and their workloads."""

    run_ids: tuple[int, ...]
    workloads: frozenset[str]


def _stored_calibration(device: Device, db: str | None) -> StoredCalibration | None:
    idents = [device.identity]
    if device.kind in ("loop", "ram-loop"):
        # a loop file system that refuses direct I/O falls back to buffered: either class
        idents.append(device_identity(*devmod.loop_class(*_backing_of(device), False)))
    path = probing.store_path(db)
    if not path.exists():
        return None
    with open_store(path) as store:
        calibrated = set(store.calibrated_devices())
        found = [i for i in idents if i in calibrated]
        if not found:
            return None
        stored = store.device_params(found[0])
        listed = stored.details.get("run_ids") if stored is not None else None
        ids = {int(i) for i in listed} if isinstance(listed, (list, tuple)) else set()
        names = {str(r.get("workload_name") or "") for r in calibration.ok_runs(store, ids)}
    if not ids:
        # a calibration without its runs listed (made by hand, or imported): as good as whole
        names = {*cplan.PINS, f"{cplan.SUBMITTERS_PREFIX}{cplan.submitter_jobs(cpu.cores())}"}
    return StoredCalibration(tuple(sorted(ids)), frozenset(names))


def calibration_workloads(plan: "AdaptivePlan", device: Device, db: str | None) -> dict[str, float]:
    """The calibration workloads this probe's decision depends on, each with how much: the
    largest shift, over every profile's candidate configurations, of one configuration's
    predicted ops/J (bytes/J for a bandwidth profile) relative to the best's when the device
    parameters the workload pins (calibration_plan.PINS) move by their present sd either way
    (a kind's prior, a datasheet's, or a calibration's own). A workload whose shift stays
    under TIE_TOLERANCE cannot move a comparison by as much as matters, so it is not worth
    its device time here: a log-append service never needs the random-read sweep. What one
    calibration measured is narrow by then, so a second profile adds only what it lacks."""
    params, stored = _store_helpers(db)
    path = probing.store_path(db)
    with open_store(path) as store:
        if path.exists():
            store.ensure_seeded()
        settings = ModelSettings.load(db=db)
        parts = (
            JointChooser(plan, store, settings, params, stored).parts
            if plan.joint
            else [Chooser(plan, store, settings, params, stored)]
        )
        model = parts[0].fit()
    dp = params(device)
    groups: dict[tuple[str, ...], tuple[str, ...]] = {}
    for name in (*cplan.PINS, f"{cplan.SUBMITTERS_PREFIX}{cplan.submitter_jobs(cpu.cores())}"):
        keys = tuple(k for k in cplan.pins_of(name) if k in dp.values and k in dp.log_sd)
        groups.setdefault(keys, ())
        groups[keys] += (name,)

    def relative(ch: Chooser, cfgs: list, p: Any) -> np.ndarray:
        preds = predict_many(model, cfgs, ch.spec.workload, device, device_params=p)
        by_bytes = ch.profile.workload.rank_by == "bytes"
        v = np.log([max(x.bytes_per_joule if by_bytes else x.ops_per_joule, 1e-300) for x in preds])
        return v - v.max()

    cands = [(ch, ch.candidates(device)) for ch in parts]
    base = [relative(ch, cfgs, dp) for ch, cfgs in cands]
    out: dict[str, float] = {}
    for keys, names in groups.items():
        if not keys:
            continue
        shift = 0.0
        for sign in (-1.0, 1.0):
            values = dict(dp.values)
            for k in keys:
                values[k] = values[k] * math.exp(sign * dp.log_sd[k])
            moved = replace(dp, values=values)
            for (ch, cfgs), b in zip(cands, base):
                shift = max(shift, float(np.max(np.abs(relative(ch, cfgs, moved) - b))))
        for name in names:
            out[name] = shift
    return out


def _backing_of(device: Device) -> tuple[str | None, str | None]:
    m = re.match(r"loop on (\S+)(?: \((.*?)\))?,", device.model or "")
    return (m.group(1), m.group(2)) if m else (None, None)


def _same_workload(w: planmod.WorkloadSpec) -> tuple:
    """What makes two profiles' cells the same measurement: everything but the name."""
    d = w.to_dict()
    d.pop("name"), d.pop("source")
    return tuple(sorted((k, repr(v)) for k, v in d.items()))


def check_weights(profiles: list[str], weights: list[float] | None) -> list[float]:
    """One positive weight per profile (all 1 when none are given)."""
    if not weights:
        return [1.0] * len(profiles)
    if len(weights) != len(profiles):
        raise ConfigError(
            f"--profile-weights gives {len(weights)} weights for "
            f"{len(profiles)} profiles: one per --profile, in their order"
        )
    if not all(math.isfinite(w) and w > 0 for w in weights):
        raise ConfigError(f"--profile-weights must be positive numbers, not {weights}")
    return [float(w) for w in weights]


def _joint_plan(
    request: ProbeRequest,
    profiles: list[str],
    weights: list[float],
    target: float,
    budget_s: float | None,
) -> tuple[AdaptivePlan, int]:
    """One adaptive plan for several profiles: the configurations (the same for every
    profile) x each profile's workload, a workload two profiles share planned once."""
    bases = [
        probing.plan_probe(replace(request, profile=p, micro=False, baseline=False))
        for p in profiles
    ]
    workloads: list[planmod.WorkloadSpec] = []
    seen: dict[tuple, str] = {}
    names = []
    for b in bases:
        w = b.workloads[0]
        names.append(seen.setdefault(_same_workload(w), w.name))
        if names[-1] == w.name:
            workloads.append(w)
    fields = {f: getattr(bases[0], f) for f in bases[0].__dataclass_fields__}
    fields.update(workloads=workloads, reps=MAX_REPS)
    plan = AdaptivePlan(
        **fields,
        target=target,
        budget_s=budget_s,
        profiles=list(profiles),
        profile_workloads=names,
        weights=weights,
    )
    return plan, max(bases[0].reps, DEFAULT_REPS)


def plan_adaptive(
    request: ProbeRequest,
    target: float = DEFAULT_TARGET,
    budget: str | float | None = None,
    profiles: list[str] | None = None,
    weights: list[float] | None = None,
) -> AdaptiveSetup:
    """Plan an adaptive probe: the profile's matrix, whether the device needs a calibration
    first, and a budget check that refuses, before anything touches the device, a budget
    too small for the calibration and one cell. With several ``profiles`` one session
    decides for all of them (JointChooser), under one budget, with ``weights``."""
    target = check_target(target)
    budget_s = parse_budget(budget)
    if request.resume:
        entry = (
            probing.state_file_for(request.db)
            .load()
            .matrices.get("scratch" if request.scratch is not None else str(request.device))
        )
        if not entry:
            raise FsAdvisorError(
                "no unfinished probe of this device to resume; start one without --resume"
            )
        if entry["plan"].get("purpose") != "adaptive":
            raise ConfigError(
                "the unfinished probe of this device is a full matrix: resume it without --adaptive"
            )
        plan = AdaptivePlan.from_dict(entry["plan"])
        plan.matrix_id, plan.force = entry["matrix_id"], request.force
        plan.db_path = str(probing.store_path(request.db))
        if request.scratch is None and request.device_info is not None:
            plan.device_info = replace(request.device_info, plp=plan.plp)
    elif profiles and len(profiles) > 1:
        plan, full_reps = _joint_plan(
            request, list(profiles), check_weights(list(profiles), weights), target, budget_s
        )
    else:
        if request.profile is None:
            raise ConfigError("--adaptive needs --profile: it decides for one workload")
        base = probing.plan_probe(replace(request, micro=False, baseline=False))
        full_reps = max(base.reps, DEFAULT_REPS)
        fields = {f: getattr(base, f) for f in base.__dataclass_fields__}
        fields["reps"] = MAX_REPS  # the ceiling; cells() of this plan is the full matrix
        plan = AdaptivePlan(
            **fields, target=target, budget_s=budget_s, profile_ref=str(request.profile)
        )
    device = (
        plan.device_info
        if plan.device_info is not None
        else _scratch_device(plan.device_size_bytes, plan.scratch_dir, plan.plp)
    )
    times = _cell_times(plan, device, request.db)
    schedulers = available_schedulers(device.path if plan.device_info else None)
    if not request.resume:
        plan.full_reps = full_reps
        plan.estimate_full(times, schedulers)
    calib = None
    calib_s = 0.0
    done = _stored_calibration(device, request.db)
    if not (request.resume and plan.decided_calibration is not None):
        plan.decided_calibration = sorted(
            name
            for name, shift in calibration_workloads(plan, device, request.db).items()
            if shift >= -math.log(1 - TIE_TOLERANCE)
        )
    needed = set(plan.decided_calibration) - (done.workloads if done else frozenset())
    if needed:
        calib = calibration.plan_calibration(
            None if plan.scratch_size_bytes else str(plan.device),
            scratch=plan.scratch_size_bytes,
            scratch_dir=plan.scratch_dir,
            # A probe asked for shorter windows than the calibration's own (a quick look)
            # calibrates with them too; longer ones leave it its 5-minute plan.
            runtime_s=(
                float(plan.runtime_s)
                if plan.runtime_s and plan.runtime_s < CALIBRATION_WINDOW_S
                else None
            ),
            plp=plan.plp,
            force=plan.force,
            db=request.db,
            dry_run=request.dry_run,
            only=sorted(needed),
            extends=done.run_ids if done else (),
        )
        calib_s = float(calib.estimated_seconds())
    if plan.budget_s is None and not request.resume:
        # Without a budget: a share of what the exhaustive matrix would cost, the one-off
        # calibration included, never less than the calibration and the least that decides.
        # It is re-estimated before every choice (Chooser.decide): on a device's first
        # profile the plan's fixed per-cell overhead over-estimates the matrix (by about a
        # third on the RAM loop and zram, benchmarks/adaptive_vs_full.py), and the first
        # measured cells correct it.
        plan.budget_share = DEFAULT_BUDGET_SHARE
        plan.default_budget(times, schedulers, calibration_s=calib_s)
    per_fs = times.cheapest_per_fs()
    least = calib_s + sum(per_fs.values())
    if plan.budget_s is not None and plan.budget_s - plan.calibration_s < least:
        # A budget that cannot measure each filesystem once after calibrating would end
        # with a leader the probe never compared: refused before anything is touched.
        runs = ", ".join(f"{fs} about {t:.0f} s" for fs, t in per_fs.items())
        what = (
            f"the device calibration (about {calib_s:.0f} s) and one run of each "
            f"filesystem ({runs})"
            if calib
            else f"one run of each filesystem ({runs})"
        )
        raise ConfigError(
            f"--budget {plan.budget_s - plan.calibration_s:.0f} s is too small "
            f"for even {what}: the smallest budget that works is "
            f"{math.ceil(least + plan.calibration_s)} s; nothing was touched"
        )
    # The calibration's further repetitions give way to the cells that decide: its first
    # runs are judged against what the budget leaves after them (CalibrationPacer).
    deadline = (
        plan.budget_s
        - plan.calibration_s
        - (least_deciding(times) if plan.budget_share is not None else sum(per_fs.values()))
        if calib is not None and plan.budget_s is not None
        else None
    )
    return AdaptiveSetup(
        plan=plan,
        calibration=calib,
        calibration_estimate_s=calib_s,
        device=device,
        calibration_deadline_s=deadline,
        calibration_note=_calibration_note(calib, calib_s, done, plan.joint),
    )


def _calibration_note(
    calib: Any, calib_s: float, done: StoredCalibration | None, joint: bool
) -> str:
    """The preview's line on the calibration (see calibration_workloads)."""
    if calib is None:
        if done is not None:
            return ""  # calibrated before, for everything this decision rests on
        return (
            "no calibration: nothing it measures moves these configurations against each "
            "other by 1% (the device's figures stay at its kind's prior)"
        )
    whats = ", ".join(dict.fromkeys(cplan.what_of(w.name) for w in calib.workloads))
    return (
        f"first: calibrate the device{' once for every profile' if joint else ''} "
        f"({len(calib.cells())} raw runs, about {calib_s:.0f} s): {whats}, what "
        + ("these profiles' decisions rest" if joint else "this decision rests")
        + " on"
        + (
            "; the rest was measured before"
            if done is not None
            else "; the rest stays at its prior"
        )
    )


# --------------------------------------------------------------------------- choosing


@dataclass
class Decision:
    """Where the adaptive probe stands: the leader and how sure, device time against the
    full matrix's estimate."""

    leader: str
    confidence: float
    p_best: dict[str, float]
    spent_s: float
    full_estimate_s: float
    runs: int
    reason: str = ""
    choice: str | None = None
    why: str = ""
    calibration_s: float = 0.0  # part of spent_s: a device is calibrated once, not per probe
    leader_name: str = ""  # what a person reads (``leader`` is the configuration's key)
    # one run's sd of log ops/J between repetitions of the same cell in this matrix (None
    # until a cell was repeated): the noise the probe saw, against the differences it judges
    noise_sd: float | None = None
    # one profile of a joint probe: the device time of its own cells (a shared cell counts
    # for each profile it serves); spent_s is the session's
    own_s: float | None = None
    # one profile of a joint probe: its candidates (key, name), best posterior mean first
    ranking: list[tuple[str, str]] = field(default_factory=list)

    @property
    def who(self) -> str:
        return self.leader_name or self.leader

    @property
    def share(self) -> float:
        return self.spent_s / self.full_estimate_s if self.full_estimate_s else 0.0

    def outcome_lines(self) -> list[str]:
        """Where an adaptive probe ended, in words: the same lines in the CLI's summary and
        the TUI's log."""
        lines = [
            f"adaptive: {self.who} is best (within 1%) with probability "
            f"{self.confidence:.2f} after {self.runs} runs; device time "
            f"{probing.clock(self.spent_s)} = {self.share:.0%} of the full matrix's "
            f"~{probing.clock(self.full_estimate_s)}"
        ]
        if self.reason:
            lines.append(f"adaptive: stopped: {self.reason}")
        lines.append(
            "adaptive: noise seen: "
            + (
                f"one run scatters by about {math.expm1(self.noise_sd):.1%} in ops/J (sd between "
                "repetitions of the same cell here)"
                if self.noise_sd is not None
                else "not measured (no cell was repeated)"
            )
        )
        return lines

    def line(self) -> str:
        return (
            f"leader {self.who}, confidence {self.confidence:.2f}; device time "
            f"{self.spent_s:.0f} s of the full matrix's ~{self.full_estimate_s:.0f} s "
            f"({self.share:.0%})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "leader": self.leader,
            "leader_label": self.who,
            "confidence": round(self.confidence, 4),
            "p_best": {k: round(v, 4) for k, v in self.p_best.items()},
            "device_time_s": round(self.spent_s, 1),
            "full_matrix_estimate_s": round(self.full_estimate_s, 1),
            "share_of_full": round(self.share, 4),
            "calibration_s": round(self.calibration_s, 1),
            "run_noise_sd": (None if self.noise_sd is None else round(self.noise_sd, 4)),
            "share_of_full_without_calibration": round(
                (self.spent_s - self.calibration_s) / self.full_estimate_s, 4
            )
            if self.full_estimate_s
            else 0.0,
            "runs": self.runs,
            **({} if self.own_s is None else {"own_device_time_s": round(self.own_s, 1)}),
            **(
                {
                    "ranking": [
                        {
                            "config": k,
                            "label": n,
                            "p_best": (round(self.p_best[k], 4) if k in self.p_best else None),
                        }
                        for k, n in self.ranking
                    ]
                }
                if self.ranking
                else {}
            ),
            "reason": self.reason,
            "next": self.choice,
            "why": self.why,
        }


class Chooser:
    """The MatrixRun's cell source (see module docstring); also used without a device by
    the dry run (``first_choices``)."""

    def __init__(
        self,
        plan: AdaptivePlan,
        store: Any,
        settings: ModelSettings,
        device_params: Callable[[Device], Any],
        stored_params: Callable[[], dict],
        on_progress: Callable[[ProgressEvent], None] | None = None,
        profile: str | None = None,
        spec: planmod.WorkloadSpec | None = None,
    ) -> None:
        self.plan = plan
        self.store = store
        self.settings = settings
        self.device_params = device_params
        self.stored_params = stored_params
        self.on_progress = on_progress or (lambda e: None)
        name = profile or plan.profile_ref or plan.profile
        if name is None:
            raise ConfigError("an adaptive probe decides for a profile: give --profile")
        self.profile = load_profile(name)
        self.spec = spec or plan.workloads[0]
        # one profile of a joint probe: the JointChooser owns the budget and the session
        self.part = spec is not None
        self.run: Any = None  # the MatrixRun, set by run_adaptive (to see skipped cells)
        self.excluded: dict[str, str] = {}
        self.history: list[Decision] = []
        self.schedulers: set[str] | None = None  # the probed device's (see __call__)

    def candidates(self, device: Device) -> list:
        out = []
        for c in self.plan.configs:
            if c.fs in self.plan.unsupported or c.key() in self.excluded:
                continue
            if self.schedulers is not None and c.scheduler not in self.schedulers:
                continue  # the probe would skip it: nothing to learn, no time spent
            # recommend's own rule (a rotational disk never gets scheduler none; this
            # kernel's filesystems only: plan.unsupported above)
            if exclusion(c, self.profile, device) is None:
                out.append(c)
        if not out:
            raise ConfigError(
                f"no configuration of this matrix is allowed for profile "
                f"{self.profile.name} (durability/feature constraints)"
            )
        return out

    @staticmethod
    def leading_defaults(
        st: sel.State, cfgs: list, device: Device
    ) -> tuple[list[int], frozenset[int]]:
        """Indices (into ``cfgs``) of the first cell of every filesystem among the leaders, the
        leader's own first: its defaults, what recommend's "to settle it" line starts from
        too (an XFS whose AG count is mkfs.xfs's own for this size counts as its defaults);
        where a matrix has no defaults of a leading filesystem, its best-predicted leader
        stands in (second: those indices). Without the stand-in, a leader whose defaults
        are missing was the last filesystem measured, and a small budget ran out on the
        others."""

        lead = C.leaders(st.mu, st.S(), st.leader)
        where = {c: i for i, c in enumerate(cfgs)}
        out: list[int] = []
        stand_ins: set[int] = set()
        for fs in dict.fromkeys(cfgs[i].fs for i in lead):
            try:
                d = catalog.default_config(fs, device.size_bytes, default_scheduler(device))
            except ConfigError:
                d = None
            if d is not None and d.fs == "xfs" and d not in where:
                # mkfs.xfs's own count, spelt out (as the reference matrices store it)
                d = replace(d, ag_count=catalog.default_ag_count(device.size_bytes))
            if d in where:
                out.append(where[d])
            else:  # lead is best first: the filesystem's best-predicted leader
                i = next(i for i in lead if cfgs[i].fs == fs)
                out.append(i)
                stand_ins.add(i)
        return out, frozenset(stand_ins)

    def own_sd(self) -> float:
        """Prior sd of a device's own deviation from a shared effect (priors.toml "d:")."""
        try:
            return float(self.settings.priors["prior"]["d:"]["sd"])
        except (KeyError, TypeError, ValueError):
            return 0.1  # crossval.DEVICE_SDS's middle

    def fit(self) -> Any:
        return fit(self.store.observations(), self.settings, self.stored_params())

    def state(
        self, device: Device, cfgs: list, runs: list[int] | None = None, model: Any = None
    ) -> tuple[sel.State, Any]:
        model = model if model is not None else self.fit()
        design: dict = {}
        # this device's own deviations from the shared effects are in the design from the
        # start (predict._block_designs), so configurations that share a filesystem or a
        # mechanism share that uncertainty, and one ext4 run teaches about every ext4 cell.
        preds = predict_many(
            model,
            cfgs,
            self.spec.workload,
            device,
            design_out=design,
            device_params=self.device_params(device),
        )
        by_bytes = self.profile.workload.rank_by == "bytes"
        val = [p.bytes_per_joule if by_bytes else p.ops_per_joule for p in preds]
        noise = model.noise_sd_measured if model.noise_sd_measured is not None else model.noise_sd
        # This matrix's own repetitions say how noisy one run is here (1 s runs on a loop
        # device scatter far more than the model's pooled residual): the larger one counts.
        own = planning_noise_sd(self.cell_log_opj().values())
        if own is not None:
            noise = max(float(noise), own)
        by_cell = self.cell_log_opj()
        cell_var = np.array(
            [
                cell_noise_var(
                    by_cell.get(planmod.cell_key(c, c.scheduler, self.spec.name), []),
                    float(noise) ** 2,
                )
                for c in cfgs
            ]
        )
        st = sel.State(
            labels=[c.key() for c in cfgs],
            names=[c.label() for c in cfgs],
            mu=np.log(np.maximum(np.asarray(val, float), 1e-300)),
            X=np.asarray(design["X"]),
            cov=np.asarray(design["cov"]),
            noise_var=float(noise) ** 2,
            tolerance=-math.log(1 - TIE_TOLERANCE),
            own_var=(
                None
                if model.known_device(device)
                else self.own_var(len(cfgs), runs, float(noise) ** 2)
            ),
            cell_noise_var=cell_var,
        )
        return st, model

    def own_var(self, k: int, runs: list[int] | None, noise_var: float) -> np.ndarray:
        tau2 = self.own_sd() ** 2
        n = np.zeros(k) if runs is None else np.asarray(runs, float)
        return 1.0 / (1.0 / tau2 + n / max(noise_var, 1e-12))

    def cell_log_opj(self) -> dict[str, list[float]]:
        """log ops/J of each ok run of this matrix, by cell key."""
        by_cell: dict[str, list[float]] = {}
        if self.plan.matrix_id is None:
            return by_cell
        for r in self.store.runs(matrix_id=self.plan.matrix_id, status="ok"):
            ops, joules = r.get("ops"), r.get("energy_j")
            if ops and joules and ops > 0 and joules > 0:
                by_cell.setdefault(r["cell_key"], []).append(math.log(ops / joules))
        return by_cell

    def run_noise_sd(self) -> float | None:
        """Pooled sd of log ops/J between repetitions of the same cell in this matrix
        (None until two cells have been repeated, i.e. >= 2 degrees of freedom)."""
        return pooled_sd(self.cell_log_opj().values())

    def _runs(self) -> tuple[Counter[str], float, dict[str, float]]:
        """(ok runs by cell key, device time of every run, device time by cell key)."""
        if self.plan.matrix_id is None:
            return Counter(), 0.0, {}
        rows = self.store.runs(matrix_id=self.plan.matrix_id)
        ok = Counter(r["cell_key"] for r in rows if r["status"] == "ok")
        by_key: dict[str, float] = {}
        for r in rows:
            by_key[r["cell_key"]] = by_key.get(r["cell_key"], 0.0) + float(r.get("wall_s") or 0.0)
        return ok, sum(by_key.values()), by_key

    def own_keys(self) -> set[str]:
        return {planmod.cell_key(c, c.scheduler, self.spec.name) for c in self.plan.configs}

    def times(self, device: Device) -> CellTimes:
        """Cell costs from this device's stored runs (this matrix's own included): the
        measured per-run overhead, not the plan's fixed guess."""
        view = replace(self.plan, workloads=[self.spec]) if self.part else self.plan
        return CellTimes.from_store(self.store, view, device.identity)

    def _next_step(
        self,
        st: sel.State,
        cost: list[float],
        runs: list[int],
        spent: float,
        cfgs: list,
        device: Device,
    ) -> sel.Step:
        """The selection's next step under this plan's target, budget and repetition cap, the
        leading defaults preferred: one rule for the run (decide) and its dry-run preview
        (first_choices), so the preview shows the choices the run would make."""
        firsts, stand_ins = self.leading_defaults(st, cfgs, device)
        return sel.next_step(
            st,
            cost,
            runs,
            target=self.plan.target,
            spent_s=spent,
            budget_s=self.plan.budget_s,
            max_runs=self.plan.max_reps,
            defaults=firsts,
            stand_ins=stand_ins,
        )

    def decide(
        self,
        device: Device,
        runs_now: tuple[Counter[str], float, dict[str, float]] | None = None,
        model: Any = None,
    ) -> tuple[sel.Step, list, Decision]:
        """The next step for this profile. A part of a joint probe gets the matrix's runs
        (``runs_now``) and the fitted ``model`` from the JointChooser, which sets the budget."""
        cfgs = self.candidates(device)
        ok, spent, by_key = runs_now if runs_now is not None else self._runs()
        spent += self.plan.calibration_s
        runs = [ok.get(planmod.cell_key(c, c.scheduler, self.spec.name), 0) for c in cfgs]
        st, _ = self.state(device, cfgs, runs, model)
        times = self.times(device)
        if not self.part:
            self.plan.default_budget(times, self.schedulers)
        cost = [times.config_s(c) for c in cfgs]
        step = self._next_step(st, cost, runs, spent, cfgs, device)

        S = st.S()
        idx = C.leaders(st.mu, S, st.leader)
        pb = C.p_best(st.mu[idx], S[np.ix_(idx, idx)])
        d = Decision(
            leader=st.labels[st.leader],
            leader_name=st.name(st.leader),
            confidence=step.confidence,
            p_best={st.labels[i]: float(p) for i, p in zip(idx, pb)},
            spent_s=spent,
            full_estimate_s=self.plan.full_estimate_s,
            runs=sum(ok[k] for k in self.own_keys()) if self.part else sum(ok.values()),
            own_s=sum(by_key.get(k, 0.0) for k in self.own_keys()) if self.part else None,
            reason="" if step.choice else step.reason,
            choice=step.choice.label if step.choice else None,
            why=step.choice.why() if step.choice else "",
            calibration_s=self.plan.calibration_s,
            noise_sd=self.run_noise_sd(),
            ranking=(
                [(st.labels[i], st.name(i)) for i in np.argsort(-st.mu, kind="stable")]
                if self.part
                else []
            ),
        )
        return step, cfgs, d

    def __call__(self, info: Device, done: set) -> Iterator[planmod.Cell]:
        return _cell_source(self, info, done, self.next_cell)

    def next_cell(self, device: Device) -> tuple["_Next | None", Decision, str]:
        step, cfgs, d = self.decide(device)
        if step.choice is None:
            return None, d, step.reason
        return (
            _Next(
                cfgs[step.choice.index],
                self.spec,
                step.choice.runs_so_far,
                step.choice.why(),
                (self,),
            ),
            d,
            "",
        )

    def _note(self, message: str, d: Decision | None = None) -> None:
        # with the decision: where the probe stands, as fields a front end shows
        self.on_progress(
            ProgressEvent(
                "note",
                len(self.history),
                0,
                message=message,
                leader=d.who if d else None,
                confidence=d.confidence if d else None,
            )
        )

    def in_seconds(self, e: ProgressEvent) -> ProgressEvent:
        """The MatrixRun's cell events counted in device time against the budget (the
        MatrixRun counts plan.cells(): every configuration x MAX_REPS, which an adaptive
        probe never runs). The calibration is part of the time spent, as of the budget."""
        if e.kind not in ("cell-start", "cell-end", "done"):
            return e
        spent = self._runs()[1] + self.plan.calibration_s
        total = self.plan.budget_s or self.plan.full_estimate_s
        return replace(
            e,
            done=int(round(spent)),
            total=int(round(total)),
            unit="s",
            eta_s=max(0.0, total - spent),
        )

    def first_choices(self, device: Device, n: int = 5) -> tuple[list[str], Decision]:
        """For --dry-run: the first ``n`` choices if every run came out at the model's mean
        (then only the covariance moves: the preposterior step, repeated)."""
        self.schedulers = available_schedulers(device.path)
        cfgs = self.candidates(device)
        st, _ = self.state(device, cfgs)
        times = self.times(device)
        cost = [times.config_s(c) for c in cfgs]
        runs = [0] * len(cfgs)
        spent = self.plan.calibration_s
        lines = []
        first: Decision | None = None
        for k in range(n):
            step = self._next_step(st, cost, runs, spent, cfgs, device)
            if first is None:
                first = Decision(
                    leader=st.labels[st.leader],
                    leader_name=st.name(st.leader),
                    confidence=step.confidence,
                    p_best={},
                    spent_s=spent,
                    full_estimate_s=self.plan.full_estimate_s,
                    runs=0,
                )
            if step.choice is None:
                lines.append(f"then stop: {step.reason}")
                break
            lines.append(f"{k + 1}. {step.choice.why()}")
            i = step.choice.index
            runs[i] += 1
            st = replace(
                st,
                cov=st.after_run(i),
                own_var=(
                    None if st.own_var is None else self.own_var(len(cfgs), runs, st.noise_var)
                ),
            )
            spent += cost[i]
        return lines, first  # type: ignore[return-value]


@dataclass(frozen=True)
class _Next:
    """The cell a chooser measures next: ``cfg`` with ``spec``, the runs it has, why, and the
    Choosers that leave the configuration out if its run fails or is skipped."""

    cfg: Any
    spec: planmod.WorkloadSpec
    runs_so_far: int
    why: str
    parts: tuple[Chooser, ...]


def _cell_source(
    chooser: Any,
    info: Device,
    done: set,
    next_cell: Callable[[Device], tuple[_Next | None, Any, str]],
) -> Iterator[planmod.Cell]:
    """The MatrixRun's cells from ``next_cell`` (a Chooser's or a JointChooser's): each
    decision noted and kept in the chooser's history, until it stops."""
    device = replace(info, plp=chooser.plan.plp)
    chooser.schedulers = available_schedulers(info.path)
    while True:
        nxt, d, reason = next_cell(device)
        chooser.history.append(d)
        chooser._note(d.line(), d)
        if nxt is None:
            chooser._note(f"stopping: {reason}")
            return
        cfg = nxt.cfg
        rep = nxt.runs_so_far + 1
        while (planmod.cell_key(cfg, cfg.scheduler, nxt.spec.name), rep) in done:
            rep += 1
        chooser._note(f"next: {nxt.why}")
        yield planmod.Cell(cfg, cfg.scheduler, nxt.spec, rep)
        run = chooser.run
        last = run.summary.outcomes[-1] if run and run.summary.outcomes else None
        if last is not None and last.status not in ("ok", "done-before"):
            # a cell that fails or is skipped here would be chosen again and again
            for part in nxt.parts:
                part.excluded[cfg.key()] = f"{last.status}: {last.error or ''}".strip()
            chooser._note(f"{cfg.label()} left out of the choice ({last.status})")


# --------------------------------------------------------------------------- several profiles

# The candidates a profile's answer names in words (all of them are in --json): the leaders and
# their nearest challengers, what a person compares.
RANKING_SHOWN = 3


@dataclass(frozen=True)
class JointPick:
    """The cell a joint probe measures next: profile ``part``'s candidate ``option``, and
    every profile whose matrix holds the same cell (``serves``: measured once, it counts for
    each of them)."""

    part: int
    option: sel.Option
    serves: tuple[int, ...]
    value_per_s: float  # weighted, summed over the profiles it serves (0: defaults first)


def joint_pick(
    steps: Sequence[sel.Step],
    keys: Sequence[Sequence[str]],
    weights: Sequence[float],
    *,
    spent_s: float,
    budget_s: float | None,
    max_runs: int | None,
) -> JointPick | None:
    """The next cell of a probe for several profiles, from each profile's own step
    (predict/adaptive.py's next_step on its posterior; ``keys[p][i]`` is the cell key of its
    candidate i). None when every profile's stop rule has fired -- settled, nothing worth
    measuring, or no cell of it fits the budget.

    A profile still deciding between its leading filesystems' defaults gets them first (the
    single-profile rule). Otherwise every cell any open profile would measure is scored by
    the single-profile rule's value per second -- the weighted shrink of that profile's
    contested differences per second of device time -- summed over the open profiles whose
    matrix holds the cell, and the best cell is measured. A profile whose leaders are apart
    offers little or nothing, so its cells are measured only while they are worth more than
    the other profiles'."""
    keysets = [set(ks) for ks in keys]

    def serves(key: str) -> tuple[int, ...]:
        return tuple(p for p, ks in enumerate(keysets) if key in ks)

    open_ = [p for p, s in enumerate(steps) if s.choice is not None]
    for p in open_:
        c = steps[p].choice
        if c is not None and c.defaults_first:
            return JointPick(p, c, serves(keys[p][c.index]), 0.0)
    score: dict[str, float] = {}
    first: dict[str, tuple[int, sel.Option]] = {}

    def fits(o: sel.Option) -> bool:
        return (max_runs is None or o.runs_so_far < max_runs) and (
            budget_s is None or spent_s + o.cost_s <= budget_s
        )

    for p in open_:
        own = steps[p].choice
        offered = [o for o in steps[p].ranked if o.shrink >= sel.MIN_SHRINK]
        # A profile's own choice is offered whatever its shrink: its rule may pick a cell
        # for another reason (a repetition while the device's run noise is unseen), and a
        # session that offered none of an open profile's cells would stop with no reason
        # for it.
        if own is not None and all(o.index != own.index for o in offered):
            offered.append(own)
        for o in offered:
            if not fits(o):
                continue
            k = keys[p][o.index]
            score[k] = score.get(k, 0.0) + weights[p] * o.value_per_s
            first.setdefault(k, (p, o))
    if not score:  # nothing fits the session's budget or repetitions
        return None
    best = max(score, key=lambda k: score[k])  # the first of equals, in profile order
    p, o = first[best]
    return JointPick(p, o, serves(best), score[best])


@dataclass
class JointDecision:
    """Where a probe for several profiles stands: each profile's Decision (its leader,
    confidence and stop reason) and the session's device time against its budget."""

    profiles: list[str]
    weights: list[float]
    answers: list[Decision]
    spent_s: float
    budget_s: float | None
    full_estimate_s: float
    runs: int
    choice: str | None = None
    serves: list[str] = field(default_factory=list)
    why: str = ""
    reason: str = ""
    calibration_s: float = 0.0

    @property
    def share(self) -> float:
        return self.spent_s / self.full_estimate_s if self.full_estimate_s else 0.0

    def line(self) -> str:
        each = "; ".join(
            f"{p}: leader {a.who}, confidence {a.confidence:.2f}"
            + (" (stopped)" if a.reason else "")
            for p, a in zip(self.profiles, self.answers)
        )
        budget = f" of the budget {self.budget_s:.0f} s" if self.budget_s else ""
        return (
            f"{each}; device time {self.spent_s:.0f} s{budget} (the full matrices "
            f"~{self.full_estimate_s:.0f} s, {self.share:.0%})"
        )

    def outcome_lines(self) -> list[str]:
        """The answer per profile, then the session: the CLI's summary."""
        lines = []
        for p, w, a in zip(self.profiles, self.weights, self.answers):
            weight = f" (weight {w:g})" if any(x != 1.0 for x in self.weights) else ""
            lines.append(
                f"adaptive: profile {p}{weight}: {a.who} is best (within 1%) with "
                f"probability {a.confidence:.2f} after {a.runs} runs of its cells "
                f"({probing.clock(a.own_s or 0.0)} of device time)"
            )
            if len(a.ranking) > 1:
                lines.append(
                    f"adaptive: profile {p}: ranking: "
                    + ", ".join(
                        f"{i + 1}. {n}" + (f" (P(best) {a.p_best[k]:.2f})" if k in a.p_best else "")
                        for i, (k, n) in enumerate(a.ranking[:RANKING_SHOWN])
                    )
                )
            lines.append(
                f"adaptive: profile {p}: stopped: {a.reason}"
                if a.reason
                else f"adaptive: profile {p}: not settled when the probe ended"
            )
        lines.append(
            f"adaptive: one session for {len(self.profiles)} profiles: {self.runs} "
            f"runs, device time {probing.clock(self.spent_s)} = {self.share:.0%} of "
            f"their full matrices' ~{probing.clock(self.full_estimate_s)}"
            + (f" (budget {probing.clock(self.budget_s)})" if self.budget_s else "")
        )
        if self.reason:
            lines.append(f"adaptive: stopped: {self.reason}")
        noise = self.answers[0].noise_sd if self.answers else None
        lines.append(
            "adaptive: noise seen: "
            + (
                f"one run scatters by about {math.expm1(noise):.1%} in ops/J (sd between "
                "repetitions of the same cell here)"
                if noise is not None
                else "not measured (no cell was repeated)"
            )
        )
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "device_time_s": round(self.spent_s, 1),
            "budget_s": None if self.budget_s is None else round(self.budget_s, 1),
            "full_matrix_estimate_s": round(self.full_estimate_s, 1),
            "share_of_full": round(self.share, 4),
            "calibration_s": round(self.calibration_s, 1),
            "runs": self.runs,
            "reason": self.reason,
            "next": self.choice,
            "for": list(self.serves),
            "why": self.why,
            "answers": {
                p: {
                    "leader": a.leader,
                    "confidence": round(a.confidence, 4),
                    "stopped": a.reason or None,
                }
                for p, a in zip(self.profiles, self.answers)
            },
        }


@dataclass
class _Sim:
    """One profile in simulate_joint: its posterior, its candidates' costs and cell keys,
    and (from a JointChooser) its Chooser and configurations, for the leading defaults and
    this device's own deviations."""

    st: sel.State
    cost: list[float]
    keys: list[str]
    ch: Chooser | None = None
    cfgs: list = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    cells: int = 0
    seconds: float = 0.0

    def __post_init__(self) -> None:
        self.runs = self.runs or [0] * len(self.keys)
        self.start = self.st

    def measured(self, i: int, cost_s: float) -> None:
        """One more run of candidate ``i`` at the model's mean: only the covariance moves."""
        self.runs[i] += 1
        self.st = replace(
            self.st,
            cov=self.st.after_run(i),
            own_var=(
                None
                if self.st.own_var is None or self.ch is None
                else self.ch.own_var(len(self.keys), self.runs, self.st.noise_var)
            ),
        )
        self.cells += 1
        self.seconds += cost_s

    def step(
        self,
        target: float,
        spent_s: float,
        budget_s: float | None,
        max_runs: int | None,
        device: Device | None,
    ) -> sel.Step:
        firsts, stand_ins = (
            self.ch.leading_defaults(self.st, self.cfgs, device)
            if self.ch is not None and device is not None
            else ([], frozenset())
        )
        return sel.next_step(
            self.st,
            self.cost,
            self.runs,
            target=target,
            spent_s=spent_s,
            budget_s=budget_s,
            max_runs=max_runs,
            defaults=firsts,
            stand_ins=stand_ins,
        )


def simulate_joint(
    sims: list[_Sim],
    weights: Sequence[float],
    *,
    target: float,
    spent_s: float,
    budget_s: float | None,
    max_runs: int | None,
    horizon: int = 60,
    device: Device | None = None,
) -> tuple[list[JointPick], list[sel.Step], list[sel.Step] | None]:
    """A joint probe's choices if every run came out at the model's mean (each profile's
    covariance moves, the means do not): up to ``horizon`` picks, until every profile
    stops or the budget is spent. A cell the profiles share is run once and counted in each
    of their ``sims``. Returns (the picks, the profiles' first steps, their last steps if
    every one stopped)."""
    first: list[sel.Step] = []
    picks: list[JointPick] = []
    spent = spent_s
    for _ in range(horizon):
        steps = [s.step(target, spent, budget_s, max_runs, device) for s in sims]
        first = first or steps
        pick = joint_pick(
            steps,
            [s.keys for s in sims],
            weights,
            spent_s=spent,
            budget_s=budget_s,
            max_runs=max_runs,
        )
        if pick is None:
            return picks, first, steps
        key = sims[pick.part].keys[pick.option.index]
        for p in pick.serves:
            sims[p].measured(sims[p].keys.index(key), pick.option.cost_s)
        spent += pick.option.cost_s
        picks.append(pick)
    return picks, first, None


class JointChooser:
    """The MatrixRun's cell source for several profiles in one session: one Chooser per
    profile (its candidates, posterior and stop rule), one model fit per step for all of
    them, one matrix, one budget; joint_pick chooses across them."""

    def __init__(
        self,
        plan: AdaptivePlan,
        store: Any,
        settings: ModelSettings,
        device_params: Callable[[Device], Any],
        stored_params: Callable[[], dict],
        on_progress: Callable[[ProgressEvent], None] | None = None,
    ) -> None:
        self.plan = plan
        self.store = store
        specs = {w.name: w for w in plan.workloads}
        self.parts = [
            Chooser(plan, store, settings, device_params, stored_params, profile=p, spec=specs[w])
            for p, w in zip(plan.profiles, plan.profile_workloads)
        ]
        self.weights = list(plan.weights) or [1.0] * len(self.parts)
        self.on_progress = on_progress or (lambda e: None)
        self.run: Any = None
        self.history: list[JointDecision] = []
        self.schedulers: set[str] | None = None

    def times(self, device: Device) -> CellTimes:
        return times_for(self.store, self.plan, device.identity)

    def shared_with(self, p: int) -> list[str]:
        """The other profiles measured with profile ``p``'s workload (its cells are theirs)."""
        w = self.plan.profile_workloads
        return [self.plan.profiles[q] for q in range(len(w)) if q != p and w[q] == w[p]]

    def decide(
        self, device: Device
    ) -> tuple[list[tuple[sel.Step, list, Decision]], JointPick | None, JointDecision]:
        runs_now = self.parts[0]._runs()
        self.plan.default_budget(self.times(device), self.schedulers)
        model = self.parts[0].fit()
        out = []
        for ch in self.parts:
            ch.schedulers = self.schedulers
            out.append(ch.decide(device, runs_now, model))
        keys = [
            [planmod.cell_key(c, c.scheduler, ch.spec.name) for c in cfgs]
            for ch, (_, cfgs, _) in zip(self.parts, out)
        ]
        spent = runs_now[1] + self.plan.calibration_s
        pick = joint_pick(
            [s for s, _, _ in out],
            keys,
            self.weights,
            spent_s=spent,
            budget_s=self.plan.budget_s,
            max_runs=self.plan.max_reps,
        )
        names = self.plan.profiles
        d = JointDecision(
            profiles=list(names),
            weights=self.weights,
            answers=[a for _, _, a in out],
            spent_s=spent,
            budget_s=self.plan.budget_s,
            full_estimate_s=self.plan.full_estimate_s,
            runs=sum(runs_now[0].values()),
            calibration_s=self.plan.calibration_s,
        )
        if pick is None:
            for a in d.answers:
                if not a.reason:  # its own rule still had a cell: none fit the session
                    a.reason = (
                        f"no cell left that fits the session's budget or repetitions "
                        f"({spent:.0f} s of device time spent"
                        + (f" of {self.plan.budget_s:.0f} s" if self.plan.budget_s else "")
                        + ")"
                    )
            d.reason = (
                "every profile's stop rule fired ("
                + "; ".join(f"{p}: {a.reason}" for p, a in zip(names, d.answers))
                + ")"
            )
        else:
            d.choice = keys[pick.part][pick.option.index]
            d.serves = [names[p] for p in pick.serves]
            d.why = self.why(pick)
        return out, pick, d

    def why(self, pick: JointPick) -> str:
        names = [self.plan.profiles[p] for p in pick.serves]
        shared = (
            f" (the same cell for {' and '.join(names)}: measured once, it counts for each)"
            if len(names) > 1
            else ""
        )
        rate = (
            f"; {pick.value_per_s:.2g} weighted value per second, the most of any profile's cells"
            if pick.value_per_s > 0
            else ""
        )
        return f"for {', '.join(names)}: {pick.option.why()}{rate}{shared}"

    def __call__(self, info: Device, done: set) -> Iterator[planmod.Cell]:
        return _cell_source(self, info, done, self.next_cell)

    def next_cell(self, device: Device) -> tuple["_Next | None", JointDecision, str]:
        out, pick, d = self.decide(device)
        if pick is None:
            return None, d, d.reason
        # a cell that fails is left out for every profile it serves
        return (
            _Next(
                out[pick.part][1][pick.option.index],
                self.parts[pick.part].spec,
                pick.option.runs_so_far,
                d.why,
                tuple(self.parts[p] for p in pick.serves),
            ),
            d,
            "",
        )

    def _note(self, message: str, d: JointDecision | None = None) -> None:
        self.on_progress(ProgressEvent("note", len(self.history), 0, message=message))

    def in_seconds(self, e: ProgressEvent) -> ProgressEvent:
        return self.parts[0].in_seconds(e)

    def first_choices(
        self, device: Device, n: int = 8, horizon: int = 60
    ) -> tuple[list[str], JointDecision, list[str]]:
        """For --dry-run: the first ``n`` cells across the profiles if every run came out at
        the model's mean (simulate_joint), and the split of device time between the
        profiles it expects. Returns (choice lines, where it starts, split lines)."""
        self.schedulers = available_schedulers(device.path)
        model = self.parts[0].fit()
        sims = []
        for ch in self.parts:
            ch.schedulers = self.schedulers
            cfgs = ch.candidates(device)
            st, _ = ch.state(device, cfgs, None, model)
            times = ch.times(device)
            sims.append(
                _Sim(
                    st,
                    [times.config_s(c) for c in cfgs],
                    [planmod.cell_key(c, c.scheduler, ch.spec.name) for c in cfgs],
                    ch,
                    cfgs,
                )
            )
        names = self.plan.profiles
        spent = self.plan.calibration_s
        picks, first, last = simulate_joint(
            sims,
            self.weights,
            target=self.plan.target,
            spent_s=spent,
            budget_s=self.plan.budget_s,
            max_runs=self.plan.max_reps,
            horizon=horizon,
            device=device,
        )
        start = JointDecision(
            profiles=list(names),
            weights=self.weights,
            answers=[
                Decision(
                    leader=s.labels[s.leader],
                    leader_name=s.name(s.leader),
                    confidence=st.confidence,
                    p_best={},
                    spent_s=spent,
                    full_estimate_s=self.plan.full_estimate_s,
                    runs=0,
                )
                for s, st in zip((x.start for x in sims), first)
            ],
            spent_s=spent,
            budget_s=self.plan.budget_s,
            full_estimate_s=self.plan.full_estimate_s,
            runs=0,
        )
        lines = [f"{k + 1}. {self.why(pick)}" for k, pick in enumerate(picks[:n])]
        stopped = (
            "; ".join(f"{p}: {st.reason}" for p, st in zip(names, last)) if last is not None else ""
        )
        if stopped and len(picks) < n:
            lines.append(f"then stop: {stopped}")
        total = sum(p.option.cost_s for p in picks) or 1.0
        split = [
            f"{p}: {s.cells} cells, about {s.seconds:.0f} s ({s.seconds / total:.0%})"
            for p, s in zip(names, sims)
        ]
        if len(set(self.plan.profile_workloads)) < len(names):
            split.append("a cell profiles share counts for each of them")
        split.append(
            f"then every profile stops ({stopped})"
            if stopped
            else f"the first {horizon} choices; the real results decide the rest"
        )
        return lines, start, split


# --------------------------------------------------------------------------- running


@dataclass
class AdaptiveSummary:
    probe: Any  # ProbeSummary of the adaptive matrix
    decision: Decision | None
    calibration: dict[str, Any] | None = None
    history: list[Any] = field(default_factory=list)  # Decision, or JointDecision
    joint: JointDecision | None = None  # several profiles: the answer per profile
    # per profile: its workload and the profiles it shares it with
    workloads: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        doc = {
            "adaptive": True,
            "probe": self.probe.to_dict() if self.probe else None,
            "decision": self.decision.to_dict() if self.decision else None,
            "calibration": self.calibration,
            "steps": [h.to_dict() for h in self.history],
        }
        if self.joint is not None:
            j = self.joint
            doc["session"] = {k: v for k, v in j.to_dict().items() if k != "answers"}
            doc["profiles"] = [
                {"profile": p, "weight": w, **info, "decision": a.to_dict()}
                for p, w, a, info in zip(j.profiles, j.weights, j.answers, self.workloads)
            ]
        return doc


def _store_helpers(db: str | None):
    return (lambda dev: device_params_for(dev, db)), (lambda: stored_device_params(db))


def dry_run_lines(setup: AdaptiveSetup, db: str | None, n: int = 5) -> list[str]:
    """What --adaptive --dry-run prints: the calibration (if any), the first choices and
    why, the budget and the full matrix it replaces. Executes nothing."""

    plan = setup.plan
    if plan.joint:
        return _joint_dry_run_lines(setup, db, n)
    lines = [
        f"# fsadvisor probe --adaptive --dry-run: profile {plan.profile}, "
        f"{len(plan.configs)} configurations; target confidence {plan.target:g}"
        + (f", budget {plan.budget_s:.0f} s" if plan.budget_s else ", no budget")
        + f"; the full matrix ({DEFAULT_REPS} reps) is about "
        f"{plan.full_estimate_s:.0f} s. Nothing below is executed."
    ]
    if setup.calibration_note:
        lines.append(f"# {setup.calibration_note}")
    params, stored = _store_helpers(db)
    with open_store(probing.store_path(db)) as store:
        store.ensure_seeded()
        ch = Chooser(plan, store, ModelSettings.load(db=db), params, stored)
        choices, first = ch.first_choices(setup.device, n)
    lines.append(
        f"# now: leader {first.who}, confidence {first.confidence:.2f} "
        "(the model's prior for this device"
        + (", before calibration)" if setup.calibration is not None else ")")
    )
    lines.append(
        "# first choices if every run came out as predicted (each choice is "
        "recomputed from the real result):"
    )
    lines += [f"#   {c}" for c in choices]
    return lines


def _joint_dry_run_lines(setup: AdaptiveSetup, db: str | None, n: int) -> list[str]:
    """dry_run_lines for several profiles: one session, its first cells across the
    profiles and the split of device time it expects."""

    plan = setup.plan
    weights = plan.weights or [1.0] * len(plan.profiles)
    who = ", ".join(
        p + (f" (weight {w:g})" if any(x != 1.0 for x in weights) else "")
        for p, w in zip(plan.profiles, weights)
    )
    lines = [
        f"# fsadvisor probe --adaptive --dry-run: one session for profiles {who}, "
        f"{len(plan.configs)} configurations x {len(plan.workloads)} workloads; target "
        f"confidence {plan.target:g}"
        + (f", budget {plan.budget_s:.0f} s" if plan.budget_s else ", no budget")
        + f"; their full matrices ({DEFAULT_REPS} reps) are about "
        f"{plan.full_estimate_s:.0f} s. Nothing below is executed."
    ]
    for i, p in enumerate(plan.profiles):
        others = [
            q
            for j, q in enumerate(plan.profiles)
            if j != i and plan.profile_workloads[j] == plan.profile_workloads[i]
        ]
        if others and i < plan.profiles.index(others[0]):
            lines.append(
                f"# {p} and {', '.join(others)} run the same workload: a cell is "
                "measured once and counts for each"
            )
    if setup.calibration_note:
        lines.append(f"# {setup.calibration_note}")
    params, stored = _store_helpers(db)
    with open_store(probing.store_path(db)) as store:
        store.ensure_seeded()
        ch = JointChooser(plan, store, ModelSettings.load(db=db), params, stored)
        choices, start, split = ch.first_choices(setup.device, n)
    lines += [
        f"# now: {p}: leader {a.who}, confidence {a.confidence:.2f}"
        for p, a in zip(plan.profiles, start.answers)
    ]
    lines.append(
        "# first cells across the profiles if every run came out as predicted (each "
        "choice is recomputed from the real result):"
    )
    lines += [f"#   {c}" for c in choices]
    lines.append("# expected split of the device time between the profiles:")
    lines += [f"#   {s}" for s in split]
    return lines


def run_adaptive(
    setup: AdaptiveSetup,
    db: str | None,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    confirm: str | None = None,
    interruptions: Any = None,
) -> AdaptiveSummary:
    """Calibrate if needed, then run the adaptive matrix (see module docstring)."""

    why = probing.root_problem()
    if why:
        raise DeviceRefused(why)
    plan = setup.plan
    if not probing.confirmation_matches(plan, confirm):
        raise DeviceRefused(f"not confirmed: type the device exactly as {plan.device}")
    forward = on_progress or (lambda e: None)
    calib_doc = None
    if setup.calibration is not None:
        forward(
            ProgressEvent(
                "note",
                0,
                0,
                message=(
                    "the device's calibration lacks what this decision rests on: "
                    if setup.calibration.extends
                    else "the device has no calibration: "
                )
                + calibration.planned(setup.calibration),
            )
        )
        res = calibration.run_calibration(
            setup.calibration,
            on_progress=forward,
            confirm=confirm,
            interruptions=interruptions,
            deadline_s=setup.calibration_deadline_s,
        )
        plan.calibration_s = res.wall_s
        calib_doc = {
            "identity": res.identity,
            "wall_s": round(res.wall_s, 1),
            "matrix_id": res.matrix_id,
        }
        if plan.budget_s is not None and plan.calibration_s >= plan.budget_s:
            forward(
                ProgressEvent(
                    "note",
                    0,
                    0,
                    message="the calibration used the whole budget: no cell was measured",
                )
            )
    db_path = probing.store_path(plan.db_path)
    params, stored = _store_helpers(str(db_path))
    with open_store(db_path) as store:
        store.ensure_seeded()
        store.require_writable()
        store.require_intact()
        kind = JointChooser if plan.joint else Chooser
        chooser = kind(
            plan, store, ModelSettings.load(db=str(db_path)), params, stored, on_progress=forward
        )
        run = MatrixRun(
            plan,
            store,
            StateFile(state_path_for(db_path)),
            lambda e: forward(chooser.in_seconds(e)),
            interruptions=interruptions,
            cell_source=chooser,
        )
        chooser.run = run
        summary = run.execute()
        # MatrixRun counted plan.cells() (every configuration x MAX_REPS); an adaptive
        # matrix is the cells it chose
        summary.total = len(summary.outcomes)
        if summary.matrix_id:
            summary.results = results_from_store(store, summary.matrix_id, plan)
        final = chooser.history[-1] if chooser.history else None
    if isinstance(chooser, JointChooser):
        workloads = [
            {"workload": w, "shares_cells_with": chooser.shared_with(i)}
            for i, w in enumerate(plan.profile_workloads)
        ]
        return AdaptiveSummary(
            probe=summary,
            decision=None,
            calibration=calib_doc,
            history=chooser.history,
            joint=final if isinstance(final, JointDecision) else None,
            workloads=workloads,
        )
    return AdaptiveSummary(
        probe=summary,
        decision=final if isinstance(final, Decision) else None,
        calibration=calib_doc,
        history=chooser.history,
    )


# ------------------------------------------------------- the front ends' entry points


def adaptive_argv(request: ProbeRequest, target: float, budget: str | None) -> list[str]:
    """``fsadvisor probe ... --profile P [--budget B] [--target-confidence P]``: with a
    profile the adaptive probe is the default (``--adaptive`` only without one)."""
    argv = replace(request, dry_run=False).to_argv(adaptive=True)
    if request.profile is None:
        argv.append("--adaptive")
    if budget is not None and str(budget).strip():
        argv += ["--budget", str(budget).strip()]
    if float(target) != DEFAULT_TARGET:
        argv += ["--target-confidence", f"{float(target):g}"]
    return argv


def is_adaptive(request: ProbeRequest, adaptive: bool) -> bool:
    """Whether ``request`` runs adaptively: asked for, or a --resume of an adaptive probe
    (which must continue adaptively, as ``fsadvisor probe --resume`` does)."""
    return adaptive or resumes_adaptive(request)


@dataclass(frozen=True)
class AdaptivePreview(probing.ProbePreview):
    """The dry run of ``probe --adaptive``, and what its --json reports besides the lines:
    the profiles it decides for, its budget and the estimates it is weighed against."""

    profiles: list[str | None] = field(default_factory=list)
    budget_s: float | None = None
    full_estimate_s: float = 0.0
    calibration_estimate_s: float = 0.0


def adaptive_preview(
    request: ProbeRequest,
    target: float,
    budget: str | None = None,
    profiles: list[str] | None = None,
    weights: list[float] | None = None,
    folded: bool = True,
) -> AdaptivePreview:
    """The dry run of ``probe --adaptive``: the budget check (a budget too small for the
    calibration and one cell is refused here), the safety verdict, the first choices and
    why. With several ``profiles`` (the request's own first) it is the one probe that
    decides for all of them, weighed by ``weights``. Its comments fold to 80 columns, or
    (not ``folded``, for --json) stay one line each. Executes nothing."""
    request = replace(request, dry_run=True)
    setup = plan_adaptive(request, target, budget, profiles=profiles, weights=weights)
    note = probing.dry_run_verdict(setup.plan)
    lines = dry_run_lines(setup, request.db)
    if note:
        lines.insert(1, f"# {note}")
    # comments only: no command to keep whole
    lines = fold_comments(lines, COLUMNS if folded else UNFOLDED)
    plan = setup.plan
    argv = adaptive_argv(request, target, budget)
    more = [a for p in (profiles or [])[1:] for a in ("--profile", p)]
    if weights:
        more += ["--profile-weights", ",".join(f"{w:g}" for w in weights)]
    # beside the first --profile, as the CLI's help shows them
    at = argv.index("--profile") + 2 if "--profile" in argv else len(argv)
    argv[at:at] = more
    return AdaptivePreview(
        command=shlex.join(argv),
        lines=lines,
        cells=len(plan.configs),
        estimated_s=float(plan.budget_s or plan.full_estimate_s),
        adaptive=True,
        profiles=list(plan.profiles) or [plan.profile],
        budget_s=plan.budget_s,
        full_estimate_s=plan.full_estimate_s,
        calibration_estimate_s=setup.calibration_estimate_s,
    )


def run_adaptive_request(
    request: ProbeRequest,
    target: float,
    budget: str | None = None,
    confirm: str | None = None,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    interruptions: probing.Interruptions | None = None,
    profiles: list[str] | None = None,
    weights: list[float] | None = None,
):
    """service.probing.run_request for ``probe --adaptive`` (or the --resume of one): refused
    without root, cleanup after a killed probe, the budget check, the safety verdict, then
    service.adaptive.run_adaptive. Returns its AdaptiveSummary (``.probe`` the matrix's
    ProbeSummary, ``.decision`` the leader, its confidence and the device time; with several
    ``profiles``, one session for all of them: ``.joint`` the answer per profile)."""
    probing.before_a_probe(request, on_progress)
    setup = plan_adaptive(
        replace(request, dry_run=False), target, budget, profiles=profiles, weights=weights
    )
    probing.check_device(setup.plan)
    return run_adaptive(
        setup, request.db, on_progress=on_progress, confirm=confirm, interruptions=interruptions
    )
