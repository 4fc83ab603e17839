"""How Python values become JSON text columns and back.

Stored JSON is canonical (sorted keys) so equal configurations, workloads and hosts hash to
equal keys, and strict (no NaN/Infinity tokens) so every export parses with any JSON reader:
a non-finite float is stored as null, which is what it means for a measurement (no value).
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from typing import Any


def plain(obj: Any) -> Any:
    """``obj`` as JSON-native values: dataclasses/``to_dict`` objects become dicts, tuples and
    sets lists, numpy scalars Python numbers, non-finite floats None."""
    if obj is None or isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        x = float(obj)
        return x if math.isfinite(x) else None
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((plain(v) for v in obj), key=repr)
    if hasattr(obj, "to_dict"):
        return plain(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return plain(dataclasses.asdict(obj))
    if hasattr(obj, "__fspath__"):
        return str(obj)
    raise TypeError(f"cannot store a value of type {type(obj).__name__}")


def dumps(obj: Any) -> str:
    return json.dumps(plain(obj), sort_keys=True, allow_nan=False, ensure_ascii=False)


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def digest(obj: Any) -> str:
    import hashlib  # lazily: OpenSSL's import would be part of every `recommend`

    return hashlib.sha256(dumps(obj).encode("utf-8", "surrogatepass")).hexdigest()


def real_or_none(value: Any) -> float | None:
    """A finite float for a REAL column, else None (strings, None, NaN, overflowing ints)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        x = float(value)
    except (OverflowError, ValueError):
        return None
    return x if math.isfinite(x) else None
