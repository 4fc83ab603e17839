"""The probe's state file: what a running probe has changed on the machine, so that anyone
can put it back.

A probe mounts filesystems in private temporary directories, switches the device's I/O
scheduler, may attach a scratch loop device over a file and runs fio in its own process
group. Ctrl-C and SIGTERM are handled in-process, but SIGKILL, a power cut or an OOM kill
are not: the next ``fsadvisor probe`` reads this file, sees that its owner is gone
(pid *and* process start time, so a recycled pid does not fool it), and undoes each item.
The file also remembers the unfinished matrix of each device, which is what ``--resume``
continues.

It lives next to the store (``<db>.probe-state.json``) and is replaced atomically (write a
temporary file, fsync, rename), so a kill in the middle of a write leaves the old or the
new version, never half of one. Everything the cleanup does goes through :class:`HostOps`,
which the unit tests replace with a fake.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fsadvisor.domain import SCHEDULERS
from fsadvisor.errors import FsAdvisorError, one_line
from fsadvisor.host import device as devmod
from fsadvisor.host import loopdev
from fsadvisor.host.device import parse_mounts
from fsadvisor.host.run import group_alive
from fsadvisor.host.run import run
from fsadvisor.host.trust import untrusted_dir

STATE_VERSION = 1
UMOUNT_TIMEOUT_S = 120.0  # as a cell's own umount (probe/cell.py)
SUFFIX = ".probe-state.json"
# What a probe creates (tempfile names in run.py): the cleanup touches nothing named otherwise.
MOUNT_PREFIX = "fsadvisor-mnt-"
SCRATCH_PREFIX, SCRATCH_SUFFIX = "fsadvisor-scratch-", ".img"
# A state file is a few KB (one plan per unfinished matrix); anything far larger is not ours.
MAX_STATE_BYTES = 16 << 20


def state_path_for(db_path: str | os.PathLike) -> Path:
    return Path(f"{os.fspath(db_path)}{SUFFIX}")


def _stat_after_comm(pid: int, proc_root: str = "/proc") -> list[str] | None:
    """Fields 3.. of /proc/PID/stat (state, ppid, ...); None when no such process exists.
    The command name (field 2) may contain spaces and parentheses: split after the last ")"."""
    try:
        text = Path(proc_root, str(pid), "stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[-1].split()


def _ticks(rest: list[str] | None) -> int | None:
    try:
        return int(rest[19]) if rest else None
    except (IndexError, ValueError):
        return None


def process_start_ticks(pid: int, proc_root: str = "/proc") -> int | None:
    """Field 22 of /proc/PID/stat (start time in clock ticks): with the pid it identifies a
    process for its whole life; None when no such process exists."""
    return _ticks(_stat_after_comm(pid, proc_root))


@dataclass
class ProcessRef:
    pid: int
    start_ticks: int | None

    @staticmethod
    def of(pid: int, proc_root: str = "/proc") -> "ProcessRef":
        return ProcessRef(pid, process_start_ticks(pid, proc_root))

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "start_ticks": self.start_ticks}

    @staticmethod
    def from_dict(d: Any) -> "ProcessRef | None":
        if not isinstance(d, dict) or not isinstance(d.get("pid"), int):
            return None
        st = d.get("start_ticks")
        return ProcessRef(d["pid"], st if isinstance(st, int) else None)


@dataclass
class ProbeState:
    """The live part (owner, mounts, scheduler, scratch, child) is cleared when a probe ends
    cleanly; ``matrices`` (device key -> {"matrix_id", "plan", "own_signature"}) outlives it
    for --resume. ``own_signature`` ({"device", "identity": blkid TYPE/UUID}) is the
    filesystem the probe's own last mkfs left on a user's device: after a SIGKILL nobody
    wipes it, and without the record --resume would ask for --force."""

    owner: ProcessRef | None = None
    matrix_id: str | None = None
    device: str | None = None
    original_scheduler: str | None = None
    mounts: list[dict[str, str]] = field(default_factory=list)  # {"device", "mountpoint"}
    scratch: dict[str, Any] | None = None  # {"backing_file", "loop_device" | None}
    child: ProcessRef | None = None  # fio/db_bench process group leader
    current_cell: str | None = None
    matrices: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def has_live_resources(self) -> bool:
        return bool(
            self.mounts or self.scratch or self.child or self.original_scheduler or self.owner
        )

    def clear_live(self) -> None:
        self.owner = None
        self.matrix_id = None
        self.device = None
        self.original_scheduler = None
        self.mounts = []
        self.scratch = None
        self.child = None
        self.current_cell = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "owner": self.owner.to_dict() if self.owner else None,
            "matrix_id": self.matrix_id,
            "device": self.device,
            "original_scheduler": self.original_scheduler,
            "mounts": list(self.mounts),
            "scratch": dict(self.scratch) if self.scratch else None,
            "child": self.child.to_dict() if self.child else None,
            "current_cell": self.current_cell,
            "matrices": self.matrices,
        }

    @staticmethod
    def from_dict(d: Any) -> "ProbeState":
        if not isinstance(d, dict) or d.get("version") != STATE_VERSION:
            raise StateFileError(
                "unrecognised probe state file (version "
                f"{d.get('version') if isinstance(d, dict) else '?'})"
            )
        raw_mounts = d.get("mounts")
        mounts = [
            m
            for m in (raw_mounts if isinstance(raw_mounts, list) else [])
            if isinstance(m, dict) and isinstance(m.get("mountpoint"), str)
        ]
        scratch = d.get("scratch") if isinstance(d.get("scratch"), dict) else None
        raw_matrices = d.get("matrices")
        matrices = raw_matrices if isinstance(raw_matrices, dict) else {}
        return ProbeState(
            owner=ProcessRef.from_dict(d.get("owner")),
            matrix_id=d.get("matrix_id") if isinstance(d.get("matrix_id"), str) else None,
            device=d.get("device") if isinstance(d.get("device"), str) else None,
            original_scheduler=(
                d.get("original_scheduler")
                if isinstance(d.get("original_scheduler"), str)
                else None
            ),
            mounts=mounts,
            scratch=scratch,
            child=ProcessRef.from_dict(d.get("child")),
            current_cell=d.get("current_cell") if isinstance(d.get("current_cell"), str) else None,
            matrices={k: v for k, v in matrices.items() if isinstance(v, dict)},
        )


def recorded_signature(state: ProbeState, device_key: str, device: str) -> dict[str, str] | None:
    """The filesystem identity (blkid TYPE/UUID) the unfinished probe of ``device_key``
    recorded right after its own last mkfs, if it was recorded for this same device."""
    entry = state.matrices.get(device_key)
    rec = entry.get("own_signature") if isinstance(entry, dict) else None
    if not isinstance(rec, dict) or not isinstance(rec.get("device"), str):
        return None
    ident = rec.get("identity")
    if (
        not isinstance(ident, dict)
        or not ident
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in ident.items())
    ):
        return None
    if os.path.realpath(rec["device"]) != os.path.realpath(device):
        return None
    return dict(ident)


class StateFileError(FsAdvisorError):
    pass


class StateFile:
    """Load/save a :class:`ProbeState` at ``path``; saving an empty state removes the file."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> ProbeState:
        """The state, only from a file this user wrote where nobody else can replace it (see
        :func:`untrusted`): a root probe acts on what the file names -- stops processes,
        unmounts, deletes -- so a file anyone could have written is refused, not read."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            return ProbeState()
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise StateFileError(
                    f"probe state {self.path} is a symbolic link; a probe "
                    "trusts only the file it wrote (remove it)"
                ) from None
            raise StateFileError(f"cannot read probe state {self.path}: {e.strerror}") from None
        try:
            why = untrusted(self.path, os.fstat(fd))
            if why:
                raise StateFileError(why)
            with os.fdopen(fd, "rb", closefd=False) as f:
                raw = f.read(MAX_STATE_BYTES + 1)
        except OSError as e:
            raise StateFileError(f"cannot read probe state {self.path}: {e.strerror}") from None
        finally:
            os.close(fd)
        if len(raw) > MAX_STATE_BYTES:
            raise StateFileError(
                f"probe state {self.path} is larger than "
                f"{MAX_STATE_BYTES >> 20} MiB: not a probe's; inspect it"
            )
        try:
            text = raw.decode("utf-8")
            return ProbeState.from_dict(json.loads(text))
        except ValueError:
            raise StateFileError(
                f"probe state {self.path} is not JSON; inspect it, clean up by hand and delete it"
            ) from None

    def save(self, state: ProbeState) -> None:
        """Atomically: the file holds the old state or the new one, never a mix (temp file,
        fsync, rename, fsync of the directory).

        A full disk (ENOSPC, EDQUOT) leaves the old file as it was while anything is still
        live: it names at least what was live before, which the cleanup checks before it
        touches anything. Once nothing is live, the old file only names what this probe has
        undone, so it is removed (freeing the blocks the new one needs) and the new one
        written again; if even that fails, no file is left, which reads as "nothing to clean
        up" (only --resume of the unfinished matrix is lost, and the error says so)."""
        if not state.has_live_resources and not state.matrices:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        data = json.dumps(state.to_dict(), indent=1, sort_keys=True)
        try:
            self._write(data)
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise StateFileError(
                    f"cannot write probe state {self.path}: {e.strerror or e}"
                ) from None
            if state.has_live_resources:
                raise StateFileError(
                    f"disk full: cannot update the probe state {self.path} "
                    f"({e.strerror}); free some space"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            try:
                self._write(data)
            except OSError as e2:
                raise StateFileError(
                    f"disk full: the probe cleaned up, but cannot record its unfinished matrix "
                    f"for --resume in {self.path} ({e2.strerror}); free some space"
                ) from None

    def _write(self, data: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        why = untrusted_dir(self.path.parent)
        if why:
            raise StateFileError(f"probe state {self.path}: {why}")
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        # The rename itself is durable only once the directory is synced.
        with contextlib.suppress(OSError):
            dfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)


def untrusted(path: Path, st: os.stat_result) -> str | None:
    """Why the state file with status ``st`` must not be acted on (None: it may): it must be
    a regular file of this user, writable by no one else, in a directory no one else can
    replace it in."""
    where = f"probe state {path}"
    if not stat.S_ISREG(st.st_mode):
        return f"{where} is not a regular file; a probe trusts only the file it wrote"
    if st.st_uid != os.geteuid():
        return (
            f"{where} belongs to uid {st.st_uid}, not to you (uid {os.geteuid()}); a probe "
            "acts only on a state file it wrote itself: remove it if it is not yours"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"{where} is writable by others (mode {stat.S_IMODE(st.st_mode):o}); a probe "
            "acts only on a state file no one else could have changed: remove it"
        )
    why = untrusted_dir(path.parent)
    return f"{where}: {why}" if why else None


def ours_mountpoint(path: object) -> bool:
    """A mount point a probe made: an absolute, normalised path to a directory named by
    tempfile.mkdtemp(prefix=MOUNT_PREFIX). Nothing else is ever unmounted or removed."""
    return (
        isinstance(path, str)
        and os.path.isabs(path)
        and os.path.normpath(path) == path
        and os.path.basename(path).startswith(MOUNT_PREFIX)
    )


def ours_scratch_file(path: object) -> bool:
    """A scratch backing file a probe made (tempfile.mkstemp(prefix=SCRATCH_PREFIX,
    suffix=SCRATCH_SUFFIX)): named so, absolute and normalised, and -- while it exists -- a
    regular file of this user (not a symbolic link to someone's data)."""
    if not (isinstance(path, str) and os.path.isabs(path) and os.path.normpath(path) == path):
        return False
    name = os.path.basename(path)
    if not (name.startswith(SCRATCH_PREFIX) and name.endswith(SCRATCH_SUFFIX)):
        return False
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True  # already gone: only a loop device still serving it may be detached
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()


# ---------------------------------------------------------------- undoing what a probe did

# What a probe runs against a mount point or device; only these are ever stopped by name.
BENCHMARK_TOOLS = frozenset({"fio", "db_bench", "sysbench"})
# Every command a probe step runs in its own process group (probe/cell.py: discard, wipe,
# mkfs.*, mount, the benchmark, umount): the recorded child is one of these or is left alone.
PROBE_COMMANDS = BENCHMARK_TOOLS | {"blkdiscard", "wipefs", "mount", "umount"}


class HostOps(Protocol):
    def process_alive(self, ref: ProcessRef) -> bool: ...
    def stop_process_group(self, ref: ProcessRef) -> None: ...
    def benchmarks_using(self, paths: list[str]) -> list[ProcessRef]: ...
    def is_mounted(self, mountpoint: str) -> bool: ...
    def umount(self, mountpoint: str) -> str | None: ...
    def remove_dir(self, path: str) -> None: ...
    def current_scheduler(self, device: str) -> str | None: ...
    def set_scheduler(self, device: str, name: str) -> None: ...
    def loop_backing_file(self, loop_device: str) -> str | None: ...
    def loops_of(self, backing_file: str) -> list[str]: ...
    def detach_loop(self, loop_device: str) -> None: ...
    def remove_file(self, path: str) -> None: ...


def _same_file(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    # /sys/block/loopN/loop/backing_file appends " (deleted)" once the file is unlinked.
    a = a.removesuffix(" (deleted)")
    return os.path.realpath(a) == os.path.realpath(b)


def _under(value: str, path: str) -> bool:
    """``value`` is ``path`` or lies beneath it: /dev/loop1 is not /dev/loop10 or
    /dev/loop1p1, and /tmp/fsadvisor-mnt-abc is not /tmp/fsadvisor-mnt-abcd."""
    root = path.rstrip("/")
    if not root:  # "/" itself: never one of ours, and everything would lie beneath it
        return value == path
    return value.rstrip("/") == root or value.startswith(root + "/")


def _arg_values(arg: str) -> list[str]:
    """The paths an argument can name: itself, and for ``--opt=VALUE`` (fio's --filename=,
    --directory=, db_bench's --db=) the value, split at fio's ':' file separator."""
    out = [arg]
    if arg.startswith("-") and "=" in arg:
        value = arg.split("=", 1)[1]
        out.append(value)
        out += value.split(":")
    return out


def process_uses(
    argv: list[str], cwd: str | None, environ: dict[str, str], paths: list[str]
) -> bool:
    """Whether a benchmark with this command line, working directory and environment works
    on one of ``paths`` (our mount points or scratch loop device). Whole path components
    only: a substring test once matched someone else's fio on /dev/loop10 for our
    /dev/loop1. ``TARGET`` is how runner/*.fio job files get their target (cell.py)."""
    values = [v for a in argv[1:] for v in _arg_values(a)]
    if environ.get("TARGET"):
        values.append(environ["TARGET"])
    for p in paths:
        if not p:
            continue
        if any(_under(v, p) for v in values):
            return True
        if cwd and _under(cwd, p):
            return True
    return False


def undo(state: ProbeState, ops: HostOps) -> list[str]:
    """Put back everything ``state`` says a probe changed; returns what was done, one line
    each. Every item is checked before it is touched: a loop device is detached only while it
    still serves our backing file (after a crash its number may belong to someone else by
    now), a mount point is unmounted only while it is mounted, a scheduler is restored only
    on the device it was changed on."""
    done: list[str] = []
    # Only what a probe makes is ever touched, whatever the file says: the recorded child
    # with its start time (a pid alone may be anyone's by now; SystemOps also checks it runs
    # one of the probe's commands), mount points and a scratch file named as a probe names
    # them (ours_mountpoint, ours_scratch_file).
    if state.child and state.child.start_ticks is not None and ops.process_alive(state.child):
        ops.stop_process_group(state.child)
        done.append(f"stopped the benchmark still running as process group {state.child.pid}")
    mounts = [m for m in state.mounts if ours_mountpoint(m.get("mountpoint"))]
    # A benchmark started in the instant before a kill is not in the file yet: find it by
    # the mount point in its arguments or working directory (unique random names), or by
    # the scratch loop device while that still serves our file.
    paths = [m["mountpoint"] for m in mounts]
    scratch = state.scratch or {}
    backing = scratch.get("backing_file")
    if backing is not None and not ours_scratch_file(backing):
        backing = None
    loop = scratch.get("loop_device") if backing else None
    if not (isinstance(loop, str) and loop.startswith("/dev/loop")):
        loop = None
    if loop and _same_file(ops.loop_backing_file(loop), backing):
        paths.append(loop)
    for ref in ops.benchmarks_using(paths) if paths else []:
        ops.stop_process_group(ref)
        done.append(f"stopped a benchmark (pid {ref.pid}) still using {', '.join(paths)}")
    for m in reversed(mounts):
        mnt = m["mountpoint"]
        if ops.is_mounted(mnt):
            err = ops.umount(mnt)
            done.append(f"unmounted {mnt}" if err is None else f"could not unmount {mnt}: {err}")
        ops.remove_dir(mnt)
    device_is_ours = True
    if scratch and state.device and state.device == loop:
        device_is_ours = _same_file(ops.loop_backing_file(loop), backing)
    if (
        state.original_scheduler in SCHEDULERS
        and isinstance(state.device, str)
        and state.device.startswith("/dev/")
        and device_is_ours
    ):
        now = ops.current_scheduler(state.device)
        if now is not None and now != state.original_scheduler:
            try:
                ops.set_scheduler(state.device, state.original_scheduler)
                done.append(
                    f"restored the I/O scheduler of {state.device} to {state.original_scheduler}"
                )
            except FsAdvisorError as e:
                done.append(f"could not restore the I/O scheduler of {state.device}: {e}")
    if backing:
        loops = [loop] if loop and _same_file(ops.loop_backing_file(loop), backing) else []
        loops += [d for d in ops.loops_of(backing) if d not in loops]
        for dev in loops:
            ops.detach_loop(dev)
            done.append(f"detached scratch loop device {dev}")
        if os.path.exists(backing):
            ops.remove_file(backing)
            done.append(f"deleted scratch file {backing}")
    return done


def leftovers(state: ProbeState, ops: HostOps) -> list[str]:
    """What ``undo`` could not put back: a mount still mounted, a scratch loop device still
    attached to our file, the file itself, a benchmark still running."""
    out = [
        f"{m['mountpoint']} is still mounted"
        for m in state.mounts
        if ours_mountpoint(m.get("mountpoint")) and ops.is_mounted(m["mountpoint"])
    ]
    backing = (state.scratch or {}).get("backing_file")
    if backing and ours_scratch_file(backing):
        out += [f"loop device {d} is still attached to {backing}" for d in ops.loops_of(backing)]
        if os.path.exists(backing):
            out.append(f"scratch file {backing} still exists")
    if state.child and state.child.start_ticks is not None and ops.process_alive(state.child):
        out.append(f"process group {state.child.pid} is still running")
    return out


class SystemOps:
    """The real :class:`HostOps`: argument lists only. ``proc_root`` lets the tests point the
    process scan at a fake process table."""

    def __init__(self, proc_root: str = "/proc"):
        self.proc_root = proc_root

    def process_alive(self, ref: ProcessRef) -> bool:
        # A zombie is not alive: it holds no mount, file or device, and only its parent (or
        # init, for the orphan of a killed probe) can reap it, whenever that parent gets to it.
        rest = _stat_after_comm(ref.pid, self.proc_root)
        ticks = _ticks(rest)
        return (
            rest is not None
            and ticks is not None
            and (ref.start_ticks is None or ticks == ref.start_ticks)
            and rest[0] != "Z"
        )

    def stop_process_group(self, ref: ProcessRef) -> None:
        # Only a process running one of the probe's own commands, checked now: a state file
        # names a pid, and the cleanup must never signal anything else.
        if not self._runs_probe_command(ref.pid):
            return
        # fio stops its jobs cleanly on SIGINT; whatever is left after a few seconds is killed.
        try:
            pgid = os.getpgid(ref.pid)
        except ProcessLookupError:
            return
        if pgid == os.getpgid(0):  # never our own group: only that process
            with contextlib.suppress(ProcessLookupError):
                os.kill(ref.pid, signal.SIGKILL)
            return
        for sig, wait_s in ((signal.SIGINT, 5.0), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                if not self._group_alive(pgid):
                    return
                time.sleep(0.05)

    def _runs_probe_command(self, pid: int) -> bool:
        try:
            argv0 = Path(self.proc_root, str(pid), "cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            return False
        name = os.path.basename(argv0.decode(errors="replace"))
        return name in PROBE_COMMANDS or name.startswith("mkfs.")

    def benchmarks_using(self, paths: list[str]) -> list[ProcessRef]:
        out = []
        for d in Path(self.proc_root).iterdir():
            if not d.name.isdigit() or int(d.name) == os.getpid():
                continue
            try:
                argv = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            args = [a.decode(errors="replace") for a in argv if a]
            if not args or os.path.basename(args[0]) not in BENCHMARK_TOOLS:
                continue
            try:
                cwd: str | None = os.readlink(d / "cwd")
            except OSError:
                cwd = None
            environ: dict[str, str] = {}
            with contextlib.suppress(OSError):
                for item in (d / "environ").read_bytes().split(b"\0"):
                    k, sep, v = item.decode(errors="replace").partition("=")
                    if sep:
                        environ[k] = v
            if process_uses(args, cwd, environ, paths):
                out.append(ProcessRef.of(int(d.name), self.proc_root))
        return out

    @staticmethod
    def _group_alive(pgid: int) -> bool:
        return group_alive(pgid)

    def is_mounted(self, mountpoint: str) -> bool:
        try:
            mounts = parse_mounts(Path("/proc/self/mounts").read_text())
        except OSError:
            return False
        real = os.path.realpath(mountpoint)
        return any(os.path.realpath(m) == real for _, m in mounts)

    def umount(self, mountpoint: str) -> str | None:
        err = ""
        # A benchmark that was just killed may hold the filesystem for a moment.
        for _ in range(10):
            proc = run(["umount", mountpoint], timeout_s=UMOUNT_TIMEOUT_S)
            if proc.returncode == 0 or not self.is_mounted(mountpoint):
                return None
            err = (proc.stderr or proc.stdout).strip()
            time.sleep(0.3)
        proc = run(["umount", "-l", mountpoint], timeout_s=UMOUNT_TIMEOUT_S)
        if proc.returncode == 0:
            return None
        return one_line(err or proc.stderr) or f"umount exit {proc.returncode}"

    def remove_dir(self, path: str) -> None:
        with contextlib.suppress(OSError):
            os.rmdir(path)

    def current_scheduler(self, device: str) -> str | None:
        try:
            return devmod.read_scheduler(device)[0]
        except FsAdvisorError:
            return None

    def set_scheduler(self, device: str, name: str) -> None:
        devmod.set_scheduler(device, name)

    def loop_backing_file(self, loop_device: str) -> str | None:
        return loopdev.backing_file(loop_device)

    def loops_of(self, backing_file: str) -> list[str]:
        if not os.path.exists(backing_file):
            return []
        proc = run(["losetup", "-n", "-O", "NAME", "-j", backing_file], timeout_s=UMOUNT_TIMEOUT_S)
        return [line.strip() for line in proc.stdout.splitlines() if line.strip()]

    def detach_loop(self, loop_device: str) -> None:
        loopdev.detach(loop_device)

    def remove_file(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


@dataclass
class CleanupReport:
    """What ``cleanup_stale`` found: the actions taken, and the cell a dead probe was running
    (it was never stored as a result)."""

    actions: list[str] = field(default_factory=list)
    matrix_id: str | None = None
    interrupted_cell: str | None = None
    owner_pid: int | None = None

    @property
    def cleaned(self) -> bool:
        return self.owner_pid is not None


def cleanup_stale(
    state_file: StateFile, ops: HostOps | None = None, me: int | None = None
) -> CleanupReport:
    """If the state file names a probe that is no longer running, undo what it left behind
    and keep only its resume information. A live owner (another probe) is left alone."""
    ops = ops or SystemOps()
    if not state_file.exists():
        return CleanupReport()
    state = state_file.load()
    if not state.has_live_resources:
        return CleanupReport()
    owner = state.owner
    me = os.getpid() if me is None else me
    if owner is not None and owner.pid != me and ops.process_alive(owner):
        return CleanupReport()
    report = CleanupReport(
        matrix_id=state.matrix_id,
        interrupted_cell=state.current_cell,
        owner_pid=owner.pid if owner else -1,
    )
    report.actions = undo(state, ops)
    left = leftovers(state, ops)
    report.actions += [f"still left: {x}" for x in left]
    if left:
        # Keep naming them; mark the file as ours no more, so the next run retries.
        state.owner = ProcessRef(-1, None)
    else:
        state.clear_live()
    state_file.save(state)
    return report


def live_owner(state_file: StateFile, ops: HostOps | None = None) -> int | None:
    """The pid of another probe that is running with this state file, if any."""
    ops = ops or SystemOps()
    state = state_file.load()
    if state.owner and state.owner.pid != os.getpid() and ops.process_alive(state.owner):
        return state.owner.pid
    return None
