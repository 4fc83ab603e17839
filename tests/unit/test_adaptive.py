"""Adaptive probing's pure parts (predict/adaptive.py) on synthetic posteriors, and the
service's checks that run before any device is touched (service/adaptive.py)."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.errors import ConfigError
from fsadvisor.predict import adaptive as sel

TOL = -math.log(0.99)


def state(mu, sd, noise_sd=0.05, own_sd=None):
    """k candidates, one independent coefficient each (X = I): cov is diag(sd^2)."""
    k = len(mu)
    own = None if own_sd is None else np.full(k, own_sd**2)
    return sel.State(
        labels=[f"c{i}" for i in range(k)],
        mu=np.asarray(mu, float),
        X=np.eye(k),
        cov=np.diag(np.asarray(sd, float) ** 2),
        noise_var=noise_sd**2,
        tolerance=TOL,
        own_var=own,
    )


def test_a_settled_decision_stops_without_measuring():
    s = state([0.5, 0.0, -0.2], [0.01, 0.01, 0.01])
    step = sel.next_step(s, [60, 60, 60], [0, 0, 0], target=0.95, spent_s=0, budget_s=None)
    assert step.choice is None and "settled" in step.reason and step.confidence >= 0.95


def test_overlapping_leaders_are_measured_and_far_ones_never():
    s = state([0.02, 0.0, -2.0], [0.2, 0.2, 0.2])
    step = sel.next_step(s, [60, 60, 60], [0, 0, 0], target=0.95, spent_s=0, budget_s=None)
    assert step.choice is not None and step.choice.index in (0, 1)
    assert all(o.index != 2 for o in step.ranked)  # 10 sd behind: cannot change the answer
    assert "narrow the leaders' uncertainty" in step.choice.why()


def test_cheaper_cell_wins_at_equal_information():
    s = state([0.0, 0.0], [0.2, 0.2])
    step = sel.next_step(s, [120, 30], [0, 0], target=0.95, spent_s=0, budget_s=None)
    assert step.choice.index == 1


def test_the_more_uncertain_of_two_leaders_is_measured():
    s = state([0.01, 0.0], [0.02, 0.3])
    step = sel.next_step(s, [60, 60], [0, 0], target=0.95, spent_s=0, budget_s=None)
    assert step.choice.index == 1


def test_budget_stops_before_a_cell_that_does_not_fit():
    s = state([0.0, 0.0], [0.2, 0.2])
    step = sel.next_step(s, [60, 60], [0, 0], target=0.95, spent_s=100, budget_s=150)
    assert step.choice is None and "budget" in step.reason


def test_max_runs_caps_repetitions():
    s = state([0.0, 0.0], [0.2, 0.2])
    step = sel.next_step(s, [60, 60], [3, 3], target=0.95, spent_s=0, budget_s=None, max_runs=3)
    assert step.choice is None and "measured the most times" in step.reason


def test_repeating_a_cell_lowers_its_value():
    s = state([0.0, 0.0], [0.2, 0.2])
    first = sel.options(s, [60, 60], [0, 0])[0]
    s2 = sel.State(**{**s.__dict__, "cov": s.after_run(first.index)})
    again = [o for o in sel.options(s2, [60, 60], [1, 0]) if o.index == first.index][0]
    assert again.shrink < first.shrink


def test_after_run_is_the_normal_update():
    s = state([0.0, 0.0], [0.2, 0.2], noise_sd=0.1)
    c = s.after_run(0)
    assert c[0, 0] == pytest.approx(1 / (1 / 0.04 + 1 / 0.01))
    assert c[1, 1] == pytest.approx(0.04)


def test_own_variance_makes_a_shared_level_measurable():
    # Two candidates that differ only by shared terms: one common coefficient with a huge
    # sd (the device level). Without own variance no run can tell them apart.
    X = np.array([[1.0], [1.0]])
    base = dict(
        labels=["a", "b"],
        mu=np.array([0.0, 0.0]),
        X=X,
        cov=np.array([[4.0]]),
        noise_var=0.0025,
        tolerance=TOL,
    )
    blind = sel.State(**base)
    assert sel.options(blind, [60, 60], [0, 0]) == []
    seeing = sel.State(**base, own_var=np.array([0.01, 0.01]))
    assert sel.options(seeing, [60, 60], [0, 0])


@given(
    mu=st.lists(st.floats(-0.3, 0.3), min_size=2, max_size=6),
    sd=st.floats(0.005, 0.5),
    spent=st.floats(0, 500),
    budget=st.floats(1, 1000),
)
@settings(max_examples=30, deadline=None)
def test_a_choice_always_fits_the_budget_and_is_a_candidate(mu, sd, spent, budget):
    k = len(mu)
    s = state(mu, [sd] * k)
    cost = [30.0 + 10 * i for i in range(k)]
    step = sel.next_step(s, cost, [0] * k, target=0.95, spent_s=spent, budget_s=budget)
    assert 0.0 <= step.confidence <= 1.0
    if step.choice is not None:
        assert 0 <= step.choice.index < k
        assert spent + step.choice.cost_s <= budget
        assert step.confidence < 0.95


# ------------------------------------------------------------------ service checks


@given(st.text(max_size=12))
@settings(max_examples=60, deadline=None)
def test_parse_budget_never_crashes(text):
    from fsadvisor.service.adaptive import parse_budget

    try:
        v = parse_budget(text)
    except ConfigError:
        return
    assert v > 0 and math.isfinite(v)


@pytest.mark.parametrize(
    "text,seconds", [("90", 90), ("90s", 90), ("3m", 180), ("1h30m", 5400), ("1.5m", 90)]
)
def test_parse_budget_units(text, seconds):
    from fsadvisor.service.adaptive import parse_budget

    assert parse_budget(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "0", "-3m", "3x", "m"])
def test_parse_budget_refuses(bad):
    from fsadvisor.service.adaptive import parse_budget

    with pytest.raises(ConfigError):
        parse_budget(bad)


def _request(tmp_path, **kw):
    from fsadvisor.service import probing

    return probing.ProbeRequest.make(
        None,
        scratch="1G",
        profile="fio-randwrite-4k-j1",
        filesystems="ext4,xfs",
        runtime_s=1,
        cooldown_s=0,
        dry_run=True,
        db=str(tmp_path / "s.db"),
        **kw,
    )


def test_a_budget_too_small_for_the_calibration_is_refused_in_planning(tmp_path):
    from fsadvisor.service import adaptive as ad

    calib = ad.plan_adaptive(_request(tmp_path)).calibration_estimate_s
    assert calib > 0
    with pytest.raises(
        ConfigError,
        match="too small for even the device calibration .* and one run of each filesystem .*the smallest budget that works is [0-9]+ s",
    ):
        ad.plan_adaptive(_request(tmp_path), budget=f"{math.ceil(calib)}s")


def test_a_quick_probe_calibrates_with_its_own_short_windows(tmp_path):
    """--runtime 1 (a quick look) calibrates with 1 s windows too; a probe of the default
    or any longer window leaves the calibration its own 4 s plan."""
    from dataclasses import replace

    from fsadvisor.probe.calibration_plan import DEFAULT_RUNTIME_S
    from fsadvisor.service import adaptive as ad

    quick = ad.plan_adaptive(_request(tmp_path))
    slow = ad.plan_adaptive(replace(_request(tmp_path), runtime_s=10.0))
    assert quick.calibration.runtime_s == 1.0
    assert slow.calibration.runtime_s == DEFAULT_RUNTIME_S
    assert quick.calibration_estimate_s < slow.calibration_estimate_s
    assert len(quick.calibration.cells()) == len(slow.calibration.cells())


def test_adaptive_needs_a_profile_and_a_sane_target(tmp_path):
    from fsadvisor.service import adaptive as ad, probing

    req = probing.ProbeRequest.make(None, scratch="1G", dry_run=True, db=str(tmp_path / "s.db"))
    with pytest.raises(ConfigError, match="needs --profile"):
        ad.plan_adaptive(req)
    with pytest.raises(ConfigError, match="target-confidence"):
        ad.plan_adaptive(_request(tmp_path), target=1.0)


def test_dry_run_shows_calibration_and_first_choices(tmp_path):
    from fsadvisor.service import adaptive as ad

    setup = ad.plan_adaptive(_request(tmp_path), budget="10m")
    assert setup.calibration is not None  # a fresh store has no calibration
    lines = ad.dry_run_lines(setup, str(tmp_path / "s.db"))
    text = "\n".join(lines)
    assert "first: calibrate the device" in text and "budget 600 s" in text
    assert "#   1. " in text and "narrow the leaders' uncertainty" in text


def test_adaptive_plan_round_trips_for_resume(tmp_path):
    from fsadvisor.service import adaptive as ad

    plan = ad.plan_adaptive(_request(tmp_path), budget="10m").plan
    back = ad.AdaptivePlan.from_dict(plan.to_dict())
    assert (back.target, back.budget_s, back.max_reps) == (plan.target, 600.0, plan.max_reps)
    assert back.configs == plan.configs and back.to_dict()["purpose"] == "adaptive"
    assert plan.decided_calibration and back.decided_calibration == plan.decided_calibration


def test_a_resumed_probe_keeps_the_calibration_its_start_decided(tmp_path, monkeypatch):
    """The cells a probe stored before it was interrupted move the model, and with it which
    calibration workloads the decision depends on: a resume that decided again could add a
    calibration the budget was never set for (a device test's resume ran 12 s of one). It
    keeps what the start decided; a plan saved before that was recorded decides again."""
    from dataclasses import replace
    from fsadvisor.probe.state import StateFile, state_path_for
    from fsadvisor.service import adaptive as ad, probing

    req = _request(tmp_path)
    plan = ad.plan_adaptive(req, budget="10m").plan
    decided = list(plan.decided_calibration or [])
    assert decided
    sf = StateFile(state_path_for(probing.store_path(req.db)))
    state = sf.load()
    state.matrices["scratch"] = {"matrix_id": "m-1", "plan": plan.to_dict()}
    sf.save(state)

    def moved(*args, **kw):  # what a refit on the stored cells could say now
        return {name: 1.0 for name in ("4k-randread-qd1", *decided)}

    monkeypatch.setattr(ad, "calibration_workloads", moved)
    again = ad.plan_adaptive(replace(req, resume=True), budget=None)
    assert again.plan.decided_calibration == decided
    assert sorted(w.name for w in again.calibration.workloads) == sorted(decided)
    # a plan saved without the record: the resume decides as a start would
    old = plan.to_dict()
    old["adaptive"].pop("decided_calibration")
    state.matrices["scratch"] = {"matrix_id": "m-1", "plan": old}
    sf.save(state)
    again = ad.plan_adaptive(replace(req, resume=True), budget=None)
    assert "4k-randread-qd1" in again.plan.decided_calibration


def test_resume_picks_up_the_adaptive_plan_and_refuses_a_full_one(tmp_path):
    from dataclasses import replace
    from fsadvisor.probe.state import StateFile, state_path_for
    from fsadvisor.service import adaptive as ad, probing

    req = _request(tmp_path)
    plan = ad.plan_adaptive(req, budget="10m").plan
    sf = StateFile(state_path_for(probing.store_path(req.db)))
    state = sf.load()
    state.matrices["scratch"] = {"matrix_id": "m-1", "plan": plan.to_dict()}
    sf.save(state)
    again = ad.plan_adaptive(replace(req, resume=True), budget=None)
    assert isinstance(again.plan, ad.AdaptivePlan) and again.plan.matrix_id == "m-1"
    assert again.plan.budget_s == 600.0  # the budget it started with
    full = {**plan.to_dict()}
    full.pop("purpose")
    state.matrices["scratch"] = {"matrix_id": "m-2", "plan": full}
    sf.save(state)
    with pytest.raises(ConfigError, match="full matrix"):
        ad.plan_adaptive(replace(req, resume=True))


def test_pooled_sd_needs_two_degrees_of_freedom():
    from fsadvisor.service.adaptive import pooled_sd

    assert pooled_sd([[1.0, 1.2]]) is None
    assert pooled_sd([[1.0, 1.2], [2.0, 2.2], [5.0]]) == pytest.approx(math.sqrt((0.02 + 0.02) / 2))


def test_no_budget_means_a_fifth_of_the_full_matrix_the_calibration_included(tmp_path):
    """A device's first profile spends a fifth of the exhaustive matrix's device time in all,
    its calibration included (the goal is that share, not a fifth and a calibration)."""
    from dataclasses import replace

    from fsadvisor.service import adaptive as ad

    assert ad.DEFAULT_BUDGET_SHARE == 0.2
    # the default windows and cool-downs: a matrix of an hour, a calibration of a minute or two
    setup = ad.plan_adaptive(replace(_request(tmp_path), runtime_s=30.0, cooldown_s=30.0))
    plan = setup.plan
    assert setup.calibration_estimate_s > 0  # a fresh store: the device is calibrated first
    assert plan.budget_s == pytest.approx(0.2 * plan.full_estimate_s)
    least = ad.least_deciding(ad.CellTimes(plan, {}))
    assert plan.budget_s > setup.calibration_estimate_s + least


def test_the_default_budget_always_fits_one_run_of_each_filesystem_and_the_noise(
    tmp_path, monkeypatch
):
    """However small the share, the default budget leaves, after the calibration, one run of
    each filesystem and the two repetitions of the cheapest that show the device's noise."""
    from fsadvisor.service import adaptive as ad

    monkeypatch.setattr(ad, "DEFAULT_BUDGET_SHARE", 1e-6)
    setup = ad.plan_adaptive(_request(tmp_path))  # not refused as "too small"
    per_fs = ad.CellTimes(setup.plan, {}).cheapest_per_fs()
    assert set(per_fs) == {"ext4", "xfs"} and all(t > 0 for t in per_fs.values())
    assert ad.least_deciding(ad.CellTimes(setup.plan, {})) == pytest.approx(
        sum(per_fs.values()) + 2 * min(per_fs.values())
    )
    assert setup.plan.budget_s == pytest.approx(
        sum(per_fs.values()) + 2 * min(per_fs.values()) + setup.calibration_estimate_s
    )


# ------------------------------------------------------ cell times, calibration, progress


def _scratch_identity_device(plan):
    from dataclasses import replace
    from fsadvisor.service import adaptive as ad

    guess = ad._scratch_device(plan.device_size_bytes, plan.scratch_dir, plan.plp)
    return replace(guess, path="/dev/loop5")  # what the attached scratch device will be


def _run(device, cfg, workload_name, wall_s, runtime_s, matrix_id=None, rep=1):
    from fsadvisor.domain import Workload
    from fsadvisor.records import EnergyReading, RunRecord

    return RunRecord(
        cell_key=f"{cfg.key()}|{workload_name}",
        device=device,
        config=cfg,
        workload_name=workload_name,
        workload=Workload(rw="randwrite", bs_bytes=4096),
        rep=rep,
        status="ok",
        started_at=1.7e9,
        wall_s=wall_s,
        matrix_id=matrix_id,
        metrics={"iops": 1000.0, "runtime_s": runtime_s, "ops": 1000.0 * runtime_s},
        energy=EnergyReading(
            source="estimate",
            scope="device",
            energy_j=5.0,
            avg_watts=5.0,
            duration_s=runtime_s,
            samples=1,
        ),
    )


def _configs(plan):
    from fsadvisor.domain import FsConfig

    by_fs = {}
    for c in plan.configs:
        by_fs.setdefault(c.fs, c)
    by_fs.setdefault("btrfs", FsConfig.make("btrfs", {}, [], "none"))  # not in _request's
    return by_fs


def test_cell_times_come_from_the_measured_overhead_per_filesystem(tmp_path):
    from fsadvisor.service import adaptive as ad
    from fsadvisor.store import open_store

    plan = ad.plan_adaptive(_request(tmp_path), budget="10m").plan
    dev = _scratch_identity_device(plan)
    name = plan.workloads[0].name
    cfg = _configs(plan)
    with open_store(tmp_path / "s.db") as store:
        static = ad.CellTimes.from_store(store, plan, dev.identity)
        assert not static.measured  # nothing stored yet: the plan's fixed guess
        assert static.config_s(cfg["ext4"]) == pytest.approx(plan.runtime_s + plan.cooldown_s + 3.0)
        # 1 s windows (runtime_s as fio measured it) and 0 s cool-down: overhead is the rest
        for rep, wall in enumerate((2.0, 2.2, 1.8), 1):
            store.record_run(_run(dev, cfg["ext4"], name, wall, 1.0, rep=rep))
        store.record_run(_run(dev, cfg["xfs"], name, 3.5, 1.0))
        # another workload's runs (e.g. a read with a fill) count only when none of this one
        store.record_run(_run(dev, cfg["btrfs"], "profile:other", 20.0, 1.0))
        t = ad.CellTimes.from_store(store, plan, dev.identity)
    assert t.measured
    assert t.config_s(cfg["ext4"]) == pytest.approx(1.0 + 1.0)  # median 1.0 s overhead
    assert t.config_s(cfg["xfs"]) == pytest.approx(1.0 + 2.5)
    # btrfs has no run of this workload: the pooled median of this workload's overheads
    assert t.config_s(cfg["btrfs"]) == pytest.approx(1.0 + np.median([1.0, 1.2, 0.8, 2.5]))


def test_cell_times_subtract_each_matrix_own_cooldown(tmp_path):
    from fsadvisor.service import adaptive as ad
    from fsadvisor.store import open_store

    plan = ad.plan_adaptive(_request(tmp_path), budget="10m").plan
    dev = _scratch_identity_device(plan)
    cfg = _configs(plan)["ext4"]
    with open_store(tmp_path / "s.db") as store:
        mid = store.start_matrix({**plan.to_dict(), "cooldown_s": 30.0})
        store.record_run(_run(dev, cfg, plan.workloads[0].name, 32.0, 1.0, matrix_id=mid))
        t = ad.CellTimes.from_store(store, plan, dev.identity)
    assert t.overhead_s("ext4") == pytest.approx(1.0)  # 32 s - 1 s window - 30 s cool-down


def test_the_full_matrix_estimate_and_budget_use_stored_overheads(tmp_path):
    from fsadvisor.service import adaptive as ad
    from fsadvisor.store import open_store

    before = ad.plan_adaptive(_request(tmp_path)).plan
    dev = _scratch_identity_device(before)
    with open_store(tmp_path / "s.db") as store:
        for c in (c for c in _configs(before).values() if c in before.configs):
            store.record_run(_run(dev, c, before.workloads[0].name, 1.5, 1.0))
    setup = ad.plan_adaptive(_request(tmp_path))
    runnable = [c for c in before.cells() if not c.skip_reason]
    n_full = len(runnable) // ad.MAX_REPS * 3  # the full matrix: 3 reps, not the ceiling
    assert before.full_estimate_s == pytest.approx(n_full * (1.0 + 3.0))
    assert setup.plan.full_estimate_s == pytest.approx(n_full * (1.0 + 0.5))
    with open_store(tmp_path / "s.db") as store:
        least = ad.least_deciding(ad.times_for(store, setup.plan, dev.identity))
    assert setup.plan.budget_s == pytest.approx(
        max(
            ad.DEFAULT_BUDGET_SHARE * setup.plan.full_estimate_s,
            setup.calibration_estimate_s + least,
        )
    )


def test_a_calibrated_device_identity_is_not_calibrated_again(tmp_path):
    """The calibration is one-off per device identity (a scratch loop device's is its
    backing class): a second profile on the same class reuses it."""
    from fsadvisor.catalog.device_params import DeviceParams, PARAM_KEYS
    from fsadvisor.service import adaptive as ad
    from fsadvisor.store import open_store

    first = ad.plan_adaptive(_request(tmp_path), budget="10m")
    assert first.calibration is not None and first.calibration_estimate_s > 0
    dev = _scratch_identity_device(first.plan)
    with open_store(tmp_path / "s.db") as store:
        store.save_device_params(
            DeviceParams(
                dev.identity,
                dev.kind,
                {k: 1.0 for k in PARAM_KEYS},
                {k: 0.05 for k in PARAM_KEYS},
                "calibrated: test",
                12,
                {"measured": list(PARAM_KEYS)},
            )
        )
    from dataclasses import replace

    again = ad.plan_adaptive(replace(_request(tmp_path), profile="fio-read-128k-j1"), budget="10m")
    assert again.calibration is None and again.calibration_estimate_s == 0.0
    text = "\n".join(ad.dry_run_lines(again, str(tmp_path / "s.db")))
    assert "calibrate the device" not in text
    # a budget that was too small only because of the calibration now fits
    ad.plan_adaptive(_request(tmp_path), budget="20s")


def test_progress_counts_device_seconds_against_the_budget(tmp_path):
    from fsadvisor.predict.settings import ModelSettings
    from fsadvisor.probe.report import ProgressEvent
    from fsadvisor.service import adaptive as ad
    from fsadvisor.store import open_store

    plan = ad.plan_adaptive(_request(tmp_path), budget="10m").plan
    plan.calibration_s = 100.0
    dev = _scratch_identity_device(plan)
    cfg = _configs(plan)["ext4"]
    with open_store(tmp_path / "s.db") as store:
        plan.matrix_id = store.start_matrix(plan.to_dict())
        for rep in (1, 2):
            store.record_run(
                _run(dev, cfg, plan.workloads[0].name, 20.0, 1.0, matrix_id=plan.matrix_id, rep=rep)
            )
        ch = ad.Chooser(
            plan, store, ModelSettings.load(db=str(tmp_path / "s.db")), lambda d: None, lambda: {}
        )
        e = ch.in_seconds(ProgressEvent("cell-start", 2, len(plan.cells()), cell="x", eta_s=9999.0))
        note = ProgressEvent("note", 0, 0, message="m")
        assert ch.in_seconds(note) is note
    assert (e.done, e.total, e.unit) == (140, 600, "s")  # 2 x 20 s + the calibration
    assert e.eta_s == pytest.approx(460.0) and e.cell == "x"


def test_the_cli_bar_shows_seconds_and_an_upper_bound():
    import io
    from fsadvisor.cli.probe import ProbeProgress, progress_bar
    from fsadvisor.probe.report import ProgressEvent

    assert "140/600 s" in progress_bar(140, 600, unit="s")
    out = io.StringIO()
    ProbeProgress(tty=False, out=out)(
        ProgressEvent("cell-start", 140, 600, cell="c", eta_s=460, unit="s")
    )
    assert "140/600 s" in out.getvalue() and "at most ETA" in out.getvalue()
    out = io.StringIO()
    ProbeProgress(tty=False, out=out)(ProgressEvent("cell-start", 3, 8, cell="c", eta_s=60))
    assert " 3/8 " in out.getvalue() and "at most" not in out.getvalue()


def _save_state(tmp_path, req, plan_doc, mid="m-1"):
    from fsadvisor.probe.state import StateFile, state_path_for
    from fsadvisor.service import probing

    sf = StateFile(state_path_for(probing.store_path(req.db)))
    state = sf.load()
    state.matrices["scratch"] = {"matrix_id": mid, "plan": plan_doc}
    sf.save(state)


def test_a_plain_resume_of_an_adaptive_probe_is_adaptive(tmp_path):
    from dataclasses import replace
    from fsadvisor.service import adaptive as ad, probing

    req = _request(tmp_path)
    plan = ad.plan_adaptive(req, budget="10m").plan
    assert not ad.resumes_adaptive(replace(req, resume=True))  # nothing to resume
    _save_state(tmp_path, req, plan.to_dict())
    assert ad.resumes_adaptive(replace(req, resume=True))
    assert not ad.resumes_adaptive(req)  # not asked to resume
    # the full-matrix path refuses it instead of running every config x MAX_REPS
    with pytest.raises(ConfigError, match="is adaptive"):
        probing.plan_probe(replace(req, resume=True))
    full = plan.to_dict()
    full.pop("purpose")
    _save_state(tmp_path, req, full)
    assert not ad.resumes_adaptive(replace(req, resume=True))


def test_cli_probe_resume_continues_an_adaptive_plan_adaptively(tmp_path, monkeypatch):
    from typer.testing import CliRunner
    from fsadvisor.cli.app import app
    from fsadvisor.service import adaptive as ad

    req = _request(tmp_path)
    plan = ad.plan_adaptive(req, budget="10m").plan
    _save_state(tmp_path, req, plan.to_dict())
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "s.db"))
    res = CliRunner().invoke(app, ["probe", "--scratch", "1G", "--resume", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "probe --adaptive --dry-run" in res.output and "budget 600 s" in res.output


def test_configurations_whose_scheduler_the_device_lacks_are_left_out(tmp_path):
    from fsadvisor.service import adaptive as ad

    plan = ad.plan_adaptive(_request(tmp_path, schedulers="none,mq-deadline")).plan
    assert {c.scheduler for c in plan.configs} == {"none", "mq-deadline"}
    only_none = ad.runnable(plan, {"none"})
    assert only_none.configs and {c.scheduler for c in only_none.configs} == {"none"}
    assert ad.runnable(plan, None) is plan
    assert ad.available_schedulers(None) is None


def test_a_workload_that_ends_before_its_runtime_costs_its_measured_window(tmp_path):
    """A bounded job (e.g. creating a fixed number of files) may end before --runtime: its
    cells cost the window it measured, not the planned one."""
    from fsadvisor.service import adaptive as ad
    from fsadvisor.store import open_store

    plan = ad.plan_adaptive(_request(tmp_path), budget="10m").plan  # runtime 1 s, cool-down 0
    plan.runtime_s = 10.0
    dev = _scratch_identity_device(plan)
    cfg = _configs(plan)["ext4"]
    with open_store(tmp_path / "s.db") as store:
        mid = store.start_matrix({**plan.to_dict(), "runtime_s": 10.0, "cooldown_s": 0.0})
        for rep in (1, 2, 3):
            store.record_run(
                _run(dev, cfg, plan.workloads[0].name, 2.5 + 1.0, 2.5, matrix_id=mid, rep=rep)
            )
        t = ad.CellTimes.from_store(store, plan, dev.identity)
    assert t.window_fraction == pytest.approx(0.25)
    assert t.config_s(cfg) == pytest.approx(2.5 + 1.0)


# ------------------------------------------------ stopping on the expected loss of the choice


def test_expected_loss_matches_the_closed_form_for_two_candidates():
    from math import erf, exp, pi, sqrt
    from fsadvisor.predict import confidence as C

    for gap, sd in ((0.0, 0.02), (0.01, 0.02), (0.05, 0.03)):
        S = np.diag([sd**2, sd**2])
        s_d = sqrt(2) * sd  # sd of z1 - z0
        phi = exp(-((gap / s_d) ** 2) / 2) / sqrt(2 * pi)
        Phi = 0.5 * (1 + erf(-gap / s_d / sqrt(2)))
        exact = s_d * phi - gap * Phi  # E[(z1 - z0)^+], z1 - z0 ~ N(-gap, s_d^2)
        got = C.expected_loss([gap, 0.0], S)
        assert abs(got - exact) < 0.05 * s_d + 1e-4, (gap, sd, got, exact)


def test_tied_leaders_stop_on_the_expected_loss_not_the_budget():
    # Five equal candidates, each known to +-0.6%: P(the leader is within 1% of the best) is
    # below 0.95 and no run can change that (they are equal), but choosing any of them gives
    # up well under 1% -- the probe stops instead of spending its budget (what the benchmark
    # of 2026-11-24 showed it doing).
    s = state([0.0] * 5, [0.006] * 5)
    assert s.confidence() < 0.95
    assert s.expected_loss() <= sel.MAX_EXPECTED_LOSS
    step = sel.next_step(s, [60] * 5, [3] * 5, target=0.95, spent_s=0, budget_s=None)
    assert step.choice is None and "expected to give up" in step.reason


def test_an_unsettled_decision_with_a_real_possible_loss_keeps_measuring():
    s = state([0.0, -0.01, -0.02], [0.05, 0.05, 0.05])
    assert s.expected_loss() > sel.MAX_EXPECTED_LOSS
    step = sel.next_step(s, [60] * 3, [0] * 3, target=0.95, spent_s=0, budget_s=None)
    assert step.choice is not None


def test_the_device_own_deviations_keep_a_first_run_from_stopping_early():
    # The design alone says the candidates are equal to +-0.3% (shared effects), but this
    # device's own deviations (not yet measured, sd 0.2) may reorder them: no stop.
    s = state([0.0, -0.001, -0.002], [0.003] * 3, own_sd=0.2)
    assert s.expected_loss() > sel.MAX_EXPECTED_LOSS
    step = sel.next_step(s, [60] * 3, [0] * 3, target=0.95, spent_s=0, budget_s=None)
    assert step.choice is not None


# ------------------------------------------------------ knowledge gradient


def _f(z):
    return z * 0.5 * math.erfc(-z / math.sqrt(2)) + math.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def test_expected_max_gain_of_two_lines_is_the_closed_form():
    # E[max(a1 + b1 Z, a2 + b2 Z)] - max(a1, a2) = |b2 - b1| f(-|a1 - a2| / |b2 - b1|)
    for a, b in (([0.0, -0.1], [0.05, -0.02]), ([0.3, 0.0], [0.0, 0.2]), ([0.0, 0.0], [1, -1])):
        want = abs(b[1] - b[0]) * _f(-abs(a[0] - a[1]) / abs(b[1] - b[0]))
        assert sel.expected_max_gain(np.array(a), np.array(b)) == pytest.approx(want, rel=1e-12)


def test_expected_max_gain_is_zero_when_no_line_can_overtake():
    assert sel.expected_max_gain(np.array([0.0, -0.5, 0.2]), np.array([0.1, 0.1, 0.1])) == 0.0


@given(
    a=st.lists(st.floats(-1, 1), min_size=2, max_size=7),
    b=st.lists(st.floats(-0.5, 0.5), min_size=7, max_size=7),
)
@settings(max_examples=40, deadline=None)
def test_expected_max_gain_matches_monte_carlo(a, b):
    a = np.array(a)
    b = np.array(b[: len(a)])
    z = np.random.default_rng(0).standard_normal(200_000)
    mc = float(np.mean(np.max(a[:, None] + b[:, None] * z[None, :], axis=0)) - a.max())
    se = float(np.std(np.max(a[:, None] + b[:, None] * z[None, :], axis=0))) / math.sqrt(z.size)
    # (+1e-6: a line that overtakes only beyond ~5 sd gains ~1e-8 that 2e5 draws never see)
    assert sel.expected_max_gain(a, b) == pytest.approx(mc, abs=5 * se + 1e-6)


def test_a_run_that_teaches_about_two_contenders_beats_one_that_teaches_about_one():
    # Three tied candidates: a and b share a coefficient (one filesystem, two schedulers,
    # say), c has its own. One run of a moves b too; one run of c moves only c.
    X = np.array([[1.0, 0.0, 0.1, 0.0], [1.0, 0.0, 0.0, 0.1], [0.0, 1.0, 0.0, 0.0]])
    cov = np.diag([0.04, 0.04, 0.0001, 0.0001])
    s = sel.State(
        labels=["a", "b", "c"],
        mu=np.array([0.0, -0.001, -0.002]),
        X=X,
        cov=cov,
        noise_var=0.0025,
        tolerance=TOL,
    )
    ranked = sel.options(s, [60, 60, 60], [0, 0, 0])
    kg = {o.label: o.kg for o in ranked}
    assert kg["a"] > 0 and kg["c"] > 0
    assert ranked[0].label in ("a", "b")


def test_the_device_own_deviations_correlate_configurations_that_share_a_filesystem():
    """A device with only its raw calibration: its own deviations (not fitted yet: at their
    predictive width) make its ext4 cells share the uncertainty of its own ext4 deviation,
    so the covariance of two ext4 cells grows by more than that of an ext4 and an xfs cell
    (against the same model stating no device deviation at all)."""
    from fsadvisor.domain import FsConfig
    from fsadvisor.predict import validate
    from fsadvisor.predict.fit import fit
    from fsadvisor.predict.predict import predict_many
    from fsadvisor.predict.settings import ModelSettings
    from fsadvisor.store import open_store
    from fsadvisor.profiles import load_profile

    store = open_store(":memory:")
    store.ensure_seeded()
    obs = store.observations()
    d = validate.eligible_devices(obs)[0]
    model = fit(
        [o for o in obs if o.device_id != d or validate._is_raw(o)], ModelSettings.load(), None
    )
    dev = validate._target_device(obs, d)
    assert model.known_device(dev)  # its raw runs give it its own level
    cfgs = [
        FsConfig.make("ext4", {}, ["noatime"], "none"),
        FsConfig.make("ext4", {}, ["noatime"], "mq-deadline"),
        FsConfig.make("xfs", {}, ["noatime"], "none"),
    ]
    w = load_profile("oltp").workload

    s = model.settings
    none = ModelSettings(
        {**s.priors, "predictive": {"device_sd_scale": 1e-9}},
        s.devices,
        s.prior_scale,
        s.calibration_source,
    )

    def S(m):
        design = {}
        predict_many(m, cfgs, w, dev, design_out=design)
        X, cov = np.asarray(design["X"]), np.asarray(design["cov"])
        return X @ cov @ X.T

    assert not any(n.startswith(f"d:{model.known_device(dev)}|fs:") for n in model.index)
    before, after = S(dataclasses.replace(model, settings=none)), S(model)
    grow = after - before
    assert np.all(np.diag(grow) > 0)
    # ext4 and xfs share the mechanisms' own deviations; two ext4 cells share ext4's too
    assert grow[0, 1] > grow[0, 2] > 0

    def diff_var(M, i, j):
        return M[i, i] + M[j, j] - 2 * M[i, j]

    # so the order of the two ext4 cells is surer than that of ext4 and xfs
    assert diff_var(after, 0, 1) < diff_var(after, 0, 2)


def test_the_default_budget_follows_the_measured_cell_times(tmp_path):
    """No --budget: a fifth of the exhaustive matrix's estimate, re-estimated before each
    choice from the device's measured overheads (the plan's fixed 3 s guess over-estimated a
    RAM loop's first profile by a third); an explicit --budget never moves."""
    from fsadvisor.predict.settings import ModelSettings
    from fsadvisor.service import adaptive as ad
    from fsadvisor.store import open_store

    plan = ad.plan_adaptive(_request(tmp_path)).plan
    fixed = ad.plan_adaptive(_request(tmp_path), budget="10m").plan
    guessed = plan.full_estimate_s
    assert plan.budget_share == ad.DEFAULT_BUDGET_SHARE and fixed.budget_share is None
    plan.calibration_s = 100.0  # as run_adaptive sets it after the calibration
    dev = _scratch_identity_device(plan)
    with open_store(tmp_path / "s.db") as store:
        for c in (c for c in _configs(plan).values() if c in plan.configs):
            store.record_run(_run(dev, c, plan.workloads[0].name, 1.5, 1.0))
        settings = ModelSettings.load(db=str(tmp_path / "s.db"))
        for p in (plan, fixed):
            ad.Chooser(p, store, settings, lambda d: None, lambda: {}).decide(dev)
        least = ad.least_deciding(ad.times_for(store, plan, dev.identity))
    runnable = [c for c in plan.cells() if not c.skip_reason]
    n_full = len(runnable) // ad.MAX_REPS * 3
    assert plan.full_estimate_s == pytest.approx(n_full * 1.5)
    assert plan.full_estimate_s < guessed
    # the calibration it took is inside the share, and never more than the share leaves room for
    assert plan.budget_s == pytest.approx(
        max(ad.DEFAULT_BUDGET_SHARE * n_full * 1.5, 100.0 + least)
    )
    assert fixed.budget_s == 600.0
    # and it survives a resume
    again = ad.AdaptivePlan.from_dict(plan.to_dict())
    assert (again.budget_share, again.full_reps) == (plan.budget_share, plan.full_reps)


def test_the_adaptive_probe_measures_the_leading_filesystems_defaults_first(tmp_path):
    """Settling a tie starts from what a variant must beat: the first cells of an adaptive
    probe are the defaults of every filesystem among the leaders (recommend's "to settle it"
    line starts from them too), then the model's most valuable cells."""
    from fsadvisor import catalog
    from fsadvisor.service import adaptive as ad

    setup = ad.plan_adaptive(_request(tmp_path), budget="10m")
    lines = ad.dry_run_lines(setup, str(tmp_path / "s.db"))
    firsts = [ln.split(". ", 1)[1] for ln in lines if re.match(r"#\s+\d+\. ", ln)]
    defaults = {catalog.default_config(fs).label() for fs in ("ext4", "xfs")}
    head = [f.split(":")[0] for f in firsts[:2]]  # each choice named as a person reads it
    assert set(head) == defaults, firsts
    assert all("a leading filesystem's defaults" in f for f in firsts[:2])
    assert "narrow the leaders' uncertainty" in firsts[2]  # then the value-per-second rule


def test_the_leading_filesystems_first_cells_without_their_plain_defaults():
    """A matrix may spell XFS's defaults out (mkfs.xfs's own AG count for the size, as the
    reference matrices do): that is its defaults. Where a leading filesystem has no defaults
    among the candidates, its best-predicted leader stands in, so the leader's filesystem is
    measured first and a small budget is not spent on the others' defaults alone (on the
    zram writers matrix the probe once measured btrfs and ext4, never the XFS that led the
    prior, and picked an unmeasured btrfs 24% below it)."""
    from fsadvisor import catalog
    from fsadvisor.domain import Device, FsConfig
    from fsadvisor.service.adaptive import Chooser

    dev = Device(path=None, size_bytes=3 << 30, kind="zram")
    nodatacow = catalog.default_config("btrfs")
    nodatacow = FsConfig("btrfs", nodatacow.mkfs, (*nodatacow.mount, "nodatacow"))
    cfgs = [
        catalog.default_config("ext4"),
        FsConfig("xfs", ag_count=catalog.default_ag_count(dev.size_bytes)),
        catalog.default_config("btrfs"),
        nodatacow,
        FsConfig("xfs", ag_count=16),
    ]
    s = state([0.0, 0.03, -0.6, 0.01, 0.02], [0.3] * 5)
    firsts, stand_ins = Chooser.leading_defaults(s, cfgs, dev)
    # the leader (XFS, spelt out) first, as defaults; then btrfs's and ext4's defaults
    assert firsts == [1, 2, 0] and stand_ins == frozenset()

    without = [c for i, c in enumerate(cfgs) if i != 1]  # no XFS defaults at all
    s = state([0.0, -0.6, 0.01, 0.03], [0.3] * 4)
    firsts, stand_ins = Chooser.leading_defaults(s, without, dev)
    assert firsts[0] == 3 and stand_ins == frozenset({3})  # XFS agcount=16 stands in
    assert set(firsts) == {3, 0, 1}
    step = sel.next_step(
        s,
        [1.0] * 4,
        [0] * 4,
        target=0.95,
        spent_s=0,
        budget_s=2,
        defaults=firsts,
        stand_ins=stand_ins,
    )
    assert step.choice is not None and step.choice.index == 3
    assert "its defaults are not a candidate" in step.reason
    assert "defaults are not among the candidates" in step.choice.why()


def test_the_least_budget_named_in_the_refusal_is_accepted(tmp_path):
    # The refusal names the smallest budget that measures each filesystem once after the
    # calibration: that budget plans, one second less does not (f2fs, which this kernel
    # cannot mount, is not counted: its cells never run here).
    import re

    from fsadvisor.service import adaptive as ad

    calib = ad.plan_adaptive(_request(tmp_path)).calibration_estimate_s
    with pytest.raises(ConfigError) as e:
        ad.plan_adaptive(_request(tmp_path), budget=f"{math.ceil(calib)}s")
    least = int(re.search(r"smallest budget that works is (\d+) s", str(e.value)).group(1))
    assert "ext4 about" in str(e.value) and "xfs about" in str(e.value)
    setup = ad.plan_adaptive(_request(tmp_path), budget=f"{least}s")
    per_fs = ad._cell_times(setup.plan, setup.device, str(tmp_path / "s.db")).cheapest_per_fs()
    assert set(per_fs) == {"ext4", "xfs"}
    assert least >= setup.calibration_estimate_s + sum(per_fs.values())
    with pytest.raises(ConfigError, match="too small"):
        ad.plan_adaptive(_request(tmp_path), budget=f"{least - 2}s")


def test_a_noisy_cell_teaches_less_per_run_and_stays_contested_longer():
    quiet = state([0.0, 0.0], [0.1, 0.1], noise_sd=0.05)
    noisy = sel.State(
        labels=quiet.labels,
        mu=quiet.mu,
        X=quiet.X,
        cov=quiet.cov,
        noise_var=quiet.noise_var,
        tolerance=TOL,
        cell_noise_var=np.array([0.05**2, 0.3**2]),
    )
    # one run of the noisy cell shrinks its own variance less than one run of a quiet cell
    assert noisy.after_run(1)[1, 1] > quiet.after_run(1)[1, 1]
    assert noisy.after_run(0)[0, 0] == pytest.approx(quiet.after_run(0)[0, 0])
    # after the same number of runs of each, the noisy cell's mean is the less certain:
    # it needs more runs before the two part
    cov = noisy.cov
    for _ in range(3):
        for i in (0, 1):
            v = cov @ noisy.X[i]
            cov = cov - np.outer(v, v) / (float(noisy.X[i] @ v) + noisy.noise_of(i))
    assert cov[1, 1] > 2 * cov[0, 0]
    step = sel.next_step(noisy, [60, 60], [3, 3], target=0.95, spent_s=0, budget_s=None)
    noisy_opt = next(o for o in step.ranked if o.index == 1)
    assert "scatter" in noisy_opt.why() and "each teaches less" in noisy_opt.why()


def test_a_cell_noise_is_its_own_scatter_shrunk_toward_the_pooled():
    from fsadvisor.service.adaptive import NOISE_PRIOR_DF, cell_noise_var

    pooled = 0.05**2
    assert cell_noise_var([], pooled) == pooled
    assert cell_noise_var([1.0], pooled) == pooled  # one run says nothing of its scatter
    same = cell_noise_var([1.0, 1.0, 1.0], pooled)
    assert 0 < same < pooled  # agreeing runs lower it, never to zero
    wild = cell_noise_var([0.7, 1.0, 1.3], pooled)
    assert wild > pooled
    # the closed form: (df0 * pooled + sum of squares) / (df0 + n - 1)
    assert wild == pytest.approx((NOISE_PRIOR_DF * pooled + 0.18) / (NOISE_PRIOR_DF + 2))
    # many runs: their own variance dominates
    many = [1.0 + (0.3 if i % 2 else -0.3) for i in range(40)]
    assert cell_noise_var(many, pooled) == pytest.approx(0.09 * 40 / 39, rel=0.1)


# ------------------------------------------------------------- several profiles, one session


def _sim(mu, sd, key_prefix, cost=10.0, noise_sd=0.05):
    from fsadvisor.service.adaptive import _Sim

    st = state(mu, sd, noise_sd)
    return _Sim(st, [cost] * len(mu), [f"c{i} | {key_prefix}" for i in range(len(mu))])


def _simulate(sims, weights=None, budget_s=None, max_runs=6, horizon=60):
    from fsadvisor.service.adaptive import simulate_joint

    return simulate_joint(
        sims,
        weights or [1.0] * len(sims),
        target=0.95,
        spent_s=0.0,
        budget_s=budget_s,
        max_runs=max_runs,
        horizon=horizon,
    )


def test_a_profile_whose_leaders_are_apart_gets_fewer_cells_than_one_whose_are_close():
    # the same uncertainty, the same costs: only how far apart the leaders are differs
    apart = _sim([0.0, -0.12, -0.3], [0.08, 0.08, 0.08], "apart")
    close = _sim([0.0, -0.01, -0.3], [0.08, 0.08, 0.08], "close")
    picks, first, last = _simulate([apart, close], budget_s=200.0)
    assert picks and close.cells > apart.cells, (apart.cells, close.cells)
    assert {p.part for p in picks} <= {0, 1}
    assert sum(p.option.cost_s for p in picks) <= 200.0  # one budget for the session
    # a profile already settled on its own gets none, and the session stops when the
    # other's stop rule fires too
    settled = _sim([0.5, 0.0], [0.01, 0.01], "settled")
    close = _sim([0.0, -0.01, -0.3], [0.08, 0.08, 0.08], "close")
    picks, first, last = _simulate([settled, close])
    assert settled.cells == 0 and close.cells == len(picks) > 0
    assert first[0].choice is None and "settled" in first[0].reason
    assert last is not None and all(s.choice is None for s in last)


def test_a_shared_cell_is_measured_once_and_counts_for_each_profile():
    from fsadvisor.service.adaptive import joint_pick

    a = _sim([0.0, -0.01, -0.3], [0.08, 0.08, 0.08], "w")
    b = _sim([0.0, -0.01, -0.3], [0.08, 0.08, 0.08], "w")  # same workload: same cell keys
    c = _sim([0.0, -0.02, -0.3], [0.08, 0.08, 0.08], "other")
    steps = [s.step(0.95, 0.0, None, 6, None) for s in (a, b, c)]
    pick = joint_pick(
        steps, [a.keys, b.keys, c.keys], [1.0, 1.0, 1.0], spent_s=0.0, budget_s=None, max_runs=6
    )
    # the value of a shared cell is the sum over the profiles it serves
    assert pick.serves == (0, 1)
    assert pick.value_per_s == pytest.approx(2 * steps[0].choice.value_per_s)
    a2, b2 = (_sim([0.0, -0.01, -0.3], [0.08, 0.08, 0.08], "w") for _ in range(2))
    picks, _, _ = _simulate([a2, b2], horizon=6)
    assert len(picks) == 6 and all(p.serves == (0, 1) for p in picks)
    # run once: the session's device time is one cell's per pick, counted for each profile
    assert a2.cells == b2.cells == 6 and a2.seconds == b2.seconds == 60.0
    assert a2.runs == b2.runs


def test_joint_pick_weighs_profiles_and_respects_budget_and_repetitions():
    from fsadvisor.service.adaptive import joint_pick

    a = _sim([0.0, -0.01, -0.3], [0.08, 0.08, 0.08], "a")
    b = _sim([0.0, -0.01, -0.3], [0.08, 0.08, 0.08], "b")
    steps = [s.step(0.95, 0.0, None, 6, None) for s in (a, b)]
    keys = [a.keys, b.keys]
    equal = joint_pick(steps, keys, [1.0, 1.0], spent_s=0.0, budget_s=None, max_runs=6)
    assert equal.part == 0  # the first of equals, in profile order
    heavier = joint_pick(steps, keys, [1.0, 3.0], spent_s=0.0, budget_s=None, max_runs=6)
    assert heavier.part == 1 and heavier.value_per_s == pytest.approx(3 * equal.value_per_s)
    # nothing fits the budget: no pick
    assert joint_pick(steps, keys, [1.0, 1.0], spent_s=95.0, budget_s=100.0, max_runs=6) is None
    # a profile's cells at the most repetitions are not offered, whatever its weight
    b.runs[:] = [6, 6, 6]
    steps = [s.step(0.95, 0.0, None, None, None) for s in (a, b)]
    capped = joint_pick(steps, keys, [1.0, 3.0], spent_s=0.0, budget_s=None, max_runs=6)
    assert capped.part == 0 and capped.option is steps[0].choice
    # every profile stopped: None
    stopped = [sel.Step(None, s.confidence, "settled") for s in steps]
    assert joint_pick(stopped, keys, [1.0, 1.0], spent_s=0.0, budget_s=None, max_runs=6) is None


def test_a_profiles_own_choice_is_offered_whatever_its_shrink():
    """A profile's rule can pick a cell for another reason than its shrink (a repetition
    while the device's run noise is unseen). The joint pick offers it, so a session never
    stops with an open profile and no reason for it (a device test's joint probe on a
    RAM-backed loop did, once the stated sd was calibrated narrower); outside the session's
    budget it is not offered either."""
    from fsadvisor.service.adaptive import joint_pick

    rep = sel.Option(
        index=1,
        label="b",
        p_wrong_now=0.5,
        p_wrong_after=0.5,
        cost_s=2.0,
        runs_so_far=1,
        shrink=sel.MIN_SHRINK / 10,
        to_see_noise=True,
    )
    low = sel.Option(
        index=0, label="a", p_wrong_now=0.5, p_wrong_after=0.5, cost_s=2.0, runs_so_far=1
    )
    step = sel.Step(rep, 0.5, rep.why(), (low, rep))
    keys = [["a | w", "b | w"]]
    pick = joint_pick([step], keys, [1.0], spent_s=0.0, budget_s=60.0, max_runs=6)
    assert pick is not None and pick.option is rep and pick.serves == (0,)
    assert joint_pick([step], keys, [1.0], spent_s=59.0, budget_s=60.0, max_runs=6) is None


def test_a_leading_filesystem_defaults_come_first_in_a_joint_probe_too():
    from fsadvisor.service.adaptive import joint_pick

    a = _sim([0.0, -0.01, -0.3], [0.08, 0.08, 0.08], "a")
    b = _sim([0.0, -0.01, -0.3], [0.08, 0.08, 0.08], "b")
    sa = a.step(0.95, 0.0, None, 6, None)
    sb = sel.next_step(
        b.st, b.cost, b.runs, target=0.95, spent_s=0.0, budget_s=None, max_runs=6, defaults=[1]
    )
    pick = joint_pick(
        [sa, sb], [a.keys, b.keys], [5.0, 1.0], spent_s=0.0, budget_s=None, max_runs=6
    )
    assert pick.part == 1 and pick.option.index == 1 and pick.option.defaults_first


def _profile_files(tmp_path):
    for name in ("web", "cache"):
        (tmp_path / f"{name}.toml").write_text('[fio]\nrw = "randread"\nbs = "16k"\n')
    return [str(tmp_path / "web.toml"), str(tmp_path / "cache.toml")]


def test_a_joint_plan_shares_a_workload_and_adds_up_the_profiles_matrices(tmp_path):
    from dataclasses import replace

    from fsadvisor.service import adaptive as ad

    web, cache = _profile_files(tmp_path)
    profiles = [web, cache, "fio-randwrite-4k-j1"]
    setup = ad.plan_adaptive(_request(tmp_path), budget="10m", profiles=profiles, weights=[1, 1, 2])
    plan = setup.plan
    assert plan.joint and plan.profiles == profiles and plan.weights == [1.0, 1.0, 2.0]
    assert len(plan.workloads) == 2  # web and cache run the same workload: planned once
    assert plan.profile_workloads[0] == plan.profile_workloads[1] != plan.profile_workloads[2]
    # a run of the shared workload is stored for both profiles, by the names they hold
    assert plan.profiles_of(plan.profile_workloads[0]) == ("web", "cache")
    assert plan.profiles_of(plan.profile_workloads[2]) == ("fio-randwrite-4k-j1",)
    # the full matrix is both workloads' (each at its own cost), the calibration once
    singles = [
        ad.plan_adaptive(replace(_request(tmp_path), profile=p), budget="10m")
        for p in (web, "fio-randwrite-4k-j1")
    ]
    assert plan.full_estimate_s == pytest.approx(sum(s.plan.full_estimate_s for s in singles))
    assert setup.calibration is not None
    # it survives a resume
    back = ad.AdaptivePlan.from_dict(plan.to_dict())
    assert (back.profiles, back.profile_workloads, back.weights) == (
        plan.profiles,
        plan.profile_workloads,
        plan.weights,
    )
    assert [w.name for w in back.workloads] == [w.name for w in plan.workloads]
    assert back.profiles_of(plan.profile_workloads[1]) == ("web", "cache")
    assert singles[0].plan.profiles_of(singles[0].plan.workloads[0].name) == ()
    # and `probe --resume` picks it up as the joint probe it was
    from fsadvisor.probe.state import StateFile, state_path_for
    from fsadvisor.service import probing

    req = _request(tmp_path)
    sf = StateFile(state_path_for(probing.store_path(req.db)))
    saved = sf.load()
    saved.matrices["scratch"] = {"matrix_id": "m-1", "plan": plan.to_dict()}
    sf.save(saved)
    again = ad.plan_adaptive(replace(req, resume=True)).plan
    assert again.joint and again.profiles == profiles and again.budget_s == 600.0
    # the least budget is one run of each filesystem for every workload
    with pytest.raises(ConfigError) as e:
        ad.plan_adaptive(_request(tmp_path), budget="20s", profiles=profiles)
    least = int(re.search(r"smallest budget that works is (\d+) s", str(e.value)).group(1))
    one = ad.plan_adaptive(_request(tmp_path), budget="10m")
    per_fs = ad._cell_times(one.plan, one.device, str(tmp_path / "s.db")).cheapest_per_fs()
    assert least > one.calibration_estimate_s + sum(per_fs.values())
    with pytest.raises(ConfigError, match="one per --profile"):
        ad.plan_adaptive(_request(tmp_path), budget="10m", profiles=profiles, weights=[1, 2])


def test_the_joint_dry_run_lists_cells_across_profiles_and_the_split(tmp_path):
    from fsadvisor.service import adaptive as ad

    web, cache = _profile_files(tmp_path)
    setup = ad.plan_adaptive(
        _request(tmp_path), budget="10m", profiles=[web, cache, "fio-randwrite-4k-j1"]
    )
    lines = ad.dry_run_lines(setup, str(tmp_path / "s.db"))
    text = "\n".join(lines)
    assert "one session for profiles" in lines[0] and "budget 600 s" in lines[0]
    assert f"{web} and {cache} run the same workload" in text
    assert text.count("calibrate the device once") == 1
    firsts = [ln for ln in lines if re.match(r"#\s+\d+\. for ", ln)]
    assert len(firsts) >= 3
    assert any(
        f"for {web}, {cache}: " in f and "measured once, it counts for each" in f for f in firsts
    ), firsts
    assert any("for fio-randwrite-4k-j1: " in f for f in firsts), firsts
    split = lines[lines.index("# expected split of the device time between the profiles:") + 1 :]
    assert [s.split(":")[0] for s in split[:3]] == [
        f"#   {web}",
        f"#   {cache}",
        "#   fio-randwrite-4k-j1",
    ]


def test_the_answer_per_profile_in_words_and_json():
    from fsadvisor.service.adaptive import AdaptiveSummary, Decision, JointDecision

    answers = [
        Decision(
            leader="xfs|a",
            leader_name="xfs defaults",
            confidence=0.97,
            p_best={"xfs|a": 0.97, "ext4|a": 0.03},
            spent_s=120.0,
            full_estimate_s=400.0,
            runs=5,
            reason="settled: confidence 0.970 >= target 0.95",
            own_s=50.0,
            ranking=[
                ("xfs|a", "xfs defaults"),
                ("ext4|a", "ext4 defaults"),
                ("btrfs|a", "btrfs defaults"),
                ("f2fs|a", "f2fs defaults"),
            ],
        ),
        Decision(
            leader="ext4|b",
            leader_name="ext4 defaults",
            confidence=0.81,
            p_best={},
            spent_s=120.0,
            full_estimate_s=400.0,
            runs=7,
            reason="budget: 120 s of 120 s spent",
            own_s=70.0,
            noise_sd=0.03,
        ),
    ]
    j = JointDecision(
        profiles=["oltp", "log-append"],
        weights=[1.0, 2.0],
        answers=answers,
        spent_s=120.0,
        budget_s=120.0,
        full_estimate_s=400.0,
        runs=12,
        reason="every profile's stop rule fired",
    )
    lines = j.outcome_lines()
    assert lines[0].startswith("adaptive: profile oltp (weight 1): xfs defaults is best")
    assert "after 5 runs of its cells" in lines[0]
    assert lines[1] == (
        "adaptive: profile oltp: ranking: 1. xfs defaults (P(best) 0.97), "
        "2. ext4 defaults (P(best) 0.03), 3. btrfs defaults"
    )
    assert lines[2] == "adaptive: profile oltp: stopped: settled: confidence 0.970 >= target 0.95"
    assert lines[4] == "adaptive: profile log-append: stopped: budget: 120 s of 120 s spent"
    assert "one session for 2 profiles: 12 runs" in lines[5] and "30%" in lines[5]
    doc = AdaptiveSummary(
        probe=None,
        decision=None,
        history=[j],
        joint=j,
        workloads=[
            {"workload": "profile:oltp", "shares_cells_with": []},
            {"workload": "profile:log-append", "shares_cells_with": []},
        ],
    ).to_dict()
    assert [p["profile"] for p in doc["profiles"]] == ["oltp", "log-append"]
    assert doc["profiles"][1]["weight"] == 2.0
    assert doc["profiles"][0]["decision"]["leader"] == "xfs|a"
    assert doc["profiles"][0]["decision"]["own_device_time_s"] == 50.0
    assert [r["label"] for r in doc["profiles"][0]["decision"]["ranking"]] == [
        "xfs defaults",
        "ext4 defaults",
        "btrfs defaults",
        "f2fs defaults",
    ]
    assert doc["profiles"][0]["decision"]["ranking"][2]["p_best"] is None
    assert doc["profiles"][1]["decision"]["reason"].startswith("budget")
    assert doc["session"]["device_time_s"] == 120.0 and doc["session"]["runs"] == 12
    assert doc["steps"][0]["answers"]["log-append"]["confidence"] == 0.81


def test_the_joint_cell_source_runs_a_shared_cell_once_and_leaves_a_failed_one_out_for_all(
    tmp_path,
):
    """JointChooser as the MatrixRun's cell source, on the seeded store (no device): two
    profiles with the same workload get one Cell for both, and a cell whose run fails is
    left out of both profiles' choice, not chosen again."""
    from types import SimpleNamespace

    from fsadvisor.predict.settings import ModelSettings
    from fsadvisor.probe.report import CellOutcome
    from fsadvisor.service import adaptive as ad
    from fsadvisor.store import open_store

    web, cache = _profile_files(tmp_path)
    db = str(tmp_path / "s.db")
    setup = ad.plan_adaptive(
        _request(tmp_path), budget="10m", profiles=[web, cache, "fio-randwrite-4k-j1"]
    )
    params, stored = ad._store_helpers(db)
    notes = []
    with open_store(tmp_path / "s.db") as store:
        store.ensure_seeded()
        ch = ad.JointChooser(
            setup.plan,
            store,
            ModelSettings.load(db=db),
            params,
            stored,
            on_progress=lambda e: notes.append(e.message),
        )
        outcomes: list = []
        ch.run = SimpleNamespace(summary=SimpleNamespace(outcomes=outcomes))
        cells = ch(setup.device, set())
        first = next(cells)
        d = ch.history[-1]
        assert d.serves == [web, cache] and first.workload.name == setup.plan.workloads[0].name
        assert first.key == d.choice and first.rep == 1
        assert any(n.startswith(f"next: for {web}, {cache}: ") for n in notes), notes
        outcomes.append(CellOutcome(first.key, 1, first.label, "failed", error="mkfs failed"))
        second = next(cells)
        assert first.config.key() in ch.parts[0].excluded
        assert first.config.key() in ch.parts[1].excluded
        assert first.config.key() not in ch.parts[2].excluded  # another workload's cell
        assert second.key != first.key
        assert all(
            set(s.to_dict()["answers"]) == {web, cache, "fio-randwrite-4k-j1"} for s in ch.history
        )
        # each profile's answer ranks all its candidates, its leader first
        for part, a in zip(ch.parts, ch.history[-1].answers):
            assert a.ranking[0][0] == a.leader
            assert [k for k, _ in sorted(a.ranking)] == sorted(
                c.key() for c in part.candidates(setup.device)
            )


# ------------------------------------------------------ run noise not yet seen


def test_a_settled_decision_after_single_runs_repeats_a_cell_before_stopping():
    # Sure of the order only under the assumed noise: no repetition has shown how much runs
    # scatter on this device, so the best-placed measured cell is run again first.
    s = state([0.5, 0.0, -0.2], [0.01, 0.01, 0.01])
    step = sel.next_step(s, [60, 60, 60], [0, 1, 1], target=0.95, spent_s=0, budget_s=None)
    assert step.choice is not None and step.choice.index == 1
    assert step.choice.to_see_noise and step.choice.runs_so_far == 1
    assert "how much runs scatter on this device" in step.choice.why()


def test_a_settled_decision_stops_once_repetitions_show_the_noise():
    s = state([0.5, 0.0, -0.2], [0.01, 0.01, 0.01])
    step = sel.next_step(s, [60, 60, 60], [2, 2, 1], target=0.95, spent_s=0, budget_s=None)
    assert step.choice is None and "settled" in step.reason
    # the noise known otherwise (the caller's degrees of freedom): no repetition needed
    step = sel.next_step(
        s, [60, 60, 60], [1, 1, 1], target=0.95, spent_s=0, budget_s=None, noise_df=5
    )
    assert step.choice is None and "settled" in step.reason


def test_the_repetition_for_the_noise_respects_the_budget_and_the_repetition_cap():
    s = state([0.5, 0.0, -0.2], [0.01, 0.01, 0.01])
    step = sel.next_step(s, [60, 60, 60], [1, 1, 0], target=0.95, spent_s=100, budget_s=150)
    assert step.choice is None and "settled" in step.reason
    step = sel.next_step(
        s, [60, 60, 60], [1, 0, 0], target=0.95, spent_s=0, budget_s=None, max_runs=1
    )
    assert step.choice is None


def test_the_budgets_last_runs_see_the_noise_while_it_is_unseen():
    """A probe whose budget would end before any repetition states a confidence that rests
    on the model's noise figure: on the replayed noisy matrices (one run scattering 20-30%)
    it stated 0.76 against 0.38 borne out. While the noise is unseen, the runs the budget
    has left for it go to repetitions of the best-placed measured cell; with budget to
    spare the most valuable new cell still comes first."""
    s = state([0.0, 0.02, 0.01, -0.01], [0.2] * 4)
    runs = [1, 0, 1, 0]
    roomy = sel.next_step(s, [1.0] * 4, runs, target=0.95, spent_s=2, budget_s=20)
    assert roomy.choice is not None and not roomy.choice.to_see_noise
    assert runs[roomy.choice.index] == 0  # a first run: there is budget left for the noise
    # two runs left, two repetitions wanted (two degrees of freedom): the best-placed
    # measured cell (index 2, 0.01 above index 0) is run again
    tight = sel.next_step(s, [1.0] * 4, runs, target=0.95, spent_s=2, budget_s=4)
    assert tight.choice is not None and tight.choice.to_see_noise
    assert tight.choice.index == 2 and "how much runs scatter" in tight.reason
    # once repetitions have shown the noise, the last run goes by value again
    seen = sel.next_step(s, [1.0] * 4, [3, 0, 1, 0], target=0.95, spent_s=4, budget_s=5)
    assert seen.choice is not None and not seen.choice.to_see_noise


def test_leaders_equal_within_the_assumed_noise_are_repeated_before_a_tie_is_called():
    # five equal candidates, each measured once: whether they are equal "within the
    # measurement's resolution" depends on a resolution not yet measured here
    s = state([0.0] * 5, [0.006] * 5)
    assert s.expected_loss() <= sel.MAX_EXPECTED_LOSS
    step = sel.next_step(s, [60] * 5, [1] * 5, target=0.95, spent_s=0, budget_s=None)
    assert step.choice is not None and step.choice.to_see_noise


def test_the_probe_plans_with_a_noise_no_smaller_than_its_few_repetitions_show():
    from fsadvisor.service.adaptive import planning_noise_sd, pooled_sd

    two = [[1.0, 1.2], [2.0, 2.2]]  # 2 df: the 3-df factor, 3
    assert planning_noise_sd([[1.0, 1.2]]) is None
    assert planning_noise_sd(two) == pytest.approx(pooled_sd(two) * 3**0.5)
    # the factor df/(df-2) falls toward 1 as repetitions accumulate, never below it
    many = [[float(i), i + 0.1, i + 0.3] for i in range(20)]  # 40 df
    assert planning_noise_sd(many) == pytest.approx(pooled_sd(many) * (40 / 38) ** 0.5)
    four = [[1.0, 1.2, 0.9], [2.0, 2.2, 2.1]]  # 4 df: factor 2
    assert planning_noise_sd(four) == pytest.approx(pooled_sd(four) * 2**0.5)


# ------------------------------------------------ a calibration sized to the decision


def _preset_request(tmp_path, profile, **kw):
    from dataclasses import replace

    return replace(_request(tmp_path), profile=profile, **kw)


def test_the_calibration_measures_what_the_profiles_decision_depends_on(tmp_path):
    """A device's first profile calibrates the workloads whose parameters can move one of its
    configurations against another by as much as matters (1%), and no other: deep random
    writes need the write ceiling, not the flush; an fsync per write needs the flush (and the
    plain write it is read against), not the ceiling, the bandwidth or the random-read sweep.
    Where nothing the calibration measures can move the comparison, there is none."""
    from fsadvisor.probe.calibration_plan import SWEEP_NAMES
    from fsadvisor.service import adaptive as ad

    tol = -math.log(1 - 0.01)
    deep = ad.plan_adaptive(_request(tmp_path))  # fio-randwrite-4k-j1: QD32 4 KiB writes
    fsync = ad.plan_adaptive(_preset_request(tmp_path, "fs-overhead-randwrite-4k-fsync1"))
    names = {id(s): {w.name for w in s.calibration.workloads} for s in (deep, fsync)}
    assert "4k-randwrite-qd32" in names[id(deep)]
    assert not names[id(deep)] & {"4k-randwrite-fsync1", "128k-read-qd8", *SWEEP_NAMES}
    assert {"4k-randwrite-fsync1", "4k-randwrite-qd1"} <= names[id(fsync)]
    assert not names[id(fsync)] & {"4k-randwrite-qd32", "128k-read-qd8", *SWEEP_NAMES}
    # what was left out is what the model says cannot matter for that profile
    shifts = ad.calibration_workloads(fsync.plan, fsync.device, str(tmp_path / "s.db"))
    assert shifts["4k-randwrite-fsync1"] >= tol > shifts["128k-read-qd8"]
    # a calibration of a few workloads is priced as such
    full = ad.calibration.plan_calibration(scratch="1G", runtime_s=1.0, dry_run=True)
    assert len(deep.calibration.cells()) < len(full.cells())
    assert len(fsync.calibration.cells()) < len(full.cells())
    # ext4 against XFS for 128 KiB reads: no device parameter moves one against the other
    reads = ad.plan_adaptive(_preset_request(tmp_path, "fio-read-128k-j1"))
    shifts = ad.calibration_workloads(reads.plan, reads.device, str(tmp_path / "s.db"))
    assert max(shifts.values()) < tol and reads.calibration is None
    text = "\n".join(ad.dry_run_lines(reads, str(tmp_path / "s.db")))
    assert "no calibration" in text


def test_a_calibration_plan_keeps_what_its_workloads_are_read_against():
    from fsadvisor.errors import ConfigError as CE
    from fsadvisor.probe.calibration_plan import SWEEP_NAMES, build_calibration_plan

    GIB = 1 << 30
    full = [w.name for w in build_calibration_plan(None, 4 * GIB, cores=2).workloads]

    def names(only):
        return [w.name for w in build_calibration_plan(None, 4 * GIB, cores=2, only=only).workloads]

    assert names(["4k-randwrite-fsync1"]) == ["4k-randwrite-qd1", "4k-randwrite-fsync1"]
    sweep = sorted(SWEEP_NAMES)[0]
    assert set(names([sweep])) == {sweep, "4k-randread-qd1", "4k-randread-qd32"}
    assert names(["128k-write-qd8-x2"]) == ["128k-write-qd8", "128k-write-qd8-x2"]
    # the full plan's order: the runner keeps the first repetition of each first
    for only in (["4k-randwrite-fsync1", "128k-read-qd8"], [sweep, "128k-write-qd8-x2"]):
        got = names(only)
        assert got == [n for n in full if n in got]
    with pytest.raises(CE, match="no workload"):
        build_calibration_plan(None, 4 * GIB, only=[])


def test_a_second_profile_calibrates_only_what_the_first_did_not_measure(tmp_path):
    """The calibration is one-off per workload, not per device: a later profile that needs a
    parameter the first one's calibration left at the prior measures that workload alone,
    fitted with the earlier runs (``extends``)."""
    from fsadvisor.catalog.device_params import (
        PARAM_KEYS,
        DeviceParams,
        devices_table,
        prior_params,
    )
    from fsadvisor.service import adaptive as ad
    from fsadvisor.store import open_store

    first = ad.plan_adaptive(_preset_request(tmp_path, "fs-overhead-randwrite-4k-fsync1"))
    done = [w.name for w in first.calibration.workloads]
    dev = _scratch_identity_device(first.plan)
    # the first calibration's runs (what they measured is in the stored parameters below)
    cfg = _configs(first.plan)["ext4"]
    with open_store(tmp_path / "s.db") as store:
        ids = [store.record_run(_run(dev, cfg, name, 5.0, 4.0)) for name in done]
        # the kind's prior figures, the two the first calibration measured made narrow
        prior = prior_params(dev.kind, devices_table(), device_id=dev.identity)
        measured = ["write_latency_us", "flush_latency_us", "flush_latency_us_plp"]
        store.save_device_params(
            DeviceParams(
                dev.identity,
                dev.kind,
                dict(prior.values),
                {k: 0.05 if k in measured else prior.log_sd[k] for k in PARAM_KEYS},
                "calibrated: test",
                len(ids),
                {"measured": measured},
            ),
            run_ids=ids,
        )
    again = ad.plan_adaptive(_request(tmp_path))  # QD32 writes: the write ceiling
    assert again.calibration is not None
    names = {w.name for w in again.calibration.workloads}
    assert "4k-randwrite-qd32" in names and not names & set(done)
    assert again.calibration.extends == sorted(ids)
    # the first profile again: everything it needs is measured
    assert (
        ad.plan_adaptive(_preset_request(tmp_path, "fs-overhead-randwrite-4k-fsync1")).calibration
        is None
    )


def test_a_profile_file_plans_an_adaptive_probe(tmp_path):
    """A user's own profile file is probed like a preset: the adaptive probe loads it by the
    path given, not by the name it holds (which is no preset)."""
    from fsadvisor.service import adaptive as ad

    web, _ = _profile_files(tmp_path)
    setup = ad.plan_adaptive(_preset_request(tmp_path, web), budget="10m")
    assert setup.plan.profile == "web" and setup.plan.profile_ref == web
    text = "\n".join(ad.dry_run_lines(setup, str(tmp_path / "s.db")))
    assert "profile web" in text and "#   1. " in text
    back = ad.AdaptivePlan.from_dict(setup.plan.to_dict())
    assert back.profile_ref == web
