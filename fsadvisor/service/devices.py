"""Service functions for the device library: list and show named drives, and turn
``--device NAME`` into a Device (with its datasheet prior) for recommend and predict.

PLP from a datasheet is taken one way only. A datasheet that says "no PLP" makes the device
``plp = no`` and a claim of PLP (``--plp yes`` or the profile's) for it is refused. A
datasheet that says "PLP" is shown, but flush-skipping options (``nobarrier``) are offered
only when the user says ``--plp yes`` too: skipping flushes bets the data on the drive's
capacitors, and that bet is the user's to make knowingly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fsadvisor.domain import Device, Plp, Workload, is_plp, run_ids_text
from fsadvisor.errors import FsAdvisorError
from fsadvisor.host.spec import DEVICE_KINDS
from fsadvisor.store import open_store

# The device library (catalog/devicelib.py: its TOML files and dataclasses) and its datasheet
# prior (predict/datasheet.py, which reads it) are imported by the functions that read a
# drive, each saying so: a `recommend` for a path or a kind:size spec never loads them.
if TYPE_CHECKING:
    from fsadvisor.catalog.devicelib import LibraryDrive

# Device.model of a library drive: "<model> [library: <name>]" — the output names the drive
# and library_drive_of() finds it again.
_TAG = " [library: "


def list_devices(kind: str | None = None) -> list[LibraryDrive]:
    from fsadvisor.catalog import devicelib  # the device library: only when a drive is read

    lib = devicelib.load_library()
    if kind is not None and kind not in devicelib.DRIVE_KINDS:
        raise FsAdvisorError(
            f"--kind must be one of {', '.join(devicelib.DRIVE_KINDS)}, not {kind!r}"
        )
    return [d for d in lib.values() if kind is None or d.kind == kind]


def list_rows(kind: str | None = None, db: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """What ``devices list`` shows: the library's drives (summary rows) and the devices your
    probes measured raw, both filtered by kind."""
    drives = [summary_row(d) for d in list_devices(kind)]
    measured = [m for m in list_measured(db) if kind is None or m["kind"] == kind]
    return {"drives": drives, "measured": measured}


def show_device(name: str, db: str | None = None) -> dict[str, Any]:
    """One drive with every figure, its source, the prior it gives the model, and what was
    measured of it (seed datasets, your probes) against its datasheet."""
    # the device library and the datasheet prior made from it: only for a drive shown
    from fsadvisor.catalog import devicelib
    from fsadvisor.predict.datasheet import params_for

    d = devicelib.find(name)
    p = params_for(d)
    doc = d.to_dict()
    doc["prior"] = {"values": p.values, "log_sd": p.log_sd, "source": p.source}
    doc["measured"] = measured_vs_datasheet(d, db)
    return doc


def summary_row(d: LibraryDrive) -> dict[str, Any]:
    """The columns of ``devices list``: name, kind, class, capacity, headline figures, PLP and
    the kinds of source its figures come from (manufacturer first)."""
    from fsadvisor.catalog import devicelib  # the device library: only when a drive is read

    return {
        "name": d.name,
        "model": d.model,
        "kind": d.kind,
        "class": d.drive_class,
        "capacity_gb": d.capacity_gb,
        "seq_read_mb_s": d.value("seq_read_mb_s"),
        "seq_write_mb_s": d.value("seq_write_mb_s"),
        "rand_read_iops": d.value("rand_read_iops"),
        "rand_write_iops": d.value("rand_write_iops"),
        "idle_power_w": d.value("idle_power_w"),
        "active_power_w": d.value("active_power_w") or d.value("max_power_w"),
        "plp": d.plp,
        "source_kinds": sorted(
            {f.source.kind for f in d.figures.values()}, key=devicelib.SOURCE_KINDS.index
        ),
    }


def library_device(spec: str | None, plp: str | None = None) -> Device | None:
    """The Device for ``--device NAME`` when NAME is a library drive (exact or unique prefix);
    None when ``spec`` is a path, a ``kind:size`` spec or a bare size. An unknown name is an
    error naming the closest drives."""
    if spec is None:
        return None
    from fsadvisor.catalog import devicelib  # the device library: only for a --device given

    if not devicelib.looks_like_name(spec) or spec.strip() in DEVICE_KINDS:
        return None  # a bare kind ("nvme") gets the spec parser's "give a size" message
    d = devicelib.find(spec)
    if plp is not None and not is_plp(plp):
        raise FsAdvisorError(f"--plp must be yes, no or unknown, not {plp!r}")
    if plp == "yes" and d.plp == "no":
        f = d.figures["plp"]
        raise FsAdvisorError(
            f"PLP yes (from --plp or the profile) contradicts {d.name}'s "
            f"{f.source.kind}: no power-loss protection ({f.source.title})"
        )
    dev_plp: Plp
    if is_plp(plp) and plp != "unknown":
        dev_plp = plp
    else:
        dev_plp = "no" if d.plp == "no" else "unknown"
    return Device(
        path=None,
        size_bytes=d.size_bytes,
        kind=d.kind,
        model=f"{d.model}{_TAG}{d.name}]",
        plp=dev_plp,
    )


def library_drive_of(device: Device) -> LibraryDrive | None:
    if _TAG not in device.model or not device.model.endswith("]"):
        return None
    name = device.model.rsplit(_TAG, 1)[1][:-1]
    from fsadvisor.catalog import devicelib  # the device library: only when a drive is read

    try:
        return devicelib.find(name)
    except devicelib.DeviceLibraryError:
        return None


def library_notes(device: Device) -> list[str]:
    """What recommend says about a library drive beyond the device parameters note (which
    already names the datasheet prior): its stated power-loss protection."""
    d = library_drive_of(device)
    if d is None:
        return []
    notes = []
    if d.plp == "yes" and device.plp != "yes":
        f = d.figures["plp"]
        notes.append(
            f"{d.name}: its {f.source.kind} states power-loss protection "
            f"({f.source.title}); flush-skipping options are offered only with "
            "--plp yes, which bets recent writes on that protection"
        )
    return notes


# --------------------------------------------------------------------------- measured

# MiB/s in the seed CSVs (seed 002's harness divides bytes by 2^20) -> MB/s (10^6), the
# datasheets' unit.
_MIB_TO_MB = 1.048576


def datasheet_figure_for(w) -> tuple[str, str] | None:
    """Which datasheet figure a raw-device workload measures, as (figure key, metric): 4K
    random reads or writes without fsync -> IOPS; sequential reads or writes of 64 KiB or
    more -> MB/s. Anything else has no datasheet counterpart."""
    if w.fsync_every:
        return None
    if w.rw in ("randread", "randwrite") and w.bs_bytes == 4096:
        return ("rand_read_iops" if w.rw == "randread" else "rand_write_iops"), "iops"
    if w.rw in ("read", "write") and w.bs_bytes >= 64 << 10:
        return ("seq_read_mb_s" if w.rw == "read" else "seq_write_mb_s"), "mb_s"
    return None


def _conditions(w) -> str:
    return f"{w.rw} {w.bs_bytes // 1024}K QD{w.iodepth} x{w.numjobs} job(s)"


def _compare(
    d: LibraryDrive, key: str, measured: float, w, source: str, origin: str
) -> dict[str, Any]:
    sheet = d.value(key)
    return {
        "figure": key,
        "measured": measured,
        "datasheet": sheet,
        "measured_over_datasheet": None if sheet is None else measured / sheet,
        "conditions": _conditions(w),
        "datasheet_conditions": d.figures[key].note if key in d.figures else "",
        "source": source,
        "origin": origin,
    }


def measured_vs_datasheet(d: LibraryDrive, db: str | None = None) -> list[dict[str, Any]]:
    """Raw-device measurements of this drive — seed datasets (rows whose device is one of the
    entry's ``measured_as`` names) and your probes' raw baselines (device model likewise) —
    each beside the datasheet figure it corresponds to, with their ratio. A datasheet's own
    claim transcribed into a dataset (note "[spec]") is not a measurement and is skipped."""
    names = {n.lower() for n in d.measured_as}
    if not names:
        return []
    # the shipped datasets' readers (CSV and TOML parsing): only for a drive measured in them
    from fsadvisor.store.datasets import load_rows, load_workloads

    out = []
    workloads = load_workloads()
    for row in load_rows():
        if row["filesystem"] != "raw" or row["device"].lower() not in names:
            continue
        if str(row.get("note") or "").startswith("[spec]") or row["workload"] not in workloads:
            continue
        w = workloads[row["workload"]]
        fm = datasheet_figure_for(w)
        if fm is None or fm[1] != row["metric"]:
            continue
        value = row["value"] * (_MIB_TO_MB if row["unit"] == "MiB/s" else 1.0)
        out.append(_compare(d, fm[0], value, w, f"{row['citation']} ({row['source']})", "seed"))
    for s in _raw_baselines(db):
        if (s["device_model"] or "").strip().lower() not in names:
            continue

        w = Workload(**s["workload"])
        fm = datasheet_figure_for(w)
        mean = (s.get(fm[1]) or {}).get("mean") if fm else None
        if fm is None or mean is None:
            continue
        out.append(
            _compare(
                d,
                fm[0],
                float(mean),
                w,
                f"your probe: raw baseline, runs {run_ids_text(s['run_ids'])}",
                "probe",
            )
        )
    return out


def _raw_baselines(db: str | None) -> list[dict[str, Any]]:
    """Summaries of the store's raw-device baseline runs (no filesystem configuration)."""
    with open_store(db) as store:
        return [s for s in store.summaries() if s["configuration_id"] is None]


def list_measured(db: str | None = None) -> list[dict[str, Any]]:
    """Devices your probes measured raw (one row per device model), with their best measured
    figures and the library drive they are, if any (its ``measured_as`` names that model)."""
    from fsadvisor.catalog import devicelib  # the device library: only when a drive is read

    lib = devicelib.load_library()
    by_model: dict[str, dict[str, Any]] = {}

    for s in _raw_baselines(db):
        model = (s["device_model"] or "").strip() or "(unknown model)"
        row = by_model.setdefault(
            model,
            {"model": model, "kind": s["device_kind"], "runs": 0, "library": None, "figures": {}},
        )
        row["runs"] += s["n"]
        fm = datasheet_figure_for(Workload(**s["workload"]))
        mean = (s.get(fm[1]) or {}).get("mean") if fm else None
        if fm and mean is not None:
            row["figures"][fm[0]] = max(float(mean), row["figures"].get(fm[0], 0.0))
        for d in lib.values():
            if model.lower() in {n.lower() for n in d.measured_as}:
                row["library"] = d.name
    return sorted(by_model.values(), key=lambda r: r["model"])


def library_params_of(device: Device):
    """The datasheet prior (a DeviceParams) of a Device that ``--device NAME`` resolved from
    the library, else None — what the model takes in place of the kind's prior."""
    d = library_drive_of(device)
    if d is None:
        return None
    from fsadvisor.predict.datasheet import params_for  # reads the device library: a drive only

    return params_for(d)
