"""Side by side: configurations (JSON, or ranks of a recommendation) or two probe matrices,
with the difference in efficiency, its 95% interval and a plain verdict.

Measured where measured: two configurations both probed on the same device with the same
energy source and scope are compared by Welch's t interval on the runs' means, sds and
counts. Otherwise by the model: the sd of the log difference from the shared design
(fsadvisor.predict.design.difference_sd, the same one recommend's tie rule uses), in which
every term the two share cancels.
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

from fsadvisor.domain import FsConfig, run_ids_text
from fsadvisor.errors import FsAdvisorError
from fsadvisor.service.worth_inputs import NO_LOAD, WorthInputs
from fsadvisor.limits import LIMITS
from fsadvisor.service.report import config_label, predicted_stats

# The model (service/advice.py, predict/: numpy), the store, the catalog, the yearly cost
# and the charts are imported by the functions of compare itself, each saying why:
# matrix_results imports this module for its statistics (welch, judged) alone (start-up).

Z95 = 1.959963984540054


def welch(
    mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int
) -> dict[str, float]:
    """B − A with its 95% Welch interval (Welch–Satterthwaite degrees of freedom), also as a
    percentage of A's mean (A's mean taken as exact: with the few repetitions a probe runs
    its own error is part of the ± of B's). Needs at least 2 runs on each side."""
    if n_a < 2 or n_b < 2:
        raise FsAdvisorError("a measured difference needs at least 2 runs on each side")
    from fsadvisor.store.intervals import t_quantile  # the store package: with a difference only

    va, vb = sd_a**2 / n_a, sd_b**2 / n_b
    se = math.sqrt(va + vb)
    diff = mean_b - mean_a
    if se == 0:
        df, half = float(n_a + n_b - 2), 0.0
    else:
        df = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
        half = t_quantile(0.975, df) * se
    out = {"diff": diff, "low": diff - half, "high": diff + half, "df": df, "se": se}
    if mean_a:
        out.update(
            diff_pct=100 * diff / mean_a,
            low_pct=100 * (diff - half) / mean_a,
            high_pct=100 * (diff + half) / mean_a,
        )
    return out


def log_difference(value_a: float, value_b: float, sd_log: float) -> dict[str, float]:
    """B vs A from the model: log gap ± 1.96 sd of the log difference, as percentages."""
    gap = math.log(value_b / value_a)
    lo, hi = gap - Z95 * sd_log, gap + Z95 * sd_log
    return {
        "diff_pct": 100 * math.expm1(gap),
        "low_pct": 100 * math.expm1(lo),
        "high_pct": 100 * math.expm1(hi),
        "sd_log": sd_log,
    }


def verdict(name_a: str, name_b: str, d: dict[str, float], what: str = "ops/J") -> str:
    """'B gives 12% ± 4% more ops/J than A — significant' when the 95% interval excludes 0,
    else 'no difference the data can see (B vs A: +3% ± 8% ops/J)'. ± is half the interval's
    width (the log-normal one is not symmetric: the JSON has both ends)."""
    pct, lo, hi = d["diff_pct"], d["low_pct"], d["high_pct"]
    half = (hi - lo) / 2
    if lo > 0 or hi < 0:
        more = "more" if pct > 0 else "less" if what == "bytes/J" else "fewer"
        return (
            f"{name_b} gives {abs(pct):.0f}% ± {half:.0f}% {more} {what} than {name_a} "
            f"— significant"
        )
    return (
        f"no difference the data can see ({name_b} vs {name_a}: {pct:+.0f}% ± {half:.0f}% {what})"
    )


def judged(d: dict[str, Any], name_a: str, name_b: str, what: str) -> dict[str, Any]:
    """A difference (welch's or log_difference's) with whether its 95% interval excludes 0
    and the verdict in words."""
    return {
        **d,
        "significant": d["low_pct"] > 0 or d["high_pct"] < 0,
        "verdict": verdict(name_a, name_b, d, what),
    }


def _stat(s: dict[str, Any] | None) -> dict[str, Any] | None:
    if not s or s.get("mean") is None:
        return None
    return {
        "mean": s["mean"],
        "sd": s.get("sd"),
        "n": s.get("n"),
        "low": s.get("ci95_low"),
        "high": s.get("ci95_high"),
    }


def _parse_configs(items: Sequence[str]) -> list[FsConfig]:
    from fsadvisor import catalog  # the option catalog: compare's own, not welch's

    out = []
    for i, text in enumerate(items, 1):
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise FsAdvisorError(
                f"configuration {i} is not JSON ({e.msg} at column {e.colno}): "
                "give JSON configurations, or --profile P and ranks, or "
                "--matrix ID1 ID2"
            ) from e
        out.append(catalog.config_from_dict(d))
    return out


def _ranks(items: Sequence[str]) -> list[int] | None:
    try:
        ranks = [int(x) for x in items]
    except ValueError:
        return None
    if any(r < 1 for r in ranks):
        raise FsAdvisorError("ranks start at 1")
    return ranks


def compare(
    items: Sequence[str],
    profile: str | None = None,
    workload: str | None = None,
    device: str | None = None,
    matrices: bool = False,
    db: str | None = None,
    scope: str = "system",
    worth_inputs: WorthInputs = NO_LOAD,
) -> dict[str, Any]:
    """Compare configurations (``items`` as JSON, or ranks with ``profile``) or, with
    ``matrices``, two probe matrices. The first is the baseline A; each other is compared
    with it. With a load in ``worth_inputs`` each configuration also gets its ``yearly``
    figures (fsadvisor.service.worth), the summary in ``yearly_basis``."""
    if matrices:
        if worth_inputs.given:
            raise FsAdvisorError(
                "--load costs configurations of one workload: give "
                "configurations or ranks, not --matrix"
            )
        if len(items) != 2:
            raise FsAdvisorError(f"--matrix compares exactly two probe matrices, got {len(items)}")
        return compare_matrices(items[0], items[1], db=db)
    if len(items) < 2:
        raise FsAdvisorError("compare needs at least two configurations (or ranks)")
    from fsadvisor.service import advice  # the model (numpy): not for a matrix comparison

    ranks = _ranks(items)
    if ranks is not None:
        if profile is None:
            raise FsAdvisorError("ranks need --profile NAME (the recommendation they rank in)")

        if max(ranks) > LIMITS["top"].hi:
            raise FsAdvisorError(
                f"no rank {max(ranks)}: a recommendation lists at most {LIMITS['top'].hi:,.0f}"
            )
        rec = advice.recommend(profile, device=device, top=max(ranks), db=db, scope=scope)
        by_rank = {r.rank: r.config for r in rec.ranked}
        absent = [r for r in ranks if r not in by_rank]
        if absent:
            raise FsAdvisorError(
                f"the recommendation for {profile} has only {len(by_rank)} "
                f"entries, no rank {absent[0]}"
            )
        configs = [by_rank[r] for r in ranks]
        names = [f"#{r}" for r in ranks]
    else:
        configs = _parse_configs(items)
        names = [chr(ord("A") + i) if i < 26 else f"C{i + 1}" for i in range(len(configs))]
    if len(set(c.key() for c in configs)) < len(configs):
        raise FsAdvisorError("the same configuration is given twice")
    w = advice.workload_for(workload, profile)
    prof = advice.get_profile(profile) if profile is not None else None
    rank_by = "bytes_per_joule" if w.rank_by == "bytes" else "ops_per_joule"
    what = "bytes/J" if rank_by == "bytes_per_joule" else "ops/J"
    dev = advice.resolve_device(device)
    from fsadvisor import catalog  # as _parse_configs

    for c in configs:
        catalog.validate(c, dev.size_bytes)
    # the model's prediction and ranking (numpy): as advice, not for a matrix comparison
    from fsadvisor.predict import ceilings
    from fsadvisor.predict.predict import predict_many
    from fsadvisor.predict.design import difference_sd

    design: dict = {}
    # held under the device's ceilings once, as recommend's list shows the same entries
    preds = [
        ceilings.cap(p, w)
        for p in predict_many(
            advice.get_model(db),
            configs,
            w,
            dev,
            scope,
            design_out=design,
            device_params=advice.device_params_of(dev, db),
        )
    ]
    measured = _measured_for(configs, prof.name, db) if prof else [[] for _ in configs]
    bs = w.bs_bytes if w.metadata_frac < 1.0 else 0
    entries = []
    for name, cfg, p, found in zip(names, configs, preds, measured):
        # shown: the summary with the most runs (the difference below picks its own pair)
        m = max(found, key=lambda s: s["n"]) if found else None
        entries.append(
            {
                "name": name,
                "label": config_label(cfg),
                "config": cfg.to_dict(),
                "predicted": predicted_stats(p, bs, rank_by)["efficiency"],
                "measured": m and _stat(m.get(rank_by)),
                "measured_on": m
                and {
                    "device": m.get("device_model") or m.get("device_path"),
                    "energy_source": m["energy_source"],
                    "power_scope": m["power_scope"],
                    "run_ids": m["run_ids"],
                },
            }
        )
    diffs = []
    for i in range(1, len(configs)):
        a, b = entries[0], entries[i]
        d: dict[str, Any] | None = None
        pair = _measured_pair(measured[0], measured[i], rank_by)
        if pair is not None:
            ma, mb = pair
            sa, sb = _stat(ma.get(rank_by)), _stat(mb.get(rank_by))
            if sa is not None and sb is not None:  # always: _measured_pair keeps usable ones
                d = {
                    **welch(
                        sa["mean"], sa["sd"] or 0.0, sa["n"], sb["mean"], sb["sd"] or 0.0, sb["n"]
                    ),
                    "basis": (
                        f"measured: Welch 95% interval over {sa['n']} and {sb['n']} "
                        f"runs (runs {run_ids_text(ma['run_ids'])} vs {run_ids_text(mb['run_ids'])} on "
                        f"{ma.get('device_model') or ma.get('device_path')}, "
                        f"{ma['energy_source']}, {ma['power_scope']} scope)"
                    ),
                }
        if d is None:
            va, vb = a["predicted"]["mean"], b["predicted"]["mean"]
            d = {
                **log_difference(va, vb, difference_sd(design, 0, i)),
                "basis": (
                    "predicted: the model's uncertainty of the difference (shared "
                    "terms cancel), log-normal 95%"
                ),
            }
        d["a"], d["b"] = a["name"], b["name"]
        diffs.append(judged(d, a["name"], b["name"], what))
    doc = {
        "mode": "configurations",
        "metric": rank_by,
        "unit": what,
        "profile": prof.name if prof else None,
        "workload": w.to_dict(),
        "device": dev.to_dict(),
        "power_scope": scope,
        "entries": entries,
        "differences": diffs,
    }
    if worth_inputs.given:
        yw = _yearly(configs, entries, preds, measured, w, dev, scope, rank_by, db, worth_inputs)
        for e, y in zip(entries, yw.pop("entries")):
            e["yearly"] = y
        doc["yearly_basis"] = yw
    return doc


def _yearly(configs, entries, preds, measured, w, dev, scope, rank_by, db, worth_inputs):
    """Each configuration's year at the user's load: from its measured summary (the one with
    the most runs, as shown) where there is one with a throughput, else from the model. The
    best is the one using the least energy per year, its runner-up the next. ext4 defaults
    among them is the baseline itself, measured or predicted as its entry is (its saving
    against itself is none, not the model's error against a measurement); else the model
    predicts the baseline beside them."""
    # the model's ranking rules and the yearly cost (service/worth.py): only with --load
    from fsadvisor.predict.rank import is_baseline
    from fsadvisor.service import advice, worth

    bandwidth = rank_by == "bytes_per_joule"
    bases, sources = [], []
    for p, found in zip(preds, measured):
        m = max(found, key=lambda s: s["n"]) if found else None
        b = m and worth.measured_basis(m, p, scope, dev, bandwidth, w.bs_bytes)
        sources.append(
            f"measured on {m.get('device_model') or m.get('device_path') or '?'} "
            f"(runs {run_ids_text(m.get('run_ids'))})"
            if b and m
            else worth.PREDICTED
        )
        bases.append(b or worth.predicted_basis(p, scope, dev, bandwidth, w.bs_bytes))
    at = next((i for i, c in enumerate(configs) if is_baseline(c)), None)
    if at is not None:
        cfg, default, source = entries[at]["config"], bases[at], sources[at]
    else:
        cfg, default_pred = worth.default_prediction(
            w, dev, scope, db, advice.device_params_of(dev, db)
        )
        default = worth.predicted_basis(default_pred, scope, dev, bandwidth, w.bs_bytes)
        source = worth.PREDICTED
    return worth.worth_table(
        bases,
        default,
        cfg,
        worth_inputs,
        "MB/s" if bandwidth else "ops/s",
        least_energy_first=True,
        names=[e["name"] for e in entries],
        baseline_at=at,
        baseline_source=source,
    )


def _measured_for(configs: list[FsConfig], profile: str, db: str | None):
    """Per configuration: all its store summaries for this profile's probes, a joint probe's
    shared cells included (one per device and energy meter), possibly none."""
    from fsadvisor.store import open_store  # the store package: compare's own, not welch's

    with open_store(db) as store:
        found = store.summaries(profile=profile)
    return [[s for s in found if s["config_key"] == c.key()] for c in configs]


def _measured_pair(
    found_a: list[dict[str, Any]], found_b: list[dict[str, Any]], metric: str
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The two summaries, one of each configuration, measured on the same device with the
    same energy source and scope and with at least 2 runs of ``metric`` each (the pair with
    the most runs on its smaller side), or None: then the model has to speak."""

    def group(s):
        return (s.get("device_id"), s["energy_source"], s["power_scope"])

    def usable(s):
        st = _stat(s.get(metric))
        return st is not None and (st["n"] or 0) >= 2 and bool(st["mean"])

    best = None
    for sa in filter(usable, found_a):
        for sb in filter(usable, found_b):
            if group(sa) == group(sb):
                n = min(sa[metric]["n"], sb[metric]["n"])
                if best is None or n > best[0]:
                    best = (n, sa, sb)
    return None if best is None else (best[1], best[2])


def compare_matrices(id_a: str, id_b: str, db: str | None = None) -> dict[str, Any]:
    """Every (configuration, workload) cell both matrices measured: A and B side by side,
    B − A by Welch on the runs, per cell. ops/J where both have energy of the same source and
    scope, else IOPS (said in ``metric``)."""
    from fsadvisor.store import open_store  # the store package: compare's own, not welch's

    with open_store(db) as store:
        store.matrix(id_a)
        store.matrix(id_b)
        sa_all = store.summaries(matrix_id=id_a)
        sb_all = store.summaries(matrix_id=id_b)

    def key(s):
        return (s["config_key"] or s["cell_key"], s["workload_name"])

    b_of: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for s in sb_all:
        b_of.setdefault(key(s), []).append(s)
    pairs, only_a = [], []
    for sa in sa_all:
        cands = b_of.get(key(sa))
        if not cands:
            only_a.append(key(sa))
            continue
        same = [
            s
            for s in cands
            if (s["energy_source"], s["power_scope"]) == (sa["energy_source"], sa["power_scope"])
        ]
        sb = (same or cands)[0]
        metric = (
            "ops_per_joule"
            if (same and _stat(sa.get("ops_per_joule")) and _stat(sb.get("ops_per_joule")))
            else "iops"
        )
        a, b = _stat(sa.get(metric)), _stat(sb.get(metric))
        pair = {
            "config": sa["config_key"],
            "label": config_label(sa["config"], sa.get("cell_key")),
            "workload": sa["workload_name"],
            "metric": metric,
            "a": a,
            "b": b,
            "run_ids": {"a": sa["run_ids"], "b": sb["run_ids"]},
            "energy": {
                "a": [sa["energy_source"], sa["power_scope"]],
                "b": [sb["energy_source"], sb["power_scope"]],
            },
        }
        what = "ops/J" if metric == "ops_per_joule" else "IOPS"
        if a and b and (a["n"] or 0) >= 2 and (b["n"] or 0) >= 2 and a["mean"]:
            pair["difference"] = judged(
                welch(a["mean"], a["sd"] or 0.0, a["n"], b["mean"], b["sd"] or 0.0, b["n"]),
                "A",
                "B",
                what,
            )
        else:
            pair["difference"] = None
            pair["verdict"] = "cannot tell: fewer than 2 runs on a side"
        pairs.append(pair)
    if not pairs:
        raise FsAdvisorError(
            f"matrices {id_a} and {id_b} have no configuration and workload in common with ok runs"
        )
    a_keys = {key(s) for s in sa_all}
    return {
        "mode": "matrices",
        "a": id_a,
        "b": id_b,
        "pairs": pairs,
        "only_in_a": [" | ".join(map(str, k)) for k in only_a],
        "only_in_b": [" | ".join(map(str, k)) for k in b_of if k not in a_keys],
    }


def plot(doc: dict[str, Any], width: int | None = None) -> str:
    """compare --plot: efficiency bars, measured where measured, predicted otherwise."""
    from fsadvisor.report.terminal import Bar, bars  # the terminal charts: only for --plot

    items = []
    if doc["mode"] == "configurations":
        for e in doc["entries"]:
            st = (
                e["measured"]
                if e["measured"] and e["measured"].get("low") is not None
                else e["predicted"]
            )
            items.append(
                Bar(
                    f"{e['name']} {e['label']}",
                    st["mean"],
                    st["low"],
                    st["high"],
                    measured=st is e["measured"],
                )
            )
        return bars(items, doc["unit"], f"compare: {doc['unit']}", width)
    for p in doc["pairs"]:
        for side in ("a", "b"):
            st = p[side]
            if st and st.get("low") is not None:
                items.append(
                    Bar(
                        f"{side.upper()} {p['label']} {p['workload']}",
                        st["mean"],
                        st["low"],
                        st["high"],
                        measured=True,
                    )
                )
    units = sorted({"ops/J" if p["metric"] == "ops_per_joule" else "IOPS" for p in doc["pairs"]})
    return bars(items, f"measured {' or '.join(units)}", f"compare {doc['a']} vs {doc['b']}", width)
