"""A probe cell runs whatever Benchmark its workload's kind names: the steps come from the
benchmark's invocations and the metrics from its parse, with no branch on the tool."""

from __future__ import annotations

import ast
from pathlib import Path

from fsadvisor.domain import Device
from fsadvisor.host.run import CommandResult
from fsadvisor.probe import cell as cellmod
from fsadvisor.probe.cell import CellRunner
from fsadvisor.probe.commands import Executor
from fsadvisor.probe.plan import build_plan
from fsadvisor import tools
from fsadvisor.tools import registry
from fsadvisor.tools.benchmark import Benchmark, BenchJob, Invocation, Invocations, Measurement

GIB = 1 << 30


class FakeBench(Benchmark):
    tool = "fake"

    def __init__(self):
        self.jobs: list[BenchJob] = []

    def invocations(self, job):
        self.jobs.append(job)
        return Invocations(
            (Invocation(("fake", "prep", job.name), note="prep"),),
            Invocation(("fake", "go"), env=(("X", "1"),), cwd=job.target_dir, note="measured"),
        )

    def parse(self, result):
        return Measurement({"iops": float(len(result.stdout))}, None, ("fake-flag",))


def test_a_cell_runs_any_benchmark_behind_the_interface(monkeypatch):
    fake = FakeBench()
    monkeypatch.setattr(registry, "for_kind", lambda kind: fake)
    p = build_plan(
        "/dev/loop9",
        4 * GIB,
        filesystems=["ext4"],
        schedulers=["none"],
        quick=True,
        kernel_supports=lambda fs: True,
    )
    runner = CellRunner(
        plan=p,
        device="/dev/loop9",
        device_info=Device("/dev/loop9", 4 * GIB),
        mountpoint="/tmp/mnt-x",
        executor=Executor(),
    )
    cell = next(c for c in p.cells() if c.config is not None)
    steps = runner.steps(cell)
    roles = [s.role for s in steps]
    assert roles[roles.index("prepare") : roles.index("measure") + 1] == [
        "prepare",
        "sync",
        "drop-caches",
        "measure",
    ]
    measure = steps[roles.index("measure")]
    assert (measure.argv, measure.env, measure.cwd, measure.tool) == (
        ("fake", "go"),
        (("X", "1"),),
        "/tmp/mnt-x",
        "fake",
    )
    assert fake.jobs[-1].target_dir == "/tmp/mnt-x" and fake.jobs[-1].runtime_s == p.runtime_s
    metrics, error, flags = runner._parse(measure, CommandResult(("fake",), 0, "abc", "", 0.1))
    assert (metrics, error, flags) == ({"iops": 3.0}, None, ["fake-flag"])


def test_cell_module_names_no_tool_and_no_workload_kind():
    tree = ast.parse(Path(cellmod.__file__).read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not {n for n in names if n.startswith("KIND_") or n in ("APP_KINDS", "fio", "apps")}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    assert not strings & {"db_bench", "sysbench", "jobfile"}


def test_every_workload_kind_has_a_benchmark():
    for kind in tools.KINDS:
        bench = registry.for_kind(kind)
        assert isinstance(bench, Benchmark) and registry.for_kind(bench.tool).tool == bench.tool


def test_run_executes_an_invocation_through_the_shared_runner(tmp_path):
    import sys

    inv = Invocation(
        (sys.executable, "-c", "import os; print(os.environ['FSA_X'], os.getcwd())"),
        env=(("FSA_X", "7"),),
        cwd=str(tmp_path),
    )
    r = FakeBench().run(inv, timeout_s=30)
    assert r.ok and r.stdout.split() == ["7", str(tmp_path)]
