"""Probe summaries as :class:`~fsadvisor.records.Observation`, the unit the model learns from.

One observation per summarised metric of each (device, configuration, workload, meter)
summary. Raw-device baselines become filesystem "raw"; cells whose direct I/O was not
honoured are left out (domain notes 5: ext4 data=journal serves "direct"
reads from the page cache, so such figures are not comparable with any other cell).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Iterable

from fsadvisor.domain import (
    FLAG_DIRECT_IO,
    FLAG_POOLED_PERCENTILES,
    SCHEDULERS,
    FsConfig,
    Workload,
    device_identity,
    model_kind,
)

if TYPE_CHECKING:
    from fsadvisor.records import Observation

NOT_COMPARABLE_FLAGS = frozenset({FLAG_DIRECT_IO})
_PERCENTILE_METRICS = frozenset({"p50_latency_us", "p99_latency_us", "p999_latency_us"})

# observation metric, summary metric, scale to the observation's unit, unit, energy metric?
# Latencies stay in microseconds: the seed datasets and model.py use p99_latency_us and
# mean_latency_us (records.Observation's comment still says _ms).
PROBE_METRICS = (
    ("iops", "iops", 1.0, "IOPS", False),
    ("mb_s", "mb_s", 1.0, "MB/s", False),
    ("mean_latency_us", "mean_latency_us", 1.0, "us", False),
    ("p99_latency_us", "p99_latency_us", 1.0, "us", False),
    ("watts", "watts", 1.0, "W", True),
    ("ops_per_joule", "ops_per_joule", 1.0, "ops/J", True),
)
# The seeds flag sources whose coefficient of variation exceeds 40% (model.py down-weights
# notes containing "cv>40%"); probe cells are flagged the same way.
_CV_FLAG = 0.40

_WORKLOAD_FIELDS = {f.name for f in dataclasses.fields(Workload)}


def workload_from_params(params: dict[str, Any]) -> Workload:
    # Stored by an older fsadvisor, params may lack new fields (defaults apply) or carry
    # removed ones (ignored).
    return Workload(**{k: v for k, v in (params or {}).items() if k in _WORKLOAD_FIELDS})


def _source(s: dict[str, Any]) -> str:
    ids = ",".join(str(i) for i in s["run_ids"])
    if s.get("origin") == "imported":
        # Measured elsewhere: name the files by their hash, which `db export` lists in full.
        files = ",".join(sorted({(r.get("sha256") or "?")[:12] for r in s["imported_from"]}))
        return f"imported fio-json sha256 {files} run(s) {ids}"
    matrices = ",".join(s["matrix_ids"]) or "-"
    return f"probe {matrices} run(s) {ids}"


def probe_observations(summaries: Iterable[dict[str, Any]]) -> list[Observation]:
    from fsadvisor.records import Observation  # records.py: built only here, when asked

    out: list[Observation] = []
    for s in summaries:
        cfg = s["config"]
        if NOT_COMPARABLE_FLAGS & set(s["flags"]):
            continue
        if cfg is None:
            # The raw-device baseline: no filesystem. The model reads it as the device's own
            # ceiling (filesystem "raw"), which is what anchors a loop or NVMe roofline. Its
            # cell key ("raw-device <scheduler> | <workload>") names the scheduler.
            sched = (s.get("cell_key") or "").split(" | ")[0].removeprefix("raw-device ").strip()
            config = FsConfig.make("raw", scheduler=sched if sched in SCHEDULERS else "none")
        else:
            config = FsConfig.make(
                cfg["filesystem"],
                cfg["mkfs"] or {},
                cfg["mount"] or (),
                cfg["scheduler"] or "none",
                cfg["ag_count"],
            )
        workload = workload_from_params(s["workload"])
        kind = model_kind(s["device_kind"], s.get("device_path"))
        # The identity the store recorded with the device (store v3); older rows derive it.
        dev_id = s.get("device_identity") or device_identity(
            kind, s.get("device_model") or "", s.get("device_serial") or "", s.get("device_path")
        )
        usr, sys_ = (
            (s.get("usr_cpu_pct") or {}).get("mean"),
            (s.get("sys_cpu_pct") or {}).get("mean"),
        )
        thread_cpu = usr + sys_ if usr is not None and sys_ is not None else None
        host_cpu = (s.get("host_cpu_busy_pct") or {}).get("mean")
        for metric, key, scale, unit, is_energy in PROBE_METRICS:
            st = s[key]
            if st["mean"] is None:
                continue
            note = f"n={st['n']}"
            if st["sd"] is not None:
                note += f", sd={st['sd'] * scale:.4g}"
                if st["ci95_low"] is not None and st["ci95_high"] is not None:
                    note += (
                        f", 95% CI [{st['ci95_low'] * scale:.4g}, {st['ci95_high'] * scale:.4g}]"
                    )
                if st["mean"] and abs(st["sd"] / st["mean"]) > _CV_FLAG:
                    note += ", cv>40%"
            if metric in _PERCENTILE_METRICS and FLAG_POOLED_PERCENTILES in s["flags"]:
                note += ", pooled estimate (not fio's own percentile)"
            out.append(
                Observation(
                    source=_source(s),
                    device_kind=kind,
                    config=config,
                    workload=workload,
                    metric=metric,
                    value=st["mean"] * scale,
                    unit=unit,
                    power_scope=s["power_scope"] if is_energy else None,
                    energy_source=s["energy_source"] if is_energy else None,
                    note=note,
                    device_id=dev_id,
                    n=int(st["n"] or 1),
                    sd=None if st["sd"] is None else float(st["sd"]) * scale,
                    thread_cpu_pct=thread_cpu,
                    host_cpu_busy_pct=host_cpu,
                )
            )
    return out
