"""Service functions for the offline path: profiles, recommend, predict, calibrate, validate.

Both front ends call these; they return domain objects or plain dicts and raise
FsAdvisorError subclasses. The model is refitted from the store's observations whenever they
change (a fit takes milliseconds) and cached per process by a hash of the observations.
"""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from fsadvisor import catalog, limits
from fsadvisor.infra import xdg
from fsadvisor.catalog.geometry import DEFAULT_SECTOR_BYTES
from fsadvisor.catalog.udev import Target
from fsadvisor.domain import POWER_SCOPES, Device, Profile, is_plp
from fsadvisor.errors import ConfigError, FsAdvisorError, ProfileError
from fsadvisor.host import spec as devspec
from fsadvisor.predict import ceilings
from fsadvisor.predict.crossval import choose_device_sd, choose_prior_scale, cross_validate
from fsadvisor.predict.fit import FittedModel, fit, load_model, save_model, settings_key
from fsadvisor.predict.predict import predict, predict_many
from fsadvisor.predict.settings import ModelSettings, calibration_path
from fsadvisor.predict.rank import (
    DEVICE_PLACEHOLDER,
    CommandTarget,
    Ranked,
    Recommendation,
    first_choice,
    rank,
)
from fsadvisor.service import answer, device_figures, guidance
from fsadvisor.service.device_target import target_for
from fsadvisor.service.devices import library_device, library_notes
from fsadvisor.profiles import list_presets, load_profile, profile_to_toml, workload_from_dict
from fsadvisor.sizes import format_binary, format_size
from fsadvisor.store import open_store, quick_version
from fsadvisor.predict.rank import default_scheduler

# Every command imports this module; what only some of them use is imported where it is
# used, each import saying why (start-up: tests/unit/test_startup_imports.py,
# test_fast_startup.py).

# What the front ends read from here besides the functions: the result types they display
# and the size formatter (front ends import only fsadvisor.service, .domain and .errors;
# tests/unit/test_front_end_imports.py enforces it).
__all__ = [
    "DEFAULT_DEVICE_SPEC",
    "DeviceDescription",
    "Ranked",
    "Recommendation",
    "CommandTarget",
    "format_size",
    "format_binary",
    "list_profiles",
    "get_profile",
    "profile_toml",
    "get_model",
    "resolve_device",
    "describe_device",
    "mkfs_target",
    "recommend",
    "predict_one",
    "predict_batch",
    "predict_chunks",
    "validate",
    "calibrate",
]

DEFAULT_DEVICE_SPEC = "nvme:1T"
# A device given by size or name, whose sector size nobody said: the larger, stricter one
# (catalog/geometry.py DEFAULT_SECTOR_BYTES): no block below it, AG headers sized for it.
ASSUMED_SECTOR_BYTES = DEFAULT_SECTOR_BYTES
_cache: dict[str, FittedModel] = {}


# --------------------------------------------------------------------------- profiles


def list_profiles() -> list[Profile]:
    return list_presets()


def get_profile(name_or_path: str) -> Profile:
    return load_profile(name_or_path)


def profile_toml(profile: Profile) -> str:
    """The profile as TOML that load_profile reads back (``profiles show``)."""
    return profile_to_toml(profile)


# --------------------------------------------------------------------------- model


def _observations(db: str | None):
    with open_store(db) as store:
        store.ensure_seeded()
        return store.observations()


def _cache_file(key: str) -> Path:
    """Where the fit cached under ``key`` lives. The name carries a short hash of the key;
    the file carries the whole key, which load_model checks (so the hash needs no
    cryptographic strength, and hashlib's OpenSSL import stays out of a `recommend`)."""
    data = key.encode("utf-8", "surrogatepass")
    return xdg.cache_dir() / f"model-{zlib.crc32(data):08x}{zlib.adler32(data):08x}.fit"


def get_model(db: str | None = None) -> FittedModel:
    """The model fitted on everything in the store. A fit is cached on disk under a key made
    of the store's data version and the model settings, so a plain `recommend` neither
    re-reads the datasets nor refits; any new probe run or data change makes a new key."""

    settings = ModelSettings.load(db=db)
    skey = settings_key(settings)
    version = quick_version(db)
    key = None
    if version is not None:
        key = f"{version}|{skey}"
        if key in _cache:
            return _cache[key]
        cached = load_model(_cache_file(key), settings, key)
        if cached is not None:
            _cache.clear()
            _cache[key] = cached
            return cached
    obs = _observations(db)
    model = fit(obs, settings, stored_device_params(db))
    # The store was just created or seeded, or a calibration was refitted for this fit: its
    # version now is the one this model was fitted on.
    version = quick_version(db)
    if version is not None:
        key = f"{version}|{skey}"
    if key is not None:
        try:
            save_model(model, _cache_file(key), key)
        except OSError:
            pass  # a read-only cache dir only costs a refit next time
        _cache.clear()
        _cache[key] = model
    return model


def stored_device_params(db: str | None) -> dict:
    """Device parameters `fsadvisor calibrate DEVICE` fitted and stored, by device identity
    (none in a store without calibrations: then raw-device runs lift the priors), each as
    this version's fit leaves it (device_figures.current_calibration). The model is fitted
    on every device's observations: one calibrated by another version is refitted here too,
    and its own line is owed only where a device's output is read (device_params_and_note)."""
    with open_store(db) as store:
        return {
            ident: p
            for ident in store.calibrated_devices()
            if (p := device_figures.current_calibration(store, ident)[0]) is not None
        }


def _inspect(path: str, plp: str) -> Device:
    """A device path, inspected read-only (host/device.py)."""
    # start-up: the device inspection loads only for a path; a spec such as nvme:1.92T is
    # parsed by host/spec.py alone (tests/unit/test_startup_imports.py)
    from fsadvisor.host import device

    return device.inspect(path, plp, device.HOST)


def resolve_device(
    spec: str | None, plp: str | None = None, sector_size: int | None = None
) -> Device:
    """A device path (inspected read-only), a device-library name (``samsung-990-pro-2tb``)
    or a spec like ``nvme:1.92T``; default 1 TB NVMe. A path's logical sector size is its
    own (sysfs); a name or a spec has ``sector_size``, else 4096 assumed (the stricter
    case: every mkfs command made for it also runs on a 512-byte-sector drive)."""
    limits.check("sector-size", sector_size)
    named = library_device(spec, plp)
    if named is not None:
        return replace(named, logical_block_size=sector_size or ASSUMED_SECTOR_BYTES)
    dev = devspec.device_from_spec(DEFAULT_DEVICE_SPEC if spec is None else spec, _inspect)
    if plp:
        if not is_plp(plp):
            raise FsAdvisorError(f"--plp must be yes, no or unknown, not {plp!r}")
        dev = replace(dev, plp=plp)
    if dev.path is None:
        return replace(dev, logical_block_size=sector_size or ASSUMED_SECTOR_BYTES)
    if sector_size is not None and sector_size != dev.logical_block_size:
        raise ConfigError(
            f"--sector-size {sector_size}: {dev.path} reports "
            f"{dev.logical_block_size}-byte logical sectors (sysfs); leave "
            f"--sector-size out for a device path"
        )
    return dev


def sector_note(device: Device, spec: str | Device | None, sector_size: int | None) -> str:
    """Which logical sector size the candidates were held to, and where it came from."""
    n = device.logical_block_size
    if isinstance(spec, Device) or device.path:
        return f"logical sector size {n} B (the device's own)"
    if sector_size is not None:
        return f"logical sector size {n} B (--sector-size)"
    return (
        f"logical sector size {n} B assumed for a device given by size or name: every "
        f"mkfs command shown also runs on a 512-byte-sector drive (--sector-size 512 "
        f"lets smaller blocks be considered)"
    )


@dataclass(frozen=True)
class DeviceDescription:
    """A device with the XFS allocation-group range and mkfs.xfs default for its size (what
    the TUI's device pane shows and the AG column of the recommendations is chosen from)."""

    device: Device
    ag_range: tuple[int, int]
    ag_default: int


def describe_device(spec: str | None, plp: str | None = None) -> DeviceDescription:
    dev = resolve_device(spec, plp)
    return DeviceDescription(
        dev, catalog.ag_count_range(dev.size_bytes), catalog.default_ag_count(dev.size_bytes)
    )


def mkfs_target(device: Device) -> CommandTarget:
    """The device path to print in mkfs/mount commands. A path the prober would refuse (the
    root disk, something mounted, a disk with partitions) is never printed into a ready-to-run
    mkfs line: the placeholder is used instead, with the reason as a warning. Decided here,
    once per recommendation, so ranking itself never inspects the host."""
    if not device.path:
        return CommandTarget()
    from fsadvisor.host import device as devmod  # a path: inspected read-only

    verdict = devmod.safety_verdict(device.path)
    if verdict.ok or (verdict.needs_force and not verdict.reason):
        return CommandTarget(device.path, udev=_udev_target(device.path, device))
    if verdict.needs_force:
        return CommandTarget(
            device.path,
            f"{device.path}: {verdict.reason} — formatting destroys it",
            udev=_udev_target(device.path, device),
        )
    return CommandTarget(
        None,
        f"{device.path} must not be formatted ({verdict.reason}); "
        f"commands show {DEVICE_PLACEHOLDER}",
    )


def _udev_target(path: str, device: Device):
    """The device at ``path`` as apply's udev rule names it (its whole disk's kernel name,
    ID_WWN, ID_SERIAL; read-only), so recommend prints the same rule `fsadvisor apply`
    writes."""
    try:
        return target_for(path)
    except (FsAdvisorError, OSError):
        name = path.rsplit("/", 1)[-1]
        return Target(path, name, id_serial=device.serial)


def kernel_filesystems() -> dict[str, bool]:
    """Which filesystems this machine's kernel mounts (/proc/filesystems and modules)."""
    return {fs: catalog.kernel_supports(fs) for fs in ("ext4", "xfs", "btrfs", "f2fs")}


def check_scope(scope: str) -> None:
    if scope not in POWER_SCOPES:
        raise FsAdvisorError(f"power scope must be one of {', '.join(POWER_SCOPES)}, not {scope!r}")


def recommend(
    profile: str | Profile,
    device: str | Device | None = None,
    top: int = 5,
    db: str | None = None,
    scope: str = "system",
    energy_basis: str = "total",
    plp: str | None = None,
    sector_size: int | None = None,
) -> Recommendation:
    """Rank the candidates for ``profile`` (a preset name, a TOML path, or a Profile the
    caller built, e.g. the TUI's form with edited constraints). A profile that states PLP
    speaks for the device too, as ``--plp`` does. ``sector_size``: the logical sector size
    of a device given by size or name (resolve_device)."""
    limits.check("top", top)
    check_scope(scope)
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    if plp is None and prof.constraints.plp != "unknown":
        plp = prof.constraints.plp
    if isinstance(device, Device):  # e.g. the device a stored probe measured (report)
        dev = device
        if plp:
            if not is_plp(plp):
                raise FsAdvisorError(f"--plp must be yes, no or unknown, not {plp!r}")
            dev = replace(device, plp=plp)
    else:
        dev = resolve_device(device, plp, sector_size)
    params, refit_note = device_params_and_note(dev, db)
    rec = rank(
        get_model(db),
        prof,
        dev,
        top=top,
        scope=scope,
        energy_basis=energy_basis,
        kernel_has=kernel_filesystems(),
        target=mkfs_target(dev),
        device_params=params,
    )
    return finish(
        rec,
        db,
        describe_params(params),
        [sector_note(dev, device, sector_size)] + library_notes(dev),
        refit_note,
    )


def finish(
    rec: Recommendation,
    db: str | None,
    params_text: str,
    library_notes: list[str],
    calibration_note: str | None = None,
) -> Recommendation:
    """What recommend adds to a ranking, the same for the CLI and the TUI's what-if session:
    which device figures it used (and, under them, ``calibration_note``: its calibration
    refitted with this version's fit or predating it), what would settle a tie, the library
    drive's notes, and this device's own measurements first among the reasons."""
    answer.write_why(rec)
    rec.notes[:0] = [f"device parameters: {params_text}"] + (
        [calibration_note] if calibration_note else []
    )
    if rec.confidence is not None and rec.confidence.tied and not rec.confidence.settled:
        rec.confidence.settle = settle_cells(rec)
    rec.notes.extend(library_notes)
    _measured_first(rec, db)
    _mark_against_guidance(rec)
    rec.summary = answer.headline(rec)
    return rec


def _mark_against_guidance(rec: Recommendation) -> None:
    """A #1 that goes against documented guidance (service/guidance.py) says so: as measured
    on this device when its own runs put it there, else as a warning naming the rule and its
    source (the ranking should never get there: tests/unit/test_guidance.py)."""
    if not rec.ranked:
        return
    top = rec.ranked[0]
    kernel_has = kernel_filesystems() if rec.device.path else None
    for rule in guidance.against(top.config, rec.profile, rec.device, kernel_has):
        if rec.lead.get("measured_here"):
            top.why.insert(
                0,
                f"measured on this device against documented guidance ({rule.says}; {rule.source})",
            )
        else:
            top.warnings.insert(
                0,
                f"goes against documented guidance: {rule.says} "
                f"({rule.source}) — measure it on this device before using "
                f"it",
            )


def _short_number(x: float, scale_of: float | None = None) -> str:
    """``61k`` for 61,234; a spread in its mean's unit (``± 2k``, never ``± 1,987``)."""
    big = abs(x if scale_of is None else scale_of) >= 1e4
    return f"{x / 1e3:,.0f}k" if big else f"{x:,.0f}"


def _measured_first(rec: Recommendation, db: str | None) -> None:
    """When the user's own runs of this profile on this device measured a recommended
    configuration, its first why-line says so, before any paper."""
    dev = rec.device
    if not dev.path and not dev.serial:
        return
    with open_store(db) as store:
        # A probe with --profile stores the profile's cells as "profile:<name>"
        # (probe/plan.profile_workload), a joint probe's shared cells name it among their
        # profiles (both: the profile filter); imported and older runs use the bare name.
        found = store.summaries(profile=rec.profile.name) + store.summaries(
            workload_name=rec.profile.name
        )
    mine = [
        s
        for s in found
        if (dev.path and s.get("device_path") == dev.path)
        or (dev.serial and s.get("device_serial") == dev.serial)
    ]
    for r in rec.ranked:
        runs = [
            s
            for s in mine
            if s.get("config_key") == r.config.key() and (s.get("iops") or {}).get("mean")
        ]
        if not runs:
            continue
        s = max(runs, key=lambda x: x["n"])
        st = s["iops"]
        spread = (
            f" ± {_short_number(st['sd'], st['mean'])}"
            if st.get("sd") is not None
            else " (1 run — no interval)"
        )
        where = s.get("device_path") or dev.path or dev.serial
        r.why.insert(
            0,
            f"measured on {where}: {s['n']} run{'s' if s['n'] != 1 else ''}, "
            f"{_short_number(st['mean'])}{spread} IOPS",
        )


def settle_cells(rec: Recommendation, min_p: float = 0.05, most: int = 4) -> list[dict]:
    """The cells that would decide a tie: the defaults of every leading filesystem (those of
    the leaders and of the entries tied with #1: what a variant must beat to earn its
    settings, never left out for variants of one option), then #1 and every leader that is
    best with probability >= ``min_p`` up to ``most`` cells in all. Each with the probe's
    default repetitions, timed by the probe's own per-cell estimate on this device
    (probe/timing.py, which probe/plan.py's Plan.cell_estimate_s uses: a test holds the two
    equal). ``p_best`` is None for a default the model does not count among the leaders."""
    # the probe's timing: only for a tie (`simulate` loads no probe code: test_fast_startup)
    from fsadvisor.probe import timing

    name = f"profile:{rec.profile.name}"  # the cell's workload name (plan.profile_workload)
    size = timing.default_size_bytes(rec.device.size_bytes)
    cell_s = timing.cell_seconds(rec.profile.workload.read_pct, size)
    conf = rec.confidence
    if conf is None:  # no decision: nothing to settle
        return []
    p_of = dict(zip(conf.labels, conf.p_best))

    def cell(label: str) -> dict:
        p = p_of.get(label)
        return {
            "config": label,
            "p_best": None if p is None else round(p, 4),
            "workload": name,
            "reps": timing.DEFAULT_REPS,
            "seconds": round(cell_s * timing.DEFAULT_REPS, 1),
        }

    # The ranking hands over the leaders' configurations with their labels (no second
    # pass over the catalog to look the labels up); a label starts with its filesystem.
    first = rec.ranked[0].label if rec.ranked else None
    tied = [r.config.fs for r in rec.ranked if r.label == first]
    leading = dict.fromkeys(tied + [k.split(",")[0].split()[0] for k in conf.labels])
    ranked_fs = {r.config.fs for r in rec.ranked} | {
        r.config.fs for r in rec.best_per_filesystem.values()
    }
    sched = default_scheduler(rec.device)
    defaults = []
    for fs in leading:
        if fs not in ranked_fs:  # excluded here (constraints, this kernel)
            continue
        try:
            defaults.append(catalog.default_config(fs, rec.device.size_bytes, sched).label())
        except ConfigError:  # a filesystem this device is too small for
            continue
    out = [cell(label) for label in defaults]
    for i, (key, p) in enumerate(zip(conf.labels, conf.p_best)):
        if key in defaults or (i and p < min_p) or len(out) >= most:
            continue
        out.append(cell(key))
    return out


def device_params_of(dev: Device, db: str | None):
    """This device's calibration in the store, else its kind's prior (service/device_figures)."""
    return device_params_and_note(dev, db)[0]


def device_params_and_note(dev: Device, db: str | None):
    """device_params_of, and the line owed when its calibration was refitted with this
    version's fit or predates it (service/device_figures.current_calibration)."""
    return device_figures.device_params_and_note(dev, db)


def describe_params(params) -> str:
    return device_figures.describe(params)


def workload_for(workload: Any = None, profile: str | None = None):
    if profile is not None and workload is not None:
        raise FsAdvisorError("give either a workload or a profile, not both")
    if profile is not None:
        return get_profile(profile).workload
    if workload is None:
        raise FsAdvisorError("a workload (JSON) or a profile name is required")
    if isinstance(workload, str):
        try:
            workload = json.loads(workload)
        except json.JSONDecodeError as e:
            raise ProfileError(f"workload is not valid JSON: {e.msg} at column {e.colno}") from e
    if isinstance(workload, str):
        return get_profile(workload).workload
    if not isinstance(workload, dict):
        raise ProfileError("workload must be a JSON object or a profile name")
    return workload_from_dict(workload)


def config_for(config: Any):
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError as e:
            raise ConfigError(f"config is not valid JSON: {e.msg} at column {e.colno}") from e
    if not isinstance(config, dict):
        raise ConfigError(
            "config must be a JSON object like "
            '{"filesystem": "xfs", "mount": ["noatime"], "ag_count": 16}'
        )
    return catalog.config_from_dict(config)


class _Memo:
    """Per-batch memory of everything a prediction line needs that does not depend on the
    line alone: the model, parsed profiles, resolved devices, device parameters and whole
    results of repeated requests. A failure is remembered as its exception and raised again,
    so a repeated bad value gives the same error on every line. One batch is one moment:
    a device path is inspected, and the store read, once per distinct value."""

    def __init__(self, db: str | None):
        self.db = db
        self.memo: dict[Any, Any] = {}
        self._model: FittedModel | None = None

    def get(self, kind: str, key: Any, make):
        k = (kind, key)
        try:
            hit = self.memo[k]
        except KeyError:
            try:
                hit = (True, make())
            except (FsAdvisorError, ValueError) as e:
                hit = (False, e)
            self.memo[k] = hit
        except TypeError:  # an unhashable key (e.g. a list where a value belongs): no memo
            return make()
        if hit[0]:
            return hit[1]
        raise hit[1]

    def model(self) -> FittedModel:
        if self._model is None:
            self._model = get_model(self.db)
        return self._model


def _json_key(value: Any) -> Any:
    # The request value as written (key order kept: error messages name the first bad key).
    return value if isinstance(value, (str, type(None))) else json.dumps(value)


def _request_parts(
    memo: _Memo, config: Any, workload: Any, profile: str | None, device: Any, scope: str
) -> tuple:
    """A request's configuration, workload and device, checked in predict_one's order (so
    the same first error) and remembered in ``memo``."""
    check_scope(scope)
    cfg = memo.get("config", _json_key(config), lambda: config_for(config))
    w = memo.get(
        "workload", (_json_key(workload), profile), lambda: workload_for(workload, profile)
    )
    spec = device if isinstance(device, str) or device is None else json.dumps(device)
    dev = memo.get("device", spec, lambda: resolve_device(spec))
    memo.get("valid", (cfg, dev.size_bytes), lambda: catalog.validate(cfg, dev.size_bytes))
    return cfg, w, dev


def _params(memo: _Memo, dev: Device):
    """(device parameters, their line, the calibration's refit line or None), once a batch."""

    def lookup():
        p, note = device_params_and_note(dev, memo.db)
        return p, describe_params(p), note

    return memo.get("params", dev, lookup)


def _result(memo: _Memo, cfg, w, dev: Device, scope: str, raw=None) -> dict:
    """One request's answer from its prediction (``raw``: made for it already, uncapped;
    None: predicted here)."""
    params, described, refit_note = _params(memo, dev)
    if raw is None:
        raw = predict(memo.model(), cfg, w, dev, scope, device_params=params)
    p = ceilings.cap(raw, w)
    basis = dict(p.basis)
    basis["device_parameters"] = described
    if refit_note:
        basis["calibration"] = refit_note
    warnings = [f"{r.option}: {r.reason}" for r in catalog.risks(cfg)]
    if cfg.fs == "f2fs" and not memo.get("kernel", "f2fs", lambda: catalog.kernel_supports("f2fs")):
        warnings.append("f2fs: not supported by this machine's kernel; check the target host")
    return {
        "config": cfg.to_dict(),
        "workload": memo.get("workload_dict", w, w.to_dict),
        "device": memo.get("device_dict", dev, dev.to_dict),
        "predicted": p.to_dict(),
        "uncertainty": dict(p.uncertainty),
        "basis": basis,
        "warnings": warnings,
    }


def _predict_memo(
    memo: _Memo, config: Any, workload: Any, profile: str | None, device: Any, scope: str
) -> dict:
    """predict_one, with every step remembered in ``memo``."""
    cfg, w, dev = _request_parts(memo, config, workload, profile, device, scope)
    # A repeated request is the same prediction: computed once per batch (the nested dicts
    # of the result are shared between the lines that repeat it).
    return dict(memo.get("result", (cfg, w, dev, scope), lambda: _result(memo, cfg, w, dev, scope)))


def _predict_together(memo: _Memo, requests: list[tuple], scope: str) -> None:
    """Predict at once every configuration that requests (cfg, w, dev) share a workload and
    a device with, and remember each answer in ``memo`` as the per-request path would: one
    predict_many over N configurations instead of N over one (the design, coefficients'
    moments and quadratic forms are laid out once). ``alone``: each answer's power interval
    is the one predicting it by itself gives. A group that fails is left to the per-request
    path, which gives each request its own error."""
    groups: dict[tuple, dict] = {}
    for cfg, w, dev in requests:
        try:
            if ("result", (cfg, w, dev, scope)) not in memo.memo:
                groups.setdefault((w, dev), {})[cfg] = None
        except TypeError:  # unhashable: the per-request path, without a memo
            continue
    for (w, dev), cfgs in groups.items():
        if len(cfgs) < 2:
            continue
        try:
            params = _params(memo, dev)[0]
            raws = predict_many(
                memo.model(), list(cfgs), w, dev, scope, device_params=params, alone=True
            )
        except (FsAdvisorError, ValueError):
            continue
        for cfg, raw in zip(cfgs, raws):
            # memo.get calls the lambda at once, with this iteration's values.
            memo.get("result", (cfg, w, dev, scope), lambda: _result(memo, cfg, w, dev, scope, raw))  # noqa: B023


def predict_one(
    config: Any,
    workload: Any = None,
    profile: str | None = None,
    device: Any = None,
    db: str | None = None,
    scope: str = "system",
) -> dict:
    return _predict_memo(_Memo(db), config, workload, profile, device, scope)


def _request(line: str | bytes) -> dict:
    req = json.loads(line)
    if not isinstance(req, dict):
        raise FsAdvisorError("each line must be a JSON object")
    unknown = set(req) - {"device", "config", "workload", "profile", "id"}
    if unknown:
        raise FsAdvisorError(f"unknown key(s) {sorted(unknown)}")
    return req


def _line_error(n: int, e: BaseException) -> dict:
    if isinstance(e, json.JSONDecodeError):
        return {"line": n, "error": f"not JSON: {e.msg}"}
    if isinstance(e, RecursionError):
        return {"line": n, "error": "nested too deeply"}
    return {"line": n, "error": str(e)}


def predict_batch(
    lines: Iterable[str | bytes], db: str | None = None, scope: str = "system"
) -> Iterator[dict]:
    """JSON Lines in, one JSON object out per input line; a bad line yields an error object
    naming the line instead of stopping the batch. The model, profiles, devices and their
    parameters are loaded once per batch, not once per line. Each answer is given as soon
    as its line is read (predict_chunks predicts lines that arrive together at once)."""
    return predict_chunks(([line] for line in lines), db=db, scope=scope)


def predict_chunks(
    chunks: Iterable[Sequence[str | bytes]], db: str | None = None, scope: str = "system"
) -> Iterator[dict]:
    """predict_batch over lines in groups (what has arrived so far, say): the lines of a
    group that share a workload and a device are predicted together (_predict_together),
    with the same answers, in the same order, as one at a time. Lines may be bytes (JSON
    in UTF-8, -16 or -32); one that does not decode is an error line like any other."""
    memo = _Memo(db)
    n = 0
    for chunk in chunks:
        todo: list[tuple[int, dict | None, Any]] = []
        for line in chunk:
            n += 1
            if not line.strip():
                continue
            try:
                req = _request(line)
                todo.append(
                    (
                        n,
                        req,
                        _request_parts(
                            memo,
                            req.get("config"),
                            req.get("workload"),
                            req.get("profile"),
                            req.get("device"),
                            scope,
                        ),
                    )
                )
            except (FsAdvisorError, ValueError, RecursionError) as e:
                todo.append((n, None, _line_error(n, e)))
        if len(todo) > 1:
            _predict_together(memo, [parts for _, req, parts in todo if req is not None], scope)
        for k, asked, parts in todo:
            if asked is None:
                yield parts
                continue
            try:
                out = _predict_memo(
                    memo,
                    asked.get("config"),
                    asked.get("workload"),
                    asked.get("profile"),
                    asked.get("device"),
                    scope,
                )
            except (FsAdvisorError, ValueError, RecursionError) as e:
                yield _line_error(k, e)
                continue
            if "id" in asked:
                out["id"] = asked["id"]
            yield out


def _check_folds(folds: int) -> None:
    limits.check("folds", folds)


def validate(
    db: str | None = None,
    folds: int = 5,
    devices: list[str] | None = None,
    shares: tuple[float, ...] = (0.0, 0.1, 0.2),
) -> dict[str, Any]:
    """Cross-validated error of the model as it is used (current calibration), three ways:
    holding out whole source tables (transfer to an unseen study), random rows
    (interpolation within studies it knows) and whole devices (leave-one-device-out: the
    device's raw runs, optionally a share of its filesystem cells, predict the rest).
    ``devices``: the device identities to hold out (default: every device with raw runs and
    at least 4 filesystem cells)."""
    # leave-one-device-out and the records it reads: validate only (recommend loads no records)
    from fsadvisor.predict import validate as lodo

    _check_folds(folds)
    obs = _observations(db)
    settings = ModelSettings.load(db=db)
    by_source = cross_validate(obs, folds=folds, settings=settings, group_by="source")
    by_row = cross_validate(obs, folds=folds, settings=settings, group_by="row")
    eligible = lodo.eligible_devices(obs)
    if devices:
        unknown = [d for d in devices if d not in eligible]
        if unknown:
            raise FsAdvisorError(
                f"no device {unknown[0]!r} with raw-device runs and filesystem cells in the "
                "store; known: " + (", ".join(eligible) or "none")
            )
    held = lodo.leave_devices_out(
        obs,
        devices or eligible,
        settings,
        shares,
        device_params=stored_device_params(db),
        pick=first_choice,
    )
    return {
        "observations": len(obs),
        "prior_scale": settings.prior_scale,
        "calibration": settings.calibration_source,
        "by_source_table": by_source,
        "by_row": by_row,
        "by_device": held,
    }


def calibrate(
    db: str | None = None, out: str | Path | None = None, folds: int = 5
) -> dict[str, Any]:
    """Choose the prior width by grouped cross-validation, fit on everything in the store and
    write the parameters with how they were fitted (default: ``<store>.calibration.json``
    beside the store, which later predictions on *that* store use; other stores keep theirs)."""
    _check_folds(folds)
    if out is not None and not str(out).strip():
        raise FsAdvisorError("--output is empty")
    # Where it goes is checked before the cross-validation (a minute of CPU here), not after.
    target = Path(out) if out else calibration_path(db)
    if target is None:
        raise FsAdvisorError(
            "an in-memory store has nowhere to keep a calibration: give --output FILE"
        )
    if target.is_dir():
        raise FsAdvisorError(f"--output {target} is a directory: give a file name")
    obs = _observations(db)
    t0 = time.perf_counter()
    # The search starts from the shipped priors, never from this or another store's
    # earlier calibration.
    scale, table = choose_prior_scale(
        obs, folds=folds, settings=ModelSettings.load(db=db, use_store_calibration=False)
    )
    settings = ModelSettings.load(prior_scale=scale)
    # How far one measured device's findings carry to another, chosen the same way by
    # leave-one-device-out when the store holds two or more measured devices.
    device_sd, device_table = choose_device_sd(obs, settings)
    if device_sd is not None:
        settings = settings.with_device_sd(device_sd)
    m = fit(obs, settings, stored_device_params(db))
    took = time.perf_counter() - t0
    doc = {
        "how": "Bayesian linear model on log scale (fsadvisor/predict/: fit.py, features.py, "
        "mechanisms.py): weighted ridge with the priors of models/priors.toml and the "
        "mechanism priors, the configuration-effect prior sd multiplied by prior_scale, "
        "chosen as the value with the lowest median held-out error in "
        f"{folds}-fold cross-validation grouped by source table; with two or more "
        "measured devices, device_sd (prior sd of a device's own deviations) chosen "
        "by leave-one-device-out; three noise levels re-estimated robustly from the "
        "residuals; rooflines from each device's own parameters (fitted from its runs, "
        "else its kind's models/devices.toml figures as priors)",
        "fitted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "prior_scale": scale,
        "prior_scale_search": table,
        "device_sd": device_sd,
        "device_sd_search": device_table,
        "data_hash": m.data_hash,
        "observations_used": m.n_observations,
        "equations": m.n_rows,
        "noise_sd_log": m.noise_sd,
        "fit_seconds": took,
        "coefficients": {
            n: {
                "mean": round(float(m.theta[i]), 5),
                "sd": round(float(m.cov[i, i] ** 0.5), 5),
                "data": m.sources.get(n, []),
            }
            for n, i in sorted(m.index.items())
        },
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    doc["written_to"] = str(target)
    _cache.clear()
    return doc
