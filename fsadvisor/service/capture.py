"""`fsadvisor profiles capture`: sample /proc/diskstats twice and write the profile the
device's activity suggests (profiles/capture.py does the arithmetic; this module reads the
kernel and writes the file). Read-only: nothing is written to the device."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

from fsadvisor.errors import FsAdvisorError
from fsadvisor.profiles.capture import measure, parse_diskstats, to_profile
from fsadvisor.profiles.write import profile_to_toml

DISKSTATS = "/proc/diskstats"
MAX_SECONDS = 3600.0  # as the other sampling options (fsadvisor.limits "seconds")


def _name_of(device: str) -> str:
    """The diskstats name of a device path (/dev/loop3 -> loop3; symlinks resolved)."""
    return os.path.basename(os.path.realpath(device)) if device.startswith("/") else device


def _sample(path: str, name: str):
    stats = parse_diskstats(Path(path).read_text())
    if name not in stats:
        raise FsAdvisorError(
            f"{name} is not in {path}: give a block device such as /dev/nvme0n1 or sda"
        )
    return stats[name]


def capture(
    device: str,
    seconds: float,
    out: str | None = None,
    name: str | None = None,
    diskstats: str = DISKSTATS,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Sample ``device`` for ``seconds``; returns the measured figures, the profile, its TOML
    (with the assumptions as comments) and, with ``out``, writes that TOML there."""
    if not 0.1 <= seconds <= MAX_SECONDS:
        raise FsAdvisorError(f"--seconds must be between 0.1 and {MAX_SECONDS:g}, not {seconds:g}")
    dev_name = _name_of(device)
    before = _sample(diskstats, dev_name)
    t0 = time.monotonic()
    sleep(seconds)
    after = _sample(diskstats, dev_name)
    elapsed = max(time.monotonic() - t0, 1e-3)
    m = measure(before, after, elapsed)
    prof, assumptions = to_profile(m, name or f"captured-{dev_name}", device)
    toml = (
        "# captured by fsadvisor profiles capture; ASSUMPTIONS to confirm:\n"
        + "".join(f"#  - {a}\n" for a in assumptions)
        + profile_to_toml(prof)
    )
    if out is not None:
        try:
            Path(out).write_text(toml, encoding="utf-8")
        except OSError as e:
            raise FsAdvisorError(f"{out}: {e.strerror or e}") from None
    return {
        "device": device,
        "seconds": elapsed,
        "iops": m.iops,
        "read_pct": m.read_pct,
        "mean_read_bytes": m.mean_read_bytes,
        "mean_write_bytes": m.mean_write_bytes,
        "effective_queue_depth": m.effective_queue_depth,
        "utilisation": m.utilisation,
        "profile": prof.to_dict(),
        "assumptions": list(assumptions),
        "toml": toml,
        "written": out,
    }
