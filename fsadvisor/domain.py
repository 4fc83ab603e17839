"""The nouns of fsadvisor: workloads, configurations, devices, observations, predictions.

Plain frozen dataclasses, no I/O and no front-end imports: the CLI, the TUI, the model and
the prober all speak in these terms, so a measured fio job and a user's profile meet here.
Units are part of every field name (``bs_bytes``, ``latency_us``, ``energy_j``).
"""

from __future__ import annotations

import functools

import re
from dataclasses import dataclass, field, fields, asdict, replace
from typing import Any, Literal, Mapping, TypeGuard

FILESYSTEMS = ("ext4", "xfs", "btrfs", "f2fs")
# Filesystems that appear only in the seeds' historical data (ext2/ext3/reiserfs/nilfs2):
# they inform relative option effects, they are never recommended.
HISTORIC_FILESYSTEMS = ("ext2", "ext3", "reiserfs", "nilfs2")
SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")

# An fio ``rw=`` value or one of fio's metadata engines; both describe "what one op is".
RW_MODES = (
    "read",
    "write",
    "randread",
    "randwrite",
    "rw",
    "randrw",
    "filecreate",
    "filestat",
    "filedelete",
)
METADATA_MODES = ("filecreate", "filestat", "filedelete")

Plp = Literal["yes", "no", "unknown"]
FsyncMode = Literal["none", "every_n", "per_transaction"]
PLP_VALUES: tuple[Plp, ...] = ("yes", "no", "unknown")


def is_plp(value: object) -> TypeGuard[Plp]:
    """Whether ``value`` (from a flag, a profile or the store) is one of the Plp answers;
    a refusal of anything else lets the type checker take it as a Plp afterwards."""
    return value in PLP_VALUES


EnergySource = Literal["rapl", "ipmi", "meter-log", "estimate"]
# Where the power was measured. Figures of different scopes are never ranked together.
PowerScope = Literal["system", "cpu+dram", "drive"]
POWER_SCOPES = ("system", "cpu+dram", "drive")
ENERGY_SOURCES = ("rapl", "ipmi", "meter-log", "estimate")
# A drive's power when nothing better is known (no datasheet, no power states read): NVMe
# PS0 idle of a typical client or data-centre drive, and its draw under sustained I/O.
# Assumptions, shared by the estimate meter and the simulator, and said to be assumed.
ASSUMED_DRIVE_IDLE_W = 3.0
ASSUMED_DRIVE_ACTIVE_W = 8.0


@dataclass(frozen=True)
class Workload:
    """What the application does, in fio's terms.

    ``rw`` and ``rwmixread`` give the mix; ``read_pct`` is derived from them. Metadata mixes
    (file create/stat/delete) are fractions of all operations. ``fsync_every`` follows fio's
    ``fsync=N`` (0: never). ``op`` says what one "operation" is for ops/joule; bandwidth
    workloads are ranked by bytes per joule instead (``rank_by``).
    """

    rw: str = "randrw"
    bs_bytes: int = 4096
    iodepth: int = 1
    numjobs: int = 1
    rwmixread: int = 50
    fsync_every: int = 0
    fsync_mode: FsyncMode = "none"
    direct: bool = True
    ioengine: str = "io_uring"
    working_set_bytes: int = 1 << 30
    nrfiles: int = 1
    file_size_bytes: int = 1 << 30
    file_size_max_bytes: int | None = None
    create_frac: float = 0.0
    stat_frac: float = 0.0
    delete_frac: float = 0.0
    dir_shape: Literal["flat", "deep"] = "flat"
    dir_depth: float = 1.0
    op: str = "io"  # io | file | db_op | transaction
    rank_by: Literal["ops", "bytes"] = "ops"

    def key(self) -> str:
        """A stable identity of what the workload does (every field, in order): a probe
        run of a profile and the profile itself have the same key."""
        return "|".join(repr(getattr(self, f.name)) for f in fields(self))

    @property
    def read_pct(self) -> int:
        if self.rw in ("read", "randread", "filestat"):
            return 100
        if self.rw in ("write", "randwrite", "filecreate", "filedelete"):
            return 0
        return self.rwmixread

    @property
    def random(self) -> bool:
        return self.rw.startswith("rand") or self.rw in METADATA_MODES

    @property
    def metadata_frac(self) -> float:
        if self.rw in METADATA_MODES:
            return 1.0
        return min(1.0, self.create_frac + self.stat_frac + self.delete_frac)

    @property
    def concurrency(self) -> int:
        return self.iodepth * self.numjobs

    @property
    def writes_per_fsync(self) -> int:
        """Writes between two fsyncs (0: never). fio's ``fsync=N`` (every_n) and a transaction
        of ``fsync_every`` writes committed with one fsync (per_transaction) both come down to
        this one number; the model and the simulator read it here, so they cannot disagree."""
        if self.fsync_mode == "none" and self.fsync_every <= 0:
            return 0
        return max(self.fsync_every, 1)

    def to_dict(self) -> dict[str, Any]:
        # Every field is a scalar, so a shallow dict is asdict()'s answer without its
        # recursive deep copy: ~7% of predict --batch on all-distinct lines (one per line).
        return {name: getattr(self, name) for name in _WORKLOAD_FIELDS}


_WORKLOAD_FIELDS = tuple(f.name for f in fields(Workload))


@dataclass(frozen=True)
class Constraints:
    """What the answer must satisfy. ``plp`` is "unknown" unless the user says otherwise,
    and nothing that risks data on power loss is recommended while it is unknown."""

    min_iops: float | None = None
    min_mb_s: float | None = None
    max_p99_ms: float | None = None
    durability: bool = True  # must survive power loss (fsync'd data is never lost)
    features: tuple[str, ...] = ()  # snapshots, checksums, compression
    plp: Plp = "unknown"
    allow_risky: bool = False  # the user accepts durability hazards explicitly

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["features"] = list(self.features)
        return d


@dataclass(frozen=True)
class Profile:
    """A named workload with the constraints its answer must meet, and where it comes from
    (a preset's citation, the runner/ job file that reproduces it, its tags)."""

    name: str
    description: str
    workload: Workload
    constraints: Constraints = Constraints()
    source: str = ""  # citation: seed file + table/section, or "practical preset"
    fio_job: str | None = None  # runner/*.fio file that reproduces it for probing
    tags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "fio_job": self.fio_job,
            "tags": list(self.tags),
            "workload": self.workload.to_dict(),
            "constraints": self.constraints.to_dict(),
        }


@functools.lru_cache(maxsize=4096)
def _mount_values(mount: tuple[str, ...]) -> dict[str, str]:
    """Each ``key=value`` mount option's value ("" for a bare flag), the first one of a key
    winning. Worked out once per mount tuple: the catalog asks FsConfig.mount_value several
    times for each of ~2,700 candidates while building them (read-only once cached)."""
    out: dict[str, str] = {}
    for opt in mount:
        k, _, v = opt.partition("=")
        out.setdefault(k, v)
    return out


@dataclass(frozen=True, init=False)  # its __init__ is written out below
class FsConfig:
    """A filesystem configuration: what mkfs gets, what mount gets, which scheduler.

    ``mkfs`` maps catalog option names (``block_size``, ``inode_size``, ``journal``,
    ``nodesize``, ``checksum``, ``features`` ...) to values; ``mount`` holds native mount
    option strings (``noatime``, ``data=writeback``, ``compress=zstd:3``). The XFS
    allocation-group count is first-class because it is the knob seed 000 and 004 single out.
    """

    fs: str
    mkfs: tuple[tuple[str, Any], ...] = ()
    mount: tuple[str, ...] = ()
    scheduler: str = "none"
    ag_count: int | None = None

    def __init__(
        self,
        fs: str,
        mkfs: tuple[tuple[str, Any], ...] = (),
        mount: tuple[str, ...] = (),
        scheduler: str = "none",
        ag_count: int | None = None,
    ):
        # The generated __init__ of a frozen dataclass, written out: the fields go into the
        # instance dict directly instead of one object.__setattr__ call each (~2x faster;
        # recommend's catalog builds ~4,000). tests/unit/test_domain_init.py keeps the
        # signature equal to the fields.
        d = self.__dict__
        d["fs"] = fs
        d["mkfs"] = mkfs
        d["mount"] = mount
        d["scheduler"] = scheduler
        d["ag_count"] = ag_count

    @staticmethod
    def make(
        fs: str,
        mkfs: Mapping[str, Any] | None = None,
        mount=(),
        scheduler="none",
        ag_count: int | None = None,
    ) -> "FsConfig":
        return FsConfig(
            fs=fs,
            mkfs=tuple(sorted((mkfs or {}).items())),
            mount=tuple(mount),
            scheduler=scheduler,
            ag_count=ag_count,
        )

    @property
    def mkfs_dict(self) -> dict[str, Any]:
        return dict(self.mkfs)

    def mount_value(self, key: str) -> str | None:
        """Value of ``key=value`` mount option, "" for a bare flag, None when absent."""
        try:
            return _mount_values(self.mount).get(key)
        except TypeError:  # an unhashable mount list (from JSON): read it as it is
            return _mount_values.__wrapped__(self.mount).get(key)

    def key(self) -> str:
        """A stable identity for storing and de-duplicating configurations."""
        mk = ",".join(f"{k}={v}" for k, v in self.mkfs)
        ag = "" if self.ag_count is None else f" agcount={self.ag_count}"
        return f"{self.fs} [{mk}] ({','.join(self.mount)}) {self.scheduler}{ag}"

    def label(self) -> str:
        """What a person reads: ``ext4 defaults, sched none``, ``xfs agcount=16, noatime,
        sched none`` (mkfs settings after the filesystem, then mount options)."""
        made = [f"{k}={_word(v)}" for k, v in self.mkfs]
        if self.ag_count is not None:
            made.append(f"agcount={self.ag_count}")
        head = " ".join([self.fs] + made) if made else self.fs
        mount = ",".join(o for o in self.mount if o != "defaults")
        if not made and not mount:
            head += " defaults"
        return ", ".join(p for p in (head, mount, f"sched {self.scheduler}") if p)

    def with_(self, **kw) -> "FsConfig":
        return replace(self, **kw)

    def to_dict(self) -> dict[str, Any]:
        return {
            "filesystem": self.fs,
            "mkfs": dict(self.mkfs),
            "mount": list(self.mount),
            "scheduler": self.scheduler,
            "ag_count": self.ag_count,
        }


@dataclass(frozen=True)
class Device:
    """The target device. ``kind`` is what the model keys absolute figures on:
    nvme | sata-ssd | hdd | loop (numbers from a loop device are not an SSD's)."""

    path: str | None
    size_bytes: int
    kind: str = "nvme"
    model: str = ""
    serial: str = ""
    firmware: str = ""
    plp: Plp = "unknown"
    logical_block_size: int = 512
    write_cache: str = "unknown"  # "write back" | "write through" from sysfs
    rotational: bool = False
    # An explicit identity; "" = derived from the fields above. Validation sets it to
    # predict for a stored device by the identity its observations carry.
    device_id: str = ""

    @property
    def identity(self) -> str:
        """Which physical device (or device class) its measurements belong to, stable across
        reboots and re-attachments: see :func:`device_identity`."""
        return self.device_id or device_identity(
            model_kind(self.kind, self.path), self.model, self.serial, self.path
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not d["device_id"]:
            del d["device_id"]  # the JSON schema of recommend/predict stays as it was
        return d


def model_kind(kind: str | None, path: str | None) -> str:
    """The device kind the model keys its priors on. Device discovery does not know zram (it
    says "unknown"); a zram device is RAM behind a compressor, and priced as an NVMe drive
    its every time share -- and so every mechanism fitted on it -- would be wrong."""
    if (not kind or kind == "unknown") and re.fullmatch(r"/dev/zram\d+", path or ""):
        return "zram"
    return kind or "unknown"


def kind_of(device: "Device") -> str:
    return model_kind(device.kind, device.path)


def identity_of(device: "Device") -> str:
    return device.identity


# Kinds whose "device" is a RAM- or file-backed stand-in: what they measure is their backing
# class (``Device.model`` describes it), never the loop/zram number they happened to get.
BACKED_KINDS = ("loop", "ram-loop", "zram")


def device_identity(kind: str, model: str = "", serial: str = "", path: str | None = None) -> str:
    """A drive is its model + serial; a loop or zram device is its backing class (kind +
    the description of what backs it, e.g. "loop on ext4 (/dev/vda1), direct I/O"), never
    /dev/loop3; a drive that reports no serial falls back to its path; a spec with no path
    (``nvme:1T``) is only its kind."""
    model = " ".join((model or "").split())
    if kind in BACKED_KINDS:
        return f"{kind}:{model or 'unknown backing'}"
    if serial and serial.strip():
        return f"{kind}:{model}:{serial.strip()}"
    if path:
        return f"{kind}:{model}:{path}"
    return f"kind:{kind}"


@dataclass(frozen=True)
class Prediction:
    """Predicted figures with their uncertainty (a multiplicative 1-sigma factor and a 90%
    interval on the ranking metric). ``basis`` says what data it rests on."""

    iops: float
    mb_s: float
    mean_latency_ms: float
    p99_latency_ms: float
    watts: float
    ops_per_joule: float
    bytes_per_joule: float
    uncertainty: Mapping[str, Any]
    power_scope: str = "system"
    energy_source: str = "model"
    basis: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "iops": self.iops,
            "mb_s": self.mb_s,
            "mean_latency_ms": self.mean_latency_ms,
            "p99_latency_ms": self.p99_latency_ms,
            "watts": self.watts,
            "ops_per_joule": self.ops_per_joule,
            "bytes_per_joule": self.bytes_per_joule,
            "power_scope": self.power_scope,
            "energy_source": self.energy_source,
        }


RUN_STATUSES = ("ok", "failed", "incomplete")


# What a run's flags say about its figures. Set by the probe (probe/measure.py, cell.py), read
# by the store (a direct-I/O-not-honoured run is never ranked) and by the front ends.
FLAG_DIRECT_IO = "direct-io-not-honoured"  # the page cache served a direct=1 job's reads
FLAG_LOOP = "loop-device"  # a loop device's numbers describe its backing file, not an SSD
FLAG_ESTIMATE = "energy-estimate"  # energy from a power model, not a meter
FLAG_IMPORTED = "imported"  # measured elsewhere, brought in by `fsadvisor import fio-json`
# p50/p99/p999_latency_us pool several latency distributions (read and write of a mixed job,
# jobs without group_reporting, stonewalled groups): fio printed no such figure, they are
# estimates (fio.FioResult.percentile_provenance says which; read_/write_ ones are exact).
FLAG_POOLED_PERCENTILES = "latency-percentiles-pooled-estimate"
# In an Observation's note: its cell gives its device's parameters (a raw device's times per
# operation, which price the mechanisms' work) and is no equation of the fit (predict/fit.py).
TIMING_ONLY = "[timing-only]"


def _word(value: Any) -> str:
    """An option's value as a person reads it: on/off for a switch (never Python's False)."""
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def run_ids_text(ids: Any) -> str:
    """Stored run ids as a person reads them, "1, 2, 3, 7" (never a Python list's "[1, 2]");
    anything that is not a list of ids is shown as it is."""
    if isinstance(ids, (list, tuple)):
        return ", ".join(str(i) for i in ids)
    return "?" if ids is None else str(ids)
