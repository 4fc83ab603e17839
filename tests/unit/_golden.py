"""Compare an output with its recorded golden by structure, order and stated tolerances, never
by the last digits of a float.

What must match exactly: the keys and their order, list lengths and the order of the items (a
ranking's order is the answer), strings once their numbers are taken out, booleans, integers.

What may move, and by how much:
- a float the model computes: relative ``FLOAT_REL`` = 1e-9. The same arithmetic on another
  BLAS kernel or numpy release sums in another order (rounding in the 16th digit, amplified by
  a few matrix products); a change to the model moves a figure by far more than that;
- a Monte Carlo figure (P(best) and its kin, keys in ``MC_KEYS`` or numbers in a sentence that
  quotes a probability): ``mc_tolerance(p)`` = 4 standard errors of the difference of two
  estimates of p from ``DRAWS`` draws each, plus the rounding of the printed figure. The draws
  are fixed by a seed, so on one machine the figure repeats exactly; across machines the
  factorisation's rounding may move a draw across a tie, and a new sampler is another sample;
- a number printed in a sentence with decimals: one unit of its last printed digit (a figure
  that rounds at a half may print either way), or its Monte Carlo tolerance where it is one;
  a whole number (a count, a figure rounded to units) exactly.
"""

from __future__ import annotations

import math
import re

from fsadvisor.predict.confidence import DRAWS

FLOAT_REL = 1e-9
MC_KEYS = frozenset({"p_best", "p_best_first"})
# A sentence whose figures in [0, 1] are Monte Carlo probabilities.
MC_WORDS = ("probability", "P(best)")
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def mc_tolerance(p: float, printed_decimals: int = 4) -> float:
    p = min(max(p, 0.0), 1.0)
    se = math.sqrt(max(2 * p * (1 - p), 2 * 0.5 / DRAWS) / DRAWS)
    return 4 * se + 0.5 * 10.0**-printed_decimals


def _numbers(text: str) -> tuple[str, list[str]]:
    return NUMBER.sub("#", text), NUMBER.findall(text)


def _printed_close(a: str, b: str, mc: bool) -> bool:
    if "." not in a or "." not in b:  # a count, or a figure rounded to a whole number
        return a == b
    x, y = float(a.replace(",", "")), float(b.replace(",", ""))
    decimals = max(len(t.split(".")[1]) for t in (a, b))
    unit = 10.0**-decimals
    if mc and 0 <= x <= 1 and 0 <= y <= 1:
        return abs(x - y) <= mc_tolerance(y, decimals) + unit
    return abs(x - y) <= unit * 1.0000001 + FLOAT_REL * abs(y)


def same_text(a: str, b: str, where: str = "$") -> None:
    """``a`` reads as ``b``: the same words, numbers within their printed precision."""
    ta, na = _numbers(a)
    tb, nb = _numbers(b)
    assert ta == tb, f"{where}: {a!r} != {b!r}"
    mc = any(w in a for w in MC_WORDS)
    for x, y in zip(na, nb):
        assert _printed_close(x, y, mc), f"{where}: {x} vs golden {y} in {a!r}"


def same(a, b, where: str = "$", key: str = "") -> None:
    """Assert ``a`` equals the golden ``b`` under the module's tolerances."""
    if isinstance(b, bool) or isinstance(a, bool):
        assert a is b, f"{where}: {a!r} != {b!r}"
    elif isinstance(b, float) or isinstance(a, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)), where
        if key in MC_KEYS:
            assert abs(a - b) <= mc_tolerance(b), f"{where}: {a} != {b} (sampling error)"
        else:
            assert math.isclose(a, b, rel_tol=FLOAT_REL, abs_tol=0.0) or a == b, (
                f"{where}: {a} != {b}"
            )
    elif isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b), f"{where}: keys differ"
        for k in b:
            same(a[k], b[k], f"{where}.{k}", k)
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]", key)
    elif isinstance(b, str):
        assert isinstance(a, str), f"{where}: {a!r} != {b!r}"
        same_text(a, b, where)
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def same_lines(a: str, b: str, where: str = "$") -> None:
    """A printed report against its golden, line by line (same lines, same order)."""
    la, lb = a.splitlines(), b.splitlines()
    assert len(la) == len(lb), f"{where}: {len(la)} lines != golden {len(lb)}"
    for i, (x, y) in enumerate(zip(la, lb), 1):
        same_text(x, y, f"{where}:{i}")
