"""What-if simulation: the fitted model's device, replayed request by request with simpy.

Picture a drive as a small post office. It has a fixed number of counters (the device's
internal channels, ``parallelism`` in ``models/devices.toml``) and one loading dock (the
controller and its PCIe link). Customers are fio jobs: each of ``numjobs`` jobs keeps
``iodepth`` letters at the counters at all times. A read or a write takes a counter for its
media time, drawn from a log-normal distribution, then passes the dock for its transfer
(``max(1/iops_cap, bs/bandwidth)``: the roofline's IOPS and bandwidth ceilings as a queue).
A metadata operation is two small writes, the journal record and the in-place update, as the
model's roofline counts it. An ``fsync`` is a write followed by a flush, and the drive has
one flush desk beside its counters: a flush takes it for ``flush_latency_us_plp`` with
power-loss protection, ``flush_latency_us`` without (devices.toml), one flush at a time, and
an fsync that arrives while a flush waits for the desk rides along with it, as Linux's
block/blk-flush.c keeps pending flushes and issues them as one. A flush makes the writes
completed before it durable (the kernel's Documentation/block/writeback_cache_control.rst:
REQ_PREFLUSH "guarantees that previously completed write requests are on non-volatile
storage"); it neither drains the I/Os in flight nor holds back those behind, so the counters
go on serving while it runs; tests/device/test_flush_does_not_block.py shows this kernel
doing so. Seed 002 tells the older story ("the barrier serialises the device's internal
pipeline, draining all in-flight writes before the fsync completes"), the block layer's
before Linux 2.6.37 replaced barriers with flushes; modelled that way, a flush holding every
counter made more fsyncing jobs read as a less busy device, and a calibration at the
workload's own concurrency ran far too fast at one job. The counters serve
strictly first come, first served, like ``simpy.Resource``; each is granted one at a time.
Not modelled: an ATA drive (sata-ssd, hdd) cannot queue its FLUSH CACHE beside NCQ
commands, so libata drains the queue before one and holds it during it -- seed 002's
barrier, there. Priced as a drain, merged fsyncs made those drives read idler as jobs rose,
so they keep the desk too, and their simulated fsync latency is a lower bound.

A device with a measured knee (``knee_power``, fitted to a calibration's read sweep QD1 to
the ceiling) is not a row of counters: the sweep measured its rate at each depth, not its
insides, and predict's roofline follows that rate (mechanisms.queue_rate). So the simulated
device is one station whose speed depends on how many I/Os are in it -- the flow-equivalent
server of queueing-network theory: an I/O that starts with n in flight takes n / queue_rate(n)
(:func:`knee_media_us`), and n in flight at that time each is queue_rate(n) by Little's law,
at every depth. A large I/O's station time joins the bandwidth as predict's roofline does
(the soft maximum, power 4, of that time and n transfers at the bandwidth), so its rate is
the roofline's soft minimum of queue_rate(n) and bandwidth / request size, at every depth
too. A network of fixed stages cannot give that curve: a delay followed by one
server of fixed times runs at min(n / (delay + service), 1 / service), the sharp knee,
whatever its two times; a gradual knee (power 1, a loop device on a file) is every extra I/O
in flight waiting one ceiling-time, a time that depends on the depth. The station already
holds the wait for the ceiling (the sweep measured it, link included), so its I/Os pass no
queued dock after it: a dock of random transfer times would add its own wait on top and
bend the curve below the sweep. The ceiling for the request size is the tighter of the IOPS
ceiling and the bandwidth, and the dock's utilisation is the share of that ceiling in use.
Such a device has no channel limit of its own (its flushes still take the flush desk, one at
a time). Without a measured knee the counters stay: ``parallelism`` of them, the
sharp knee predict assumes.

Calibration: one story with ``predict``. The model, not this file, knows how a filesystem
configuration changes the device's speed. The simulator takes the device's parameters from
where ``predict`` takes them (the store's calibration of the device, a library drive's
datasheet, else its kind's prior: the service passes them) and the model's figure through
the same hard ceilings (predict/ceilings.py). A pilot run replays the profile's own workload
(its numjobs x iodepth, its mix and fsync rate, the device's PLP) with the bare device's
times, and every media and flush time is then multiplied by the one factor that makes the
simulated throughput at that point equal to the model's predicted IOPS. When that factor is
1 or more the controller stage scales too, so the whole event sequence scales and the match
is exact; below 1 the controller stage stays at the device's ceiling (a filesystem never
makes the drive faster than its hardware) and a secant finds the factor to 1%. Where the
model sits at the ceiling itself a finite queue cannot reach it, and a warning says how
close it gets. The calibration point's run is kept: a variant that is that point reuses it.
What-if variants (more jobs, deeper queues, another fsync interval, PLP, block size, mix,
bursts) then run with the same factor: the simulator extrapolates from one calibrated point,
and each result carries the model's own closed-form figure beside it.

Latency. An operation's latency runs from its start to its completion, including the fsync
it waits for, so the simulated mean is the model's Little's-law mean (concurrency / IOPS).
Media, transfer and flush times are log-normal with mean 1 x their mean; the log-sd is the one
whose p99/mean is the model's own p99/mean at the calibration point (its tail terms), or seed
002's bare PM9A3 figure when the model's ratio has no log-normal (``DEFAULT_SIGMA``: 4K random
writes at QD32, 408,200 IOPS, so 78 us mean by Little's law, and 290 us p99: p99/mean = 3.7).
The p99 is printed with its 95% batch-means interval.

Power, an estimate: ``P = idle + (active - idle) x utilisation``, utilisation being that of
the share of time the device is busy: all of it while a flush runs (the drive writing its
cache out), otherwise its busier data stage (the share of its channels held or of time its
controller/link transfers); see :func:`_utilisation`. The line passes through the
model's watts at the calibration point and its slope is the drive's own active-idle range (a
library drive's datasheet, else energy/estimate.py's assumed 3-8 W NVMe defaults; 0 in the
cpu+dram scope, which does not contain the drive). Every energy figure is "simulated from
model", never a measurement.

Runs are capped by the number of simulated requests, not by wall time, and are deterministic
for a given seed.
"""

from __future__ import annotations

import math
import time
from heapq import heappop, heappush
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Mapping

import numpy as np
import simpy
from simpy.events import NORMAL, PENDING, Timeout
from simpy.resources.base import BaseResource, Put

from fsadvisor.domain import (
    ASSUMED_DRIVE_ACTIVE_W,
    ASSUMED_DRIVE_IDLE_W,
    Device,
    FsConfig,
    Workload,
)
from fsadvisor.errors import FsAdvisorError
from fsadvisor.predict import ceilings
from fsadvisor.catalog.device_params import DeviceParams, for_submitters
from fsadvisor.predict.mechanisms import BANDWIDTH_JOIN_POWER, knee_delay_us

# Seed 002, raw Samsung PM9A3 row "4K-randwrite-noFsync": 408,200 IOPS at iodepth 32, p99
# 290 us. Little's law gives the mean latency.
SEED002_RAW_IOPS = 408_200.0
SEED002_RAW_IODEPTH = 32
SEED002_RAW_P99_US = 290.0
SEED002_RAW_MEAN_US = SEED002_RAW_IODEPTH / SEED002_RAW_IOPS * 1e6  # 78.4 us
Z99 = 2.3263478740408408  # standard normal 99th percentile


def sigma_for_p99_over_mean(ratio: float) -> float:
    """Log-sd of a log-normal whose p99 is ``ratio`` times its mean:
    exp(z99*s - s^2/2) = ratio, the smaller root."""
    d = Z99 * Z99 - 2.0 * math.log(ratio)
    if ratio <= 1.0 or d < 0:
        raise ValueError(f"no log-normal has p99/mean = {ratio}")
    return Z99 - math.sqrt(d)


DEFAULT_SIGMA = sigma_for_p99_over_mean(SEED002_RAW_P99_US / SEED002_RAW_MEAN_US)  # 0.654
# 10,000 requests per variant: the p99 rests on its 100 slowest, and its 95% batch-means
# interval is printed beside it (fewer simulated requests, the precision stated).
DEFAULT_REQUESTS = 10_000
META_WRITE_BYTES = 4096  # a journal record or an inode block
LABEL = "simulated from the fitted model — not a measurement"

# What-if knobs and their bounds (a run costs about 10 us of wall time per simulated event).
OVERRIDE_KEYS = ("numjobs", "iodepth", "fsync_every", "plp", "rwmixread", "bs", "burst", "pause_ms")
MAX_CONCURRENCY = 4096
MIN_REQUESTS, MAX_REQUESTS = 100, 5_000_000
STEADY_ROUNDS = 10  # requests >= 10 x concurrency, so the start-up transient stays small
# A calibration factor outside this range means devices.toml and the fitted model disagree by
# more than a filesystem's usual share of the device (seed 002: ext4 defaults keep 9.4% of
# raw random-write IOPS, tuned ext4 45%).
SCALE_PLAUSIBLE = (0.25, 12.0)
# Percentile intervals by batch means: 10 batches, Student's t 97.5% quantiles by degrees
# of freedom (standard tables).
CI_BATCHES = 10
# Calibration below 1 x the bare device's times: stop within 1% of the model's IOPS, below
# a 10,000-request run's own seed-to-seed spread (measured, 12 seeds: sd 0.8% for 4K random
# reads at 32 outstanding, 3.1% for oltp's fsync-per-write mix),
# after at most 6 runs, never below 1/1000 of the bare times.
SCALE_TOLERANCE = 0.01
SCALE_ITERATIONS = 6
SCALE_MIN = 1e-3
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


# --------------------------------------------------------------------------- the device


class Claim(Put):
    """A request for ``width`` channels (one per I/O; a flush takes the one flush desk)."""

    def __init__(self, resource: "Channels", width: int):
        self.width = width
        self.granted_at = 0.0
        # simpy's Put.__init__ less its callback to the resource's get side: channels are
        # never taken back with a get (Channels.free), so that callback only ever walked
        # an empty get queue, once per claim.
        env = resource._env
        self.env = env  # Event.__init__, inline (one call fewer per claim)
        self.callbacks = []
        self._value = PENDING
        self.resource = resource
        self.proc = env.active_process
        resource.put_queue.append(self)
        resource._grant()


class _Delay(Timeout):
    """A simpy Timeout as run() schedules it: value None and succeeded from the start, as
    class attributes instead of two stores per event (a run makes ~20,000)."""

    _value = None
    _ok = True


@dataclass
class Held:
    """Channels granted without waiting (see :meth:`Channels.take_now`)."""

    width: int
    granted_at: float


class Channels(BaseResource):
    """The device's internal channels, first come first served like ``simpy.Resource``;
    nothing overtakes a claim waiting at the head of the line. With capacity 1 it is also
    the flush desk."""

    def __init__(self, env: simpy.Environment, capacity: int):
        super().__init__(env, capacity)
        self.in_use = 0
        self.busy_channel_us = 0.0  # sum over claims of width x held time

    def claim(self, width: int = 1) -> Claim:
        return Claim(self, width)

    def take_now(self, width: int = 1) -> "Held | None":
        """Channels granted at once when they are free and nobody is waiting (the same
        outcome as a claim, one simulation event cheaper); None otherwise."""
        if self.put_queue or self._capacity - self.in_use < width:
            return None
        self.in_use += width
        return Held(width, self._env._now)

    def free(self, claim: "Claim | Held") -> None:
        self.in_use -= claim.width
        self.busy_channel_us += claim.width * (self._env._now - claim.granted_at)
        if self.put_queue:
            self._grant()

    def _grant(self) -> None:
        """Grant claims from the head of the line while they fit, stopping at the first that
        does not (strict FIFO). simpy's BaseResource._trigger_put with this resource's
        _do_put, specialised: a granted claim is always triggered and leaves from the head,
        one Python call per claim fewer (a run grants ~one claim per request)."""
        q = self.put_queue
        while q:
            event = q[0]
            if self._capacity - self.in_use < event.width:
                return
            self.in_use += event.width
            event.granted_at = self._env._now
            event.succeed()
            del q[0]

    def _trigger_put(self, get_event) -> None:
        # simpy's own entry point (BaseResource), should anything in simpy call it.
        self._grant()

    def _do_get(self, event) -> bool:  # pragma: no cover - channels are freed via free()
        # simpy's BaseResource asks for a get handler; channels are only ever released with
        # free(), so a get() is a programming error, not an unfinished feature.
        raise RuntimeError("Channels are released with free(), not get()")


@dataclass(frozen=True)
class DeviceTimes:
    """Mean times of one simulated device, in microseconds. ``*_xfer_us`` are the serial
    controller/link times (0: no controller stage). ``knee_power`` 0: ``channels`` channels
    with fixed media times ``read_us``/``write_us`` (the sharp knee); otherwise the measured
    knee (:func:`knee_media_us`): ``read_us``/``write_us`` are the QD1 latencies of the
    sweep's small reads and writes, ``*_floor_us`` their IOPS ceiling's time per I/O as
    the knee's delay reads it (scaled with the latency), ``*_cap_us`` the same time as the
    ceiling every I/O in flight shares (scaled as the dock, never below the device's),
    ``*_bw_us`` one request's transfer at the bandwidth (its size / the bandwidth), and
    ``*_xfer_us`` the ceiling's time per I/O of this size (the larger of the two), the share
    of the ceiling an I/O uses; all held inside the knee's station rather than queued for
    behind it."""

    channels: int
    read_us: float
    write_us: float
    flush_us: float
    read_xfer_us: float = 0.0
    write_xfer_us: float = 0.0
    meta_xfer_us: float = 0.0
    sigma: float = DEFAULT_SIGMA
    knee_power: float = 0.0
    read_floor_us: float = 0.0
    write_floor_us: float = 0.0
    read_cap_us: float = 0.0
    write_cap_us: float = 0.0
    read_bw_us: float = 0.0
    write_bw_us: float = 0.0
    meta_bw_us: float = 0.0

    def scaled(self, k: float) -> "DeviceTimes":
        """Media and flush times x ``k``; the controller stage x ``max(k, 1)``. The transfer
        stage is the device's IOPS/bandwidth ceiling (predict/ceilings.py): a filesystem can
        make the device slower than that, never faster, so no calibration speeds it up (a
        variant once reached twice the drive's bandwidth that way). A knee's own delay scales
        with its latency and floor (x ``k``), its ceiling-time and transfer at the bandwidth
        with the dock's (x ``max(k, 1)``), so a calibration below 1 leaves the knee's
        ceilings where the device has them."""
        x = max(k, 1.0)
        return replace(
            self,
            read_us=self.read_us * k,
            write_us=self.write_us * k,
            flush_us=self.flush_us * k,
            read_xfer_us=self.read_xfer_us * x,
            write_xfer_us=self.write_xfer_us * x,
            meta_xfer_us=self.meta_xfer_us * x,
            read_floor_us=self.read_floor_us * k,
            write_floor_us=self.write_floor_us * k,
            read_cap_us=self.read_cap_us * x,
            write_cap_us=self.write_cap_us * x,
            read_bw_us=self.read_bw_us * x,
            write_bw_us=self.write_bw_us * x,
            meta_bw_us=self.meta_bw_us * x,
        )


def knee_media_us(
    latency_us: float,
    floor_us: float,
    bw_us: float,
    power: float,
    n: int,
    cap_us: float | None = None,
) -> float:
    """Time in the device of an I/O that starts with ``n`` in flight (itself included) on a
    device with a measured knee. Small I/O: T_s(n) = (D^p + (n F)^p)^(1/p), the soft maximum
    (power p) of the I/O's own delay D and the time the IOPS ceiling needs for all n in
    flight (F = ``floor_us`` each, 1 / the ceiling). D is what makes T_s(1) the QD1 latency
    (knee_delay_us), so n in flight at T_s(n) each run at n / T_s(n) =
    mechanisms.queue_rate(n) = q(n), by Little's law. Power 1 is D + n F, one server behind a
    fixed delay where every extra I/O in flight waits one ceiling-time; a large power is
    max(D, n F), independent channels up to the ceiling. ``cap_us`` (default ``floor_us``)
    is F in the n F term where a calibration has scaled the delay's floor below the
    device's ceiling, which no calibration moves (DeviceTimes.scaled).

    Any size: predict's roofline joins q(n) to the bandwidth bound B = 1 / ``bw_us`` (the
    request's transfer X at the bandwidth) by the soft minimum R(n) = (q(n)^-j + B^-j)^(-1/j),
    j = mechanisms.BANDWIDTH_JOIN_POWER. Little's law asks T(n) = n / R(n) =
    ((n / q(n))^j + (n X)^j)^(1/j) = (T_s(n)^j + (n X)^j)^(1/j): the soft maximum of the
    small-I/O time and n transfers at the bandwidth, the same join as a time. For a 4K read
    the n X term is a rounding error; for 128 KiB it is the ceiling."""
    d = knee_delay_us(latency_us, 1e6 / floor_us, power)
    f = cap_us if cap_us else floor_us
    small = (d**power + (n * f) ** power) ** (1.0 / power)
    if bw_us <= 0:
        return small
    j = BANDWIDTH_JOIN_POWER
    return (small**j + (n * bw_us) ** j) ** (1.0 / j)


@dataclass(frozen=True)
class JobSpec:
    """One fio job: ``iodepth`` requests in flight; a flush after every ``writes_per_flush``
    write-like operations of the job (0: never); optionally ``burst`` requests per slot then
    ``pause_us`` of silence."""

    iodepth: int = 1
    read_frac: float = 0.0
    meta_frac: float = 0.0
    writes_per_flush: int = 0
    burst: int = 0
    pause_us: float = 0.0


@dataclass
class SimStats:
    ops: int
    sim_us: float
    latencies_us: np.ndarray
    flush_latencies_us: np.ndarray  # one per fsync, from its request to its completion
    device_flushes: int  # flushes the device executed (fsyncs merged into one count once)
    busy_channel_us: float
    busy_us: float  # time with at least one request outstanding
    channels: int
    trace: list[tuple[float, int, str]] | None = None
    controller_busy_us: float = 0.0  # time the controller/link stage spent transferring
    flush_busy_us: float = 0.0  # time a flush was in the device (one at a time)

    @property
    def throughput_ops_s(self) -> float:
        return self.ops / (self.sim_us * 1e-6) if self.sim_us > 0 else 0.0


class _Draws:
    """Uniforms and unit-mean log-normal factors from one seeded generator, drawn in blocks."""

    BLOCK = 16384

    def __init__(self, seed: int, sigma: float):
        self.rng = np.random.default_rng(seed)
        self.sigma = sigma
        self._u: list[float] = []
        self._f: list[float] = []

    def uniform(self) -> float:
        if not self._u:
            # In place: run() holds this list and pops from it directly.
            self._u.extend(self.rng.random(self.BLOCK).tolist())
        return self._u.pop()

    def factor(self) -> float:
        if self.sigma <= 0:
            return 1.0
        if not self._f:
            s = self.sigma
            self._f.extend(np.exp(s * self.rng.standard_normal(self.BLOCK) - s * s / 2).tolist())
        return self._f.pop()


def _run_until(env: simpy.Environment, stop: simpy.Event) -> None:
    """``env.run(until=stop)`` with simpy 4.1's Environment.step inlined: pop the next event
    (time, priority, id), run its callbacks, crash on an undefused failure; return once
    ``stop`` is popped, its own callbacks run (simpy's run stops there too, through the
    StopSimulation callback it adds). The same events in the same order; what is saved is
    a method call and an exception frame per event (a 10,000-request run processes ~28,000
    events; this loop was ~10% of its time)."""
    queue = env._queue
    while True:
        try:
            env._now, _, _, event = heappop(queue)
        except IndexError:
            raise RuntimeError(
                f'No scheduled events left but "until" event was not triggered: {stop}'
            ) from None
        # None marks the event processed (simpy's Event.processed reads it, and its own
        # step() assigns it with a type: ignore): simpy declares callbacks a list only.
        callbacks, event.callbacks = event.callbacks, None  # type: ignore[assignment]
        for callback in callbacks:
            callback(event)
        if event is stop:
            return
        if not event._ok and not hasattr(event, "_defused"):
            # As simpy: a process died of an exception nobody handled; raise a copy of it.
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc


def run(
    times: DeviceTimes, jobs: list[JobSpec], requests: int, seed: int = 0, trace: bool = False
) -> SimStats:
    """Simulate until ``requests`` operations have completed (fsyncs are not operations, as
    in fio's IOPS). An operation's latency runs from its start to its completion, including
    the fsync it is followed by, if any. The layer below the model: give it fixed times (sigma 0) and it is a
    plain queueing network. With ``trace``, every completion is recorded as
    (time_us, job, "read"|"write"|"meta"|"flush")."""
    env = simpy.Environment()
    ch = Channels(env, times.channels)
    # The device's cache flush: one at a time (blk-flush issues the next when the last is
    # done), beside the channels, not across them -- a flush makes the writes completed
    # before it durable; it neither drains the I/Os in flight nor holds back those behind.
    flusher = Channels(env, 1)
    take_now, free = ch.take_now, ch.free
    put_queue, channels = ch.put_queue, times.channels

    new_claim = object.__new__

    def claim(width: int) -> Claim:
        # Claim(ch, width) less its grant attempt: run() claims only when the channels were
        # not free at once (someone waiting, or fewer than ``width`` free), and then nothing
        # can be granted -- the line's head was retried at the last free() and no channel
        # has been freed since -- so the new claim only joins the line.
        c = new_claim(Claim)
        c.width = width
        c.granted_at = 0.0
        c.env = env
        c.callbacks = []
        c._value = PENDING
        c.resource = ch
        c.proc = env._active_proc
        put_queue.append(c)
        return c

    draws = _Draws(seed, times.sigma)
    uniform, factor = draws.uniform, draws.factor
    # The draws' blocks, read here without a method call per draw (a run makes ~3 draws per
    # request): the same lists _Draws refills in place, so the sequence is unchanged.
    u_buf, f_buf = draws._u, draws._f
    u_pop, f_pop = u_buf.pop, f_buf.pop
    # A timeout scheduled straight onto simpy's queue: what env.timeout(d) does (simpy
    # 4.1's Timeout.__init__ and Environment.schedule, NORMAL priority, same event id
    # sequence), without two Python calls and the negative-delay check per event (every
    # delay here is a mean time x a positive factor, or a wait until a later time). ~40% of
    # a run's events are these timeouts.
    queue, eid = env._queue, env._eid
    new_timeout = object.__new__

    def timeout(delay: float):
        ev = new_timeout(_Delay)
        ev.env = env
        ev.callbacks = []
        ev._delay = delay
        heappush(queue, (env._now + delay, NORMAL, next(eid), ev))
        return ev

    lat: list[float] = []
    flush_lat: list[float] = []
    device_flushes: list[float] = []  # completion times of the flushes the device ran
    queued: list[simpy.Event | None] = [None]  # a flush waiting for the desk
    # The flush on the desk, if any: a run that stops during one counts its time so far (a
    # run of a few dozen long flushes would otherwise read one flush's share idler).
    flushing: list[Claim | Held | None] = [None]
    log: list[tuple[float, int, str]] | None = [] if trace else None
    stop = env.event()
    stopped = [False]  # stop.triggered, read on every request: a plain flag is cheaper
    # [requests outstanding, when the device last became busy, busy time so far, when the
    # controller/link stage is next free, operations completed (an fsync is not one), the
    # controller's busy time]
    st = [0, 0.0, 0.0, 0.0, 0, 0.0]
    written = [0] * len(jobs)
    read_us, read_x = times.read_us, times.read_xfer_us
    write_us, write_x = times.write_us, times.write_xfer_us
    meta_x = times.meta_xfer_us
    # A measured knee: times in the device by the number in flight, 1 .. every slot (index 0
    # unused); the ceiling's time is inside them, so no I/O queues at the dock after them.
    knee = times.knee_power > 0
    r_tab: list[float] = []
    w_tab: list[float] = []
    m_tab: list[float] | None = None
    if knee:
        most = range(1, sum(spec.iodepth for spec in jobs) + 1)
        r_tab, w_tab, m_tab = (
            [0.0] + [knee_media_us(qd1_us, floor, bw, times.knee_power, n, cap) for n in most]
            for qd1_us, floor, cap, bw in (
                (read_us, times.read_floor_us, times.read_cap_us, times.read_bw_us),
                (write_us, times.write_floor_us, times.write_cap_us, times.write_bw_us),
                (write_us, times.write_floor_us, times.write_cap_us, times.meta_bw_us),
            )
        )
        read_x = write_x = meta_x = 0.0
    # env._now is what the env.now property returns; read directly in the per-request code.

    def io(media_us: float, xfer_us: float):
        c: Claim | Held | None = take_now(1)
        if c is None:
            c = claim(1)
            yield c
        if m_tab is not None:
            media_us = m_tab[ch.in_use]
            st[5] += times.meta_xfer_us  # the knee's ceiling-time, the dock's share
        yield timeout(media_us * (f_pop() if f_buf else factor()))
        if xfer_us > 0:
            # The controller is one first-come-first-served server: requests reach it in
            # event order, so its queue is one number, the time it is next free (the same
            # schedule as a simpy.Resource of capacity 1, without its events).
            now = env._now
            start = st[3] if st[3] > now else now
            x = xfer_us * (f_pop() if f_buf else factor())
            st[3] = start + x
            st[5] += x
            yield timeout(st[3] - now)
        free(c)

    def slot(j: int, spec: JobSpec):
        c: Claim | Held | None  # a waited-for grant, or one taken at once (a flush's)
        issued = 0
        meta_frac = spec.meta_frac
        read_cut = meta_frac + spec.read_frac * (1.0 - meta_frac)
        wpf = spec.writes_per_flush
        pause = spec.burst and spec.pause_us > 0
        lat_append = lat.append
        while not stopped[0]:
            u = u_pop() if u_buf else uniform()
            t0 = env._now
            # begin(), inline
            if st[0] == 0:
                st[1] = t0
            st[0] += 1
            if u < meta_frac:
                kind = "meta"
                yield from io(write_us, meta_x)  # journal record
                yield from io(write_us, meta_x)  # in-place update
            else:
                # A read or a write: io() inline (one generator fewer per request).
                if u < read_cut:
                    kind, media_us, xfer_us = "read", read_us, read_x
                else:
                    kind, media_us, xfer_us = "write", write_us, write_x
                # ch.take_now(1) / ch.claim(1) ... ch.free(c), inline for the one channel
                # of a read or write (the same state changes in the same order; two method
                # calls and an object fewer per request).
                if not put_queue and channels - ch.in_use >= 1:
                    ch.in_use += 1
                    granted = env._now
                else:
                    c = claim(1)
                    yield c
                    granted = c.granted_at
                if knee:
                    # The I/O's time is set by the depth it starts at: exact at a steady
                    # depth (fio's closed loop, what the sweep measured), an approximation
                    # while the depth moves (a burst, the drain before a flush). Its
                    # ceiling-time counts as the dock's busy time, for the utilisation.
                    if kind == "read":
                        media_us = r_tab[ch.in_use]
                        st[5] += times.read_xfer_us
                    else:
                        media_us = w_tab[ch.in_use]
                        st[5] += times.write_xfer_us
                # timeout(media), inline: a read or write waits twice, the hot path
                d = media_us * (f_pop() if f_buf else factor())
                ev = new_timeout(_Delay)
                ev.env = env
                ev.callbacks = []
                ev._delay = d
                heappush(queue, (env._now + d, NORMAL, next(eid), ev))
                yield ev
                if xfer_us > 0:
                    now = env._now
                    start = st[3] if st[3] > now else now
                    x = xfer_us * (f_pop() if f_buf else factor())
                    st[3] = start + x
                    st[5] += x
                    d = st[3] - now  # timeout(d), inline
                    ev = new_timeout(_Delay)
                    ev.env = env
                    ev.callbacks = []
                    ev._delay = d
                    heappush(queue, (env._now + d, NORMAL, next(eid), ev))
                    yield ev
                ch.in_use -= 1
                ch.busy_channel_us += 1 * (env._now - granted)
                if put_queue:
                    ch._grant()
            # end(), inline
            st[0] -= 1
            if st[0] == 0:
                st[2] += env._now - st[1]
            if stopped[0]:
                return
            if log is not None:
                log.append((env._now, j, kind))
            st[4] += 1
            due = False
            if wpf and kind != "read":
                written[j] += 1
                due = written[j] % wpf == 0
            if st[4] >= requests:
                if not due:
                    lat_append(env._now - t0)
                stopped[0] = True
                stop.succeed()
                return
            if due:
                # The operation's latency includes the fsync it waits for (a commit), as the
                # model's Little's-law mean (concurrency / IOPS) counts it: one story for the
                # mean latency in predict and simulate.
                # The fsync's flush, inline (a generator and a delegation fewer per fsync).
                tf = env._now
                if st[0] == 0:
                    st[1] = tf
                st[0] += 1
                if queued[0] is not None:
                    # The block layer merges a flush into one still waiting to start (Linux
                    # block/blk-flush.c keeps pending flushes and issues them as one): group
                    # commit below the filesystem, which is why fsync at depth costs less
                    # per call.
                    yield queued[0]
                else:
                    done = None
                    c = flusher.take_now(1)
                    if c is None:
                        done = queued[0] = env.event()
                        c = flusher.claim(1)
                        yield c
                        queued[0] = None  # started: a later fsync needs a flush of its own
                    flushing[0] = c
                    yield timeout(times.flush_us * (f_pop() if f_buf else factor()))
                    flusher.free(c)
                    flushing[0] = None
                    device_flushes.append(env._now)
                    # Only fsyncs that arrived while this flush waited for its channels
                    # wait on its completion. With none, that event would have no callbacks
                    # and be processed at this same instant, changing nothing (events after
                    # it keep their order: ids only ever increase), so it is not scheduled:
                    # one event fewer per flush.
                    if done is not None and done.callbacks:
                        done.succeed()
                st[0] -= 1
                if st[0] == 0:
                    st[2] += env._now - st[1]
                if stopped[0]:
                    return
                flush_lat.append(env._now - tf)
                if log is not None:
                    log.append((env._now, j, "flush"))
            lat_append(env._now - t0)
            if pause:
                issued += 1
                if issued % spec.burst == 0:
                    yield timeout(spec.pause_us)

    for j, spec in enumerate(jobs):
        for _ in range(spec.iodepth):
            env.process(slot(j, spec))
    if requests > 0 and jobs:
        _run_until(env, stop)
    end_us = env.now
    busy = st[2] + (end_us - st[1] if st[0] else 0.0)
    return SimStats(
        ops=int(st[4]),  # a count, kept in the list of floats beside the times
        sim_us=end_us,
        latencies_us=np.asarray(lat),
        flush_latencies_us=np.asarray(flush_lat),
        device_flushes=len(device_flushes),
        busy_channel_us=ch.busy_channel_us,
        busy_us=busy,
        channels=times.channels,
        trace=log,
        controller_busy_us=st[5],
        flush_busy_us=flusher.busy_channel_us
        + (end_us - flushing[0].granted_at if flushing[0] is not None else 0.0),
    )


# --------------------------------------------------------------------------- from the model


def writes_per_flush(w: Workload) -> int:
    """Write-like operations between two flushes, as the model counts them (0: none)."""
    return w.writes_per_fsync


def _shown_values(
    model: Any, device: Device, params: DeviceParams, w: Workload
) -> Mapping[str, float]:
    """The device's figures as this workload's submitters see them (a device whose work is
    the submitter's moves more for more jobs: device_params.for_submitters), with its
    bandwidth ceilings at least what its own stored cells moved, as predict caps them
    (fit.demonstrated_bandwidth): the simulated device is never slower than the one the
    model predicts for."""
    return for_submitters(
        ceilings.lifted_ceilings(
            params.values, model.demonstrated.get(model.known_device(device), {})
        ),
        w,
    )


def device_times(
    params: Mapping[str, float], w: Workload, plp: str, sigma: float = DEFAULT_SIGMA
) -> DeviceTimes:
    """The bare device's times for this workload's request size (devices.toml)."""
    flush = params["flush_latency_us_plp"] if plp == "yes" else params["flush_latency_us"]

    def xfer(cap_iops: float, bw_bytes_s: float, nbytes: int) -> float:
        return max(1e6 / cap_iops, nbytes / bw_bytes_s * 1e6)

    power = float(params.get("knee_power") or 0.0)
    return DeviceTimes(
        # A measured knee is the device's whole queueing shape (knee_media_us): no channel
        # count of its own limits it, so it has as many as the simulator lets be in flight.
        channels=MAX_CONCURRENCY if power else max(1, round(params["parallelism"])),
        read_us=float(params["read_latency_us"]),
        write_us=float(params["write_latency_us"]),
        flush_us=float(flush),
        read_xfer_us=xfer(params["read_iops_cap"], params["read_bw_bytes_s"], w.bs_bytes),
        write_xfer_us=xfer(params["write_iops_cap"], params["write_bw_bytes_s"], w.bs_bytes),
        meta_xfer_us=xfer(params["write_iops_cap"], params["write_bw_bytes_s"], META_WRITE_BYTES),
        sigma=sigma,
        knee_power=power,
        read_floor_us=1e6 / params["read_iops_cap"] if power else 0.0,
        write_floor_us=1e6 / params["write_iops_cap"] if power else 0.0,
        read_cap_us=1e6 / params["read_iops_cap"] if power else 0.0,
        write_cap_us=1e6 / params["write_iops_cap"] if power else 0.0,
        read_bw_us=w.bs_bytes / params["read_bw_bytes_s"] * 1e6 if power else 0.0,
        write_bw_us=w.bs_bytes / params["write_bw_bytes_s"] * 1e6 if power else 0.0,
        meta_bw_us=META_WRITE_BYTES / params["write_bw_bytes_s"] * 1e6 if power else 0.0,
    )


def job_specs(w: Workload, burst: int = 0, pause_us: float = 0.0) -> list[JobSpec]:
    spec = JobSpec(
        iodepth=max(1, w.iodepth),
        read_frac=w.read_pct / 100.0,
        meta_frac=w.metadata_frac,
        writes_per_flush=writes_per_flush(w),
        burst=burst,
        pause_us=pause_us,
    )
    return [spec] * max(1, w.numjobs)


@dataclass(frozen=True)
class Calibration:
    """The profile's own point: what the model predicts there (through the same path as
    ``predict``: the device's own parameters, then the device's hard ceilings) and the time
    factor, spread and power line that make the simulation tell the same story."""

    model_iops: float
    model_watts: float
    model_ops_per_joule: float
    model_iops_90: tuple[float, float]
    model_mean_latency_ms: float
    model_p99_latency_ms: float
    model_p99_latency_ms_90: tuple[float, float]
    idle_watts: float  # the scope's idle level (models/priors.toml), for reference
    power_scope: str
    power_basis: str
    raw_throughput_ops_s: float
    scale: float  # every media/flush time is the bare device's time x scale
    concurrency: int
    # The sharp knee's channel count; None on a device with a measured knee (knee_power),
    # which queues by its sweep's curve and has no channel count of its own to report.
    channels: int | None
    sigma: float
    sigma_source: str
    seed: int
    requests: int
    workload: dict[str, Any]  # the calibration point's workload
    writes_per_flush: int
    plp: str
    device_params_source: str
    utilisation: float  # the busier stage's utilisation at the calibration point
    drive_idle_watts: float  # the drive's own power range, for the power line
    drive_active_watts: float
    drive_power_source: str
    warnings: tuple[str, ...] = ()
    knee_power: float = 0.0  # the device's measured knee (0: none, the sharp knee at channels)
    # Where no run got within SCALE_TOLERANCE of the model's IOPS though runs fell on both
    # sides of it: the nearest slower and faster throughputs (a step, not a ceiling).
    step: tuple[float, float] | None = None
    # The calibration point's own run (not part of the output): a variant that is the
    # calibration point itself reuses it rather than simulating it again.
    point: SimStats | None = field(default=None, repr=False, compare=False)

    @property
    def watts_per_utilisation(self) -> float:
        return self.drive_active_watts - self.drive_idle_watts

    def watts_at(self, utilisation: float) -> float:
        """Power at a utilisation: the model's watts at the calibration point, moved by the
        drive's active-idle range for the change in utilisation. The same line as
        idle + (active - idle) x utilisation, with idle = model watts - range x u_cal."""
        return self.model_watts + self.watts_per_utilisation * (utilisation - self.utilisation)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "point"}
        d["workload"] = dict(self.workload)
        d["model_iops_90"] = list(self.model_iops_90)
        d["model_p99_latency_ms_90"] = list(self.model_p99_latency_ms_90)
        d["warnings"] = list(self.warnings)
        d["step"] = list(self.step) if self.step else None
        return d


def _check_requests(requests: int) -> None:
    if not MIN_REQUESTS <= requests <= MAX_REQUESTS:
        raise FsAdvisorError(
            f"requests must be between {MIN_REQUESTS:,} and {MAX_REQUESTS:,}, not {requests:,}"
        )


def _check_workload(w: Workload, requests: int) -> None:
    conc = w.concurrency
    if conc > MAX_CONCURRENCY:
        raise FsAdvisorError(
            f"numjobs x iodepth = {conc} is above the simulator's limit of {MAX_CONCURRENCY}"
        )
    if requests < STEADY_ROUNDS * conc:
        raise FsAdvisorError(
            f"requests ({requests:,}) must be at least {STEADY_ROUNDS} x "
            f"numjobs x iodepth (= {STEADY_ROUNDS * conc:,}) to reach a "
            "steady state"
        )


def model_prediction(
    model, cfg: FsConfig, w: Workload, device: Device, scope: str, params: DeviceParams
):
    """What ``fsadvisor predict`` says for this point: the device's own parameters, then
    its hard ceilings (service/advice.py does the same)."""
    # the fitted model (numpy, features) only when the model's point is wanted: the
    # queueing simulation stands without it
    from fsadvisor.predict.predict import predict

    return ceilings.cap(predict(model, cfg, w, device, scope, device_params=params), w)


def drive_power(params: DeviceParams, scope: str) -> tuple[float, float, str]:
    """(idle W, active W, source) of the drive itself, for the power line: a library drive's
    datasheet figures, else energy/estimate.py's assumed NVMe defaults. The cpu+dram scope
    does not contain the drive, so its range there is 0."""
    if scope == "cpu+dram":
        return 0.0, 0.0, "the drive is outside the cpu+dram scope, so power stays at the model's"
    pw = params.details.get("power_w") if isinstance(params.details, Mapping) else None
    pw = pw if isinstance(pw, Mapping) else {}
    active = pw.get("active_power_w") or pw.get("max_power_w")
    idle = pw.get("idle_power_w", ASSUMED_DRIVE_IDLE_W)
    if active is not None and float(active) > float(idle):
        return (
            float(idle),
            float(active),
            (
                f"drive {float(idle):g}-{float(active):g} W from "
                f"{params.details.get('model') or params.device_id}'s datasheet"
                + ("" if "idle_power_w" in pw else f" (idle {ASSUMED_DRIVE_IDLE_W:g} W assumed)")
            ),
        )
    return (
        ASSUMED_DRIVE_IDLE_W,
        ASSUMED_DRIVE_ACTIVE_W,
        (
            f"drive {ASSUMED_DRIVE_IDLE_W:g}-{ASSUMED_DRIVE_ACTIVE_W:g} W assumed (a typical NVMe "
            "drive idle and under sustained I/O, energy/estimate.py"
            + ("" if params.kind == "nvme" else f"; no figures for {params.kind}")
            + ")"
        ),
    )


def _sigma_of(p, sigma: float | None) -> tuple[float, str]:
    if sigma is not None:
        return sigma, "given"
    ratio = p.p99_latency_ms / p.mean_latency_ms if p.mean_latency_ms > 0 else math.nan
    try:
        return sigma_for_p99_over_mean(ratio), (
            f"the model's p99/mean {ratio:.2f} here (its tail terms)"
        )
    except ValueError:
        return DEFAULT_SIGMA, (f"seed 002's p99/mean (the model's {ratio:.3g} has no log-normal)")


def calibrate(
    model,
    cfg: FsConfig,
    w: Workload,
    device: Device,
    scope: str = "system",
    seed: int = 0,
    requests: int = DEFAULT_REQUESTS,
    sigma: float | None = None,
    device_params: DeviceParams | None = None,
) -> Calibration:
    """Calibrate at the workload's own point. ``device_params``: the device's parameters as
    predict uses them (the store's calibration of it, a library drive's datasheet); default
    the model's own for the device. ``sigma`` None: the spread that gives the model's own
    p99/mean at this point."""
    _check_requests(requests)
    _check_workload(w, requests)
    if sigma is not None and not (math.isfinite(sigma) and 0.0 <= sigma <= 3.0):
        raise FsAdvisorError(f"sigma (log-sd of service times) must be in 0..3, not {sigma}")
    params = device_params or model.params_for(device)
    p = model_prediction(model, cfg, w, device, scope, params)
    sig, sig_source = _sigma_of(p, sigma)
    bare = device_times(_shown_values(model, device, params, w), w, device.plp, sig)
    jobs = job_specs(w)
    raw = run(bare, jobs, requests, seed)
    t0 = raw.throughput_ops_s
    if not (t0 > 0 and p.iops > 0 and math.isfinite(t0 / p.iops)):
        raise FsAdvisorError(
            "cannot calibrate the simulator: the pilot run or the model gave no throughput"
        )
    scale, point, step = _solve_scale(bare, jobs, requests, seed, raw, p.iops)
    warnings = []
    if not SCALE_PLAUSIBLE[0] <= scale <= SCALE_PLAUSIBLE[1]:
        warnings.append(
            f"every bare-device time from devices.toml had to be multiplied by {scale:.3g} to "
            "match the model here; the two disagree, so read the variants as rough "
            "extrapolations"
        )
    reached = point.throughput_ops_s / p.iops
    if abs(reached - 1.0) > SCALE_TOLERANCE and step is not None:
        # Runs on both sides of the model's figure: the device can go faster and slower, so
        # the miss is no ceiling but a step of the simulated throughput across it.
        warnings.append(
            f"the simulated throughput steps across the model's {p.iops:,.0f} IOPS here (runs "
            f"at nearly the same device speed gave {step[0]:,.0f} and {step[1]:,.0f}: fsyncs "
            f"merging into shared flushes change in steps); the nearest run, {reached:.1%} of "
            "it, is the calibration point"
        )
    elif reached < 1.0 - SCALE_TOLERANCE:
        warnings.append(
            f"the model's {p.iops:,.0f} IOPS here is at the device's ceiling; a queue of "
            f"{w.concurrency} reaches {reached:.0%} of it, so the simulated figures are that "
            "much slower than predict's"
        )
    d_idle, d_active, d_source = drive_power(params, scope)
    lo, hi = p.uncertainty["iops_90"]
    t_lo, t_hi = p.uncertainty["p99_latency_ms_90"]
    return Calibration(
        model_iops=p.iops,
        model_watts=p.watts,
        model_ops_per_joule=p.ops_per_joule,
        model_iops_90=(float(lo), float(hi)),
        model_mean_latency_ms=p.mean_latency_ms,
        model_p99_latency_ms=p.p99_latency_ms,
        model_p99_latency_ms_90=(float(t_lo), float(t_hi)),
        idle_watts=float(p.basis.get("idle_watts", 0.0)),
        power_scope=scope,
        power_basis=str(p.basis.get("power_level", p.energy_source)),
        raw_throughput_ops_s=t0,
        scale=scale,
        concurrency=w.concurrency,
        channels=None if bare.knee_power else bare.channels,
        sigma=sig,
        sigma_source=sig_source,
        seed=seed,
        requests=requests,
        workload=w.to_dict(),
        writes_per_flush=writes_per_flush(w),
        plp=device.plp,
        device_params_source=params.source,
        utilisation=_utilisation(point),
        drive_idle_watts=d_idle,
        drive_active_watts=d_active,
        drive_power_source=d_source,
        warnings=tuple(warnings),
        step=step,
        knee_power=bare.knee_power,
        point=point,
    )


def _scaled_stats(st: SimStats, k: float) -> SimStats:
    """The same run with every time x ``k`` (what a run of the scaled times gives)."""
    return replace(
        st,
        sim_us=st.sim_us * k,
        latencies_us=st.latencies_us * k,
        flush_latencies_us=st.flush_latencies_us * k,
        busy_channel_us=st.busy_channel_us * k,
        busy_us=st.busy_us * k,
        controller_busy_us=st.controller_busy_us * k,
        flush_busy_us=st.flush_busy_us * k,
        trace=None,
    )


def _solve_scale(
    bare: DeviceTimes,
    jobs: list[JobSpec],
    requests: int,
    seed: int,
    raw: SimStats,
    target_ops_s: float,
) -> tuple[float, SimStats, tuple[float, float] | None]:
    """The factor k on media and flush times that makes the calibration point's throughput
    the model's, and that run's statistics. For k >= 1 every time scales (the controller
    too, DeviceTimes.scaled), so the whole event sequence scales and k = raw / target
    exactly. For k < 1 the controller stage stays at the device's ceiling, throughput is no
    longer proportional to 1/k, and a secant on log throughput vs log k finds it; where the
    secant circles, a bisection of the runs' bracket around the target. Also the step the
    runs show across the target when the nearest one misses it by more than SCALE_TOLERANCE
    (the slower and faster runs closest to it; None when they all fall on one side): with
    fsyncs merging into shared flushes, throughput can jump across the target between two
    almost equal scales (oltp on nvme, seed 7, on an earlier fit: 74.7k and 82.6k either
    side of k = 0.6966)
    and no run gets within the tolerance."""
    k = raw.throughput_ops_s / target_ops_s
    if k >= 1.0:
        return k, _scaled_stats(raw, k), None
    k_prev, t_prev = 1.0, raw.throughput_ops_s
    best = None
    # every run so far, (k, throughput): the pilot is k = 1
    tried = [(1.0, raw.throughput_ops_s)]

    def keep(k: float, st: SimStats) -> bool:
        nonlocal best
        tried.append((k, st.throughput_ops_s))
        if best is None or abs(math.log(st.throughput_ops_s / target_ops_s)) < abs(
            math.log(best[1].throughput_ops_s / target_ops_s)
        ):
            best = (k, st)
        return abs(st.throughput_ops_s / target_ops_s - 1.0) <= SCALE_TOLERANCE

    for _ in range(SCALE_ITERATIONS):
        st = run(bare.scaled(k), jobs, requests, seed)
        t = st.throughput_ops_s
        if keep(k, st) or k <= SCALE_MIN:
            break
        slope = math.log(t / t_prev) / math.log(k / k_prev) if k != k_prev else -1.0
        if not (math.isfinite(slope) and slope < -0.05):
            slope = -0.05  # near the ceiling throughput hardly moves: take a big step
        k_prev, t_prev = k, t
        k = max(SCALE_MIN, k * (target_ops_s / t) ** (1.0 / slope))
    else:
        # The secant can circle: with fsyncs merged into one flush at a time, throughput
        # is not monotone in k at the scale of a few percent. Where the runs so far
        # bracket the target (one faster, one slower), halve the bracket (geometrically).
        lo = max((k for k, t in tried if t > target_ops_s), default=None)
        hi = None
        if lo is not None:
            hi = min((k for k, t in tried if t < target_ops_s and k > lo), default=None)
        if lo is not None and hi is not None:
            for _ in range(SCALE_ITERATIONS):
                mid = math.sqrt(lo * hi)
                st = run(bare.scaled(mid), jobs, requests, seed)
                if keep(mid, st):
                    break
                if st.throughput_ops_s > target_ops_s:
                    lo = mid
                else:
                    hi = mid
    assert best is not None  # SCALE_ITERATIONS >= 1: the loop ran and kept a run
    below = [t for _, t in tried if t < target_ops_s]
    above = [t for _, t in tried if t > target_ops_s]
    off = abs(best[1].throughput_ops_s / target_ops_s - 1.0) > SCALE_TOLERANCE
    step = (max(below), min(above)) if off and below and above else None
    return best[0], best[1], step


def _utilisation(st: SimStats) -> float:
    """The share of time the device is busy: while a flush runs, all of it (the drive
    writes its cache out across its dies, though the queue goes on); otherwise its busier
    data stage, the mean share of its channels held or the share of time its
    controller/link transfers (at the bandwidth ceiling the channels may be idle while the
    link is full). The flush's share and the data stage's are taken as independent,
    ``f + (1 - f) x data``: the two overlap, and tracking their exact union would cost the
    hot path a bookkeeping step per I/O. So more fsyncing jobs never read as a less busy
    device: when fsyncs that share a flush leave the flush desk idler (jobs released by
    one flush write in step, then fsync in step), their writes keep the data stages
    busier. Scale-free, so the pilot's equals the calibrated run's when every time
    scales."""
    if st.sim_us <= 0:
        return 0.0
    data = max(st.busy_channel_us / (st.channels * st.sim_us), st.controller_busy_us / st.sim_us)
    f = min(1.0, st.flush_busy_us / st.sim_us)
    return min(1.0, f + (1.0 - f) * min(1.0, data))


# --------------------------------------------------------------------------- what-if


def _as_int(key: str, v: Any, lo: int, hi: int) -> int:
    try:
        if isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()):
            raise ValueError
        n = int(v)
    except (TypeError, ValueError):
        raise FsAdvisorError(f"{key} must be a whole number, not {v!r}") from None
    if not lo <= n <= hi:
        raise FsAdvisorError(f"{key} must be between {lo} and {hi}, not {n}")
    return n


def apply_overrides(
    w: Workload, device: Device, overrides: Mapping[str, Any] | None
) -> tuple[Workload, Device, int, float]:
    """(workload, device, burst, pause_us) with the what-if knobs applied."""
    # the size parser only when a what-if knob is a size
    from fsadvisor.sizes import parse_size

    o = dict(overrides or {})
    unknown = sorted(set(o) - set(OVERRIDE_KEYS))
    if unknown:
        raise FsAdvisorError(
            f"unknown what-if knob(s) {', '.join(unknown)}; use {', '.join(OVERRIDE_KEYS)}"
        )
    kw: dict[str, Any] = {}
    if "numjobs" in o:
        kw["numjobs"] = _as_int("numjobs", o["numjobs"], 1, MAX_CONCURRENCY)
    if "iodepth" in o:
        kw["iodepth"] = _as_int("iodepth", o["iodepth"], 1, MAX_CONCURRENCY)
    if "fsync_every" in o:
        n = _as_int("fsync_every", o["fsync_every"], 0, 1_000_000)
        kw["fsync_every"], kw["fsync_mode"] = n, ("every_n" if n else "none")
    if "rwmixread" in o:
        kw["rwmixread"] = _as_int("rwmixread", o["rwmixread"], 0, 100)
        if w.rw not in ("rw", "randrw") and w.metadata_frac < 1.0:
            kw["rw"] = "randrw" if w.random else "rw"  # a fixed-direction job becomes a mix
    if "bs" in o:
        try:
            bs = parse_size(o["bs"])
        except (TypeError, ValueError, OverflowError):
            raise FsAdvisorError(f"bs must be a size like 4k or 131072, not {o['bs']!r}") from None
        if not 512 <= bs <= 64 << 20:
            raise FsAdvisorError(f"bs must be between 512 bytes and 64 MiB, not {bs}")
        kw["bs_bytes"] = bs
    if "plp" in o:
        if o["plp"] not in ("yes", "no", "unknown"):
            raise FsAdvisorError(f"plp must be yes, no or unknown, not {o['plp']!r}")
        device = replace(device, plp=o["plp"])
    burst = _as_int("burst", o.get("burst", 0), 0, 1_000_000)
    try:
        pause_ms = float(o.get("pause_ms", 0.0))
    except (TypeError, ValueError):
        raise FsAdvisorError(f"pause_ms must be a number, not {o['pause_ms']!r}") from None
    if not (math.isfinite(pause_ms) and 0.0 <= pause_ms <= 10_000.0):
        raise FsAdvisorError(f"pause_ms must be between 0 and 10000, not {pause_ms}")
    if (burst and not pause_ms) or (pause_ms and not burst):
        raise FsAdvisorError("a burst needs both burst (requests) and pause_ms")
    if kw.get("numjobs", w.numjobs) * kw.get("iodepth", w.iodepth) > MAX_CONCURRENCY:
        raise FsAdvisorError(
            f"numjobs x iodepth is above the simulator's limit of {MAX_CONCURRENCY}"
        )
    return replace(w, **kw), device, burst, pause_ms * 1000.0


def check_variant(
    w: Workload, device: Device, overrides: Mapping[str, Any] | None, requests: int
) -> None:
    """Raise FsAdvisorError now if this variant cannot be simulated."""
    _check_requests(requests)
    _check_workload(apply_overrides(w, device, overrides)[0], requests)


def percentiles(values: np.ndarray, q, axis: int | None = None) -> np.ndarray:
    """``np.percentile(values, q, axis=axis)`` (its default, linear interpolation) by the
    same arithmetic on a sorted copy: numpy 2.x's _quantile with method "linear" --
    virtual index (n - 1) * q / 100, its floor and the next index (both the last element at
    or beyond the end), gamma = index - floor, then _lerp (a + (b - a) * g, or
    b - (b - a) * (1 - g) where g >= 0.5). Bit for bit the same figures
    (tests/unit/test_sim.py checks it against numpy), without np.percentile's call to
    np.unique, which imports numpy.ma (a visible share of a simulate run's start-up). Data with NaN
    goes to numpy itself."""
    a = np.asarray(values, dtype=float)
    if np.isnan(a).any():
        return np.percentile(a, q, axis=axis)
    if axis is None:
        a = a.ravel()
        axis = 0
    a = np.sort(np.moveaxis(a, axis, 0), axis=0)
    n = a.shape[0]
    qs = np.true_divide(q, 100, out=...)
    virtual = np.asanyarray((n - 1) * qs)
    prev = np.floor(virtual, out=...)
    nxt = np.add(prev, 1, out=...)
    above = virtual >= n - 1
    prev[above] = -1
    nxt[above] = -1
    below = virtual < 0
    prev[below] = 0
    nxt[below] = 0
    prev_i, nxt_i = prev.astype(np.intp), nxt.astype(np.intp)
    gamma = np.asanyarray(np.asanyarray(virtual - prev_i), dtype=virtual.dtype)
    gamma = gamma.reshape(virtual.shape + (1,) * (a.ndim - 1))
    lo, hi = np.take(a, prev_i, axis=0), np.take(a, nxt_i, axis=0)
    diff = hi - lo
    out = np.add(lo, diff * gamma, out=...)
    np.subtract(
        hi, diff * (1 - gamma), out=out, where=gamma >= 0.5, casting="unsafe", dtype=type(out.dtype)
    )
    return out[()] if out.ndim == 0 else out


def quantile_ci(
    values: np.ndarray, q: float, batches: int = CI_BATCHES
) -> tuple[float, float] | None:
    """95% interval of the ``q`` percentile by batch means: the run cut into ``batches``
    consecutive pieces, the percentile of each, Student's t over them. Consecutive latencies
    in a queue are correlated, which an order-statistic interval would ignore. None when the
    run is too short for batches of at least 100."""
    n = len(values) // batches
    if batches < 2 or n < 100:
        return None
    per = percentiles(values[: n * batches].reshape(batches, n), q, axis=1)
    half = T975[batches - 1] * float(per.std(ddof=1)) / math.sqrt(batches)
    mid = float(percentiles(values, q))
    return max(0.0, mid - half), mid + half


@dataclass
class SimResult:
    """One simulated variant. Energy is "simulated from model", never a measurement."""

    overrides: dict[str, Any]
    config: dict[str, Any]
    workload: dict[str, Any]  # the workload after the overrides
    device_kind: str
    numjobs: int
    iodepth: int
    concurrency: int
    writes_per_flush: int
    plp: str
    requests: int
    simulated_s: float
    wall_s: float
    throughput_ops_s: float
    mb_s: float
    mean_latency_ms: float
    p50_latency_ms: float
    p90_latency_ms: float
    p99_latency_ms: float
    p999_latency_ms: float
    max_latency_ms: float
    p99_latency_ms_95: list[float] | None  # batch-means interval of the simulated p99
    fsyncs: int
    device_flushes: int
    mean_flush_latency_ms: float | None
    utilisation: float  # flushing, else the busier data stage (channels held or the link)
    busy_fraction: float  # share of time with any request outstanding
    ceiling_iops: float  # the device's IOPS ceiling for this variant's mix and size
    watts: float
    energy_j: float
    energy_per_op_j: float
    ops_per_joule: float
    model_iops: float  # the closed-form model's figure for this variant, for comparison
    model_ops_per_joule: float
    seed: int
    calibration: Calibration
    energy_source: str = "simulated from model"
    power_model: str = "estimate"
    note: str = LABEL

    def to_dict(self) -> dict[str, Any]:
        # calibration None only for the copy asdict walks (it has its own to_dict, below);
        # the field is never None on a result, so it stays typed Calibration.
        d = asdict(replace(self, calibration=None))  # type: ignore[arg-type]
        d["calibration"] = self.calibration.to_dict()
        return d


def simulate(
    model,
    cfg: FsConfig,
    workload: Workload,
    device: Device,
    scope: str = "system",
    seed: int = 0,
    requests: int = DEFAULT_REQUESTS,
    overrides: dict | None = None,
    calibration: Calibration | None = None,
    sigma: float | None = None,
    device_params: DeviceParams | None = None,
) -> SimResult:
    """Simulate ``workload`` on ``device`` under ``cfg`` with the what-if ``overrides``
    applied, calibrated at the workload's own point (pass ``calibration`` to reuse one).
    ``device_params`` as for :func:`calibrate`; pass the same ones with a calibration."""
    _check_requests(requests)
    w2, dev2, burst, pause_us = apply_overrides(workload, device, overrides)
    _check_workload(w2, requests)
    params = device_params or model.params_for(device)
    cal = calibration or calibrate(
        model, cfg, workload, device, scope, seed, requests, sigma, params
    )
    values = _shown_values(model, device, params, w2)
    times = device_times(values, w2, dev2.plp, cal.sigma).scaled(cal.scale)
    t_wall = time.perf_counter()
    if (
        cal.point is not None
        and not burst
        and w2 == workload
        and dev2.plp == device.plp
        and requests == cal.requests
        and seed == cal.seed
    ):
        st = cal.point  # the calibration point itself: already simulated
    else:
        st = run(times, job_specs(w2, burst, pause_us), requests, seed)
    wall = time.perf_counter() - t_wall
    sim_s = st.sim_us * 1e-6
    thr = st.throughput_ops_s
    busy = min(1.0, st.busy_us / st.sim_us) if st.sim_us > 0 else 0.0
    util = _utilisation(st)
    watts = cal.watts_at(util)
    energy = watts * sim_s
    lat_ms = st.latencies_us / 1000.0
    p50, p90, p99, p999 = (float(x) for x in percentiles(lat_ms, [50, 90, 99, 99.9]))
    ci = quantile_ci(lat_ms, 99)
    mp = model_prediction(model, cfg, w2, dev2, scope, params)
    bs = w2.bs_bytes if w2.metadata_frac < 1.0 else 0
    return SimResult(
        overrides=dict(overrides or {}),
        config=cfg.to_dict(),
        workload=w2.to_dict(),
        device_kind=dev2.kind,
        numjobs=w2.numjobs,
        iodepth=w2.iodepth,
        concurrency=w2.concurrency,
        writes_per_flush=writes_per_flush(w2),
        plp=dev2.plp,
        requests=st.ops,
        simulated_s=sim_s,
        wall_s=wall,
        throughput_ops_s=thr,
        mb_s=thr * bs * (1.0 - w2.metadata_frac) / 1e6,
        mean_latency_ms=float(lat_ms.mean()),
        p50_latency_ms=p50,
        p90_latency_ms=p90,
        p99_latency_ms=p99,
        p999_latency_ms=p999,
        max_latency_ms=float(lat_ms.max()),
        p99_latency_ms_95=None if ci is None else list(ci),
        fsyncs=int(st.flush_latencies_us.size),
        device_flushes=st.device_flushes,
        mean_flush_latency_ms=(
            float(st.flush_latencies_us.mean()) / 1000.0 if st.flush_latencies_us.size else None
        ),
        utilisation=util,
        busy_fraction=busy,
        ceiling_iops=ceilings.ceilings(w2, values)["iops_limit"],
        watts=watts,
        energy_j=energy,
        energy_per_op_j=energy / st.ops if st.ops else math.inf,
        ops_per_joule=st.ops / energy if energy > 0 else 0.0,
        model_iops=mp.iops,
        model_ops_per_joule=mp.ops_per_joule,
        seed=seed,
        calibration=cal,
    )
