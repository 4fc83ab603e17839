"""The report as one self-contained HTML file: inline CSS, charts as base64 PNG data URIs,
no script and no external reference, so it opens the same offline, in a mail attachment or
from a ticket. Input: the plain dict of fsadvisor.service.report.build and one PNG per
workload. Every text from data is escaped."""

from __future__ import annotations

import base64
from html import escape
from typing import Any

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1300px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em} h2{border-bottom:2px solid #1f5fa8;padding-bottom:.2em;margin-top:1.6em}
.headline{font-size:1.15em;background:#eef4fb;border-left:5px solid #1f5fa8;padding:.6em 1em}
table{border-collapse:collapse;width:100%;font-size:.85em;margin:.6em 0}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:right;vertical-align:top}
th{background:#f2f2f2} td.l,th.l{text-align:left}
tr.measured td{background:#ffffff} tr.predicted td{background:#fbf3ee;font-style:italic;color:#5a3a2a}
.kind{font-weight:bold;font-style:normal} .missing{color:#a00;font-weight:bold}
.risk{color:#8a3b00} code{background:#f4f4f4;padding:1px 3px;font-size:.95em}
img.chart{max-width:100%;height:auto;border:1px solid #ddd}
.prov{font-size:.8em;color:#555} .legend span{margin-right:2em}
"""


def _fmt(x: float | None) -> str:
    if x is None:
        return "–"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:,.2f}"
    return f"{x:.3g}"


def _cell(stat: dict[str, Any] | None) -> str:
    if not stat:
        return "–"
    if stat.get("low") is None or stat.get("high") is None:
        note = " (1 run: no interval)" if stat.get("n") == 1 else ""
        return f"{_fmt(stat['mean'])}{note}"
    return f"{_fmt(stat['mean'])}<br><small>[{_fmt(stat['low'])} – {_fmt(stat['high'])}]</small>"


def _rows(w: dict[str, Any]) -> str:
    out = []
    for c in w["configs"]:
        rank = f"#{c['rank']}" if c["rank"] else ""
        for kind in ("measured", "predicted"):
            st = c.get(kind)
            if not st:
                continue
            prov = c["provenance"].get(kind) or ""
            out.append(
                f'<tr class="{kind}"><td class="l">{escape(rank)}</td>'
                f'<td class="l">{escape(c["label"])}</td>'
                f'<td class="l kind">{kind}</td>'
                + "".join(
                    f"<td>{_cell(st.get(m))}</td>"
                    for m in ("efficiency", "iops", "mb_s", "p99_ms", "watts")
                )
                + f'<td class="l prov">{escape(prov)}</td></tr>'
            )
    return "\n".join(out)


def _money(x: float | None) -> str:
    return "–" if x is None else f"{x:,.2f}"


def _range(lo: float, hi: float, *, money: bool = False) -> str:
    f = _money if money else (lambda v: f"{v:,.0f}")
    return f"<br><small>[{f(lo)} – {f(hi)}]</small>"


def _yearly(y: dict[str, Any]) -> str:
    """The "What the choice is worth per year" table: one row per ranked configuration and
    one for the distribution default (fsadvisor.service.worth's figures, 90% intervals)."""
    priced = y["price_per_kwh"] is not None
    head = (
        "<table><tr><th class=l>rank</th><th class=l>configuration</th>"
        "<th>average W</th><th>busy share</th><th>kWh/yr</th>"
        + ("<th>cost/yr</th>" if priced else "")
        + "<th>saving vs ext4 defaults</th><th>saving vs runner-up</th>"
        "<th class=l>load</th><th class=l>energy source</th></tr>"
    )
    rows = []

    def row(rank: str, label: str, e: dict[str, Any]) -> str:
        def save(key: str) -> str:
            s = e.get(key)
            if key == "saving_vs_default" and e.get("is_baseline"):
                return "the baseline itself"
            if not s:
                return "–"
            if priced and "cost_per_year" in s:
                return _money(s["cost_per_year"]) + _range(*s["cost_per_year_range"], money=True)
            return f"{s['kwh_per_year']:,.1f} kWh" + _range(*s["kwh_per_year_range"])

        ok = e["sustains_load"]
        return (
            f"<tr><td class=l>{escape(rank)}</td><td class=l>{escape(label)}</td>"
            f"<td>{e['avg_watts']:,.1f}{_range(*e['avg_watts_90'])}</td>"
            f"<td>{e['utilisation']:.0%}</td>"
            f"<td>{e['kwh_per_year']:,.0f}{_range(*e['kwh_per_year_90'])}</td>"
            + (
                f"<td>{_money(e['cost_per_year'])}{_range(*e['cost_per_year_90'], money=True)}</td>"
                if priced
                else ""
            )
            + f"<td>{save('saving_vs_default')}</td><td>{save('saving_vs_runner_up')}</td>"
            + (
                "<td class=l>sustained</td>"
                if ok
                else '<td class="l missing">CANNOT SUSTAIN THE LOAD</td>'
            )
            + f'<td class="l prov">{escape(e.get("energy_source") or "")}</td></tr>'
        )

    for e in y["entries"]:
        rows.append(row(f"#{e['rank']}", e["label"], e))
    rows.append(row("default", "ext4 defaults [none] (the distribution default)", y["default"]))
    return (
        head
        + "\n".join(rows)
        + "</table><ul>"
        + "".join(f"<li>{escape(x)}</li>" for x in y["summary"])
        + "</ul>"
    )


def render(doc: dict[str, Any], pngs: list[bytes]) -> str:
    p = doc["profile"]
    dev = doc["device"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>fsadvisor report: {escape(p['name'])}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>fsadvisor report: profile {escape(p['name'])}</h1>",
        f"<p>{escape(p['description'])}"
        + (f" <span class=prov>(source: {escape(p['source'])})</span>" if p.get("source") else "")
        + "</p>",
        f"<p>Target device: {escape(str(dev.get('kind')))}, "
        f"{dev.get('size_bytes', 0) / 1e12:.2f} TB, PLP {escape(str(dev.get('plp')))}"
        + (f", {escape(dev['model'])}" if dev.get("model") else "")
        + (f" ({escape(dev['path'])})" if dev.get("path") else "")
        + f". Power scope {escape(doc['scope'])}. Generated {escape(doc['generated_at'])}"
        + (f" from probe matrix <code>{escape(doc['matrix'])}</code>" if doc.get("matrix") else "")
        + ".</p>",
    ]
    for m in doc["missing"]:
        parts.append(f'<p class="missing">Missing: {escape(m)}</p>')
    r = doc.get("recommendation")
    parts.append("<h2>Recommendation</h2>")
    if r:
        parts.append(f'<p class="headline">{escape(r["headline"])}</p>')
        if r.get("answer"):
            parts.append(
                '<div class="answer">'
                + "".join(f"<p>{escape(line.strip())}</p>" for line in r["answer"])
                + "</div>"
            )
        parts.append(
            "<table><tr><th class=l>mkfs</th><td class=l><code>"
            f"{escape(r['mkfs'])}</code></td></tr>"
            f"<tr><th class=l>mount options</th><td class=l><code>{escape(r['mount_options'])}</code></td></tr>"
            f"<tr><th class=l>fstab</th><td class=l><code>{escape(r['fstab'])}</code></td></tr>"
            f"<tr><th class=l>udev (scheduler)</th><td class=l><code>{escape(r['udev'])}</code></td></tr></table>"
        )
        parts.append(
            "<h3>Why</h3><ul>" + "".join(f"<li>{escape(x)}</li>" for x in r["why"]) + "</ul>"
            if r["why"]
            else "<h3>Why</h3><p>No option differs from the "
            "defaults by more than the model's noise.</p>"
        )
        parts.append(
            "<h3>Risks</h3>"
            + (
                "<ul>" + "".join(f'<li class="risk">{escape(x)}</li>' for x in r["risks"]) + "</ul>"
                if r["risks"]
                else "<p>None known for this configuration.</p>"
            )
        )
        parts.append(
            "<h3>Notes</h3><ul>"
            + "".join(f"<li>{escape(x)}</li>" for x in r["notes"])
            + f"<li>{r['considered']} candidates considered; excluded: "
            + escape(
                ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r["excluded"].items() if v)
                or "none"
            )
            + "</li></ul>"
        )
    else:
        parts.append('<p class="missing">No recommendation could be made (see above).</p>')
    if doc.get("yearly"):
        parts.append("<h2>What the choice is worth per year</h2>" + _yearly(doc["yearly"]))
    parts.append(
        '<p class="legend"><span>● filled circle, solid whisker, plain row: '
        "<b>measured</b> (mean, 95% Student-t interval over the runs)</span>"
        "<span>◇ hollow diamond, dashed whisker, tinted italic row: <b>predicted</b> "
        "(model, 95% log-normal interval)</span></p>"
    )
    for i, w in enumerate(doc["workloads"]):
        unit = w["units"]["efficiency"]
        parts.append(f"<h2>Workload {escape(w['name'])}</h2>")
        if i < len(pngs):
            data = base64.b64encode(pngs[i]).decode("ascii")
            parts.append(
                f'<img class="chart" alt="{escape(w["title"])}" src="data:image/png;base64,{data}">'
            )
        parts.append(
            "<table><tr><th class=l>rank</th><th class=l>configuration</th><th class=l>kind</th>"
            f"<th>{escape(unit)}</th><th>IOPS</th><th>MB/s</th><th>p99 ms</th><th>W</th>"
            "<th class=l>provenance</th></tr>" + _rows(w) + "</table>"
        )
    mdl = doc["model"]
    v = mdl.get("validated")
    parts.append(
        "<h2>Provenance</h2><ul>"
        f"<li>Predictions: Bayesian model fitted on {mdl['observations']} observations, "
        f"prior scale {mdl['prior_scale']} (calibration {escape(str(mdl['calibration']))})"
        + (
            f"; validated error median ×{v['median_factor']:.2f}, p90 "
            f"×{v['p90_factor']:.2f} ({escape(v['how'])})"
            if v
            else "; no validated error on record"
        )
        + ".</li><li>Measurements: every measured row names its device, run ids, "
        "matrix and energy source with scope; estimates are labelled "
        "<code>estimate</code>, never shown as a meter reading.</li></ul>"
    )
    parts.append("</body></html>")
    return "\n".join(parts)
