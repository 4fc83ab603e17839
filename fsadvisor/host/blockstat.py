"""Live block-layer rates of one device while a benchmark runs: the probe's "now" reading.

fio reports its IOPS when it ends; to show something while it runs, the probe reads the
device's ``/sys/block/<name>/stat`` (a partition's ``/sys/class/block/<name>/stat``) about
once a second and turns two readings into completed read+write I/Os and bytes per second
over the interval between them (Documentation/block/stat.rst: read/write "I/Os" count
*completed* requests, "sectors" are 512-byte units whatever the device's block size).

What this counts is the block layer's, not fio's: on a filesystem the journal and metadata
I/O is in it, and requests the block layer merged count once. Every reading names its file
so a front end can say so. The parser is fsadvisor.host.device.parse_stat (11-, 15- and
17-field kernels); discards and flushes (fields 12-17) are not read or write I/Os and are
left out of the rates.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from fsadvisor.errors import DeviceRefused
from fsadvisor.host import device as devmod

SECTOR_BYTES = 512  # stat.rst: "sectors" are 512-byte units whatever the block size

# One reading a second: the rate a person can follow, and the interval the energy meters
# sample at (fsadvisor/energy/meter.py Sampler); /sys/block/*/stat costs microseconds.
DEFAULT_INTERVAL_S = 1.0


@dataclass(frozen=True)
class BlockRate:
    """Block-layer completions over one interval of ``interval_s`` seconds."""

    iops: float  # completed read + write requests per second
    bw_bytes_s: float  # read + write bytes per second
    interval_s: float


def block_rate(
    before: Mapping[str, int], after: Mapping[str, int], interval_s: float
) -> BlockRate | None:
    """The rates between two parsed stat readings ``interval_s`` apart; None when no time
    passed or a counter went backwards (the device was re-created between the readings)."""
    if not interval_s > 0:
        return None
    keys = ("read_ios", "write_ios", "read_sectors", "write_sectors")
    d = {k: after[k] - before[k] for k in keys}
    if any(v < 0 for v in d.values()):
        return None
    return BlockRate(
        iops=(d["read_ios"] + d["write_ios"]) / interval_s,
        bw_bytes_s=(d["read_sectors"] + d["write_sectors"]) * SECTOR_BYTES / interval_s,
        interval_s=interval_s,
    )


def stat_file(dev: str) -> tuple[Path, str]:
    """The stat file of ``dev`` (resolved through its device number, as the probe's other
    sysfs reads) and how to name it: ``/sys/block/loop3/stat``, or for a partition
    ``/sys/class/block/nvme0n1p2/stat``."""
    node = devmod.sys_node(dev)
    label = (
        f"/sys/block/{node.name}/stat"
        if node.parent is None
        else f"/sys/class/block/{node.name}/stat"
    )
    return node.dir / "stat", label


class BlockStatSampler:
    """Calls ``on_rate(BlockRate)`` every ``interval_s`` from a daemon thread between
    ``start()`` and ``stop()``, each rate over the time since the previous reading (measured,
    not assumed: a late wake-up does not inflate the rate). Only whole intervals are
    reported: ``stop()`` takes no last partial reading. A reading that fails (the device
    went away) ends the sampling quietly; the run's own figures do not depend on it."""

    def __init__(
        self,
        path: Path | str,
        on_rate: Callable[[BlockRate], None],
        interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        read: Callable[[Path], str] = lambda p: p.read_text(),
    ) -> None:
        if not interval_s > 0:
            raise ValueError(f"sampling interval must be > 0 s, got {interval_s}")
        self.path = Path(path)
        self.on_rate = on_rate
        self.interval_s = interval_s
        self._clock = clock
        self._read = read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rates: list[BlockRate] = []

    def _reading(self) -> tuple[float, dict[str, int]] | None:
        try:
            return self._clock(), devmod.parse_stat(self._read(self.path))
        except (OSError, DeviceRefused):
            return None

    def _loop(self, first: tuple[float, dict[str, int]]) -> None:
        prev = first
        while not self._stop.wait(self.interval_s):
            now = self._reading()
            if now is None:
                return
            rate = block_rate(prev[1], now[1], now[0] - prev[0])
            prev = now
            if rate is None or self._stop.is_set():
                continue
            self.rates.append(rate)
            self.on_rate(rate)

    def start(self) -> None:
        first = self._reading()
        if first is None:
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._loop, args=(first,), daemon=True, name="fsadvisor-blockstat"
        )
        self._thread.start()

    def stop(self, join_timeout_s: float = 5.0) -> None:
        """Stop and wait for the thread: no reading is reported after this returns."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(join_timeout_s)
            self._thread = None
