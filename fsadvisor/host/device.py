"""The target device: what it is (discovery) and whether it may be formatted (safety verdict).

Probing runs mkfs on the device, so the verdict is the one place that stands between a typo
and someone's data. It fails closed: a missing tool, an unreadable answer or a timeout is a
refusal, never a guess. Every check has its own one-line reason, and the order of the checks
puts the gravest reason first (the disk under ``/`` before "has a signature").

Discovery (``inspect``) is read-only: lsblk JSON, sysfs attributes, and ``nvme id-ctrl`` when
nvme-cli and an NVMe device are present. Everything external is an argument list with a
timeout; sysfs, /proc and the tool search path are injectable (``Host``) so tests can point
them at fake trees (no device-mapper/md here to create real holders; domain notes §6).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fsadvisor.domain import Device, is_plp
from fsadvisor.errors import ConfigError, DeviceRefused, NotSupported, one_line
from fsadvisor.host.run import CommandFailed, CommandResult, CommandTimedOut, run
from fsadvisor.host import spec as _spec
from fsadvisor.host.spec import control_character_refusal

# The device kinds, the --device spec parser and the control-character check live in
# host/spec.py (a `recommend` for a kind:size spec needs nothing else of this module);
# they are this module's names too.
DEVICE_KINDS, MAX_SPEC_BYTES = _spec.DEVICE_KINDS, _spec.MAX_SPEC_BYTES
LSBLK_COLUMNS = (
    "NAME,PATH,TYPE,SIZE,RO,MOUNTPOINTS,FSTYPE,PKNAME,MODEL,SERIAL,WWN,ROTA,LOG-SEC,REV,TRAN"
)
# Filesystems that keep their files in RAM: a loop device over one of their files is ram-loop.
RAM_FILESYSTEMS = ("tmpfs", "ramfs")
# /sys/block/X/stat field names in kernel order (Documentation/block/stat.rst); ticks are ms.
# Kernels before 4.18 have 11 fields, before 5.5 15, since then 17 (17 here, domain notes §5).
STAT_FIELDS = (
    "read_ios",
    "read_merges",
    "read_sectors",
    "read_ticks_ms",
    "write_ios",
    "write_merges",
    "write_sectors",
    "write_ticks_ms",
    "in_flight",
    "io_ticks_ms",
    "time_in_queue_ms",
    "discard_ios",
    "discard_merges",
    "discard_sectors",
    "discard_ticks_ms",
    "flush_ios",
    "flush_ticks_ms",
)
ROOT_HINT = "probing needs root (run with sudo); --dry-run works without it"
# Filesystems whose disk must never be probed: the running system and its boot files.
PROTECTED_MOUNTPOINTS = ("/", "/boot", "/boot/efi")


@dataclass(frozen=True)
class Host:
    """Where facts come from. ``tool_path`` None: $PATH plus the sbin directories, because
    blkid/wipefs live in /usr/sbin, which a sudo-less PATH often lacks."""

    sys_root: str = "/sys"
    proc_root: str = "/proc"
    tool_path: str | None = None
    timeout_s: float = 10.0


HOST = Host()


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str | None
    resolved_path: str | None
    needs_force: bool = False
    signatures: list[str] = field(default_factory=list)
    # The only signature found is the one a probe of this device recorded after its own
    # mkfs (see signature_identity): it needed no --force.
    own_signature: bool = False


# ---------------------------------------------------------------- running tools


def _which(tool: str, host: Host) -> str | None:
    path = host.tool_path
    if path is None:
        path = os.pathsep.join(
            [os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        )
    return shutil.which(tool, path=path)


def run_tool(argv: list[str], host: Host = HOST) -> CommandResult:
    """Run ``argv`` (never a shell). A missing tool or a timeout is a refusal: without the
    tool's answer the device cannot be judged."""
    exe = _which(argv[0], host)
    if exe is None:
        raise DeviceRefused(
            f"{argv[0]} not found: cannot check the device safely (install util-linux)"
        )
    try:
        return run([exe, *argv[1:]], timeout_s=host.timeout_s)
    except CommandTimedOut:
        raise DeviceRefused(
            f"{argv[0]} timed out after {host.timeout_s:g}s: cannot check the device"
        ) from None
    except CommandFailed as e:
        raise DeviceRefused(f"cannot run {argv[0]}: {e.reason}") from None


def _failed(proc: CommandResult, what: str) -> DeviceRefused:
    msg = one_line(proc.stderr or proc.stdout or f"exit status {proc.returncode}", 160)
    return DeviceRefused(f"{what} failed: {msg}")


# ---------------------------------------------------------------- parsers (pure)


def _json_obj(text: str, what: str) -> dict:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise DeviceRefused(f"cannot parse {what} output: {one_line(text, 60)!r}") from None
    if not isinstance(data, dict):
        raise DeviceRefused(f"cannot parse {what} output: not a JSON object")
    return data


def _check_node(node: Any) -> dict:
    if not isinstance(node, dict) or not isinstance(node.get("name"), str) or not node["name"]:
        raise DeviceRefused("cannot parse lsblk output: a device without a name")
    mps = node.get("mountpoints", [])
    if mps is None:
        mps = []
    if not isinstance(mps, list):
        raise DeviceRefused(
            f"cannot parse lsblk output: mountpoints of {node['name']} is not a list"
        )
    if node.get("path") is not None and not isinstance(node["path"], str):
        raise DeviceRefused(f"cannot parse lsblk output: path of {node['name']} is not a string")
    for key in ("size", "log-sec"):
        if node.get(key) is not None and (not isinstance(node[key], int) or node[key] < 0):
            raise DeviceRefused(
                f"cannot parse lsblk output: {key} of {node['name']} is not a byte count"
            )
    children = node.get("children", [])
    if not isinstance(children, list):
        raise DeviceRefused(f"cannot parse lsblk output: children of {node['name']} is not a list")
    out = dict(node)
    out["mountpoints"] = [m for m in mps if isinstance(m, str) and m]
    out["children"] = [_check_node(c) for c in children]
    return out


def parse_lsblk(text: str) -> list[dict]:
    """``lsblk -J`` -> list of device nodes; each has ``name``, a list ``mountpoints`` without
    nulls (lsblk writes ``[null]`` for "none") and a list ``children``."""
    devs = _json_obj(text, "lsblk").get("blockdevices")
    if not isinstance(devs, list):
        raise DeviceRefused("cannot parse lsblk output: no blockdevices list")
    try:
        return [_check_node(d) for d in devs]
    except RecursionError:
        raise DeviceRefused("cannot parse lsblk output: nested too deeply") from None


def walk(node: dict) -> list[dict]:
    """The node and all its descendants, depth first."""
    out = [node]
    for child in node.get("children", []):
        out.extend(walk(child))
    return out


def parse_findmnt(text: str) -> list[dict]:
    """``findmnt -J`` -> [{"target", "source", "fstype"}]. No match prints nothing (exit 1)."""
    if not text.strip():
        return []
    fss = _json_obj(text, "findmnt").get("filesystems")
    if not isinstance(fss, list):
        raise DeviceRefused("cannot parse findmnt output: no filesystems list")
    out = []
    for fs in fss:
        if not isinstance(fs, dict) or not isinstance(fs.get("target"), str):
            raise DeviceRefused("cannot parse findmnt output: an entry without a target")
        out.append(
            {
                "target": fs["target"],
                "source": str(fs.get("source") or ""),
                "fstype": str(fs.get("fstype") or ""),
            }
        )
        out.extend(parse_findmnt(json.dumps({"filesystems": fs.get("children") or []})))
    return out


def parse_blkid_export(text: str) -> dict[str, str]:
    """``blkid -p -o export`` -> {"TYPE": "ext4", "PTTYPE": "dos", ...}."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not re.fullmatch(r"[A-Z0-9_]+", key):
            raise DeviceRefused(f"cannot parse blkid output line {one_line(line, 60)!r}")
        out[key] = re.sub(r"\\(.)", r"\1", value)  # export escapes blanks: VERSION=LVM2\ 001
    return out


def parse_wipefs(text: str) -> list[dict]:
    """``wipefs -n -J`` -> [{"type", "offset", ...}]; an empty output means no signatures."""
    if not text.strip():
        return []
    sigs = _json_obj(text, "wipefs").get("signatures")
    if not isinstance(sigs, list) or not all(
        isinstance(s, dict) and isinstance(s.get("type"), str) for s in sigs
    ):
        raise DeviceRefused("cannot parse wipefs output: no signatures list with types")
    return sigs


# Partition-table types (libblkid's partition probers, as blkid PTTYPE and wipefs TYPE
# name them): a device carrying one is a partitioned device even when the kernel has no
# partitions for it (a loop device attached without --partscan shows none).
PARTITION_TABLE_TYPES = frozenset(
    {
        "gpt",
        "PMBR",
        "dos",
        "bsd",
        "sun",
        "sgi",
        "mac",
        "atari",
        "aix",
        "solaris",
        "unixware",
        "minix",
        "ultrix",
    }
)


def partition_table_names(blkid: dict[str, str], wipefs: list[dict]) -> list[str]:
    """The partition tables among the signatures: blkid's PTTYPE, and wipefs entries whose
    USAGE is ``partition-table`` (or, without that column, whose TYPE is a table type)."""
    names = {blkid["PTTYPE"]} if blkid.get("PTTYPE") else set()
    names.update(
        s["type"]
        for s in wipefs
        if s.get("usage") == "partition-table" or s.get("type") in PARTITION_TABLE_TYPES
    )
    return sorted(names)


# Signatures of a device that belongs to something else: an md array, an LVM volume group,
# an encrypted volume, a ZFS pool, a bcache set, Ceph, DRBD, firmware RAID (blkid's TYPE
# names). Formatting such a member destroys the array or volume it is part of, so it is
# refused whatever the flags; --force overrides only a plain filesystem signature.
MEMBER_TYPES = frozenset(
    {
        "linux_raid_member",
        "LVM2_member",
        "LVM1_member",
        "crypto_LUKS",
        "BitLocker",
        "zfs_member",
        "bcache",
        "ceph_bluestore",
        "drbd",
        "drbdmanage_control_volume",
        "drbdproxy_datalog",
        "VMFS_volume_member",
        "vdo",
        "stratis",
        "isw_raid_member",
        "ddf_raid_member",
        "adaptec_raid_member",
        "hpt37x_raid_member",
        "hpt45x_raid_member",
        "jmicron_raid_member",
        "lsi_mega_raid_member",
        "nvidia_raid_member",
        "promise_fasttrack_raid_member",
        "silicon_medley_raid_member",
        "via_raid_member",
    }
)


def member_signatures(names: list[str]) -> list[str]:
    """The signatures among ``names`` that make the device a member of an array, volume
    group, encrypted volume or pool (MEMBER_TYPES, and any other blkid ``*_member``)."""
    return [n for n in names if n in MEMBER_TYPES or n.endswith("_member")]


def signature_names(blkid: dict[str, str], wipefs: list[dict]) -> list[str]:
    """Every filesystem, RAID/LVM member or partition-table signature, sorted and unique."""
    names = {blkid[k] for k in ("TYPE", "PTTYPE") if blkid.get(k)}
    names.update(s["type"] for s in wipefs if s.get("type"))
    return sorted(names)


def _unescape(field_text: str) -> str:
    # /proc/mounts and /proc/swaps write space, tab, newline and backslash as \ooo octal.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_text)


def parse_mounts(text: str) -> list[tuple[str, str]]:
    """/proc/self/mounts -> [(source, mountpoint)]; malformed lines are skipped (the
    O_EXCL guard still catches whatever a garbled line would have hidden)."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out.append((_unescape(parts[0]), _unescape(parts[1])))
    return out


def parse_swaps(text: str) -> list[str]:
    """/proc/swaps -> the active swap areas' filenames (devices or files)."""
    out = []
    for line in text.splitlines()[1:]:
        parts = line.split()
        if parts:
            out.append(_unescape(parts[0]))
    return out


def parse_scheduler(text: str) -> tuple[str, list[str]]:
    """``none [mq-deadline] kyber bfq`` -> ("mq-deadline", [all four])."""
    names, current = [], None
    for tok in text.split():
        if tok.startswith("[") and tok.endswith("]") and len(tok) > 2:
            tok = tok[1:-1]
            current = tok
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", tok):
            raise DeviceRefused(f"cannot parse scheduler list {one_line(text, 60)!r}")
        names.append(tok)
    if current is None:
        if len(names) != 1:
            raise DeviceRefused(
                f"cannot parse scheduler list {one_line(text, 60)!r}: no current one"
            )
        current = names[0]
    return current, names


def parse_stat(text: str) -> dict[str, int]:
    """/sys/block/X/stat -> named counters; 11-, 15- and 17-field kernels give what they have."""
    parts = text.split()
    if len(parts) not in (11, 15, 17) or not all(p.isascii() and p.isdigit() for p in parts):
        raise DeviceRefused(
            f"cannot parse block stat {one_line(text, 80)!r}: expected 11, 15 or 17 counters"
        )
    return dict(zip(STAT_FIELDS, map(int, parts)))


def parse_nvme_id_ctrl(text: str) -> dict[str, str]:
    """``nvme id-ctrl -o json`` -> {"model", "serial", "firmware"} (fields mn/sn/fr, space-padded)."""
    data = _json_obj(text, "nvme id-ctrl")
    out = {}
    for key, name in (("mn", "model"), ("sn", "serial"), ("fr", "firmware")):
        if isinstance(data.get(key), str) and data[key].strip():
            out[name] = data[key].strip()
    return out


# ---------------------------------------------------------------- sysfs


@dataclass(frozen=True)
class SysNode:
    """A block device's sysfs directory, found from its device number (not its /dev name,
    which need not match the kernel's: /dev/mapper/x is dm-0)."""

    name: str
    dir: Path
    parent: str | None  # the whole disk, for a partition
    parent_dir: Path | None

    @property
    def queue_dir(self) -> Path:
        # Partitions have no queue/ (domain notes §5): their disk's queue is theirs.
        return (self.parent_dir or self.dir) / "queue"


def resolve(path: str) -> str:
    """Follow symlinks (/dev/disk/by-id/...) to the device node; refuse what is no block device."""
    p = os.fspath(path)
    if isinstance(p, bytes) or (why := control_character_refusal(p, "device path")):
        raise DeviceRefused(why if not isinstance(p, bytes) else f"device path {p!r} is not text")
    real = os.path.realpath(p)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise DeviceRefused(f"{p}: no such file or device") from None
    except OSError as e:
        raise DeviceRefused(f"{p}: cannot stat: {e.strerror}") from None
    via = f" (resolves to {real})" if real != p else ""
    if stat.S_ISBLK(st.st_mode):
        return real
    kind = (
        "a directory"
        if stat.S_ISDIR(st.st_mode)
        else "a regular file"
        if stat.S_ISREG(st.st_mode)
        else "a character device"
        if stat.S_ISCHR(st.st_mode)
        else "not a device"
    )
    raise DeviceRefused(f"{p}{via} is {kind}, not a block device")


def sys_node(dev: str, host: Host = HOST) -> SysNode:
    real = resolve(dev)
    rdev = os.stat(real).st_rdev
    link = Path(host.sys_root, "dev", "block", f"{os.major(rdev)}:{os.minor(rdev)}")
    d = Path(os.path.realpath(link))
    if not d.is_dir():
        raise DeviceRefused(f"{real}: no sysfs entry {link}")
    if (d / "partition").exists():
        return SysNode(d.name, d, d.parent.name, d.parent)
    return SysNode(d.name, d, None, None)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def holders(node_dir: Path) -> list[str]:
    """Kernel names in ``holders/``: LVM, md, dm-crypt or multipath built on this device."""
    try:
        return sorted(p.name for p in (node_dir / "holders").iterdir())
    except FileNotFoundError:
        return []
    except OSError as e:
        raise DeviceRefused(f"cannot read {node_dir / 'holders'}: {e.strerror}") from None


def sys_partitions(node_dir: Path) -> list[str]:
    """Partitions the kernel knows on this disk (subdirectories with a ``partition`` file),
    a witness next to lsblk's children."""
    try:
        return sorted(p.name for p in node_dir.iterdir() if (p / "partition").is_file())
    except OSError as e:
        raise DeviceRefused(f"cannot read {node_dir}: {e.strerror}") from None


def loop_backing_files(host: Host = HOST) -> list[tuple[str, str]]:
    """(loop name, backing file) of every attached loop device, from
    ``/sys/block/loopN/loop/backing_file``. A loop device over a block device does not
    show in that device's ``holders/`` and does not claim it (an O_EXCL open still
    succeeds), so this is the only witness that the device is someone's storage."""
    out = []
    try:
        entries = sorted(Path(host.sys_root, "block").glob("loop*"))
    except OSError as e:
        raise DeviceRefused(f"cannot list {Path(host.sys_root, 'block')}: {e.strerror}") from None
    for d in entries:
        text = _read(d / "loop" / "backing_file")
        if text:  # no loop/ directory: not attached
            out.append((d.name, text))
    return out


def users_uids() -> frozenset[int]:
    """Whose files count as the user's: this process's effective uid and, when it is root
    started through sudo, also the uid that ran sudo (SUDO_UID), so `sudo fsadvisor probe`
    accepts a loop device on the invoking user's own file as well as on root's. SUDO_UID is
    an environment variable anyone can set, so it only counts for root, where it narrows
    nothing and widens nothing beyond what root could already do to the file."""
    uids = {os.geteuid()}
    if os.geteuid() == 0:
        sudo = os.environ.get("SUDO_UID", "")
        if sudo.isdigit():
            uids.add(int(sudo))
    return frozenset(uids)


def loop_not_yours(path: str, loop_dir: Path, uids: frozenset[int] | None = None) -> str | None:
    """Why the loop device ``path`` (its sysfs ``loop/`` directory ``loop_dir``) is not the
    user's to format, or None: it is theirs when the file behind it belongs to one of
    ``uids`` (users_uids by default; a probe's own scratch device qualifies). Another user's
    file, a snap's squashfs or a deleted file has no mount or holder to refuse it by, and a
    blank one no signature, yet formatting it destroys what is theirs."""
    uids = users_uids() if uids is None else uids
    text = _read(loop_dir / "backing_file")
    if not text:
        return f"{path} is a loop device with no file attached"
    try:
        owner = os.stat(text).st_uid
    except FileNotFoundError:
        return f"{path} is a loop device on {text}, which is gone"
    except OSError as e:
        return f"{path} is a loop device on {text}, whose owner cannot be read ({e.strerror})"
    if owner in uids:
        return None
    you = " or ".join(str(u) for u in sorted(uids))
    return (
        f"{path} is a loop device on {text}, a file of uid {owner}, not yours (uid {you}): "
        "make the file yours (chown) if it is, or probe a scratch device of your own "
        "(--scratch SIZE)"
    )


def _same_file(backing: str, paths: set[str], rdevs: set[int]) -> bool:
    # The kernel writes the path as opened (a symlink stays one) and appends " (deleted)"
    # once the node is unlinked; compare resolved paths and device numbers.
    for candidate in (backing, backing.removesuffix(" (deleted)")):
        if os.path.realpath(candidate) in paths or _rdev(candidate) in rdevs:
            return True
    return False


def block_stat(dev: str, host: Host = HOST) -> dict[str, int]:
    node = sys_node(dev, host)
    text = _read(node.dir / "stat")
    if text is None:
        raise DeviceRefused(f"{dev}: cannot read {node.dir / 'stat'}")
    return parse_stat(text)


# What a device without a selectable I/O scheduler (zram: no queue/scheduler) runs with.
NO_SCHEDULER = "none"


def read_scheduler(dev: str, host: Host = HOST) -> tuple[str, list[str]]:
    node = sys_node(dev, host)
    text = _read(node.queue_dir / "scheduler")
    if text is None:
        raise NotSupported(
            f"{dev}: {node.parent or node.name} has no I/O scheduler ({node.queue_dir}/scheduler)"
        )
    return parse_scheduler(text)


def set_scheduler(dev: str, name: str, host: Host = HOST) -> str:
    """Select scheduler ``name`` for ``dev`` (for a partition: its disk). Returns the previous
    one, so the caller can put it back."""
    node = sys_node(dev, host)
    disk = node.parent or node.name
    try:
        current, available = read_scheduler(dev, host)
    except NotSupported:
        # A bio-based device (zram, brd) has no queue/scheduler: it always runs as "none".
        if name == NO_SCHEDULER:
            return NO_SCHEDULER
        raise ConfigError(
            f"{disk} has no I/O scheduler to select; only {NO_SCHEDULER!r} applies, not {name!r}"
        ) from None
    if name not in available:
        raise ConfigError(
            f"unknown scheduler {name!r} for {disk}; available: {', '.join(available)}"
        )
    try:
        (node.queue_dir / "scheduler").write_text(name)
    except OSError as e:
        raise ConfigError(f"cannot set scheduler {name!r} on {disk}: {e.strerror}") from None
    return current


def needs_root() -> str | None:
    return None if os.geteuid() == 0 else ROOT_HINT


# ---------------------------------------------------------------- discovery


def lsblk(dev: str, host: Host = HOST, columns: str = LSBLK_COLUMNS, inverse: bool = False) -> dict:
    argv = ["lsblk", "-J", "-b", "-o", columns] + (["-s"] if inverse else []) + [dev]
    proc = run_tool(argv, host)
    if proc.returncode != 0:
        raise _failed(proc, f"lsblk {dev}")
    nodes = parse_lsblk(proc.stdout)
    if len(nodes) != 1:
        raise DeviceRefused(f"lsblk {dev}: expected one device, got {len(nodes)}")
    return nodes[0]


# Every top-level block device (no partitions: a probe formats whole devices only), with
# what udev's database knows of its contents — readable without root, unlike blkid -p.
LIST_COLUMNS = "NAME,PATH,TYPE,SIZE,RO,MODEL,ROTA,TRAN,FSTYPE,LABEL"


def list_block_devices(host: Host = HOST) -> list[dict]:
    """``lsblk -J -b -d`` of the whole machine: one node per disk, loop or zram device."""
    proc = run_tool(["lsblk", "-J", "-b", "-d", "-o", LIST_COLUMNS], host)
    if proc.returncode != 0:
        raise _failed(proc, "lsblk")
    return parse_lsblk(proc.stdout)


def device_kind(name: str, rotational: bool, tran: str | None = None) -> str:
    if re.fullmatch(r"nvme\d+n\d+", name) or tran == "nvme":
        return "nvme"
    if re.fullmatch(r"loop\d+", name):
        return "loop"  # inspect() tells a RAM-backed one apart (backing_class)
    if re.fullmatch(r"zram\d+", name):
        return "zram"
    if re.fullmatch(r"sd[a-z]+", name) or tran in ("sata", "ata", "sas", "usb"):
        return "hdd" if rotational else "sata-ssd"
    return "unknown"  # virtio, mmc ...: the model has no figures for them


def parse_mountinfo_fs(text: str, major: int, minor: int) -> tuple[str, str] | None:
    """(fstype, source) of the mount whose device is major:minor in /proc/self/mountinfo
    (fields: id parent major:minor root mountpoint options ... - fstype source superopts)."""
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 3 or fields[2] != f"{major}:{minor}":
            continue
        tail = right.split()
        if tail:
            return tail[0], _unescape(tail[1]) if len(tail) > 1 else ""
    return None


def parse_comp_algorithm(text: str) -> str:
    """The selected algorithm of /sys/block/zramN/comp_algorithm ("lzo [lzo-rle] lz4")."""
    m = re.search(r"\[([^\]]+)\]", text or "")
    return m.group(1) if m else (text or "").strip() or "unknown"


def loop_class(fstype: str | None, source: str | None, dio: bool | None) -> tuple[str, str]:
    """(kind, model) of a loop device from what backs it: a file in RAM is ram-loop, a file
    on a disk's filesystem is loop, described by that filesystem and its source, and whether
    the kernel does direct I/O to it (buffered loop I/O measures the host's page cache)."""
    io = "I/O mode unknown" if dio is None else "direct I/O" if dio else "buffered I/O"
    if fstype in RAM_FILESYSTEMS:
        return "ram-loop", f"loop on {fstype}, {io}"
    where = f"{fstype or 'unknown filesystem'}" + (f" ({source})" if source else "")
    return "loop", f"loop on {where}, {io}"


def backing_class(node_dir: Path, host: Host = HOST) -> tuple[str, str]:
    """(kind, model) of the loop device whose sysfs directory is ``node_dir``."""
    text = _read(node_dir / "loop" / "backing_file") or ""
    path = text.removesuffix(" (deleted)")
    dio = {"1": True, "0": False}.get(_read(node_dir / "loop" / "dio") or "")
    found = None
    try:
        st_dev = os.stat(path).st_dev if path else None
    except OSError:
        st_dev = None
    if st_dev is not None:
        info = _read(Path(host.proc_root) / "self" / "mountinfo") or ""
        found = parse_mountinfo_fs(info, os.major(st_dev), os.minor(st_dev))
    fstype, source = found if found else (None, None)
    return loop_class(fstype, source, dio)


def _nvme_identity(dev: str, host: Host) -> dict[str, str]:
    if _which("nvme", host) is None:
        return {}
    try:
        proc = run_tool(["nvme", "id-ctrl", dev, "-o", "json"], host)
        return parse_nvme_id_ctrl(proc.stdout) if proc.returncode == 0 else {}
    except DeviceRefused:
        return {}  # identity is a nicety; its absence never matters for safety


def inspect(path: str, plp: str = "unknown", host: Host = HOST) -> Device:
    """Describe the device at ``path`` without writing anything."""
    if not is_plp(plp):
        raise ConfigError(f"plp must be yes, no or unknown, not {plp!r}")
    real = resolve(path)
    node = sys_node(real, host)
    info = lsblk(real, host)
    disk_dir = node.parent_dir or node.dir
    q = node.queue_dir
    rota_text = _read(q / "rotational")
    rotational = rota_text == "1" if rota_text is not None else bool(info.get("rota"))
    size_text = _read(node.dir / "size")  # 512-byte sectors whatever the logical block size
    size_bytes = (
        int(size_text) * 512 if size_text and size_text.isdigit() else int(info.get("size") or 0)
    )
    lbs_text = _read(q / "logical_block_size")
    lbs = int(lbs_text) if lbs_text and lbs_text.isdigit() else int(info.get("log-sec") or 512)

    def told(key: str) -> str:
        return info[key] if isinstance(info.get(key), str) else ""

    kind = device_kind(node.parent or node.name, rotational, told("tran") or None)
    ident = _nvme_identity(real, host) if kind == "nvme" else {}
    dev_dir = disk_dir / "device"
    model = ident.get("model") or _read(dev_dir / "model") or told("model")
    serial = (
        ident.get("serial")
        or _read(dev_dir / "serial")
        or _read(disk_dir / "serial")
        or told("serial")
    )
    firmware = (
        ident.get("firmware")
        or _read(dev_dir / "firmware_rev")
        or _read(dev_dir / "rev")
        or told("rev")
    )
    # A loop or zram device is identified by its backing class (Device.identity), which the
    # model field describes; its loop number is an accident of attach order.
    if kind == "loop":
        kind, model = backing_class(disk_dir, host)
    elif kind == "zram":
        model = f"zram ({parse_comp_algorithm(_read(disk_dir / 'comp_algorithm') or '')})"
    return Device(
        path=real,
        size_bytes=size_bytes,
        kind=kind,
        model=model.strip(),
        serial=serial.strip(),
        firmware=firmware.strip(),
        plp=plp,
        logical_block_size=lbs,
        write_cache=_read(q / "write_cache") or "unknown",
        rotational=rotational,
    )


def device_from_spec(spec: str, plp: str = "unknown", host: Host = HOST) -> Device:
    """``--device`` for recommend (host/spec.py): a path is inspected here, on ``host``."""
    return _spec.device_from_spec(spec, lambda path, plp: inspect(path, plp, host), plp)


# ---------------------------------------------------------------- safety verdict


@dataclass
class DeviceFacts:
    """What the verdict is decided on; gathered by ``gather`` (I/O), judged by ``judge`` (pure)."""

    path: str
    resolved: str
    name: str
    parent: str | None = None
    ro: bool = False
    size_bytes: int = 0
    children: list[dict] = field(default_factory=list)  # lsblk descendants: partitions, dm/md
    holders: dict[str, list[str]] = field(default_factory=dict)  # kernel name -> holders
    sys_partitions: list[str] = field(default_factory=list)  # partitions sysfs lists
    loop_backed: list[tuple[str, str]] = field(default_factory=list)  # (loop, its backing file)
    partition_tables: list[str] = field(default_factory=list)  # PTTYPE & co. (read with signatures)
    mounted: list[tuple[str, str]] = field(default_factory=list)  # (device path, mountpoint)
    protected: list[tuple[str, str, str]] = field(
        default_factory=list
    )  # (mountpoint, source, disk)
    readable: bool = True
    signatures: list[str] = field(default_factory=list)
    # What a probe recorded after its own mkfs ({"TYPE", "UUID", ...}), and whether the
    # device holds exactly that and nothing else.
    recorded: dict[str, str] | None = None
    own_signature: bool = False
    # A loop device whose backing file is not the user's (loop_not_yours): why, else None.
    not_yours: str | None = None


def _disks(tree: dict) -> set[str]:
    """Names of the bottom devices in an ``lsblk -s`` (inverse) tree: the physical disks."""
    return {n["name"] for n in walk(tree) if not n["children"]}


def _rdev(path: str) -> int | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_rdev if stat.S_ISBLK(st.st_mode) else None


def _sources(mountpoint: str, host: Host) -> list[str]:
    """Block devices under ``mountpoint``: findmnt's SOURCE and the st_dev of the directory
    (the latter catches a /dev/root alias; btrfs and overlay give an anonymous st_dev,
    which has no sysfs entry and is skipped)."""
    if not os.path.ismount(mountpoint):
        return []  # e.g. no separate /boot
    out = []
    proc = run_tool(["findmnt", "-n", "-o", "SOURCE", mountpoint], host)
    if proc.returncode == 0:
        out.append(re.sub(r"\[.*\]$", "", proc.stdout.strip()))  # btrfs: /dev/sda2[/@]
    st_dev = os.stat(mountpoint).st_dev
    d = Path(
        os.path.realpath(
            Path(host.sys_root, "dev", "block", f"{os.major(st_dev)}:{os.minor(st_dev)}")
        )
    )
    if d.is_dir():
        out.append(f"/dev/{d.name}")
    return [s for s in dict.fromkeys(out) if _rdev(s) is not None]


def _read_proc(name: str, host: Host) -> str:
    p = Path(host.proc_root, name)
    try:
        return p.read_text(errors="replace")
    except OSError as e:
        raise DeviceRefused(f"cannot read {p}: {e.strerror}") from None


def _mounted(family: list[dict], ours, host: Host) -> list[tuple[str, str]]:
    """(device, mountpoint) for the device and its descendants, from three witnesses:
    /proc/self/mounts (the source of truth), findmnt -S and lsblk MOUNTPOINTS."""
    found = {(src, mnt) for src, mnt in parse_mounts(_read_proc("self/mounts", host)) if ours(src)}
    for n in family:
        p = n.get("path") or f"/dev/{n['name']}"
        proc = run_tool(["findmnt", "-J", "-S", p], host)
        if proc.returncode not in (0, 1):  # 1: not mounted
            raise _failed(proc, f"findmnt -S {p}")
        found.update((p, fs["target"]) for fs in parse_findmnt(proc.stdout))
        found.update((p, m) for m in n["mountpoints"] if m != "[SWAP]")
    return sorted({(os.path.realpath(s), m) for s, m in found})


def gather(path: str, host: Host = HOST) -> DeviceFacts:
    real = resolve(path)
    node = sys_node(real, host)
    if _read(node.dir / "size") == "0":
        raise DeviceRefused(f"{path} has no medium (size 0; a detached loop device?)")
    tree = lsblk(real, host)
    family = walk(tree)
    facts = DeviceFacts(
        path=str(path),
        resolved=real,
        name=node.name,
        parent=node.parent,
        size_bytes=int(tree.get("size") or 0),
        children=family[1:],
    )
    facts.ro = _read(node.dir / "ro") == "1" or tree.get("ro") is True
    facts.holders = {
        n["name"]: h
        for n in family
        if (h := holders(Path(host.sys_root, "class", "block", n["name"])))
    }

    facts.sys_partitions = sys_partitions(node.dir)
    paths = {real} | {n["path"] for n in family if n.get("path")}
    paths |= {f"/dev/{name}" for name in facts.sys_partitions}
    rdevs = {r for p in paths if (r := _rdev(p)) is not None}
    paths = {os.path.realpath(p) for p in paths}
    facts.loop_backed = [
        (loop, backing)
        for loop, backing in loop_backing_files(host)
        if loop != node.name and _same_file(backing, paths, rdevs)
    ]

    def ours(source: str) -> bool:
        return os.path.realpath(source) in paths or _rdev(source) in rdevs

    facts.mounted = _mounted(family, ours, host)
    loop_dir = (node.parent_dir or node.dir) / "loop"
    if loop_dir.is_dir():
        facts.not_yours = loop_not_yours(str(path), loop_dir)
    # A device sharing a physical disk with /, /boot or active swap is refused whatever else
    # holds; a swap file is covered by the mount of the filesystem it lives in.
    swaps = parse_swaps(_read_proc("swaps", host))
    my_disks = _disks(lsblk(real, host, columns="NAME,PATH,TYPE", inverse=True))
    guarded = [(m, src) for m in PROTECTED_MOUNTPOINTS for src in _sources(m, host)]
    guarded += [("swap", s) for s in swaps if _rdev(s) is not None]
    for what, src in guarded:
        for disk in sorted(
            my_disks & _disks(lsblk(src, host, columns="NAME,PATH,TYPE", inverse=True))
        ):
            facts.protected.append((what, os.path.realpath(src), disk))

    facts.readable = os.access(real, os.R_OK)
    return facts


def read_signatures(dev: str, host: Host = HOST) -> list[str]:
    """Filesystem, partition-table and RAID/LVM-member signatures on ``dev`` (blkid and
    wipefs, both read-only here); a tool that cannot read the device is a refusal."""
    return read_signature_sets(dev, host)[0]


# wipefs's default columns plus USAGE, which names a partition table as such.
WIPEFS_COLUMNS = "DEVICE,OFFSET,TYPE,UUID,LABEL,USAGE"


def read_signature_sets(dev: str, host: Host = HOST) -> tuple[list[str], list[str]]:
    """(every signature, the partition tables among them) on ``dev``; see read_signatures."""
    proc = run_tool(["blkid", "-p", "-o", "export", dev], host)
    # 2 = nothing found, but blkid also says 2 for "Permission denied": stderr tells them apart.
    if proc.returncode not in (0, 2, 8) or proc.stderr.strip():
        raise _failed(proc, f"blkid -p {dev}")
    found = parse_blkid_export(proc.stdout) if proc.returncode == 0 else {}
    wproc = run_tool(["wipefs", "-n", "-J", "-O", WIPEFS_COLUMNS, dev], host)
    if wproc.returncode != 0:
        raise _failed(wproc, f"wipefs -n {dev}")
    wiped = parse_wipefs(wproc.stdout)
    names = signature_names(found, wiped)
    if proc.returncode == 8 and not names:  # "ambivalent result": several signatures disagree
        names = ["ambivalent"]
    return names, partition_table_names(found, wiped)


# Which blkid keys identify one mkfs: a fresh filesystem gets a random UUID (btrfs also a
# device UUID_SUB), so the same values mean the same mkfs, not merely the same type.
IDENTITY_KEYS = ("TYPE", "UUID", "UUID_SUB")


def identity_of(blkid: dict[str, str]) -> dict[str, str] | None:
    """The identifying part of ``blkid -p -o export`` output, or None without TYPE and UUID
    (nothing a probe's mkfs left)."""
    if not blkid.get("TYPE") or not blkid.get("UUID"):
        return None
    return {k: blkid[k] for k in IDENTITY_KEYS if blkid.get(k)}


def udev_properties(dev: str, host: Host = HOST) -> dict[str, str]:
    """udev's properties of ``dev`` (ID_WWN, ID_SERIAL, DEVTYPE, ...), {} when udevadm is
    missing or knows nothing of it (containers without udev)."""
    exe = _which("udevadm", host)
    if exe is None:
        return {}
    try:
        proc = run([exe, "info", "--query=property", f"--name={dev}"], timeout_s=host.timeout_s)
    except (CommandTimedOut, CommandFailed):
        return {}
    if not proc.ok:
        return {}
    out = {}
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def whole_disk(dev: str, host: Host = HOST) -> str:
    """The kernel name of the disk holding ``dev`` (itself unless it is a partition): the
    queue, and so the scheduler, belongs to the whole disk."""
    name = os.path.basename(os.path.realpath(dev))
    node = Path(host.sys_root) / "class" / "block" / name
    if (node / "partition").exists():
        return Path(os.path.realpath(node)).parent.name
    return name


def read_label(dev: str, host: Host = HOST) -> str | None:
    """The filesystem label on ``dev`` from blkid -p (it reads the device itself, so it works
    where udev is absent and lsblk's LABEL is empty); None when none or unreadable."""
    proc = run_tool(["blkid", "-p", "-o", "export", dev], host)
    if proc.returncode != 0 or proc.stderr.strip():
        return None
    try:
        return parse_blkid_export(proc.stdout).get("LABEL") or None
    except DeviceRefused:
        return None


def signature_identity(dev: str, host: Host = HOST) -> dict[str, str] | None:
    """TYPE and UUID of the filesystem on ``dev`` (read-only: blkid -p, which reads the
    device itself, not blkid's cache); None when there is none or blkid cannot tell."""
    proc = run_tool(["blkid", "-p", "-o", "export", dev], host)
    if proc.returncode != 0 or proc.stderr.strip():
        return None
    try:
        return identity_of(parse_blkid_export(proc.stdout))
    except DeviceRefused:
        return None


def is_own_signature(
    signatures: list[str], identity: dict[str, str] | None, recorded: dict[str, str] | None
) -> bool:
    """The device holds exactly the one filesystem a probe recorded after its own mkfs:
    the same TYPE/UUID and no other signature (wipefs sees no partition table, no second
    filesystem)."""
    if not recorded or not identity or not recorded.get("TYPE") or not recorded.get("UUID"):
        return False
    return identity == recorded and set(signatures) == {recorded["TYPE"]}


def _recorded_text(recorded: dict[str, str]) -> str:
    return f"{recorded.get('TYPE')} UUID {recorded.get('UUID')}"


def _refuse(f: DeviceFacts, reason: str) -> Verdict:
    return Verdict(False, reason, f.resolved, False, list(f.signatures))


def judge(f: DeviceFacts, force: bool = False) -> Verdict:
    """Decide on gathered facts; the gravest reason wins. Only signatures yield to ``force``."""
    dev = f.resolved if f.resolved == f.path else f"{f.path} (-> {f.resolved})"
    if f.protected:
        what, src, disk = f.protected[0]
        role = (
            "holds /"
            if what == "/"
            else "is active swap (/proc/swaps)"
            if what == "swap"
            else f"holds {what}"
        )
        if src == f.resolved:
            return _refuse(f, f"{dev} {role}; never probed")
        return _refuse(f, f"{dev} is on disk {disk}, whose {src} {role}; never probed")
    if f.not_yours:
        # Before "mounted": unmounting another user's device would not make it probeable.
        return _refuse(f, f.not_yours)
    if f.mounted:
        src, mnt = f.mounted[0]
        on = "" if src == f.resolved else f" through {src}"
        return _refuse(f, f"{dev} is mounted{on} on {mnt}; unmount it first")
    if f.holders:
        name, hs = sorted(f.holders.items())[0]
        return _refuse(
            f, f"{dev} is held by {', '.join(hs)} (holders of {name}: LVM, md or dm); never probed"
        )
    if f.loop_backed:
        loop, backing = f.loop_backed[0]
        via = "" if os.path.realpath(backing) == f.resolved else f" (as {backing})"
        return _refuse(
            f,
            f"{dev} is the backing file of /dev/{loop}{via}; detach it "
            f"(losetup -d /dev/{loop}) if it is not in use; never probed",
        )
    others = [c for c in f.children if c.get("type") != "part"]
    if others:
        return _refuse(
            f, f"{dev} is used by {others[0]['name']} ({others[0].get('type')}); never probed"
        )
    if f.ro:
        return _refuse(f, f"{dev} is read-only")
    if f.parent:
        return _refuse(
            f,
            f"{dev} is a partition of {f.parent}; probing formats whole, unpartitioned devices only",
        )
    parts = sorted({c["name"] for c in f.children} | set(f.sys_partitions))
    if parts:
        return _refuse(
            f, f"{dev} has partitions ({', '.join(parts)}); probe an empty, unpartitioned device"
        )
    if f.partition_tables:
        # Not a leftover signature --force may destroy: a partition table is a disk someone
        # laid out, whatever the kernel currently shows of it.
        return _refuse(
            f,
            f"{dev} has a partition table ({', '.join(f.partition_tables)}); --force "
            f"does not override it: clear it deliberately (wipefs -a {f.resolved}) "
            "if that is what you want",
        )
    members = member_signatures(f.signatures)
    if members:
        return _refuse(
            f,
            f"{dev} is a member of an array, volume group, encrypted volume or "
            f"pool ({', '.join(members)} signature); --force does not override "
            "it: take it out of what it belongs to first; never probed",
        )
    if f.size_bytes <= 0:
        return _refuse(f, f"{dev} has no medium (size 0)")
    if not f.readable:
        return _refuse(f, f"{dev} is not readable: {ROOT_HINT}")
    if f.signatures and not force and not f.own_signature:
        theirs = (
            f", not the one this probe made ({_recorded_text(f.recorded)})" if f.recorded else ""
        )
        return Verdict(
            False,
            f"{dev} holds data: {', '.join(f.signatures)} signature found"
            f"{theirs}; pass --force to destroy it",
            f.resolved,
            True,
            list(f.signatures),
        )
    return Verdict(
        True,
        None,
        f.resolved,
        False,
        list(f.signatures),
        own_signature=bool(f.signatures) and f.own_signature,
    )


def exclusive_guard(dev: str) -> str | None:
    """Last check: the kernel refuses an O_EXCL open of a block device that is mounted or
    claimed (verified, domain notes §5), in any mount namespace. Returns a reason or None."""
    try:
        fd = os.open(dev, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.EBUSY:
            return f"{dev} is busy (mounted or claimed by the kernel or another program)"
        return f"cannot open {dev} exclusively: {e.strerror}"
    os.close(fd)
    return None


def safety_verdict(
    path: str, force: bool = False, host: Host = HOST, own_signature: dict[str, str] | None = None
) -> Verdict:
    """May ``path`` be formatted? Never raises for a refusal: the reason is in the verdict.

    Signatures are read only once everything else passed, so a graver reason is never
    masked by blkid failing (it cannot even open /dev/vda here: EPERM). ``own_signature``
    is what a probe of this device recorded after its own mkfs (``signature_identity``): a
    device holding exactly that needs no ``force``; any other signature still does."""
    try:
        facts = gather(path, host)
        verdict = judge(facts, force=True)
        if not verdict.ok:
            return verdict
        # Busy before "holds data": a device the kernel or a program holds is reported as
        # that, whatever is written on it.
        busy = exclusive_guard(facts.resolved)
        if busy:
            return replace(verdict, ok=False, reason=busy)
        facts.signatures, facts.partition_tables = read_signature_sets(facts.resolved, host)
        if facts.signatures and own_signature:
            facts.recorded = dict(own_signature)
            facts.own_signature = is_own_signature(
                facts.signatures, signature_identity(facts.resolved, host), own_signature
            )
    except DeviceRefused as e:
        try:
            real = os.path.realpath(os.fspath(path))
        except ValueError:  # NUL: refused above by resolve, and it names no file
            real = ""
        return Verdict(False, str(e), real if real and os.path.exists(real) else None, False, [])
    verdict = judge(facts, force)
    if verdict.ok:
        busy = exclusive_guard(facts.resolved)
        if busy:
            return replace(verdict, ok=False, reason=busy)
    return verdict


def require_safe(
    path: str, force: bool = False, host: Host = HOST, own_signature: dict[str, str] | None = None
) -> str:
    """The resolved device path, or DeviceRefused with the verdict's one-line reason."""
    verdict = safety_verdict(path, force=force, host=host, own_signature=own_signature)
    if not verdict.ok:
        raise DeviceRefused(verdict.reason or f"{path}: refused")
    return verdict.resolved_path or os.path.realpath(path)


def in_use_reason(path: str, host: Host = HOST) -> str | None:
    """Between two cells of a probe: has anything else mounted ``path``, stacked a holder
    (LVM/md/dm), a loop device or swap on it, partitioned it or opened it exclusively? The
    probe's own filesystem signature is expected there, so only partition tables count
    among the signatures. A reason, or None."""
    try:
        facts = gather(path, host)
        verdict = judge(facts, force=True)
        if verdict.ok:
            # A partition table written meanwhile (sfdisk on a disk the kernel does not
            # rescan shows no partitions): the probe's own mkfs never writes one.
            facts.partition_tables = read_signature_sets(facts.resolved, host)[1]
            verdict = judge(facts, force=True)
    except DeviceRefused as e:
        return str(e)
    if not verdict.ok:
        return verdict.reason
    return exclusive_guard(verdict.resolved_path or path)
