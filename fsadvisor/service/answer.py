"""The answer in words, written once for every front end: the headline recommend prints first
(``--json``'s ``summary``), the confidence lines, the tie note and each configuration's
why-lines (its reasons from the ranking, in words). The CLI's text, the TUI's
Recommendations pane and the report call these; what they say is read from what the ranking
decided (rank._order's tie set, rank._lead, the confidence) and never recomputed here.
"""

from __future__ import annotations

import math

from fsadvisor.predict.rank import Ranked, Recommendation, complexity, is_baseline
from fsadvisor.profiles.presets import is_preset

# An adaptive probe runs short repetitions of the leading candidates until their order is
# settled; the estimate assumes three quick repetitions of each (probe/timing.DEFAULT_REPS),
# each a quick-probe measurement window plus the per-cell overhead (mkfs, mount, discard)
# measured in probe/timing.py. It is an order of magnitude, said as such ("about").
ADAPTIVE_REPS = 3


def adaptive_seconds(n_configs: int) -> float:
    # (the probe's timing only when a headline needs it: `simulate` and a warm `recommend`
    # load no probe code, tests/unit/test_fast_startup.py)
    from fsadvisor.probe.timing import CELL_OVERHEAD_S, QUICK_RUNTIME_S

    return n_configs * ADAPTIVE_REPS * (QUICK_RUNTIME_S + CELL_OVERHEAD_S)


def duration(seconds: float) -> str:
    """A device time as people say it: "40 s", "14 min", "2.5 h" (minutes rounded up)."""
    minutes = seconds / 60.0
    if minutes < 1.5:
        return f"{seconds:.0f} s"
    if minutes < 90:
        return f"{math.ceil(minutes):.0f} min"
    return f"{minutes / 60:.1f} h"


# Reasons shown per configuration, largest first, and the smallest change worth a line.
WHY_LINES = 4
WHY_MIN_CHANGE = 0.01


def why_lines(r: Ranked, unit: str) -> list[str]:
    """Plain-words reasons, largest effect first: one line per mechanism, its effect on
    efficiency and performance against ext4 defaults, and where it comes from (the
    mechanism's citation, how many stored sources measured it)."""
    if is_baseline(r.config):
        return ["ext4 with defaults: the baseline every other candidate is compared with"]
    out = []
    for x in r.reasons[:WHY_LINES]:
        if abs(x.d_opj) < WHY_MIN_CHANGE and abs(x.d_perf) < WHY_MIN_CHANGE:
            continue
        where = [x.cite] if x.cite else []
        where.append(
            f"measured in {x.sources} stored source{'s' if x.sources != 1 else ''}"
            if x.sources
            else "no stored measurement: prior only"
        )
        out.append(
            f"{x.text}: {math.expm1(x.d_opj):+.0%} {unit} "
            f"(1 sd {math.expm1(x.sd_opj):.0%}), {math.expm1(x.d_perf):+.0%} "
            f"performance vs ext4 defaults ({'; '.join(where)})"
        )
    return out


def write_why(rec: Recommendation) -> None:
    """Every shown configuration's why-lines (the ranked ones and each filesystem's best)."""
    unit = "bytes/J" if rec.rank_by == "bytes_per_joule" else "ops/J"
    for r in {id(r): r for r in [*rec.ranked, *rec.best_per_filesystem.values()]}.values():
        r.why = why_lines(r, unit)


def reason(rec: Recommendation) -> str:
    """One line on why #1 is #1."""
    top = rec.ranked[0]
    lead = rec.lead or {}
    if getattr(top, "order_rule", None) == "measured here":
        return (
            "no candidate is reliably more efficient, and among the equals it is the one "
            "measured on this device with this workload (the others are predicted)"
        )
    if getattr(top, "order_rule", None) == "measured":
        return (
            "no candidate is reliably more efficient, and among the equals it has "
            "measured data behind it for this kind of workload (the others rest on priors)"
        )
    if top.order_note or (not lead.get("clearly_ahead") and lead.get("tied_with")):
        n = complexity(top.config, rec.device)
        simplest = (
            "mkfs and mount defaults"
            if n == 0
            else f"{n} non-default setting{'s' if n != 1 else ''}"
        )
        return (
            f"no candidate is reliably more efficient, and among the equals it has the "
            f"fewest changes ({simplest})"
        )
    if top.why:
        return top.why[0].split(" (")[0]
    return "the highest predicted efficiency"


KNOBS = {
    "filesystem": "filesystem",
    "options": "options",
    "ag_count": "AG count",
    "scheduler": "scheduler",
}


def _knob(n: str, k: dict) -> str:
    """One knob's worth: the gain of its best setting here over the default, 90% interval."""
    if k["best"] == k["against"]:
        return f"{KNOBS[n]}: the default is best"
    # the filesystem knob compares two filesystems' defaults: their names say it
    who = (
        f"{k['best'].split()[0].rstrip(',')} over {k['against'].split()[0].rstrip(',')} "
        if n == "filesystem"
        else ""
    )
    return f"{KNOBS[n]} {who}{k['gain']:+.0%} (90%: {k['low']:+.0%} to {k['high']:+.0%})"


def what_matters(rec: Recommendation) -> str:
    """Whether the choice matters at all (rank._knob_worth), in one short line: the knobs
    whose whole 90% interval is above the data's resolution, with their gain; the intervals
    of every knob are worth_line's."""
    worth = (rec.lead or {}).get("worth") or {}
    if not worth:
        return ""
    resolved = []
    for n, k in worth.items():
        if k["resolved"]:
            who = (
                f" ({k['best'].split()[0].rstrip(',')} {k['gain']:+.0%} over "
                f"{k['against'].split()[0].rstrip(',')})"
                if n == "filesystem"
                else f" ({k['gain']:+.0%})"
            )
            resolved.append(f"the {KNOBS[n]}{who}")
    if not resolved:
        return (
            "What matters: nothing the data resolves — the defaults are as good as any "
            "choice it can tell apart."
        )
    rest = [KNOBS[n] for n, k in worth.items() if not k["resolved"]]
    return (
        "What matters: "
        + ", ".join(resolved)
        + (f"; {', '.join(rest)} within the data's resolution." if rest else ".")
    )


def worth_line(rec: Recommendation) -> str:
    """Every knob's worth with its 90% interval (the JSON's lead.worth)."""
    worth = (rec.lead or {}).get("worth") or {}
    return ("worth: " + "; ".join(_knob(n, k) for n, k in worth.items())) if worth else ""


def headline(rec: Recommendation) -> list[str]:
    """Three lines: what matters for this workload, what to use and why, how sure."""
    if not rec.ranked:
        return []
    matters = what_matters(rec)
    return ([matters] if matters else []) + _use_and_how_sure(rec)


def _use_and_how_sure(rec: Recommendation) -> list[str]:
    top = rec.ranked[0]
    unit = "bytes/J" if rec.rank_by == "bytes_per_joule" else "ops/J"
    lead = rec.lead or {}
    first = f"Recommended: {top.config.label()} — {reason(rec)}."
    basis = {
        "this device": "measured on this device",
        "this device class": f"measured on this device class ({rec.device.kind} with "
        "the same backing; not this device alone)",
        "imported": "from imported runs of this device (measured elsewhere)",
    }.get(
        lead.get("measured_basis") or ("this device" if lead.get("measured_here") else ""),
        "predicted",
    )
    if lead.get("runner_up") is None:
        return [first, f"How sure: the only candidate left by the profile's constraints ({basis})."]
    if lead.get("clearly_ahead"):
        return [
            first,
            f"How sure: clearly ahead of #2 ({lead['runner_up']}) by "
            f"{lead['runner_up_gap']:.0%} in {unit}, more than the uncertainty of "
            f"that difference (1 sd {lead['difference_sd']:.0%}; {basis}).",
        ]
    n = int(lead.get("tied_with") or 0)
    sd = lead.get("difference_sd")
    res = f" (1 sd of the gap to #2: {sd:.0%})" if sd is not None else ""
    conf = rec.confidence
    others = f"{n} other configuration{'s' if n != 1 else ''}"
    if conf is not None and conf.settled:
        # Tied, and measuring could not change the pick by more than the tolerance: any of
        # the tied ones will do, and nothing needs settling.
        return [
            first,
            f"How sure: tied with {others} within the data's resolution{res}, and "
            f"#1 is within {math.expm1(conf.tolerance):.0%} of the best with "
            f"probability {conf.p_first:.2f}: any of them will do; {basis}.",
        ]
    settle = getattr(rec.confidence, "settle", None) or []
    if settle:
        # The same cells and time as the confidence's "to settle it" line (service/advice
        # settle_cells: the probe's own per-cell estimate on this device), so the two never
        # give two different durations.
        leading, seconds = len(settle), sum(c["seconds"] for c in settle)
    else:
        leading = min(n + 1, 5)  # the leaders an adaptive probe would start from
        seconds = adaptive_seconds(leading)
    return [
        first,
        f"How sure: tied with {others} "
        f"within the data's resolution{res}; {basis} — `{probe_command(rec)}` "
        f"on a spare device decides among the leading {leading} in about "
        f"{duration(seconds)}.",
    ]


def probe_command(rec: Recommendation) -> str:
    """The adaptive probe of this profile as a command to run (DEVICE as in the mkfs lines):
    a shipped preset by its name; any other workload (a profile file, the what-if form's
    edit of a preset) by a profile file, which only the user has."""
    name = rec.profile.name if is_preset(rec.profile) else "FILE.toml"
    return f"fsadvisor probe /dev/DEVICE --profile {name}"


def confidence_lines(rec: Recommendation) -> list[str]:
    """After the headline: what each knob is worth, one P per leader (#1's first) and, when
    they are tied and unsettled, which cells would settle it and roughly how long."""
    conf = rec.confidence
    if conf is None:
        return []
    worth = worth_line(rec)
    # only the leaders the list shows are named (the others are counted): a name the list
    # does not show has no entry to look up
    shown = {r.config.label() for r in rec.ranked}
    lines = ([worth] if worth else []) + [f"confidence: {conf.sentence(shown)}"]
    if conf.settle:
        total_s = sum(c["seconds"] for c in conf.settle)
        lines.append(
            f"   tied: to settle it, measure {len(conf.settle)} cells "
            f"(about {duration(total_s)} on this device): "
            + "; ".join(f"{c['config']} x{c['reps']}" for c in conf.settle)
            + f" — or run `{probe_command(rec)}`"
        )
    return lines


def leader_p_best(r: Ranked, rec: Recommendation) -> float | None:
    """``r``'s probability of being the best, or within the tolerance of it (recommend
    --json's confidence.leaders, #1's first), None for a row outside the leading group."""
    conf = rec.confidence
    if conf is None:
        return None
    if r.rank == 1:
        return conf.p_first
    label = r.config.label()
    return next((p for k, p in zip(conf.labels, conf.p_best) if k == label), None)


def leader_line(r: Ranked, rec: Recommendation) -> str | None:
    """The confidence of one listed configuration, said in its own entry (the summary's
    confidence line names the leaders together): None outside the leading group."""
    p = leader_p_best(r, rec)
    if p is None or rec.confidence is None:
        return None
    return f"{rec.confidence.what} {p:.2f}"


TIE_NOTE = (
    "'1=' marks configurations statistically tied with each other; within a tie one "
    "with measured data for this kind of workload comes first, then the one with the "
    "fewest non-default settings"
)


def notes(rec: Recommendation) -> list[str]:
    """The notes under the confidence: the ranking's, then the tie note when the list shows a
    tie."""
    out = list(rec.notes)
    if any(r.tie_label.endswith("=") for r in rec.ranked):
        out.append(TIE_NOTE)
    return out
