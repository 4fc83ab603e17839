"""Adapters for the external benchmarks (fio, db_bench, sysbench): argv, run, parse."""

# How a workload is run (WorkloadSpec.kind in the probe plan). Here, not in benchmark.py, so
# the plan (which `recommend`'s tie note reads) names them without importing the adapters'
# machinery at start-up; registry.py maps each to its adapter.
KIND_FIO = "fio"  # fio.workload_argv from a Workload
KIND_JOBFILE = "jobfile"  # a runner/*.fio job file
KIND_DB_BENCH = "db_bench"
KIND_SYSBENCH = "sysbench"
KINDS = (KIND_FIO, KIND_JOBFILE, KIND_DB_BENCH, KIND_SYSBENCH)
