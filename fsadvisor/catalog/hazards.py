"""What a configuration risks, and what it offers.

A Risk names the option, the hazard, why it is one, and which profile settings make it
acceptable. The catalog only describes; recommend decides with the profile and the device.
"""

from __future__ import annotations

from dataclasses import dataclass

from fsadvisor.domain import Constraints, FsConfig

HAZARDS = (
    "needs-plp",
    "stale-data-after-crash",
    "no-journal",
    "no-checksums",
    "loses-recent-writes",
)

# Above this a commit interval is "huge": 6x ext4's default of 5 s and btrfs's own default.
HUGE_COMMIT_S = 30

_NEEDS_PLP = ("plp=yes", "durability=false", "allow_risky")
_NO_DURABILITY = ("durability=false", "allow_risky")


@dataclass(frozen=True)
class Risk:
    """A mkfs or mount option's durability hazard, why, and what makes it acceptable."""

    option: str
    hazard: str  # one of HAZARDS
    reason: str
    permitted_by: tuple[str, ...]  # any of: "plp=yes", "durability=false", "allow_risky"

    @property
    def acceptable_if(self) -> str:
        words = {
            "plp=yes": "the drive has power-loss protection (plp=yes)",
            "durability=false": "the profile does not need durability",
            "allow_risky": "the user allows risky options",
        }
        return " or ".join(words[p] for p in self.permitted_by)

    def permitted(self, constraints: Constraints, device_plp: str = "unknown") -> bool:
        """Whether ``constraints`` (and a device known to have PLP) accept this risk."""
        plp = device_plp if device_plp != "unknown" else constraints.plp
        return (
            ("plp=yes" in self.permitted_by and plp == "yes")
            or ("durability=false" in self.permitted_by and not constraints.durability)
            or ("allow_risky" in self.permitted_by and constraints.allow_risky)
        )


def _no_flush(option: str) -> Risk:
    return Risk(
        option,
        "needs-plp",
        "skips cache flushes: fsync'd data still in the drive's volatile write cache is "
        "lost on power failure unless the drive has power-loss protection (seed 002)",
        _NEEDS_PLP,
    )


def risks(config: FsConfig) -> list[Risk]:
    out: list[Risk] = []
    fs, mk = config.fs, config.mkfs_dict
    for opt in config.mount:
        key, _, value = opt.partition("=")
        if key == "nobarrier" or opt == "barrier=0" or opt == "fsync_mode=nobarrier":
            out.append(_no_flush(opt))
        elif fs == "ext4" and opt == "data=writeback":
            out.append(
                Risk(
                    opt,
                    "stale-data-after-crash",
                    "data is not ordered before metadata: after a crash a file that was "
                    "not fsync'd can show stale blocks, even old contents of deleted "
                    "files; fsync'd data is unaffected (seed 002)",
                    _NO_DURABILITY,
                )
            )
        elif key == "commit" and value.isdigit() and int(value) > HUGE_COMMIT_S:
            out.append(
                Risk(
                    opt,
                    "loses-recent-writes",
                    f"a crash loses up to {value} s of writes that were not fsync'd "
                    f"(default 5 s ext4, 30 s btrfs)",
                    _NO_DURABILITY,
                )
            )
        elif fs == "btrfs" and key in ("nodatacow", "nodatasum"):
            out.append(
                Risk(
                    opt,
                    "no-checksums",
                    "no data checksums (silent corruption goes undetected) and no "
                    "compression"
                    + (
                        "; overwrites in place, so a crash can tear a write"
                        if key == "nodatacow"
                        else ""
                    ),
                    _NO_DURABILITY,
                )
            )
        elif fs == "f2fs" and opt == "checkpoint=disable":
            out.append(
                Risk(
                    opt,
                    "loses-recent-writes",
                    "no checkpoints: a crash rolls the filesystem back to the last "
                    "checkpoint, losing what was written since",
                    _NO_DURABILITY,
                )
            )
    if fs == "ext4" and mk.get("journal") is False:
        out.append(
            Risk(
                "journal=false",
                "no-journal",
                "no journal: a crash needs a full fsck and can lose or corrupt recently "
                "changed metadata (seed 004's ext2)",
                _NO_DURABILITY,
            )
        )
    return out


def features(config: FsConfig) -> set[str]:
    """Of {"snapshots", "checksums", "compression"}: what this configuration provides.
    "checksums" means data checksums; ext4/xfs/f2fs checksum only metadata."""
    out: set[str] = set()
    if config.fs == "btrfs":
        out.add("snapshots")
        if config.mount_value("nodatacow") is None and config.mount_value("nodatasum") is None:
            out.add("checksums")
            comp = config.mount_value("compress")
            if comp is not None and comp != "no":
                out.add("compression")
    elif config.fs == "f2fs":
        if (
            "compression" in config.mkfs_dict.get("features", "").split(",")
            and config.mount_value("compress_algorithm") is not None
        ):
            out.add("compression")
    return out
