"""The udev rule that sets the I/O scheduler on one device, and that device as the rule names
it (:class:`Target`).

The rule names the device by what survives a reboot and a re-cabling: ``ID_WWN`` (the
world-wide name / NVMe EUI the drive reports) where udev has it, else ``ID_SERIAL``, else the
kernel name (loop and virtio devices report neither; a kernel name can change between
boots, which the rule's comment says). Partitions carry their disk's ID_* too and have no
scheduler, so the rule matches ``DEVTYPE=="disk"`` and the kernel-name pattern of its kind.

`recommend` prints this rule under every answer; `fsadvisor apply` writes it with the rest
of its files (catalog/artifacts.py, which recommend does not need to load).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fsadvisor.errors import ConfigError
from fsadvisor.infra.scripttext import comment

UDEV_RULE_PATH = "/etc/udev/rules.d/60-fsadvisor-scheduler.rules"
UUID_PLACEHOLDER = "<uuid>"
# Kernel names per device kind (Documentation/admin-guide/devices.txt): NVMe namespaces
# nvmeXnY, SCSI/SATA/SAS disks sdX, virtio vdX, MMC mmcblkN, loop loopN, zram zramN.
KERNEL_PATTERNS = (
    (re.compile(r"nvme\d+n\d+$"), "nvme[0-9]*n[0-9]*"),
    (re.compile(r"sd[a-z]+$"), "sd[a-z]*"),
    (re.compile(r"vd[a-z]+$"), "vd[a-z]*"),
    (re.compile(r"xvd[a-z]+$"), "xvd[a-z]*"),
    (re.compile(r"mmcblk\d+$"), "mmcblk[0-9]*"),
    (re.compile(r"loop\d+$"), "loop[0-9]*"),
    (re.compile(r"zram\d+$"), "zram[0-9]*"),
)
_SAFE_UDEV_VALUE = re.compile(r"[A-Za-z0-9._:+@/=-]{1,200}")
KERNEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,63}")


@dataclass(frozen=True)
class Target:
    """The device a rule (and apply's other files) is for: its path, kernel name (the whole
    disk's, which holds the scheduler), and udev's ID_WWN / ID_SERIAL when it reports them."""

    path: str
    kernel_name: str
    id_wwn: str = ""
    id_serial: str = ""
    uuid: str = ""  # the filesystem's UUID once formatted; "" before

    @property
    def fstab_spec(self) -> str:
        return f"UUID={self.uuid or UUID_PLACEHOLDER}"


def kernel_pattern(kernel_name: str) -> str:
    for rx, pattern in KERNEL_PATTERNS:
        if rx.match(kernel_name):
            return pattern
    return kernel_name


def _udev_value(value: str) -> str | None:
    # udev values are compared as globs inside double quotes: refuse anything that could
    # end the quote or act as a glob rather than quoting it wrongly.
    v = value.strip()
    return v if v and _SAFE_UDEV_VALUE.fullmatch(v) and not set("*?[]") & set(v) else None


def udev_rule(target: Target, scheduler: str) -> str:
    """The rule file's text: sets ``scheduler`` on ``target`` only (see module docstring)."""
    match = ['ACTION=="add|change"', 'SUBSYSTEM=="block"', 'ENV{DEVTYPE}=="disk"']
    if wwn := _udev_value(target.id_wwn):
        match += [f'KERNEL=="{kernel_pattern(target.kernel_name)}"', f'ENV{{ID_WWN}}=="{wwn}"']
        how = f"its world-wide name {wwn}"
    elif serial := _udev_value(target.id_serial):
        match += [
            f'KERNEL=="{kernel_pattern(target.kernel_name)}"',
            f'ENV{{ID_SERIAL}}=="{serial}"',
        ]
        how = f"its serial {serial}"
    else:
        # a kernel name is letters, digits and a few marks (nvme0n1, sda, dm-0, loop7); one
        # that is not could end the quoted value or glob over every disk
        if not KERNEL_NAME.fullmatch(target.kernel_name or ""):
            raise ConfigError(
                f"{target.kernel_name!r} is not a kernel device name; the udev rule cannot name it"
            )
        match.append(f'KERNEL=="{target.kernel_name}"')
        how = (
            f"its kernel name {target.kernel_name} (it reports no ID_WWN or ID_SERIAL); "
            "kernel names can change between boots: check it on the target"
        )
    disk = (
        ""
        if target.path.rsplit("/", 1)[-1] == target.kernel_name
        else (f" (its disk {target.kernel_name}: the scheduler belongs to the whole disk)")
    )
    # the comments fold to 80 columns; the rule stays one line (udev reads a rule per line)
    return "".join(
        line + "\n"
        for line in [
            *comment(f"{UDEV_RULE_PATH}: written by fsadvisor apply"),
            *comment(f"I/O scheduler {scheduler} for {target.path}{disk}, matched by {how}."),
            ", ".join(match + [f'ATTR{{queue/scheduler}}="{scheduler}"']),
        ]
    )
