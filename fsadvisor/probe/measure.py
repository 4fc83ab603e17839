"""What a probe measures around the benchmark itself: host CPU from /proc/stat, the device's
block-layer counters, write amplification and the "direct I/O not honoured" check.

fio reports what the application did; the block layer says what reached the device. The
difference is the filesystem's doing: journal and metadata writes (write amplification,
seed 002's right-hand column) and, on a direct=1 read job, the page cache answering reads
it should not see (ext4 data=journal, verified: domain notes §5).
"""

from __future__ import annotations

import os
import platform
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping


SECTOR_BYTES = 512  # /sys/block/X/stat counts 512-byte sectors whatever the block size
# A direct=1 read job whose device saw less than this share of the bytes fio read was served
# from the page cache: data=journal gave 283k "IOPS" vs 59k on the device (domain notes §5),
# i.e. well under half; honest runs read slightly *more* than fio (metadata).
DIRECT_IO_MIN_READ_SHARE = 0.5


@dataclass(frozen=True)
class CpuTimes:
    """Aggregate jiffies of the ``cpu`` line of /proc/stat, as proc(5) orders them: user nice
    system idle iowait irq softirq steal guest guest_nice. Columns an older kernel does not
    print (iowait 2.5.41, irq/softirq 2.6.0, steal 2.6.11) count as 0."""

    total: int
    idle: int  # idle + iowait: time no CPU work was done
    usr: int = 0  # user + nice (guest time is already inside user, proc(5))
    sys: int = 0  # system + irq + softirq: the kernel's share, I/O completions included
    iowait: int = 0

    @staticmethod
    def parse(text: str) -> "CpuTimes":
        for line in text.splitlines():
            parts = line.split()
            if parts and parts[0] == "cpu":
                vals = [int(v) for v in parts[1:]]
                if len(vals) < 4:
                    raise ValueError(f"short cpu line in /proc/stat: {line[:80]!r}")
                col = (vals + [0] * 8)[:8]
                user, nice, system, idle, iowait, irq, softirq, _steal = col
                # guest and guest_nice are already counted in user/nice, so only the first
                # eight are summed.
                return CpuTimes(
                    total=sum(col),
                    idle=idle + iowait,
                    usr=user + nice,
                    sys=system + irq + softirq,
                    iowait=iowait,
                )
        raise ValueError("no aggregate cpu line in /proc/stat")

    @staticmethod
    def now(proc_stat: str = "/proc/stat") -> "CpuTimes":
        return CpuTimes.parse(Path(proc_stat).read_text())


def cpu_busy_pct(before: CpuTimes, after: CpuTimes) -> float | None:
    d_total = after.total - before.total
    if d_total <= 0:
        return None
    d_idle = after.idle - before.idle
    return max(0.0, min(100.0, 100.0 * (d_total - d_idle) / d_total))


def host_cpu_metrics(before: CpuTimes, after: CpuTimes) -> dict[str, float]:
    """System-wide CPU over the measured window, in % of all CPUs' time: busy, and its user
    and kernel parts, plus iowait (idle with I/O outstanding). busy = usr + sys + steal.
    Empty when no time passed (or the counters went backwards)."""
    d_total = after.total - before.total
    if d_total <= 0:
        return {}
    out: dict[str, float] = {}
    busy = cpu_busy_pct(before, after)
    if busy is not None:
        out["host_cpu_busy_pct"] = busy
    for key, a, b in (
        ("host_cpu_usr_pct", before.usr, after.usr),
        ("host_cpu_sys_pct", before.sys, after.sys),
        ("host_cpu_iowait_pct", before.iowait, after.iowait),
    ):
        # A counter that went backwards is no measurement: proc(5) warns that iowait "may
        # decrease in certain conditions".
        if b >= a:
            out[key] = min(100.0, 100.0 * (b - a) / d_total)
    return out


def block_delta(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """Counter differences; a counter that went backwards (device re-created) is omitted."""
    out = {}
    for k, v in after.items():
        if k in before and k != "in_flight" and v >= before[k]:
            out[k] = v - before[k]
    return out


def device_metrics(delta: Mapping[str, int], app: Mapping[str, float]) -> dict[str, float]:
    """Device bytes and IOs, and host-level write amplification = device write bytes /
    application write bytes (domain notes §5); absent when the application wrote nothing."""
    out: dict[str, float] = {}
    if "read_sectors" in delta:
        out["dev_read_bytes"] = float(delta["read_sectors"] * SECTOR_BYTES)
        out["dev_read_ios"] = float(delta.get("read_ios", 0))
    if "write_sectors" in delta:
        out["dev_write_bytes"] = float(delta["write_sectors"] * SECTOR_BYTES)
        out["dev_write_ios"] = float(delta.get("write_ios", 0))
    if "flush_ios" in delta:
        out["dev_flush_ios"] = float(delta["flush_ios"])
    app_w = app.get("app_write_bytes")
    if app_w and "dev_write_bytes" in out:
        out["write_amplification"] = out["dev_write_bytes"] / float(app_w)
    return out


def direct_io_not_honoured(
    direct: bool, app_read_bytes: float | None, dev_read_bytes: float | None
) -> bool:
    """True when a direct=1 job's reads did not reach the device (see module docstring)."""
    if not direct or not app_read_bytes or dev_read_bytes is None:
        return False
    return dev_read_bytes < DIRECT_IO_MIN_READ_SHARE * app_read_bytes


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    try:
        for line in Path(cpuinfo).read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware"):
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_info(fio_version: str | None = None) -> dict[str, object]:
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count() or 0,
        "fio_version": fio_version or "",
        "python": platform.python_version(),
    }
