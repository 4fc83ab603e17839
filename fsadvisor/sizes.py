"""Human sizes ("4k", "128K", "1.5G", "2TiB") to bytes and back; fio and mkfs use binary units."""

from __future__ import annotations

import re

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """Parse a size; binary multiples like fio (4k = 4096). Raises ValueError on junk."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"negative size: {text}")
        return text
    m = _RE.match(str(text))
    if not m:
        raise ValueError(f"not a size: {text!r}")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    return int(value)


def format_size(n: int) -> str:
    """Shortest exact binary form (4096 -> "4k"), else bytes."""
    for suffix, mult in (("t", 1 << 40), ("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult}{suffix}"
    return str(n)


def format_binary(n: int) -> str:
    """A size in the units it was most likely given in: a whole number of MiB came from the
    binary suffixes the CLI parses (``1T`` is 1 TiB) and reads ``1.00 TiB``; anything else
    (a datasheet's decimal 3.84 TB, a drive's real capacity) reads in decimal ``3.84 TB``."""
    if n % (1 << 20):
        for suffix, mult in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6)):
            if n >= mult:
                return f"{n / mult:.2f} {suffix}"
        return f"{n} B"
    for suffix, mult in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult:
            return f"{n / mult:.2f} {suffix}"
    return f"{n} B"
