"""Service functions for the device library: list and show named drives, and turn
``--device NAME`` into a Device (with its datasheet prior) for recommend and predict.

PLP from a datasheet is taken one way only. A datasheet that says "no PLP" makes the device
``plp = no`` and a claim of PLP (``--plp yes`` or the profile's) for it is refused. A
datasheet that says "PLP" is shown, but flush-skipping options (``nobarrier``) are offered
only when the user says ``--plp yes`` too: skipping flushes bets the data on the drive's
capacitors, and that bet is the user's to make knowingly.
"""

from __future__ import annotations

from typing import Any

from fsadvisor import devicelib
from fsadvisor.devicelib import LibraryDrive
from fsadvisor.domain import Device
from fsadvisor.errors import FsAdvisorError

# Device.model of a library drive: "<model> [library: <name>]" — the output names the drive
# and library_drive_of() finds it again.
_TAG = " [library: "


def list_devices(kind: str | None = None) -> list[LibraryDrive]:
    lib = devicelib.load_library()
    if kind is not None and kind not in devicelib.DRIVE_KINDS:
        raise FsAdvisorError(f"--kind must be one of {', '.join(devicelib.DRIVE_KINDS)}, not {kind!r}")
    return [d for d in lib.values() if kind is None or d.kind == kind]


def show_device(name: str) -> dict[str, Any]:
    """One drive with every figure, its source, and the prior it gives the model."""
    from fsadvisor.predict.datasheet import params_for
    d = devicelib.find(name)
    p = params_for(d)
    doc = d.to_dict()
    doc["prior"] = {"values": p.values, "log_sd": p.log_sd, "source": p.source}
    return doc


def summary_row(d: LibraryDrive) -> dict[str, Any]:
    """The columns of ``devices list``: name, kind, class, capacity, headline figures, PLP and
    the kinds of source its figures come from (manufacturer first)."""
    return {"name": d.name, "model": d.model, "kind": d.kind, "class": d.drive_class,
            "capacity_gb": d.capacity_gb, "seq_read_mb_s": d.value("seq_read_mb_s"),
            "seq_write_mb_s": d.value("seq_write_mb_s"),
            "rand_read_iops": d.value("rand_read_iops"),
            "rand_write_iops": d.value("rand_write_iops"),
            "idle_power_w": d.value("idle_power_w"),
            "active_power_w": d.value("active_power_w") or d.value("max_power_w"),
            "plp": d.plp,
            "source_kinds": sorted({f.source.kind for f in d.figures.values()},
                                   key=devicelib.SOURCE_KINDS.index)}


def library_device(spec: str | None, plp: str | None = None) -> Device | None:
    """The Device for ``--device NAME`` when NAME is a library drive (exact or unique prefix);
    None when ``spec`` is a path, a ``kind:size`` spec or a bare size. An unknown name is an
    error naming the closest drives."""
    if spec is None or not devicelib.looks_like_name(spec):
        return None
    d = devicelib.find(spec)
    if plp not in (None, "yes", "no", "unknown"):
        raise FsAdvisorError(f"--plp must be yes, no or unknown, not {plp!r}")
    if plp == "yes" and d.plp == "no":
        f = d.figures["plp"]
        raise FsAdvisorError(f"PLP yes (from --plp or the profile) contradicts {d.name}'s "
                             f"{f.source.kind}: no power-loss protection ({f.source.title})")
    if plp in ("yes", "no"):
        dev_plp = plp
    else:
        dev_plp = "no" if d.plp == "no" else "unknown"
    return Device(path=None, size_bytes=d.size_bytes, kind=d.kind,
                  model=f"{d.model}{_TAG}{d.name}]", plp=dev_plp)


def library_drive_of(device: Device) -> LibraryDrive | None:
    if _TAG not in device.model or not device.model.endswith("]"):
        return None
    name = device.model.rsplit(_TAG, 1)[1][:-1]
    try:
        return devicelib.find(name)
    except devicelib.DeviceLibraryError:
        return None


def library_notes(device: Device) -> list[str]:
    """What recommend says about a library drive's prior and its PLP."""
    d = library_drive_of(device)
    if d is None:
        return []
    from fsadvisor.predict.datasheet import params_for
    notes = [f"device {d.name}: {params_for(d).source}"]
    if d.plp == "yes" and device.plp != "yes":
        f = d.figures["plp"]
        notes.append(f"{d.name}: its {f.source.kind} states power-loss protection "
                     f"({f.source.title}); flush-skipping options are offered only with "
                     "--plp yes, which bets recent writes on that protection")
    return notes
