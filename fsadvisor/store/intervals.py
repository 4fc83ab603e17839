"""Mean, standard deviation and a 95% Student-t confidence interval for a handful of repetitions.

A probe cell is repeated a few times (3-5), so the interval must use Student's t with n-1
degrees of freedom, not the normal 1.96 (t(0.975, 2) = 4.303 is more than twice as wide).
scipy is not a dependency, so the t quantile is computed here: the exact inverse of the t
CDF through the regularised incomplete beta function (Numerical Recipes 6.4 continued
fraction) and bisection, and the Cornish-Fisher expansion for large df where the continued
fraction converges slowly and the expansion is exact to ~1e-12.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Iterable

_EXPANSION_DF = 1000.0


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 20000):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            step = d * c
            h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0, computed directly (no 1 - cdf cancellation)."""
    return 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))


def t_cdf(t: float, df: float) -> float:
    tail = t_upper_tail(abs(t), df)
    return 1.0 - tail if t >= 0 else tail


def _normal_quantile(p: float) -> float:
    # statistics (with fractions and decimal) is imported when a quantile is first
    # needed: a `recommend` reading a cached fit never needs one.
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


def _t_quantile_exact(p: float, df: float) -> float:
    target = 1.0 - p  # upper tail to hit, p > 0.5
    lo, hi = 0.0, max(1.0, _normal_quantile(p))
    while t_upper_tail(hi, df) > target:
        lo, hi = hi, hi * 2.0
        if hi > 1e300:
            return math.inf
    for _ in range(300):
        mid = 0.5 * (lo + hi)
        if t_upper_tail(mid, df) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return 0.5 * (lo + hi)


def _t_quantile_expansion(p: float, df: float) -> float:
    # Cornish-Fisher expansion of t in powers of 1/df (Abramowitz & Stegun 26.7.5).
    z = _normal_quantile(p)
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


@lru_cache(maxsize=256)
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (t(0.975, 4) = 2.776)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"quantile probability must be in (0, 1), got {p}")
    if not df > 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if df >= _EXPANSION_DF:
        return _t_quantile_expansion(p, df)
    return _t_quantile_exact(p, df)


def describe(values: Iterable[float | None]) -> dict[str, float | int | None]:
    """n, mean, sd (n-1) and the 95% t interval of the mean; None where undefined.

    Values are scaled by their largest magnitude first so that sums of squares of huge
    figures cannot overflow; a result that is still not finite is reported as None.
    """
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    n = len(xs)
    out: dict[str, float | int | None] = {
        "n": n,
        "mean": None,
        "sd": None,
        "ci95_low": None,
        "ci95_high": None,
    }
    if n == 0:
        return out
    scale = max(abs(x) for x in xs) or 1.0
    ys = [x / scale for x in xs]
    mean_y = math.fsum(ys) / n
    out["mean"] = _finite(mean_y * scale)
    if n < 2:
        return out
    sd_y = math.sqrt(math.fsum((y - mean_y) ** 2 for y in ys) / (n - 1))
    half_y = t_quantile(0.975, n - 1) * sd_y / math.sqrt(n)
    out["sd"] = _finite(sd_y * scale)
    out["ci95_low"] = _finite((mean_y - half_y) * scale)
    out["ci95_high"] = _finite((mean_y + half_y) * scale)
    return out


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
