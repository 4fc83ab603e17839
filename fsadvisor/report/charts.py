"""The report's charts: per workload, one row per configuration and four panels
(efficiency, throughput, p99 latency, power), each point with its 95% interval.

Measured points are filled circles with solid whiskers; predictions are hollow diamonds
with dashed whiskers, a little below the measured point of the same configuration, so the
two can never be mistaken for one another (also in grey scale: shape and fill differ, not
only colour). Input is the plain workload dict of fsadvisor.service.report; output PNG bytes.
"""

from __future__ import annotations

import io
from typing import Any

# (metric key in a row's "metrics", panel title); the first is the workload's efficiency.
PANELS = (
    ("efficiency", None),
    ("throughput", None),
    ("p99_ms", "p99 latency (ms)"),
    ("watts", "power (W)"),
)
MEASURED_STYLE = {
    "fmt": "o",
    "color": "#1f5fa8",
    "ecolor": "#1f5fa8",
    "capsize": 3,
    "markersize": 6,
    "label": "measured (mean, 95% CI over runs)",
}
PREDICTED_STYLE = {
    "fmt": "D",
    "color": "#c0501c",
    "ecolor": "#c0501c",
    "capsize": 3,
    "markersize": 5,
    "markerfacecolor": "white",
    "label": "predicted (model, 95% interval)",
}
DPI = 100


def _label(text: str, n: int = 38) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def workload_png(workload: dict[str, Any]) -> bytes:
    """PNG of one workload's chart. ``workload`` has ``title``, ``units`` {metric: unit
    label} and ``configs``: [{label, measured: {metric: stat}|None, predicted: ...|None}],
    a stat being {mean, low, high}."""
    # matplotlib (heavy) only when a PNG is drawn, and its backend chosen before pyplot loads
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    # pyplot and its tickers after the backend is chosen (above)
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter, NullFormatter

    configs = workload["configs"]
    n = max(len(configs), 1)
    fig, axes = plt.subplots(
        1, len(PANELS), figsize=(13, max(2.8, 1.4 + 0.45 * n)), dpi=DPI, sharey=True, squeeze=False
    )
    axes = axes[0]
    ys = list(range(n))[::-1]  # first configuration on top
    for ax, (metric, title) in zip(axes, PANELS):
        for kind, style, offset in (
            ("measured", MEASURED_STYLE, 0.12),
            ("predicted", PREDICTED_STYLE, -0.12),
        ):
            xs, lo, hi, yy = [], [], [], []
            for y, c in zip(ys, configs):
                stat = (c.get(kind) or {}).get(metric)
                if not stat or stat.get("mean") is None:
                    continue
                m = stat["mean"]
                low = stat.get("low") if stat.get("low") is not None else m
                high = stat.get("high") if stat.get("high") is not None else m
                xs.append(m)
                lo.append(max(m - low, 0.0))
                hi.append(max(high - m, 0.0))
                yy.append(y + offset)
            if xs:
                eb = ax.errorbar(xs, yy, xerr=[lo, hi], linestyle="none", **style)
                if kind == "predicted":
                    eb[-1][0].set_linestyle("--")
        ax.set_title(title or workload["units"].get(metric, metric), fontsize=10)
        # Log axis: the intervals are multiplicative (log-normal predictions, ratios of
        # rates), and a measured ±5% next to a predicted ×3 both stay readable.
        if ax.has_data():
            ax.set_xscale("log")
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(axis="x", which="both", alpha=0.3)
        ax.tick_params(labelsize=8)
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels(
        [_label((f"#{c['rank']} " if c.get("rank") else "") + c["label"]) for c in configs],
        fontsize=8,
    )
    axes[0].set_ylim(-0.7, n - 0.3)
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="upper right", fontsize=8, ncol=2, frameon=False)
    fig.suptitle(_label(workload["title"], 90), x=0.01, ha="left", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()
