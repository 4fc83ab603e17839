"""The device's own ceilings, applied to every prediction a person reads.

The model (predict/predict.py) caps only what certainly reaches the device: it leaves
buffered reads (the page cache may serve them) and application-level operations (a
Filebench file op, a database transaction) uncapped, and its cap is smooth. A sysadmin
reading "13 GB/s" for a drive rated at 7 GB/s stops trusting every other number, so
recommend and predict pass each prediction through this hard cap as well: IOPS at
most the device's IOPS ceiling for the workload's read/write mix, IOPS × request size at
most its bandwidth ceiling. The ceilings are the DeviceParams values the prediction names
in ``basis["device_params"]``; throughput lost to the cap is lost to ops/J and bytes/J (the
power does not drop with it) and added to latency (Little's law), as in the model's own cap.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping

from fsadvisor.catalog.device_params import for_submitters
from fsadvisor.domain import Prediction, Workload


def ceilings(w: Workload, values: Mapping[str, float]) -> dict[str, float]:
    """IOPS and bandwidth ceilings (bytes/s) of a device for this workload's mix: the
    harmonic mix of its read and write figures by the share of reads."""
    rf = min(max(w.read_pct / 100.0, 0.0), 1.0)
    wf = 1.0 - rf

    def mix(read: float, write: float) -> float:
        return 1.0 / (rf / read + wf / write)

    iops = mix(values["read_iops_cap"], values["write_iops_cap"])
    bw = mix(values["read_bw_bytes_s"], values["write_bw_bytes_s"])
    bs = max(int(w.bs_bytes), 1)
    return {"iops": iops, "bandwidth_bytes_s": bw, "iops_limit": min(iops, bw / bs)}


def lifted_ceilings(
    values: Mapping[str, float], demonstrated: Mapping[str, float] | None
) -> Mapping[str, float]:
    """The device figures with each bandwidth ceiling at least what the device's own cells
    moved per submitter (``demonstrated``: "read"/"write" bytes/s,
    fit.demonstrated_bandwidth); ``values`` itself without any."""
    if not demonstrated:
        return values
    out = dict(values)
    for side in ("read", "write"):
        key = f"{side}_bw_bytes_s"
        if key in out and demonstrated.get(side, 0.0) > out[key]:
            out[key] = float(demonstrated[side])
    return out


def _device_values(p: Prediction, w: Workload) -> Mapping[str, float] | None:
    dp = p.basis.get("device_params") if p.basis else None
    values = dp.get("values") if isinstance(dp, Mapping) else None
    if not values or not all(
        k in values
        for k in ("read_iops_cap", "write_iops_cap", "read_bw_bytes_s", "write_bw_bytes_s")
    ):
        return None
    # a bandwidth the device's own cells demonstrably moved is no ceiling's to deny
    # (predict.predict_many records it beside the figures)
    shown = p.basis.get("demonstrated_bw_bytes_s")
    return for_submitters(lifted_ceilings(values, shown if isinstance(shown, Mapping) else None), w)


def iops_limit(p: Prediction, w: Workload) -> float:
    """The IOPS above which ``cap`` changes ``p``'s figures (IOPS, ops/J, latency ...)
    rather than only annotating its basis and clipping the top of its intervals; infinite
    when nothing caps it. The same for predictions that share a basis: a ranking of
    thousands works it out once and caps in full only what it shows."""
    values = _device_values(p, w)
    if values is None:
        return math.inf
    limit = ceilings(w, values)["iops_limit"]
    return limit if math.isfinite(limit) else math.inf


def changes_figures(p: Prediction, w: Workload) -> bool:
    """Whether ``cap`` changes any of ``p``'s figures (see iops_limit)."""
    return p.iops > iops_limit(p, w)


def cap(p: Prediction, w: Workload) -> Prediction:
    """``p`` with IOPS (and everything derived from it) held under the device's ceilings.
    Unchanged when the basis names no device figures or the prediction is already under."""
    values = _device_values(p, w)
    if values is None:
        return p
    lim = ceilings(w, values)
    limit = lim["iops_limit"]
    basis: dict[str, Any] = dict(p.basis)
    basis["ceiling"] = {
        "iops": lim["iops"],
        "bandwidth_bytes_s": lim["bandwidth_bytes_s"],
        "capped": p.iops > limit,
    }
    u = dict(p.uncertainty)
    if "iops_90" in u:
        lo, hi = u["iops_90"]
        u["iops_90"] = [min(lo, limit), min(hi, limit)]
        if "ops_per_joule_90" in u and lo > 0 and hi > 0:
            elo, ehi = u["ops_per_joule_90"]
            u["ops_per_joule_90"] = [elo * min(1.0, limit / lo), ehi * min(1.0, limit / hi)]
    if p.iops <= limit or not math.isfinite(limit):
        return replace(p, basis=basis, uncertainty=u)
    f = limit / p.iops
    if "p99_latency_ms_90" in u:
        u["p99_latency_ms_90"] = [x / f for x in u["p99_latency_ms_90"]]
    return replace(
        p,
        iops=limit,
        mb_s=p.mb_s * f,
        mean_latency_ms=p.mean_latency_ms / f,
        p99_latency_ms=p.p99_latency_ms / f,
        ops_per_joule=p.ops_per_joule * f,
        bytes_per_joule=p.bytes_per_joule * f,
        uncertainty=u,
        basis=basis,
    )
