"""The filesystem configuration catalog: what ext4, xfs, btrfs and f2fs accept, what is risky and
why, and how a configuration becomes mkfs/mount argument lists and an fstab line.

Think of it as the spec sheet the prober and the recommender both read: the prober formats a
device with ``mkfs_argv`` and mounts it with ``mount_argv``; the recommender ranks
``candidates`` and filters them with ``risks`` and ``features``. Nothing here touches a device.

- specs: option tables (ranges verified with the real tools on kernel 6.18)
- geometry: minimum device sizes and the XFS allocation-group rule
- rules: validate / canonical / config_from_dict
- commands: mkfs_argv, mount_argv, mount_options_string, fstab_line
- hazards: Risk, risks, features
- candidates: default_config, candidates
- kernel: kernel_supports
- devicelib: the drives' spec sheets (the device library, datasets/devices/); imported by its
  users, not here, so that what needs only the filesystems does not read the library
"""

from fsadvisor.catalog.candidates import candidates, default_config
from fsadvisor.catalog.commands import fstab_line, mkfs_argv, mount_argv, mount_options_string
from fsadvisor.catalog.geometry import ag_count_range, default_ag_count
from fsadvisor.catalog.hazards import HAZARDS, Risk, features, risks
from fsadvisor.catalog.kernel import kernel_supports
from fsadvisor.catalog.rules import canonical, config_from_dict, validate
from fsadvisor.catalog.specs import MKFS_OPTIONS, MOUNT_OPTIONS

__all__ = [
    "HAZARDS",
    "MKFS_OPTIONS",
    "MOUNT_OPTIONS",
    "Risk",
    "ag_count_range",
    "candidates",
    "canonical",
    "config_from_dict",
    "default_ag_count",
    "default_config",
    "features",
    "fstab_line",
    "kernel_supports",
    "mkfs_argv",
    "mount_argv",
    "mount_options_string",
    "risks",
    "validate",
]
