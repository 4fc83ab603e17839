"""Adapters for the external benchmarks (fio, db_bench, sysbench): argv, run, parse."""
