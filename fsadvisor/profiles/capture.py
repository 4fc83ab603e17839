"""A workload profile from what the kernel counts: two /proc/diskstats samples of a device.

Pure (no I/O): parse_diskstats reads the file's text, measure turns two samples into rates,
to_profile writes a Profile. Field layout: Documentation/admin-guide/iostats.rst (fields
1-11 after major, minor, name; sectors are always 512 bytes there, whatever the device's
logical block size). What the counters cannot tell (random vs sequential, fsync policy,
working set, job count) is written as an assumption for the user to confirm.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fsadvisor.domain import Constraints, Profile, Workload
from fsadvisor.errors import FsAdvisorError

SECTOR_BYTES = 512  # iostats.rst: "sectors" in /proc/diskstats are 512-byte units


@dataclass(frozen=True)
class DiskStats:
    reads: int
    read_sectors: int
    writes: int
    write_sectors: int
    in_flight: int
    io_ticks_ms: int  # field 10: time the device had I/O in flight
    time_in_queue_ms: int  # field 11: weighted (each request's time in flight, summed)


def parse_diskstats(text: str) -> dict[str, DiskStats]:
    """Device name -> its counters. Lines with fewer than the 11 classic fields, or with a
    counter that is not a whole number, are skipped: they are not block device lines."""
    out: dict[str, DiskStats] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 14 or not all(x.isascii() and x.isdigit() for x in parts[3:14]):
            continue
        f = [int(x) for x in parts[3:14]]
        out[parts[2]] = DiskStats(
            reads=f[0],
            read_sectors=f[2],
            writes=f[4],
            write_sectors=f[6],
            in_flight=f[8],
            io_ticks_ms=f[9],
            time_in_queue_ms=f[10],
        )
    return out


@dataclass(frozen=True)
class Measured:
    seconds: float
    reads: int
    writes: int
    read_bytes: int
    write_bytes: int
    busy_ms: int
    queue_ms: int
    assumptions: tuple[str, ...] = field(default=())

    @property
    def ios(self) -> int:
        return self.reads + self.writes

    @property
    def iops(self) -> float:
        return self.ios / self.seconds

    @property
    def read_pct(self) -> int:
        return round(100 * self.reads / self.ios) if self.ios else 0

    @property
    def mean_read_bytes(self) -> float:
        return self.read_bytes / self.reads if self.reads else 0.0

    @property
    def mean_write_bytes(self) -> float:
        return self.write_bytes / self.writes if self.writes else 0.0

    @property
    def mean_request_bytes(self) -> float:
        return (self.read_bytes + self.write_bytes) / self.ios if self.ios else 0.0

    @property
    def effective_queue_depth(self) -> float:
        """Average requests in flight over the sample (Little's law on the weighted field:
        sum of each request's time in flight / elapsed time; iostat's aqu-sz)."""
        return self.queue_ms / (self.seconds * 1000.0)

    @property
    def utilisation(self) -> float:
        return min(self.busy_ms / (self.seconds * 1000.0), 1.0)


def measure(before: DiskStats, after: DiskStats, seconds: float) -> Measured:
    """The device's activity between two samples ``seconds`` apart. Counters that went
    backwards (a device re-created in between) are an FsAdvisorError."""
    if not seconds > 0:
        raise FsAdvisorError(f"the sampling interval must be positive, not {seconds!r}")
    d = {
        k: getattr(after, k) - getattr(before, k)
        for k in (
            "reads",
            "read_sectors",
            "writes",
            "write_sectors",
            "io_ticks_ms",
            "time_in_queue_ms",
        )
    }
    if any(v < 0 for v in d.values()):
        raise FsAdvisorError(
            "the device's counters went backwards between the samples "
            "(was it re-created?): capture again"
        )
    return Measured(
        seconds=seconds,
        reads=d["reads"],
        writes=d["writes"],
        read_bytes=d["read_sectors"] * SECTOR_BYTES,
        write_bytes=d["write_sectors"] * SECTOR_BYTES,
        busy_ms=d["io_ticks_ms"],
        queue_ms=d["time_in_queue_ms"],
    )


ASSUMPTIONS = (
    "random access (the counters do not tell random from sequential): set rw to read, "
    "write or rw if the application streams",
    "no fsync (the counters do not show flushes reliably): set fsync_mode and fsync_every "
    "if the application syncs",
    "one job; the queue depth is the measured average in flight, rounded up",
    "working set 1g: the counters do not show how much of the device is touched",
    "direct I/O is assumed off (what the device saw may be page-cache writeback)",
)


def _round_bs(n: float) -> int:
    """A mean request size as fio's bs: a multiple of 512 B (a sector), at least 512."""
    return max(512, int(round(n / 512.0)) * 512)


def to_profile(m: Measured, name: str, device: str) -> tuple[Profile, tuple[str, ...]]:
    """The profile the sample suggests and the assumptions behind it."""
    if m.ios == 0:
        raise FsAdvisorError(
            f"{device} did no I/O in {m.seconds:g} s: capture while the application runs"
        )
    pct = m.read_pct
    rw = "randread" if pct == 100 else "randwrite" if pct == 0 else "randrw"
    qd = max(1, int(-(-m.effective_queue_depth // 1)))
    w = Workload(
        rw=rw,
        bs_bytes=_round_bs(m.mean_request_bytes),
        iodepth=qd,
        numjobs=1,
        rwmixread=pct,
        direct=False,
    )
    desc = (
        f"captured on {device} over {m.seconds:.1f} s: {m.iops:,.0f} IOPS, {pct}% reads, "
        f"mean read {m.mean_read_bytes / 1024:,.1f} KiB, mean write "
        f"{m.mean_write_bytes / 1024:,.1f} KiB, {m.effective_queue_depth:.2f} in flight"
    )
    return (
        Profile(
            name=name,
            description=desc,
            workload=w,
            constraints=Constraints(),
            source=f"fsadvisor profiles capture ({device}, /proc/diskstats)",
        ),
        ASSUMPTIONS,
    )
