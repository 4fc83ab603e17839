"""Running a whole matrix: cells in order, each stored the moment it ends, and the machine
put back the way it was found whatever happens.

Like a lab technician's checklist taped to the bench: before touching anything, write down
what you are about to change (the state file); after each sample, file the result (the
store); when the fire alarm rings (SIGINT/SIGTERM), stop the machine, unmount, put the
scheduler back, detach the scratch device, and note which sample was half done (stored as
``incomplete``, never as a result). Only the first signal interrupts; later ones wait for
the cleanup, which must not itself be cut short.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
from typing import Any, Callable, Iterator

from fsadvisor import energy
from fsadvisor.records import RunRecord
from fsadvisor.errors import DeviceRefused, FsAdvisorError, NotSupported
from fsadvisor.host import device as devmod
from fsadvisor.host import loopdev
from fsadvisor.host.run import STOP_GRACE_S
from fsadvisor.probe import measure
from fsadvisor.probe.cell import STEP_SECONDS, WIPE_ARGV, CellHooks, CellRunner, LiveSample
from fsadvisor.probe.commands import Executor
from fsadvisor.probe.plan import Cell, Plan
from fsadvisor.probe.report import LOOP_WARNING, CellOutcome, ProbeSummary, ProgressEvent
from fsadvisor.probe.state import (
    ProbeState,
    ProcessRef,
    StateFile,
    StateFileError,
    SystemOps,
    cleanup_stale,
    leftovers,
    live_owner,
    recorded_signature,
    undo,
)
from fsadvisor.tools import fio
from fsadvisor.sizes import format_binary


class DeviceTaken(DeviceRefused):
    """Between two cells the device turned out to be mounted, held or opened by someone
    else: the matrix stops (resumable), and the device is not touched again."""


class ProbeInterrupted(BaseException):
    """Raised inside the probe by the SIGINT/SIGTERM handler (a BaseException, so that no
    ``except Exception`` on the way can swallow it)."""

    def __init__(self, signame: str):
        super().__init__(signame)
        self.signame = signame


def scratch_space_problem(plan: Plan) -> str | None:
    """Why a scratch backing file of the plan's size does not fit where it would go (None:
    it fits). Sparse, but mkfs, the fill and the runs may write all of it; checked before
    the file exists, so a full disk names the scratch directory, not a cell's mount."""

    size = int(plan.scratch_size_bytes or 0)
    where = plan.scratch_dir or tempfile.gettempdir()
    try:
        free = shutil.disk_usage(where).free
    except OSError as e:
        return f"--scratch-dir {where}: {e.strerror or e}"
    if free < size:
        return (
            f"--scratch {format_binary(size)} does not fit in {where} ({format_binary(free)} "
            "free): give a smaller --scratch, or a --scratch-dir with more room"
        )
    return None


class Interruptions:
    """SIGINT/SIGTERM -> :class:`ProbeInterrupted`, once. Inside ``critical()`` (storing a
    finished repetition, writing the state file) the signal is held until the block ends."""

    def __init__(self) -> None:
        self.received: str | None = None
        self._critical = 0
        self._pending = False
        self._raised = False
        self._old: dict[int, Any] = {}
        # The process group of the command running now (the executor reports it): cancel()
        # stops it as Ctrl-C's handler does (through host/run.py's stop_group: SIGINT first),
        # so a cancel does not wait out a long fio run.
        self.child_pgid: int | None = None

    def install(self) -> None:
        # Signal handlers can only be set from the main thread; a TUI worker uses cancel().
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handler)

    def uninstall(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _handler(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        self.received = self.received or name
        if self._raised or self._critical:
            self._pending = not self._raised
            return
        self._raised = True
        raise ProbeInterrupted(name)

    def cancel(self, why: str = "cancelled", grace_s: float = STOP_GRACE_S) -> None:
        """Stop the probe from another thread (the TUI's Cancel): the running command gets
        SIGINT, as the whole process group would from a terminal's Ctrl-C, and the probe
        raises ProbeInterrupted at its next check, so the cleanup is Ctrl-C's own. A group
        still there ``grace_s`` later gets SIGKILL, as host/run.py's stop_group does for a
        signal on the main thread: the probe's thread waits for the command to end, and fio
        has been seen to hang on SIGINT while laying out a file (both its processes asleep
        on a futex for minutes), which left a cancelled probe waiting for ever."""
        self.received = self.received or why
        pgid = self.child_pgid
        if pgid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGINT)
            timer = threading.Timer(grace_s, self._kill_if_still_running, args=(pgid,))
            timer.daemon = True
            timer.start()

    def _kill_if_still_running(self, pgid: int) -> None:
        # Only the same command's group: once the executor reports it gone (child_pgid None
        # or another command's), the id may belong to a new process.
        if self.child_pgid == pgid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)

    def check(self) -> None:
        if self.received and not self._raised:
            self._raised = True
            raise ProbeInterrupted(self.received)

    def defer(self) -> None:
        """From now on signals are only remembered (cleanup is running)."""
        self._raised = True

    @contextlib.contextmanager
    def critical(self) -> Iterator[None]:
        self._critical += 1
        try:
            yield
        finally:
            self._critical -= 1
            if not self._critical and self._pending and not self._raised:
                self._pending = False
                self._raised = True
                raise ProbeInterrupted(self.received or "SIGINT")


class MatrixRun:
    """Runs ``plan`` (see module docstring). Construct, then ``execute()`` once."""

    def __init__(
        self,
        plan: Plan,
        store: Any,
        state_file: StateFile,
        on_progress: Callable[[ProgressEvent], None] | None = None,
        interruptions: Interruptions | None = None,
        sleep: Callable[[float], None] = time.sleep,
        device_check: Callable[[str], str | None] | None = None,
        cell_source: Callable[[Any, set], Any] | None = None,
    ):
        self.plan = plan
        # probe --adaptive: chooses each next cell from what is stored so far (called with
        # the inspected Device and the (cell key, rep) pairs already done; yields Cells).
        # Everything else — state file, storing, interruption, cleanup — is the matrix's own.
        self.cell_source = cell_source
        self.store = store
        self.state_file = state_file
        self.on_progress = on_progress or (lambda e: None)
        self.guard = interruptions or Interruptions()
        self.sleep = sleep
        # Before every cell: has anything else mounted or claimed the device meanwhile?
        self.device_check = device_check
        self.state = ProbeState()
        self.executor = Executor(on_child=self._child, critical=self.guard.critical)
        self.summary = ProbeSummary(scratch=bool(plan.scratch_size_bytes))
        self._cells: list[Cell] = []
        self._formatted: str | None = None  # the device, once a cell has written to it
        self._durations: list[tuple[float, float]] = []  # (estimate, actual) per cell run
        self.state_error: StateFileError | None = None  # the final state write failed

    # ------------------------------------------------------------ state file
    def _save(self) -> None:
        with self.guard.critical():
            self.state_file.save(self.state)

    def _child(self, pid: int | None) -> None:
        self.state.child = ProcessRef.of(pid) if pid else None
        # start_new_session: the child's pid is its process group's id
        self.guard.child_pgid = pid or None
        self._save()

    def _note(self, message: str) -> None:
        self.summary.notes.append(message)
        self.on_progress(
            ProgressEvent("note", self._done_count(), self.summary.total, message=message)
        )

    def _done_count(self) -> int:
        return len(self.summary.outcomes)

    # ------------------------------------------------------------ the run
    def execute(self) -> ProbeSummary:
        t0 = time.monotonic()
        other = live_owner(self.state_file)
        if other is not None:
            raise FsAdvisorError(
                f"another probe (pid {other}) is running with this store "
                f"({self.state_file.path}); wait for it or use another --db"
            )
        stale = cleanup_stale(self.state_file)
        for action in stale.actions:
            self._note(f"cleaned up after an earlier probe: {action}")
        self.state = self.state_file.load()
        if self.state.has_live_resources:
            left = leftovers(self.state, SystemOps())
            if left:
                raise FsAdvisorError(
                    f"an earlier probe left {left[0]}, which could not be "
                    f"undone; fix it by hand (state: {self.state_file.path})"
                )
        self.state.clear_live()
        self.state.owner = ProcessRef.of(os.getpid())
        self.guard.install()
        try:
            try:
                self._save()
                self._run()
            except ProbeInterrupted as e:
                self.summary.interrupted = e.signame
                self._finish_matrix("interrupted")
            except DeviceTaken:
                self._finish_matrix("interrupted")  # --resume continues once it is free
                raise
            except BaseException:
                self._finish_matrix("failed")
                raise
        finally:
            self.guard.defer()
            try:
                self._cleanup()
            finally:
                self.guard.uninstall()
                self.summary.wall_s = time.monotonic() - t0
        if self.state_error is not None:
            raise self.state_error
        self.on_progress(
            ProgressEvent(
                "done",
                self._done_count(),
                self.summary.total,
                status="interrupted" if self.summary.interrupted else "done",
            )
        )
        return self.summary

    def _run(self) -> None:
        plan = self.plan
        scratch = bool(plan.scratch_size_bytes)
        dev = self._attach_scratch() if scratch else str(plan.device)
        # Our own fresh scratch device never holds data; everything else obeys --force,
        # except the very filesystem an unfinished probe of this device made (and recorded).
        own = None if scratch else recorded_signature(self.state, plan.device_key, dev)
        verdict = devmod.safety_verdict(dev, force=plan.force, own_signature=own)
        if not verdict.ok:
            raise DeviceRefused(verdict.reason or f"{dev}: refused")
        dev = verdict.resolved_path or os.path.realpath(dev)
        if verdict.own_signature and own:
            self._note(
                f"the {own.get('TYPE')} signature on {dev} (UUID {own.get('UUID')}) is "
                "the one this probe made before it stopped; formatting it needs no --force"
            )
        info = devmod.inspect(dev, plp=plan.plp)
        self.summary.device, self.summary.device_kind = dev, info.kind
        if info.kind in ("loop", "ram-loop"):
            self._note(
                LOOP_WARNING
                if scratch
                else "loop device: its numbers are not an SSD's (labelled device_kind=loop)"
            )
        try:
            original, available = devmod.read_scheduler(dev)
        except NotSupported:
            # zram and other bio-based devices: nothing to select or restore; such a device
            # behaves as scheduler "none", so only "none" cells run (the others are skipped).
            original, available = None, [devmod.NO_SCHEDULER]
            self._note(
                f"{os.path.basename(dev)} has no selectable I/O scheduler (no "
                f"queue/scheduler): its cells run as scheduler '{devmod.NO_SCHEDULER}'"
            )
        self.state.device, self.state.original_scheduler = dev, original
        self._save()

        meter = self._meter(dev)
        cells = self._cells = plan.cells()
        self.summary.total = len(cells)
        resumed = plan.matrix_id is not None
        abandoned = self.state.matrices.get(plan.device_key)
        if not resumed and abandoned:
            self._note(
                f"the unfinished matrix {abandoned.get('matrix_id')} of this device is "
                "left as it is; this run starts a new one (--resume would have continued it)"
            )
        matrix_id = plan.matrix_id or self.store.start_matrix(plan.to_dict())
        plan.matrix_id = self.summary.matrix_id = matrix_id
        self.state.matrix_id = matrix_id
        entry: dict[str, Any] = {
            "matrix_id": matrix_id,
            "plan": plan.to_dict(),
            "started_at": time.time(),
        }
        if abandoned and isinstance(abandoned.get("own_signature"), dict):
            # Still on the device until this run's first mkfs: a kill before that must not
            # turn it into a stranger's signature.
            entry["own_signature"] = abandoned["own_signature"]
        self.state.matrices[plan.device_key] = entry
        self._save()
        done = (
            {(r["cell_key"], r["rep"]) for r in self.store.runs(matrix_id=matrix_id, status="ok")}
            if resumed
            else set()
        )
        if resumed:
            self._note(
                f"resuming matrix {matrix_id}: {len(done)} of {len(cells)} cells already done"
            )

        mountpoint = tempfile.mkdtemp(prefix="fsadvisor-mnt-")
        self.state.mounts = [{"device": dev, "mountpoint": mountpoint}]
        self._save()
        runner = CellRunner(
            plan=plan,
            device=dev,
            device_info=info,
            mountpoint=mountpoint,
            executor=self.executor,
            meter=meter,
            host=measure.host_info(fio.fio_version()),
            matrix_id=matrix_id,
            sleep=self.sleep,
            hooks=CellHooks(before_mount=lambda d, m: self._record_signature(d)),
            on_sample=self._sample,
        )
        check = self.device_check or devmod.in_use_reason
        if self.cell_source is not None:
            cells = self.cell_source(info, done)
        for cell in cells:
            self.guard.check()
            if (cell.key, cell.rep) in done:
                self._outcome(CellOutcome(cell.key, cell.rep, cell.label, "done-before"))
                continue
            skip = cell.skip_reason or (
                None
                if cell.scheduler in available
                else f"scheduler {cell.scheduler} not available on "
                f"{os.path.basename(dev)} ({', '.join(available)})"
            )
            if skip:
                self._outcome(CellOutcome(cell.key, cell.rep, cell.label, "skipped", skip))
                continue
            # Cells can run for hours: the device could have been mounted, stacked on or
            # claimed since the last one (the first check was before the matrix).
            taken = check(dev)
            if taken:
                self._formatted = None  # someone else's now: not even our wipe touches it
                stored = self.summary.count("ok") + self.summary.count("done-before")
                done_so_far = (
                    "1 cell done so far is" if stored == 1 else f"{stored} cells done so far are"
                )
                raise DeviceTaken(
                    f"probe stopped before cell {cell.label}: {taken}; the "
                    f"{done_so_far} stored, --resume continues"
                )
            self._run_cell(runner, cell)
        self._finish_matrix("done")
        self.state.matrices.pop(plan.device_key, None)
        self._save()

    def _record_signature(self, dev: str) -> None:
        """Right after each mkfs (before the mount): remember the filesystem this probe made,
        so that after a SIGKILL (no in-process wipe) --resume recognises it and needs no
        --force; anything else found there later still does."""
        if self.plan.scratch_size_bytes:
            return  # a fresh scratch device is never checked for signatures
        entry = self.state.matrices.get(self.plan.device_key)
        if entry is None:
            return
        try:
            ident = devmod.signature_identity(dev)
        except FsAdvisorError:
            ident = None
        if ident:
            entry["own_signature"] = {"device": dev, "identity": ident, "recorded_at": time.time()}
        else:
            entry.pop("own_signature", None)
        self._save()

    def _run_cell(self, runner: CellRunner, cell: Cell) -> None:
        self.state.current_cell = cell.label
        self._save()
        self.on_progress(
            ProgressEvent(
                "cell-start",
                self._done_count(),
                self.summary.total,
                cell=cell.label,
                eta_s=self._eta(cell, include=True),
                device=runner.device,
            )
        )
        t0 = time.monotonic()
        self._formatted = runner.device
        try:
            record = runner.run(cell, on_step=lambda s: self.guard.check())
            # A cancel that stopped the last command (cancel() SIGINTs it) cut its
            # measurement short: the cell is incomplete, never stored as ok or failed.
            self.guard.check()
        except ProbeInterrupted as e:
            self._store_incomplete(runner, cell, e.signame, time.monotonic() - t0)
            raise
        with self.guard.critical():
            run_id = self.store.record_run(record)
            self.state.current_cell = None
            self.state_file.save(self.state)
        self._durations.append((self.plan.cell_estimate_s(cell), record.wall_s))
        metrics = record.metrics or {}
        window = metrics.get("runtime_s") if record.status == "ok" else None
        steps = metrics.get(STEP_SECONDS)
        self._outcome(
            CellOutcome(
                cell.key,
                cell.rep,
                cell.label,
                record.status,
                record.error,
                record.flags,
                run_id,
                record.wall_s,
                dict(steps) if isinstance(steps, dict) else {},
                float(window) if isinstance(window, (int, float)) and window else None,
            ),
            record,
            runner.device,
        )
        if runner.fatal:
            raise FsAdvisorError(f"probe stopped: {runner.fatal}")

    def _sample(self, s: LiveSample) -> None:
        """From the cell's sampling thread: a live reading of the running cell."""
        self.on_progress(
            ProgressEvent(
                "sample",
                self._done_count(),
                self.summary.total,
                cell=self.state.current_cell,
                device=self.state.device,
                iops=s.rate.iops,
                bw_bytes_s=s.rate.bw_bytes_s,
                sample_source=s.stat_file,
                watts=s.watts,
                energy_source=s.energy_source,
                energy_scope=s.energy_scope,
            )
        )

    def _store_incomplete(
        self, runner: CellRunner, cell: Cell, signame: str, wall_s: float
    ) -> None:
        rec = RunRecord(
            cell_key=cell.key,
            device=runner.device_info,
            config=cell.config,
            workload_name=cell.workload.name,
            workload=cell.workload.workload,
            rep=cell.rep,
            status="incomplete",
            started_at=time.time() - wall_s,
            wall_s=wall_s,
            error=f"interrupted by {signame}",
            host=runner.host,
            matrix_id=runner.matrix_id,
            profiles=self.plan.profiles_of(cell.workload.name),
        )
        try:
            run_id = self.store.record_run(rec)
        except FsAdvisorError:
            run_id = None
        self.state.current_cell = None
        self._outcome(
            CellOutcome(cell.key, cell.rep, cell.label, "incomplete", rec.error, (), run_id, wall_s)
        )

    def _outcome(
        self, o: CellOutcome, record: RunRecord | None = None, device: str | None = None
    ) -> None:
        self.summary.outcomes.append(o)
        iops = watts = source = scope = None
        if record is not None and record.status == "ok":
            measured = record.metrics.get("iops")
            iops = measured if isinstance(measured, (int, float)) else None
            if record.energy is not None:
                watts, source = record.energy.avg_watts, record.energy.source
                scope = record.energy.scope
        self.on_progress(
            ProgressEvent(
                "cell-end",
                self._done_count(),
                self.summary.total,
                cell=o.label,
                status=o.status,
                eta_s=self._eta(None),
                message=o.error or "",
                device=device,
                iops=iops,
                watts=watts,
                energy_source=source,
                energy_scope=scope,
            )
        )

    def _eta(self, current: Cell | None, include: bool = False) -> float | None:
        """Remaining plan estimate, scaled by how long cells actually took so far."""
        done = {(o.key, o.rep) for o in self.summary.outcomes}
        remaining = sum(
            self.plan.cell_estimate_s(c)
            for c in self._cells
            if (c.key, c.rep) not in done and not c.skip_reason
        )
        if not include and current is not None:
            remaining -= self.plan.cell_estimate_s(current)
        est = sum(e for e, _ in self._durations)
        ratio = (sum(a for _, a in self._durations) / est) if est > 0 else 1.0
        return max(0.0, remaining * ratio)

    def _finish_matrix(self, status: str) -> None:
        if self.plan.matrix_id:
            with contextlib.suppress(FsAdvisorError):
                self.store.finish_matrix(self.plan.matrix_id, status)

    # ------------------------------------------------------------ energy
    def _meter(self, dev: str):
        e = self.plan.energy
        opts: dict[str, Any] = {}
        if e.get("meter_log"):
            opts["meter_log"] = e["meter_log"]
            opts["clock_offset_s"] = float(e.get("clock_offset_s") or 0.0)
        if e.get("idle_watts") is not None:
            opts["idle_watts"] = e["idle_watts"]
        meter = energy.choose_meter(e.get("source") or "auto", device=dev, **opts)
        if e.get("idle_watts") is None and e.get("idle_seconds"):
            self._note(f"measuring idle power for {e['idle_seconds']:g} s")
            meter.idle_watts = energy.measure_idle(
                meter, float(e["idle_seconds"]), sleep=self.sleep
            )
        self.summary.energy = {
            "source": meter.name,
            "scope": meter.scope,
            "why": meter.why,
            "accuracy": meter.accuracy,
            "idle_watts": meter.idle_watts,
        }
        if meter.name == "estimate":
            self._note(
                "energy: ESTIMATE from a power model, not a measurement "
                f"({meter.why}); ops/joule figures are labelled as such"
            )
        return meter

    # ------------------------------------------------------------ scratch and cleanup
    def _attach_scratch(self) -> str:
        if why := scratch_space_problem(self.plan):
            raise FsAdvisorError(why)
        fd, path = tempfile.mkstemp(
            prefix="fsadvisor-scratch-", suffix=".img", dir=self.plan.scratch_dir
        )
        os.close(fd)
        # Written before the device exists: a kill between attach and the next save still
        # leaves enough behind (the file) for the cleanup to find the loop device by it.
        self.state.scratch = {"backing_file": path, "loop_device": None}
        self._save()
        loopdev.create_backing_file(path, int(self.plan.scratch_size_bytes or 0))
        try:
            dev = loopdev.attach(path, direct_io=True)
        except loopdev.LoopError as e:
            raise FsAdvisorError(f"cannot create the scratch loop device: {e}") from None
        self.state.scratch["loop_device"] = dev
        self.state.device = dev
        self._save()
        return dev

    def _cleanup(self) -> None:
        ops = SystemOps()
        try:
            actions = undo(self.state, ops)
            if self._formatted and not self.plan.scratch_size_bytes:
                actions += self._wipe_own_signature(self._formatted)
        except Exception as e:  # cleanup must reach the state file; report what failed
            actions = [f"cleanup error: {' '.join(str(e).split())}"]
        left = leftovers(self.state, ops)
        actions += [f"still left: {x}; the next probe will retry" for x in left]
        self.summary.cleanup = actions
        for a in actions:
            self.on_progress(
                ProgressEvent("cleanup", self._done_count(), self.summary.total, message=a)
            )
        if not left:
            # Otherwise the state keeps naming them (and this soon-dead owner), so the next
            # invocation's stale cleanup tries again.
            self.state.clear_live()
        try:
            self.state_file.save(self.state)
        except StateFileError as e:
            # Everything is undone already; the error must not replace the one that stopped
            # the run (a full disk usually fails the store first): it is raised after the
            # cleanup only when nothing else is on its way (see execute).
            self.state_error = e
            self.summary.cleanup.append(str(e))
            self.on_progress(
                ProgressEvent("cleanup", self._done_count(), self.summary.total, message=str(e))
            )

    def _wipe_own_signature(self, dev: str) -> list[str]:
        """Leave the device as empty as the probe was allowed to make it: the signature of
        the last cell's filesystem is ours, and without it a rerun or --resume needs no
        --force. Only in-process, where we know the device is still the one we formatted
        (a later invocation cleaning up after a kill never wipes anything)."""
        if devmod.exclusive_guard(dev) is not None:
            return [f"left {dev} as it is: it is busy"]
        result = self.executor.run(WIPE_ARGV + [dev], check=False, timeout_s=120)
        if not result.ok:
            return [
                f"could not wipe the probe's filesystem signature from {dev}: "
                f"{result.one_line_error()}"
            ]
        entry = self.state.matrices.get(self.plan.device_key)
        if entry:
            entry.pop("own_signature", None)
        return [f"wiped the probe's last filesystem signature from {dev}"]
