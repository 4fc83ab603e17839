"""A device path as apply's udev rule and the printed commands name it: its whole disk's
kernel name, ID_WWN and ID_SERIAL, read-only. Used by `apply` (which writes the rule) and by
`recommend` (which prints the same rule), so neither imports the other."""

from __future__ import annotations

import os
import re

from fsadvisor.catalog.udev import Target
from fsadvisor.errors import ConfigError

_DEVICE = re.compile(r"/dev(/[A-Za-z0-9._:+@,=-]+)+")


def target_for(device: str) -> Target:
    """The device as the rule and commands name it; read-only."""
    # Deferred: recommend imports this module, and without --device PATH it never reads a
    # device (tests/unit/test_startup_imports.py keeps host.device out of its start-up).
    from fsadvisor.host import device as devmod

    if why := devmod.control_character_refusal(device, "--device"):
        raise ConfigError(why)
    if not device.startswith("/dev/"):
        raise ConfigError(f"--device must be a block device path under /dev, not {device!r}")
    parts = device.split("/")
    if not _DEVICE.fullmatch(device) or "." in parts or ".." in parts:
        raise ConfigError(
            f"--device must be a device path of letters, digits and ._:+@,=- "
            f"under /dev (e.g. /dev/nvme1n1), not {device!r}"
        )
    disk = devmod.whole_disk(device)
    props = devmod.udev_properties(f"/dev/{disk}") if os.path.exists(device) else {}
    return Target(
        path=device,
        kernel_name=disk,
        id_wwn=props.get("ID_WWN", ""),
        id_serial=props.get("ID_SERIAL", ""),
    )
