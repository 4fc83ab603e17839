"""One comparison for "the same numbers" in the fast-path tests: two JSON documents equal key
for key and item for item, floats to 1e-12 relative (a faster code path may round the last
bits differently, never more)."""

from __future__ import annotations

import math


def assert_close(a, b, where: str = "$") -> None:
    if isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-12) or a == b, (where, a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            assert_close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)
