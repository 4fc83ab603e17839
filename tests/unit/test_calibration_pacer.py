"""The calibration keeps within its device time from what its own first runs took
(probe/calibration_plan.CalibrationPacer): the plan's fixed per-run overhead is a guess that
a slow device's fill and discard can exceed many times over."""

from __future__ import annotations

from fsadvisor.probe.calibration_plan import CalibrationPacer, build_calibration_plan

GIB = 1 << 30


def _drive(plan, deadline, wall_per_run):
    """Run the pacer as MatrixRun does: each yielded cell 'runs' and takes ``wall_per_run``
    of its workload."""
    walls: dict = {}
    notes: list[str] = []
    pacer = CalibrationPacer(plan, deadline, lambda c: walls.get((c.key, c.rep)), notes.append)
    ran = []
    for cell in pacer(None, set()):
        ran.append(cell)
        walls[(cell.key, cell.rep)] = wall_per_run(cell)
    return ran, pacer, notes


def test_as_planned_when_the_device_is_as_fast_as_the_plan_assumes():
    plan = build_calibration_plan(None, 4 * GIB)
    ran, pacer, notes = _drive(plan, 300.0, plan.cell_estimate_s)
    assert [(c.key, c.rep) for c in ran] == [(c.key, c.rep) for c in plan.cells()]
    assert not pacer.dropped
    assert any("would take about" in n for n in notes)  # the re-estimate is said


def test_a_slow_device_keeps_every_first_run_and_drops_repetitions_to_its_deadline():
    plan = build_calibration_plan(None, 4 * GIB)
    first = {w.name for w in plan.workloads}
    # every run takes three times the plan's estimate: the whole would be ~3x the budget
    ran, pacer, notes = _drive(plan, 300.0, lambda c: 3 * plan.cell_estimate_s(c))
    assert {c.workload.name for c in ran if c.rep == 1} == first  # the fit needs each once
    assert pacer.dropped, "a calibration 3x slower than planned cannot run every repetition"
    total = sum(3 * plan.cell_estimate_s(c) for c in ran)
    first_reps = sum(3 * plan.cell_estimate_s(c) for c in ran if c.rep == 1)
    # no further repetition started unless it ended within the deadline
    assert total <= max(300.0, first_reps)
    assert pacer.reestimated_s > plan.estimated_seconds() * 2.5  # from the first runs' walls
    assert any("left out" in n for n in notes)


def test_the_first_repetitions_run_even_past_the_deadline():
    plan = build_calibration_plan(None, 4 * GIB)
    ran, pacer, _ = _drive(plan, 1.0, plan.cell_estimate_s)
    assert {c.rep for c in ran} == {1}
    assert len(ran) == len(plan.workloads)
    assert len(pacer.dropped) == len(plan.cells()) - len(plan.workloads)


def test_no_deadline_runs_everything():
    plan = build_calibration_plan(None, 4 * GIB)
    ran, pacer, _ = _drive(plan, None, lambda c: 100.0)
    assert len(ran) == len(plan.cells()) and not pacer.dropped
