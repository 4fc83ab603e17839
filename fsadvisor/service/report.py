"""The evidence for a choice, for people: the HTML report, its charts, terminal bar charts.

``build`` gathers, for a profile (and optionally one probe matrix), per workload and per
configuration: what was measured (the store's summaries: mean and 95% Student-t interval over
the ok runs) and what the model predicts (95% log-normal interval), with the provenance of
each figure, plus the recommendation. ``write`` renders it (fsadvisor/report/). Both front
ends call these; errors are FsAdvisorError (one line).
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

from fsadvisor.domain import Device, FsConfig, Workload
from fsadvisor.errors import FsAdvisorError, StoreError
from fsadvisor.service.worth_inputs import NO_LOAD, WorthInputs
from fsadvisor import limits

# The model, the store, matplotlib, the HTML renderer and the terminal charts are imported
# by the part of a report that uses them, each saying why: compare and the TUI import this
# module for its labels and figures alone (start-up).

# Two-sided normal quantiles: the model's intervals are log-normal 90% ones
# (predict/predict.py Z90); the report shows 95% everywhere, like the measured CIs.
Z90 = 1.6448536269514722
Z95 = 1.959963984540054


class NothingToReport(FsAdvisorError):
    """Neither a measurement nor a prediction can be shown."""


def widen_90_to_95(lo90: float, hi90: float) -> tuple[float, float]:
    """The 95% interval of a log-normal whose 90% interval is [lo90, hi90]: same log centre,
    half-width scaled by Z95/Z90. A degenerate interval stays a point."""
    if not (lo90 > 0 and hi90 > 0):
        return lo90, hi90
    centre = (math.log(lo90) + math.log(hi90)) / 2
    half = (math.log(hi90) - math.log(lo90)) / 2 * Z95 / Z90
    return math.exp(centre - half), math.exp(centre + half)


def _stat(
    mean: float | None, low: float | None = None, high: float | None = None, **extra: Any
) -> dict[str, Any] | None:
    if mean is None or not math.isfinite(mean):
        return None
    return {"mean": mean, "low": low, "high": high, **extra}


def measured_stats(summary: dict[str, Any], rank_by: str) -> dict[str, Any]:
    """A store summary as report stats (95% Student-t CI over runs; p99 in ms)."""

    def s(metric: str, scale: float = 1.0):
        d = summary.get(metric) or {}
        if d.get("mean") is None:
            return None
        sc = lambda v: None if v is None else v * scale  # noqa: E731
        return _stat(
            sc(d["mean"]),
            sc(d.get("ci95_low")),
            sc(d.get("ci95_high")),
            sd=sc(d.get("sd")),
            n=d.get("n"),
        )

    eff = "bytes_per_joule" if rank_by == "bytes_per_joule" else "ops_per_joule"
    return {
        "efficiency": s(eff),
        "throughput": s("mb_s" if eff == "bytes_per_joule" else "iops"),
        "iops": s("iops"),
        "mb_s": s("mb_s"),
        "p99_ms": s("p99_latency_us", 1e-3),
        "watts": s("watts"),
    }


def predicted_stats(p, bs_bytes: int, rank_by: str) -> dict[str, Any]:
    """A Prediction as report stats (its 90% intervals widened to 95%)."""
    u = p.uncertainty
    opj = widen_90_to_95(*u["ops_per_joule_90"])
    iops = widen_90_to_95(*u["iops_90"])
    per = bs_bytes / 1e6
    out = {
        "iops": _stat(p.iops, *iops),
        "mb_s": _stat(p.mb_s, iops[0] * per, iops[1] * per) if bs_bytes else None,
        "p99_ms": _stat(p.p99_latency_ms, *widen_90_to_95(*u["p99_latency_ms_90"])),
        "watts": _stat(p.watts, *widen_90_to_95(*u["watts_90"])),
    }
    if rank_by == "bytes_per_joule":
        out["efficiency"] = _stat(p.bytes_per_joule, opj[0] * bs_bytes, opj[1] * bs_bytes)
        out["throughput"] = out["mb_s"]
    else:
        out["efficiency"] = _stat(p.ops_per_joule, *opj)
        out["throughput"] = out["iops"]
    return out


def config_label(cfg: dict[str, Any] | FsConfig | None, raw_cell: str | None = None) -> str:
    """Short human name: ``xfs -o noatime agcount=16 [kyber]``; mkfs options after ``mkfs:``."""
    if cfg is None:
        sched = (raw_cell or "").split(" | ")[0].split()[-1:] or ["?"]
        return f"raw device (no filesystem) [{sched[0]}]"
    c = cfg.to_dict() if isinstance(cfg, FsConfig) else cfg
    parts = [c["filesystem"]]
    if c.get("mkfs"):
        parts.append("mkfs:" + ",".join(f"{k}={v}" for k, v in sorted(c["mkfs"].items())))
    if c.get("mount"):
        parts.append("-o " + ",".join(c["mount"]))
    if c.get("ag_count"):
        parts.append(f"agcount={c['ag_count']}")
    if c.get("scheduler", "none") != "none":
        parts.append(f"[{c['scheduler']}]")
    return " ".join(parts)


def _fs_config(c: dict[str, Any]) -> FsConfig:
    return FsConfig.make(
        c["filesystem"],
        c.get("mkfs") or {},
        c.get("mount") or (),
        c.get("scheduler") or "none",
        c.get("ag_count"),
    )


def model_provenance(db: str | None) -> dict[str, Any]:
    """Which model the predictions come from and its validated error: the held-out-source-
    table cross-validation stored with the calibration in use (``fsadvisor refit``)."""
    # the model and its settings (predict/: numpy): only when a report names its model
    from fsadvisor.service.advice import get_model
    from fsadvisor.predict.settings import ModelSettings

    settings = ModelSettings.load()
    m = get_model(db)
    out: dict[str, Any] = {
        "observations": m.n_observations,
        "prior_scale": settings.prior_scale,
        "calibration": settings.calibration_source,
        "validated": None,
    }
    try:
        doc = json.loads(Path(settings.calibration_source).read_text())
        for row in doc.get("prior_scale_search") or []:
            if row.get("prior_scale") == settings.prior_scale:
                out["validated"] = {
                    "median_factor": row["median_factor"],
                    "p90_factor": row["p90_factor"],
                    "n": row.get("n"),
                    "how": "cross-validation holding out whole source tables",
                }
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return out


def _model_line(model: dict[str, Any], basis: dict[str, Any]) -> str:
    v = model.get("validated")
    err = (
        (
            f"validated error median ×{v['median_factor']:.2f}, p90 ×{v['p90_factor']:.2f} "
            "(held-out source tables)"
        )
        if v
        else "no validated error on record"
    )
    return (
        f"model fitted on {model['observations']} observations, prior scale "
        f"{model['prior_scale']}; {err}; power level {basis.get('power_level')}"
    )


def _measured_line(s: dict[str, Any]) -> str:
    dev = s.get("device_model") or s.get("device_path") or "?"
    flags = f"; flags: {', '.join(s['flags'])}" if s.get("flags") else ""
    energy = (
        f"energy {s['energy_source']} ({s['power_scope']} scope)"
        if s.get("energy_source")
        else "no energy reading"
    )
    return (
        f"measured on device {dev} ({s.get('device_kind')}), {s['n']} run(s) "
        f"{s['run_ids']} of matrix {', '.join(s.get('matrix_ids') or []) or '-'}; "
        f"{energy}{flags}"
    )


def _predict(
    configs: list[FsConfig],
    w: Workload,
    dev: Device,
    db: str | None,
    scope: str,
    design: dict | None = None,
):
    # the model (predict/: numpy): only when a report predicts
    from fsadvisor.predict.predict import predict_many
    from fsadvisor.service.advice import device_params_of, get_model

    return predict_many(
        get_model(db),
        configs,
        w,
        dev,
        scope,
        design_out=design,
        device_params=device_params_of(dev, db),
    )


def _device_of_run(store, run_id: int | None = None, matrix_id: str | None = None) -> Device | None:
    """The device a stored run measured, as the model sees devices (identity included, so
    its calibration is found)."""
    runs = (
        store.runs(run_id=run_id)
        if run_id is not None
        else store.runs(matrix_id=matrix_id, status="ok", limit=1)
    )
    if not runs:
        return None
    r = runs[0]
    return Device(
        path=r["device_path"],
        size_bytes=int(r["device_size_bytes"] or 1 << 40),
        kind=r["device_kind"] or "nvme",
        model=r["device_model"] or "",
        serial=r["device_serial"] or "",
        plp=r["device_plp"] or "unknown",
    )


def _shown(summaries: list[dict[str, Any]], scope: str) -> dict[str, Any]:
    """Of one configuration's summaries (one per device and meter), the one the report
    shows: the report's power scope first, then the most runs."""
    return max(summaries, key=lambda s: (s.get("power_scope") == scope, s["n"]))


def build(
    profile: str,
    matrix: str | None = None,
    device: str | None = None,
    db: str | None = None,
    top: int = 5,
    scope: str = "system",
    worth_inputs: WorthInputs = NO_LOAD,
) -> dict[str, Any]:
    """Everything the report shows, as plain data (also what ``report --json`` prints).
    With a load in ``worth_inputs`` also what the choice is worth per year
    (fsadvisor.service.worth, under ``yearly``). Raises NothingToReport when neither a
    measurement nor a prediction exists."""
    # the recommendation, its words and the yearly cost (the model: numpy) and the store
    # (sqlite-utils): a report built, not the labels compare and the TUI read
    from fsadvisor.service import advice, answer, worth
    from fsadvisor.store import open_store
    from fsadvisor.store.observations import workload_from_params

    limits.check("top", top)
    prof = advice.get_profile(profile)
    missing: list[str] = []
    profile_wname = f"profile:{prof.name}"
    with open_store(db) as store:
        store.ensure_seeded()
        if matrix is not None:
            store.matrix(matrix)  # StoreError "no matrix ..." when it is not there
            summaries = store.summaries(matrix_id=matrix)
            run_device = _device_of_run(store, matrix_id=matrix)
            if not summaries:
                missing.append(f"matrix {matrix} has no ok runs to show")
        else:
            summaries = store.summaries(profile=prof.name)
            if device is not None and device.startswith("/"):
                # a device path: its own probes only
                real = os.path.realpath(device)
                summaries = [
                    s
                    for s in summaries
                    if s["device_path"] and os.path.realpath(s["device_path"]) == real
                ]
            # predictions for the device most of the runs measured, so the two sit side by side
            run_device = (
                _device_of_run(store, run_id=_shown(summaries, scope)["run_ids"][0])
                if summaries
                else None
            )
            if not summaries:
                missing.append(
                    f"no probe runs of profile {prof.name}"
                    + (f" on {device}" if device is not None and device.startswith("/") else "")
                    + f" in the store (run `fsadvisor probe DEVICE --profile "
                    f"{prof.name}`): only predictions are shown"
                )
    dev = (
        advice.resolve_device(device) if (device is not None or run_device is None) else run_device
    )
    rec = None
    try:
        rec = advice.recommend(prof, device=dev, top=top, db=db, scope=scope)
    except StoreError:
        raise
    except FsAdvisorError as e:
        missing.append(f"no recommendation: {e}")
    rank_by = (
        rec.rank_by
        if rec
        else ("bytes_per_joule" if prof.workload.rank_by == "bytes" else "ops_per_joule")
    )
    model = model_provenance(db)

    # workloads: the profile's own first, then the matrix's others in the order stored
    order: dict[str, dict[str, Any]] = {}
    if rec is not None or any(prof.name in s["profiles"] for s in summaries):
        order[profile_wname] = {"workload": prof.workload, "summaries": []}
    for s in summaries:
        # a joint probe's shared cell is stored under another profile's name: it is this
        # profile's workload all the same
        wname = profile_wname if prof.name in s["profiles"] else s["workload_name"]
        entry = order.setdefault(
            wname, {"workload": workload_from_params(s["workload"]), "summaries": []}
        )
        entry["summaries"].append(s)

    unit = "bytes/J" if rank_by == "bytes_per_joule" else "ops/J"
    workloads = []
    for wname, entry in order.items():
        w: Workload = entry["workload"]
        configs: dict[str, dict[str, Any]] = {}
        by_config: dict[str, list[dict[str, Any]]] = {}
        for s in entry["summaries"]:
            by_config.setdefault(s["config_key"] or s["cell_key"] or "raw", []).append(s)
        for key, group in by_config.items():
            s = _shown(group, scope)
            others = len(group) - 1
            configs[key] = {
                "label": config_label(s["config"], s.get("cell_key")),
                "config": s["config"],
                "rank": None,
                "measured": measured_stats(s, rank_by),
                "predicted": None,
                "provenance": {
                    "measured": _measured_line(s)
                    + (
                        f"; {others} more summar{'y' if others == 1 else 'ies'} of other devices "
                        "or meters not shown (fsadvisor db export --table summaries)"
                        if others
                        else ""
                    ),
                    "predicted": None,
                },
            }
        if rec is not None and wname == profile_wname:
            for r in rec.ranked:
                c = configs.setdefault(
                    r.config.key(),
                    {
                        "label": config_label(r.config),
                        "config": r.config.to_dict(),
                        "rank": None,
                        "measured": None,
                        "predicted": None,
                        "provenance": {"measured": None, "predicted": None},
                    },
                )
                c["rank"] = r.rank
        to_predict = [(k, _fs_config(c["config"])) for k, c in configs.items() if c["config"]]
        if to_predict:
            preds = _predict([cfg for _, cfg in to_predict], w, dev, db, scope)
            bs = w.bs_bytes if w.metadata_frac < 1.0 else 0
            for (k, _), p in zip(to_predict, preds):
                configs[k]["predicted"] = predicted_stats(p, bs, rank_by)
                configs[k]["provenance"]["predicted"] = _model_line(model, p.basis)
        rows = sorted(
            configs.values(),
            key=lambda c: (
                c["rank"] is None,
                c["rank"] or 0,
                -((c["measured"] or c["predicted"] or {}).get("efficiency") or {}).get("mean", 0),
            ),
        )
        workloads.append(
            {
                "name": wname,
                "title": f"{wname} — {unit}, throughput, p99 latency, power",
                "workload": w.to_dict(),
                "units": {
                    "efficiency": unit,
                    "throughput": "MB/s" if rank_by == "bytes_per_joule" else "IOPS",
                },
                "configs": rows,
            }
        )
    if not workloads:
        raise NothingToReport(f"nothing to report for profile {prof.name}: " + "; ".join(missing))

    recommendation = None
    if rec is not None and rec.ranked:
        top1 = rec.ranked[0]
        p = top1.prediction
        eff = p.bytes_per_joule if rank_by == "bytes_per_joule" else p.ops_per_joule
        pst = predicted_stats(p, prof.workload.bs_bytes, rank_by)["efficiency"]
        recommendation = {
            "headline": (
                f"Use {config_label(top1.config)}: {eff:,.0f} {unit} predicted "
                f"(95%: {pst['low']:,.0f}–{pst['high']:,.0f}), {p.iops:,.0f} IOPS, "
                f"p99 {p.p99_latency_ms:.2f} ms, {p.watts:.0f} W "
                f"({p.power_scope} scope, {p.energy_source})"
            ),
            # recommend's own answer in words (service/answer): what matters, what to use,
            # how sure, what each knob is worth, one P per leader
            "answer": list(rec.summary) + answer.confidence_lines(rec),
            "config": top1.config.to_dict(),
            "mkfs": " ".join(top1.commands["mkfs"]),
            "mount_options": top1.commands["mount_options"],
            "fstab": top1.commands["fstab"],
            "udev": top1.commands["udev"],
            "why": list(top1.why),
            "risks": list(top1.warnings),
            "notes": list(rec.notes),
            "considered": rec.considered,
            "excluded": dict(rec.excluded),
        }
    yearly = None
    if worth_inputs.given and rec is not None and rec.ranked:
        yearly = worth.yearly_worth(rec, worth_inputs, db)
        for entry, r in zip(yearly["entries"], rec.ranked):
            entry["rank"], entry["label"] = r.rank, config_label(r.config)
        yearly["summary"] = worth.summary_lines(yearly)
    elif worth_inputs.given:
        missing.append("no yearly figures: they need a recommendation to cost")
    return {
        "profile": {"name": prof.name, "description": prof.description, "source": prof.source},
        "device": dev.to_dict(),
        "matrix": matrix,
        "rank_by": rank_by,
        "scope": scope,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "model": model,
        "recommendation": recommendation,
        "yearly": yearly,
        "workloads": workloads,
        "missing": missing,
    }


def charts(doc: dict[str, Any]) -> list[tuple[str, bytes]]:
    """(file name, PNG) per workload of a built report."""
    from fsadvisor.report.charts import workload_png  # matplotlib: only for PNG charts

    out = []
    for i, w in enumerate(doc["workloads"], 1):
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in w["name"])
        out.append((f"{i:02d}-{safe}.png", workload_png(w)))
    return out


def write(
    profile: str,
    out: str | os.PathLike[str] | None = "report.html",
    png_dir: str | os.PathLike[str] | None = None,
    matrix: str | None = None,
    device: str | None = None,
    db: str | None = None,
    top: int = 5,
    scope: str = "system",
    worth_inputs: WorthInputs = NO_LOAD,
) -> dict[str, Any]:
    """Build the report and write the self-contained HTML to ``out`` (None: no HTML) and/or
    the charts alone as PNG files into ``png_dir``. Returns what was written, the report's
    ``missing`` lines and, under ``report``, everything it shows (``build``)."""
    from fsadvisor.report.html import render  # the HTML renderer: only when a file is written

    if out is None and png_dir is None:
        raise FsAdvisorError("nothing to write: give -o FILE and/or --png DIR")
    doc = build(
        profile,
        matrix=matrix,
        device=device,
        db=db,
        top=top,
        scope=scope,
        worth_inputs=worth_inputs,
    )
    images = charts(doc)
    written: list[str] = []
    if png_dir is not None:
        d = Path(png_dir)
        d.mkdir(parents=True, exist_ok=True)
        for name, png in images:
            (d / name).write_bytes(png)
            written.append(str(d / name))
    if out is not None:
        Path(out).write_text(render(doc, [png for _, png in images]), encoding="utf-8")
        written.insert(0, str(out))
    return {
        "written": written,
        "workloads": len(doc["workloads"]),
        "missing": doc["missing"],
        "recommendation": (doc["recommendation"] or {}).get("headline"),
        "report": doc,
    }


def measured_on_device(rec, db: str | None = None) -> dict[str, dict[str, Any]]:
    """The store's ok runs of this recommendation's profile on its device, per ranked
    configuration's key: {device, n, mean, low, high} of the ranked metric, where the
    device (path or serial) ran it with an energy reading. Empty for a device given as a
    size only (nothing can have been measured on it)."""
    dev = rec.device
    if not dev.path and not dev.serial:
        return {}
    from fsadvisor.store import open_store  # the store: only for a device that can be measured

    with open_store(db) as store:
        # its probes' runs (a joint probe's shared cells too) and imported ones (bare name)
        found = store.summaries(profile=rec.profile.name) + store.summaries(
            workload_name=rec.profile.name
        )
    keys = {r.config.key() for r in rec.ranked}
    out: dict[str, dict[str, Any]] = {}
    for s in found:
        if s.get("config_key") not in keys or not (
            (dev.path and s.get("device_path") == dev.path)
            or (dev.serial and s.get("device_serial") == dev.serial)
        ):
            continue
        st = measured_stats(s, rec.rank_by)["efficiency"]
        if st is None or (s["config_key"] in out and out[s["config_key"]]["n"] >= s["n"]):
            continue
        out[s["config_key"]] = {
            "device": s.get("device_path") or dev.path or dev.serial,
            "n": s["n"],
            "mean": st["mean"],
            "low": st["low"] if st["low"] is not None else st["mean"],
            "high": st["high"] if st["high"] is not None else st["mean"],
        }
    return out


def recommendation_chart(rec, measured: dict[str, dict[str, Any]] | None = None):
    """The ranked configurations' predicted efficiency as a BarChart (report.terminal).
    With ``measured`` (measured_on_device), each configuration measured on the device gets
    its own bar (M, Student-t 95% whisker) next to its prediction (P), and a note says
    where and how many runs."""
    from fsadvisor.report.terminal import Bar, BarChart  # the terminal charts: for --plot only

    rank_by = rec.rank_by
    measured = measured or {}
    items = []
    notes = []
    for r in rec.ranked:
        # the rank as the list above the chart prints it ("#1=" in a tie)
        label = f"#{r.label} {config_label(r.config)}"
        st = predicted_stats(r.prediction, rec.profile.workload.bs_bytes, rank_by)["efficiency"]
        items.append(Bar(label, st["mean"], st["low"], st["high"], measured=False))
        m = measured.get(r.config.key())
        if m is not None:
            items.append(Bar(label, m["mean"], m["low"], m["high"], measured=True))
            notes.append(
                f"M {label}: measured on {m['device']}: {m['n']} run{'s' if m['n'] != 1 else ''}"
            )
    unit = "bytes/J" if rank_by == "bytes_per_joule" else "ops/J"
    return BarChart(
        tuple(items),
        unit if measured else f"predicted {unit}",
        f"{rec.profile.name}: {unit}",
        tuple(notes),
    )


def plot_recommendation(
    rec, width: int | None = None, measured: dict[str, dict[str, Any]] | None = None
) -> str:
    """recommend --plot: recommendation_chart as text, at most ``width`` columns (the
    terminal's by default)."""
    return recommendation_chart(rec, measured).text(width)


def plot_probe(summary: dict[str, Any], width: int | None = None) -> str:
    """probe --plot: per workload of a finished probe, the measured ops/J of each
    configuration as bars with 95% whiskers (a single run has no whisker: low = high)."""
    # the probe's plan (its cell labels) and the terminal charts: for probe --plot only
    from fsadvisor.probe.plan import cell_label
    from fsadvisor.report.terminal import Bar, bars

    by_workload: dict[str, list] = {}
    for r in summary.get("results") or []:
        st = r.get("ops_per_joule") or {}
        mean = st.get("mean")
        if mean is None or not r.get("ranked", True):
            continue
        low, high = st.get("ci95_low"), st.get("ci95_high")
        low = mean if low is None else low
        high = mean if high is None else high
        # the readable label (``ext4 defaults, sched none``), never the store key; the raw
        # device in its short form (a bar's label has about 30 columns)
        label = (
            cell_label(None, r.get("scheduler") or "?", short=True)
            if r.get("filesystem") == "raw-device"
            else r.get("label") or r["config"]
        )
        by_workload.setdefault(r["workload"], []).append(
            Bar(label, mean, max(low, 0.0), high, measured=True)
        )
    if not by_workload:
        return "no ops/J to plot: no run of this probe has an energy reading"
    return "\n\n".join(
        bars(items, "measured ops/J", f"{w}: ops/J", width) for w, items in by_workload.items()
    )
