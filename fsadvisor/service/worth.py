"""What the recommendation is worth per year: each ranked configuration's average power at
the user's load, kWh and cost per year, and the saving against the runner-up and against the
distribution default (ext4 with defaults, scheduler none), intervals carried through.

The arithmetic is fsadvisor.predict.cost; this module picks its inputs (``Basis``) and names
where the watts come from: the model's predicted power level and idle baseline in the ranked
scope, or — for a library drive at ``--scope drive`` — the drive's datasheet power figures
(idle and active), which are best cases too; for compare's probed configurations the measured
ops/s (MB/s) and watts (``measured_basis``). ``worth_table`` turns bases into the figures
recommend, compare and the report show.
"""

from __future__ import annotations

from typing import Any

from fsadvisor.domain import Prediction, run_ids_text
from fsadvisor.predict import ceilings
from fsadvisor.predict.cost import HOURS_PER_YEAR, Tariff, saving, yearly
from fsadvisor.predict.rank import Recommendation, baseline_config, is_baseline
from fsadvisor.service.worth_inputs import WorthInputs
from fsadvisor.predict.predict import predict
from fsadvisor.service.advice import device_params_of, get_model
from fsadvisor.service.devices import library_drive_of

# Where the baseline's figures come from when the model gives them (the text names it)
PREDICTED = "predicted by the model"


def _capacity(p: Prediction, bandwidth: bool, bs_bytes: int) -> tuple[float, tuple[float, float]]:
    lo, hi = p.uncertainty["iops_90"]
    if bandwidth:
        return p.mb_s, (lo * bs_bytes / 1e6, hi * bs_bytes / 1e6)
    return p.iops, (lo, hi)


def _power(p: Prediction, scope: str, device: Any) -> tuple[float, float, tuple[float, float], str]:
    """(idle W, busy W, busy 90% W, where they come from) for one prediction."""
    if scope == "drive":
        d = library_drive_of(device)
        if d is not None:
            idle_fig = d.figures.get("idle_power_w") or d.figures.get("low_power_w")
            busy_fig = d.figures.get("active_power_w") or d.figures.get("max_power_w")
            ps = d.figures.get("power_states")
            ps0 = max((s["max_w"] for s in ps.value if s["op"]), default=None) if ps else None
            busy_w = None
            if busy_fig is not None:
                busy_w = float(busy_fig.value)
            elif ps is not None and ps0 is not None:
                # the highest operational state's maximum: an upper bound
                busy_fig, busy_w = ps, float(ps0)
            if idle_fig is not None and busy_fig is not None and busy_w is not None:
                top = max(d.value("max_power_w") or busy_w, ps0 or busy_w, busy_w)
                return (
                    float(idle_fig.value),
                    busy_w,
                    (busy_w, float(top)),
                    f"datasheet power of {d.name}: idle {idle_fig.value} W "
                    f"({idle_fig.source.title}), busy {busy_w:g} W "
                    f"({busy_fig.source.title}); drive scope; best-case figures",
                )
    idle = float(p.basis.get("idle_watts") or 0.0)
    lo, hi = p.uncertainty.get("watts_90", [p.watts, p.watts])
    return (
        idle,
        p.watts,
        (float(lo), float(hi)),
        f"{p.energy_source}, {p.power_scope} scope; idle {idle:g} W from models/priors.toml "
        f"[idle_watts]; {p.basis.get('power_level', '')}".rstrip("; "),
    )


# One configuration's inputs to the yearly arithmetic: idle W, busy W, busy W interval,
# capacity (ops/s or MB/s), capacity interval, and where the watts come from.
Basis = tuple[float, float, tuple[float, float], float, tuple[float, float], str]


def predicted_basis(
    p: Prediction, scope: str, device: Any, bandwidth: bool, bs_bytes: int
) -> Basis:
    """A prediction's yearly inputs: the model's capacity and power (or, at drive scope for a
    library drive, its datasheet power)."""
    idle, busy, busy90, source = _power(p, scope, device)
    cap, cap90 = _capacity(p, bandwidth, bs_bytes)
    return idle, busy, busy90, cap, cap90, source


def measured_basis(
    summary: dict[str, Any], p: Prediction, scope: str, device: Any, bandwidth: bool, bs_bytes: int
) -> Basis | None:
    """A store summary's yearly inputs: the measured ops/s (MB/s) as capacity and the measured
    watts as busy power (the 95% Student-t intervals over the runs); the idle power is the
    model's, and the model's watts stand in only when the runs have no energy reading. None
    when the summary has no throughput to take as capacity."""
    thr = summary.get("mb_s" if bandwidth else "iops") or {}
    if thr.get("mean") is None or not thr["mean"] > 0:
        return None
    cap = float(thr["mean"])
    cap95 = (float(thr.get("ci95_low") or cap), float(thr.get("ci95_high") or cap))
    idle, busy, busy90, model_source = _power(p, scope, device)
    runs = (
        f"runs {run_ids_text(summary.get('run_ids'))} on "
        f"{summary.get('device_model') or summary.get('device_path') or '?'}"
    )
    w = summary.get("watts") or {}
    if w.get("mean") is not None and summary.get("energy_source"):
        busy = float(w["mean"])
        busy90 = (float(w.get("ci95_low") or busy), float(w.get("ci95_high") or busy))
        source = (
            f"measured ({runs}): capacity {cap:,.0f} {'MB/s' if bandwidth else 'ops/s'} "
            f"and {busy:g} W from {summary['energy_source']}, "
            f"{summary.get('power_scope')} scope (95% intervals over the runs); idle "
            f"{idle:g} W from the model"
        )
    else:
        source = (
            f"measured capacity ({runs}, no energy reading); watts from the model: {model_source}"
        )
    return idle, busy, busy90, cap, cap95, source


def worth_table(
    bases: list[Basis],
    default: Basis,
    default_config: dict[str, Any],
    inputs: WorthInputs,
    unit: str,
    least_energy_first: bool = False,
    names: list[str] | None = None,
    baseline_at: int | None = None,
    baseline_source: str = PREDICTED,
) -> dict[str, Any]:
    """The yearly figures for configurations given by their ``bases`` (recommend's ranked
    entries, compare's items): per entry its year and saving against the distribution default;
    the best also against the runner-up. Best and runner-up are the first two entries (a
    ranking), or with ``least_energy_first`` the two using the least energy per year, all at
    ``inputs`` (which have a load). ``baseline_at``: the entry that is the distribution
    default itself, its ``default`` basis (marked ``is_baseline``: its saving against the
    default is against itself). ``baseline_source``: where the default's figures come from,
    in words ("predicted by the model", "measured on ...")."""
    load = inputs.load
    if load is None:
        raise ValueError("the yearly figures need a load")
    tariff = Tariff(
        load=float(load), price_per_kwh=inputs.price, servers=inputs.servers, pue=inputs.pue
    )
    default_year = yearly(*default[:5], tariff)
    entries, years = [], []
    for i, b in enumerate(bases):
        y = yearly(*b[:5], tariff)
        years.append(y)
        d = y.to_dict()
        if names is not None:
            d["name"] = names[i]
        d["capacity"] = b[3]
        d["energy_source"] = b[5]
        d["saving_vs_default"] = saving(default_year, y)
        if i == baseline_at:
            # the default's own figure on both sides: its errors are the same, so the
            # saving is exactly none, its range too (not opposite ends of one interval)
            d["saving_vs_default"] = {
                k: [0.0, 0.0] if k.endswith("_range") else 0.0 for k in d["saving_vs_default"]
            }
            d["is_baseline"] = True
        entries.append(d)
    order = list(range(len(years)))
    if least_energy_first:
        order.sort(key=lambda i: years[i].kwh)
    if len(years) > 1:
        entries[order[0]]["saving_vs_runner_up"] = saving(years[order[1]], years[order[0]])
    notes = []
    if not any(y.sustains for y in years):
        best_cap = max(e["capacity"] for e in entries)
        notes.append(
            f"load {load:,.0f} {unit} is above every shown configuration's predicted "
            f"capacity (highest: {best_cap:,.0f} {unit}); the figures are at full load"
        )
    if len(years) < 2:
        notes.append("only one configuration shown (--top 1): no runner-up to compare with")
    notes.append("saving ranges pair opposite ends of the two 90% intervals (conservative)")
    return {
        "load": load,
        "load_unit": unit,
        "price_per_kwh": inputs.price,
        "servers": inputs.servers,
        "pue": inputs.pue,
        "hours_per_year": HOURS_PER_YEAR,
        "model": "P_avg = P_idle + (P_busy - P_idle) x min(load / capacity, 1); "
        f"kWh/yr = P_avg x {HOURS_PER_YEAR:g} h / 1000 x servers x PUE",
        "entries": entries,
        "default": {
            "config": default_config,
            **default_year.to_dict(),
            "capacity": default[3],
            "energy_source": default[5],
            "source": baseline_source,
        },
        "notes": notes,
    }


def default_prediction(
    w: Any, device: Any, scope: str, db: str | None, device_params: Any = None
) -> tuple[dict[str, Any], Prediction]:
    """The distribution default's configuration and its prediction for this workload, from
    ``device_params`` (the device figures the configurations it is compared with were
    predicted from: without them a library drive's datasheet figures give those entries and
    not the baseline, and ext4 defaults would save energy against itself), held under the
    device's ceilings as the entries shown beside it are."""

    cfg = baseline_config()
    raw = predict(get_model(db), cfg, w, device, scope, device_params=device_params)
    return cfg.to_dict(), ceilings.cap(raw, w)


def yearly_worth(rec: Recommendation, inputs: WorthInputs, db: str | None = None) -> dict[str, Any]:
    """Per ranked entry (same order as ``rec.ranked``) its ``yearly`` figures at ``inputs``
    (which have a load), plus a summary: the best against the runner-up and against the
    distribution default."""
    w = rec.profile.workload
    bandwidth = rec.rank_by == "bytes_per_joule"
    unit = "MB/s" if bandwidth else "ops/s"
    if rec.baseline is not None:  # the ranking's own figure: the one its list shows
        cfg, default_pred = baseline_config().to_dict(), rec.baseline
    else:  # left out by the profile's constraints: predicted from the same device figures
        cfg, default_pred = default_prediction(
            w, rec.device, rec.scope, db, device_params_of(rec.device, db)
        )
    bases = [
        predicted_basis(r.prediction, rec.scope, rec.device, bandwidth, w.bs_bytes)
        for r in rec.ranked
    ]
    default = predicted_basis(default_pred, rec.scope, rec.device, bandwidth, w.bs_bytes)
    at = next((i for i, r in enumerate(rec.ranked) if is_baseline(r.config)), None)
    yw = worth_table(bases, default, cfg, inputs, unit, baseline_at=at)
    s = yw["entries"][0].get("saving_vs_runner_up") if yw["entries"] else None
    if s is not None and s["kwh_per_year"] < 0 and len(rec.ranked) > 1:
        # #1 may cost more than #2 at this load: say why it is still #1
        why = rec.ranked[0].order_note or (
            "the ranking is by efficiency at the workload's own concurrency, where "
            "#1 leads; at this load the energy difference is within the interval"
        )
        yw["notes"].insert(
            0,
            f"#1 uses {-s['kwh_per_year']:,.1f} kWh/yr more than #2 at this "
            f"load (range {s['kwh_per_year_range'][0]:,.1f} to "
            f"{s['kwh_per_year_range'][1]:,.1f}) and is still #1: {why}",
        )
    return yw


def _money(v: float | None) -> str:
    return "-" if v is None else f"{v:,.2f}"


def yearly_line(yw: dict[str, Any], i: int) -> str:
    """One text line for entry ``i``: average watts, kWh and cost per year, saving vs default."""
    e = yw["entries"][i]
    s = e["saving_vs_default"]
    cost = (
        f", cost {_money(e['cost_per_year'])} (90%: {_money(e['cost_per_year_90'][0])}–"
        f"{_money(e['cost_per_year_90'][1])})"
        if e["cost_per_year"] is not None
        else ""
    )
    save = (
        "this is the ext4 defaults baseline (no saving against itself)"
        if e.get("is_baseline")
        else f"vs ext4 defaults saves {_money(s['cost_per_year'])}/yr"
        if "cost_per_year" in s
        else f"vs ext4 defaults saves {s['kwh_per_year']:,.1f} kWh/yr"
    )
    # the warning first: where the line wraps, it stays on the first line, whole
    return ("CANNOT SUSTAIN THE LOAD: " if not e["sustains_load"] else "") + (
        f"{e['avg_watts']:.1f} W avg at {e['utilisation']:.0%} busy, "
        f"{e['kwh_per_year']:,.0f} kWh (90%: {e['kwh_per_year_90'][0]:,.0f}–{e['kwh_per_year_90'][1]:,.0f})"
        f"{cost}; {save}"
    )


def summary_lines(yw: dict[str, Any]) -> list[str]:
    """The lines under the notes: what the figures assume and where their watts come from."""
    entries = yw["entries"]
    lines = [
        f"per year at {yw['load']:,.0f} {yw['load_unit']} x {yw['servers']} server(s), "
        f"PUE {yw['pue']:g}"
        + (f", {yw['price_per_kwh']:g} per kWh" if yw["price_per_kwh"] is not None else "")
        + f": {yw['model']}"
    ]
    sources = list(dict.fromkeys(e["energy_source"] for e in entries))
    if len(sources) == 1:
        lines.append(f"energy source: {sources[0]}")
    else:  # compare: measured and predicted rows side by side, each names its own
        lines += [
            f"energy source of {e.get('name', '#%d' % (i + 1))}: {e['energy_source']}"
            for i, e in enumerate(entries)
        ]
    # a saving is against this figure: say whether it is the model's or measured
    lines.append(f"baseline: ext4 defaults, {yw['default']['source']}")
    best = [(i, e) for i, e in enumerate(entries) if "saving_vs_runner_up" in e]
    if best:
        i, e = best[0]
        s = e["saving_vs_runner_up"]
        what = (
            f"{_money(s['cost_per_year'])} (range {_money(s['cost_per_year_range'][0])} to "
            f"{_money(s['cost_per_year_range'][1])})"
            if "cost_per_year" in s
            else f"{s['kwh_per_year']:,.1f} kWh (range {s['kwh_per_year_range'][0]:,.1f} to "
            f"{s['kwh_per_year_range'][1]:,.1f})"
        )
        lines.append(f"{e.get('name', '#1')} against the runner-up: saves {what} per year")
    return lines + list(yw["notes"])
