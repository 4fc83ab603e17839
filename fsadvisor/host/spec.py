"""The ``--device`` spec a recommendation is for, and the device kinds fsadvisor knows.

Kept apart from host/device.py (the read-only inspection of real devices and the probe's
safety verdict, a heavier import): a `recommend` for ``nvme:1.92T`` needs only this. A path
is handed to the caller's inspector (host/device.py's inspect, or the service's, which loads
that module only for a path): this module parses, host/device.py inspects and imports it.
"""

from __future__ import annotations

import os
from typing import Callable

from fsadvisor.catalog.geometry import MIN_DEVICE_BYTES
from fsadvisor.domain import Device, is_plp
from fsadvisor.errors import ConfigError, one_line
from fsadvisor.sizes import parse_size

# ram-loop: a loop device whose backing file is in RAM (tmpfs, e.g. /dev/shm); zram: a
# compressed RAM block device. Both are device classes of this machine with
# figures of their own in models/devices.toml; "loop" is a loop device over a disk file.
DEVICE_KINDS = ("nvme", "sata-ssd", "hdd", "loop", "ram-loop", "zram", "unknown")


def control_character_refusal(text: str, what: str) -> str | None:
    """Why ``text`` (a path) is refused, if it holds a control character: NUL makes the OS
    calls raise ValueError, and a newline would split a previewed shell line in two (a
    comment line's rest would become a command). No device or directory name needs one."""
    bad = next((c for c in text if ord(c) < 32 or ord(c) == 127), None)
    if bad is None:
        return None
    return f"{what} {text[:60]!r} contains a control character ({bad!r}); refused"


# A spec above this is a typo, not a drive: the largest SSDs sold hold ~100 TB.
MAX_SPEC_BYTES = 1 << 60


def device_from_spec(
    spec: str, inspect: Callable[[str, str], Device], plp: str = "unknown"
) -> Device:
    """``--device`` for recommend: a path, described by ``inspect(path, plp)``, or
    ``[kind:]size`` such as ``nvme:1.92T``, ``sata-ssd:480G`` or ``2T`` (kind nvme). Sizes
    are binary, like every size in fsadvisor (fsadvisor.sizes)."""
    s = str(spec).strip()
    if not s:
        raise ConfigError("empty --device: give a device path or a size such as nvme:1.92T")
    if why := control_character_refusal(s, "--device"):
        raise ConfigError(why)
    if s.startswith(("/", ".")) or os.sep in s:
        return inspect(s, plp)
    kind, sep, size_text = s.rpartition(":")
    if not sep:
        kind = "nvme"
    if kind not in DEVICE_KINDS:
        raise ConfigError(
            f"unknown device kind {kind!r} in {one_line(s, 60)!r}; "
            f"use one of {', '.join(DEVICE_KINDS)} (e.g. nvme:1.92T)"
        )
    try:
        size_bytes = parse_size(size_text)
    except (ValueError, OverflowError):
        raise ConfigError(
            f"not a device size: {one_line(size_text, 60)!r} (e.g. nvme:1.92T or 2T)"
        ) from None
    if size_bytes <= 0:
        raise ConfigError(f"device size must be positive: {one_line(s, 60)!r}")
    smallest = min(MIN_DEVICE_BYTES.values())
    if size_bytes < smallest:
        raise ConfigError(
            f"device size {one_line(size_text, 30)} is below {smallest >> 20} MiB, "
            f"the smallest device any filesystem here formats (mkfs.ext4 with a journal)"
        )
    if size_bytes > MAX_SPEC_BYTES:
        raise ConfigError(
            f"device size {one_line(size_text, 30)} is above 1 EiB; no SSD is that large"
        )
    if not is_plp(plp):
        raise ConfigError(f"plp must be yes, no or unknown, not {plp!r}")
    return Device(path=None, size_bytes=size_bytes, kind=kind, plp=plp, rotational=kind == "hdd")
