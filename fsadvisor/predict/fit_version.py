"""The version of the fit that turns raw-device runs into a device's parameters.

A calibration records the version that made it, so one made by other code is recognised (and
refitted from its stored runs, service/device_figures.py) with nothing to bump by hand. It
hashes the fit's code (device_fit.py, read as bytes, not imported) and the keys it declares:
checking a stored calibration must not load the fit on a prediction's path.
"""

from __future__ import annotations

import functools
import zlib
from pathlib import Path

from fsadvisor.catalog.device_params import CPU_KEYS, DEVICE_KEYS, HOST_KEYS, SHAPE_KEYS


@functools.lru_cache(maxsize=1)
def fit_version() -> str:
    """A hash of device_fit.py's bytes and of the parameter keys it fits."""
    code = (Path(__file__).parent / "device_fit.py").read_bytes()
    keys = repr((DEVICE_KEYS, HOST_KEYS, CPU_KEYS, SHAPE_KEYS)).encode()
    return f"{zlib.crc32(keys, zlib.crc32(code)):08x}"
