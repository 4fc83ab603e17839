"""Which :class:`~fsadvisor.tools.benchmark.Benchmark` runs a workload of each kind.

A module of its own so the base (benchmark.py) never imports the adapters that subclass it:
adding a tool is adding a module with one class and a line in :data:`BENCHMARKS`.
"""

from __future__ import annotations

from fsadvisor.errors import FsAdvisorError
from fsadvisor.tools import KIND_DB_BENCH, KIND_FIO, KIND_JOBFILE, KIND_SYSBENCH
from fsadvisor.tools.benchmark import Benchmark
from fsadvisor.tools.dbbench import DbBench
from fsadvisor.tools.fiobench import FioBenchmark
from fsadvisor.tools.sysbench import Sysbench

# workload kind -> its adapter; each adapter's ``tool`` is also a kind here (a stored step
# names its tool, and the cell parses that step's output with the same adapter).
BENCHMARKS: dict[str, type[Benchmark]] = {
    KIND_FIO: FioBenchmark,
    KIND_JOBFILE: FioBenchmark,
    KIND_DB_BENCH: DbBench,
    KIND_SYSBENCH: Sysbench,
}


def for_kind(kind: str) -> Benchmark:
    """The benchmark that runs workloads of ``kind`` (or whose ``tool`` is ``kind``)."""
    if kind not in BENCHMARKS:
        raise FsAdvisorError(
            f"no benchmark runs workloads of kind {kind!r}; known: {', '.join(BENCHMARKS)}"
        )
    return BENCHMARKS[kind]()
