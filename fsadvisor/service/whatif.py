"""Live what-if: the same ranking as advice.recommend, re-run as the user edits a profile.

advice.recommend resolves the device, reads its calibration, checks the kernel and predicts
every candidate on every call. A front end that re-ranks on each key press keeps those in a
WhatIf session instead: the fit itself is cached by advice.get_model (keyed by the store's
observations, so a probe that adds runs still refits), and the predictions of one workload
are kept, so changing only a threshold constraint (min IOPS, max p99) refilters them without
predicting again, and changing the workload predicts again without fitting again.

``edit_workload`` is the workload half of the what-if form: the handful of knobs a user
reasons about (jobs, queue depth, request size, read share, fsync policy, working set),
checked against ranges fio itself accepts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from fsadvisor.domain import Device, Profile, Workload
from fsadvisor.errors import FsAdvisorError
from fsadvisor.predict.predict import predict_many
from fsadvisor.predict.rank import rank
from fsadvisor.service import advice
from fsadvisor.service.advice import Recommendation
from fsadvisor.sizes import format_size, parse_size
from fsadvisor import limits

# Ranges of the what-if knobs. fio accepts more; these bound what the model was ever fitted
# near, with room: numjobs/iodepth 1..4096 (io_uring's default SQ ring holds 4096 entries,
# liburing IORING_MAX_ENTRIES is 32768); request sizes 512 B (a logical sector) .. 64 MiB
# (fio's largest buffered bs in the seed runs is 1 MiB); a working set of at least 1 MiB
# (the size limit in fsadvisor.limits) and at most 1 PiB.
JOBS_RANGE = (1, 4096)
IODEPTH_RANGE = (1, 4096)
BS_RANGE_BYTES = (512, 64 << 20)
WORKING_SET_RANGE_BYTES = (1 << 20, 1 << 50)
FSYNC_POLICIES = ("none", "every_n", "per_transaction")
# Metadata workloads (file create/stat/delete) have no read share to edit.
_METADATA_RW = ("filecreate", "filestat", "filedelete")
_PREDICTION_MEMO = 8  # workloads kept per session: a user flicks between a few


def _whole(text: Any, what: str, lo: int, hi: int) -> int:
    s = str(text).strip().replace(",", "").replace("_", "")
    try:
        value = int(s)
    except ValueError:
        raise FsAdvisorError(f"{what} must be a whole number, not {s[:40]!r}") from None
    if not lo <= value <= hi:
        raise FsAdvisorError(f"{what} must be between {lo:,} and {hi:,}, not {value:,}")
    return value


def _size(text: Any, what: str, lo: int, hi: int) -> int:
    try:
        value = parse_size(str(text).strip())
    except ValueError:
        raise FsAdvisorError(
            f"{what} must be a size like 4k, 1M or 8G, not {str(text)[:40]!r}"
        ) from None
    if not lo <= value <= hi:
        raise FsAdvisorError(
            f"{what} must be between {format_size(lo)} and {format_size(hi)}, "
            f"not {format_size(value)}"
        )
    return value


def edit_workload(
    w: Workload,
    jobs: Any = None,
    iodepth: Any = None,
    bs: Any = None,
    read_pct: Any = None,
    fsync: str | None = None,
    fsync_every: Any = None,
    working_set: Any = None,
) -> Workload:
    """``w`` with the given knobs changed (None: unchanged). Text as typed is accepted
    ("4k", "1,024"); a value out of range is an FsAdvisorError naming the range.

    Read share keeps the access pattern: a random workload stays random (100 % reads is
    ``randread``, 0 % is ``randwrite``, else ``randrw`` with ``rwmixread``), a sequential
    one sequential."""
    changes: dict[str, Any] = {}
    if jobs is not None:
        changes["numjobs"] = _whole(jobs, "jobs", *JOBS_RANGE)
    if iodepth is not None:
        changes["iodepth"] = _whole(iodepth, "queue depth", *IODEPTH_RANGE)
    if bs is not None:
        changes["bs_bytes"] = _size(bs, "request size", *BS_RANGE_BYTES)
    if working_set is not None:
        ws = _size(working_set, "working set", *WORKING_SET_RANGE_BYTES)
        changes["working_set_bytes"] = ws
        # fio lays the working set out as nrfiles files of file_size each
        changes["file_size_bytes"] = max(ws // max(w.nrfiles, 1), 1 << 20)
        if w.file_size_max_bytes is not None:
            changes["file_size_max_bytes"] = min(w.file_size_max_bytes, ws)
    if read_pct is not None:
        pct = _whole(read_pct, "read share %", 0, 100)
        if w.rw in _METADATA_RW:
            if pct != w.read_pct:
                raise FsAdvisorError(
                    f"{w.rw} is a metadata workload: its read share is fixed at {w.read_pct}%"
                )
        elif pct != w.read_pct or w.rw in ("randrw", "rw", "readwrite"):
            rnd = w.rw.startswith("rand")
            rw = (
                ("randread" if rnd else "read")
                if pct == 100
                else ("randwrite" if rnd else "write")
                if pct == 0
                else ("randrw" if rnd else "rw")
            )
            changes["rw"] = rw
            changes["rwmixread"] = pct
    if fsync is not None:
        if fsync not in FSYNC_POLICIES:
            raise FsAdvisorError(
                f"fsync policy must be one of {', '.join(FSYNC_POLICIES)}, not {fsync!r}"
            )
        changes["fsync_mode"] = fsync
        if fsync == "none":
            changes["fsync_every"] = 0
        else:
            every = (
                _whole(fsync_every, "writes per fsync", 1, 1_000_000)
                if fsync_every is not None and str(fsync_every).strip()
                else max(w.fsync_every, 1)
            )
            changes["fsync_every"] = every
    elif fsync_every is not None:
        # fio's fsync=N alone: 0 is never (with policy "none"), N every N writes
        changes["fsync_every"] = _whole(fsync_every, "writes per fsync", 0, 1_000_000)
    return replace(w, **changes)


def with_workload(profile: Profile, workload: Workload) -> Profile:
    return replace(profile, workload=workload)


@dataclass
class _Context:
    dev: Device
    params: Any
    kernel_has: dict[str, bool]
    target: Any
    library_notes: list[str]
    params_text: str


class WhatIf:
    """One what-if session: one store, many (profile, device) questions in a row. Safe to
    call from one worker thread at a time and from several (a lock guards the memo)."""

    def __init__(self, db: str | None = None) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._contexts: dict[tuple, _Context] = {}
        # (model identity, workload, device, scope, candidate set) -> (predictions, design)
        self._memo: OrderedDict[tuple, tuple[list, dict]] = OrderedDict()
        self.predictions_made = 0  # how often the model really predicted (tests, benchmark)

    def _context(self, device: str | None, plp: str | None) -> _Context:
        key = (device, plp)
        with self._lock:
            ctx = self._contexts.get(key)
        if ctx is None:
            # service.devices only for a library drive's notes (start-up)
            from fsadvisor.service.devices import library_notes

            dev = advice.resolve_device(device, plp)
            params = advice.device_params_of(dev, self.db)
            ctx = _Context(
                dev,
                params,
                advice.kernel_filesystems(),
                advice.mkfs_target(dev),
                [advice.sector_note(dev, device, None)] + list(library_notes(dev)),
                advice.describe_params(params),
            )
            with self._lock:
                self._contexts[key] = ctx
        return ctx

    def _predict(
        self,
        model,
        cfgs,
        w,
        device,
        scope="system",
        idle_watts=None,
        design_out=None,
        device_params=None,
    ):
        # Keyed by the exact candidate list: the predictions' power-interval floor depends on
        # the set predicted together, so a hit is bit-for-bit what predict_many would return.
        key = (id(model), w, device, scope, idle_watts, id(device_params), tuple(cfgs))
        with self._lock:
            hit = self._memo.get(key)
            if hit is not None:
                self._memo.move_to_end(key)
        if hit is None:
            design: dict = {}
            preds = predict_many(
                model,
                cfgs,
                w,
                device,
                scope,
                idle_watts=idle_watts,
                design_out=design,
                device_params=device_params,
            )
            hit = (preds, design)
            with self._lock:
                self.predictions_made += 1
                self._memo[key] = hit
                while len(self._memo) > _PREDICTION_MEMO:
                    self._memo.popitem(last=False)
        if design_out is not None:
            design_out.update(hit[1])
        return list(hit[0])

    def recommend(
        self,
        profile: Profile,
        device: str | None = None,
        top: int = 5,
        scope: str = "system",
        energy_basis: str = "total",
    ) -> Recommendation:
        """What advice.recommend(profile, device, top, db) answers, from this session's caches."""

        limits.check("top", top)
        advice.check_scope(scope)
        plp = profile.constraints.plp if profile.constraints.plp != "unknown" else None
        ctx = self._context(device, plp)
        model = advice.get_model(self.db)
        rec = rank(
            model,
            profile,
            ctx.dev,
            top=top,
            scope=scope,
            energy_basis=energy_basis,
            kernel_has=ctx.kernel_has,
            target=ctx.target,
            device_params=ctx.params,
            predict=self._predict,
        )
        return advice.finish(rec, self.db, ctx.params_text, list(ctx.library_notes))
