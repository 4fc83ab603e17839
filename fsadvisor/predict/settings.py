"""Model settings: priors (models/priors.toml), device figures (models/devices.toml), the
prior width and where a store's calibration lives (beside the store, never a global file)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from fsadvisor.predict import mechanisms, spec
from fsadvisor.catalog.device_params import DeviceParams, prior_params
from fsadvisor.infra.resources import data_dir, read_toml

if TYPE_CHECKING:  # records.py: not built by a recommend from a cached fit
    from fsadvisor.records import Observation

# Metrics whose observations carry performance information, and how.
RATE_METRICS = {"iops", "ops_per_s", "files_per_s", "db_ops_per_s", "transactions_per_s"}
LATENCY_MEAN_METRICS = {"mean_latency_us", "fsync_latency_us"}
EFFICIENCY_METRICS = {"ops_per_joule", "ai_iops_per_watt", "iops_per_watt", "energy_efficiency"}
# Bytes per unit for bandwidth metrics, by the unit the source states (seed 002's "MB/s"
# column is MiB/s: its harness divides by 1024*1024, so the dataset says MiB/s).
BANDWIDTH_UNITS = {"mb_s": {"MB/s": 1e6, "MiB/s": 1 << 20}, "gb_s": {"GB/s": 1e9, "GiB/s": 1 << 30}}


# Coefficients describing configurations (as opposed to devices and workload shapes): the
# ones whose prior width `calibrate` tunes by cross-validation.
CONFIG_PREFIXES = ("fs:", "opt:", "ag:", "pwf:", "t:fs:")
PRIOR_SCALES = (0.1, 0.25, 0.5, 1.0)
# How much wider the 2010-era twin of a bare filesystem term (fs:xfs*lc@2010) is than the
# term, as a mechanism's era deviation is four times its filesystem deviation (ERA_2010_SD):
# what only 2010 rows show of a filesystem moves today's effect by 1 / (1 + 4^2), a
# seventeenth. A 2010 table is many rows against today's few, so at twice the width (a
# fifth) seeds 003/004 still made 70% of XFS's level on NVMe (fs:xfs +0.079, +0.022 without
# them) and set the sign of XFS's deviation under several fsyncing writers (+0.09: XFS waits
# more), where the three devices measured here append with fsync 1.15-1.39x faster on XFS
# than on ext4 (datasets/reference/runs-mechanisms.csv log-append; the disk-backed loop).
ERA_TWIN_WIDTH = 4.0


def calibration_path(db: str | Path | None = None) -> Path | None:
    """Where `calibrate` writes the calibration of the store ``db``: beside it, as
    ``<db>.calibration.json``, so `--db A` and `--db B` never influence each other. None for
    an in-memory store (nothing to write beside)."""
    if db is not None and str(db) == ":memory:":
        return None
    # the user directories only for a file-backed store (tests use :memory:)
    from fsadvisor.infra import xdg

    path = Path(db).expanduser() if db is not None else xdg.default_store_path()
    return path.with_name(path.name + ".calibration.json")


@dataclass(frozen=True)
class ModelSettings:
    """What a fit depends on besides the data: the priors, the per-kind device figures,
    the prior width and where that width came from."""

    priors: dict[str, Any]
    devices: dict[str, dict[str, float]]
    prior_scale: float = 1.0  # multiplies the prior sd of configuration effects
    calibration_source: str = "none"

    @staticmethod
    def load(
        prior_scale: float | None = None,
        db: str | Path | None = None,
        use_store_calibration: bool = True,
    ) -> "ModelSettings":
        """Priors, device figures and the prior width. The width comes from the calibration
        of the store ``db`` (beside it) when there is one, else from the shipped
        models/calibration.json; never from a file shared by every store."""
        d = data_dir("models")
        priors = read_toml(d / "priors.toml")
        devices = read_toml(d / "devices.toml")
        source = "argument"
        device_sd = None
        if prior_scale is None:
            prior_scale, source = 1.0, "none (priors.toml as written)"
            beside = calibration_path(db) if use_store_calibration else None
            for cand in (beside, d / "calibration.json"):
                if cand is None:
                    continue
                try:
                    doc = json.loads(cand.read_text())
                    prior_scale = float(doc["prior_scale"])
                    if doc.get("device_sd") is not None:
                        device_sd = float(doc["device_sd"])
                    source = str(cand)
                    break
                except (OSError, ValueError, KeyError, TypeError):
                    continue
        out = ModelSettings(
            priors=priors, devices=devices, prior_scale=prior_scale, calibration_source=source
        )
        return out.with_device_sd(device_sd) if device_sd is not None else out

    def scaled(self, prior_scale: float) -> "ModelSettings":
        return ModelSettings(self.priors, self.devices, prior_scale, "argument")

    def with_device_sd(self, sd: float) -> "ModelSettings":
        """The same settings with the prior sd of a measured device's own deviations from the
        shared effects (priors.toml "d:") set to ``sd`` -- what `calibrate` chooses by
        leave-one-device-out when the store holds two or more measured devices."""
        priors = {**self.priors, "prior": {**self.priors["prior"], "d:": {"sd": float(sd)}}}
        return ModelSettings(priors, self.devices, self.prior_scale, self.calibration_source)

    def prior(self, name: str) -> tuple[float, float]:
        """(mean, sd) of a coefficient's prior: a declared option effect's own
        (predict/spec.py), a mechanism's (``m:``, predict/mechanisms.py), else the longest
        matching prefix in priors.toml."""
        cache = self.__dict__.setdefault("_prior_cache", {})
        hit = cache.get(name)
        if hit is None and name.startswith(("m:", "pwf:m:")):
            mp = mechanisms.prior(name) if name.startswith("m:") else None
            hit = cache[name] = mp if mp is not None else (0.0, 0.05)
        if hit is None and name.startswith(("opt:", "ag:")):
            declared = spec.prior(name)  # an option effect's own prior (predict/spec.py)
            if declared is not None:
                hit = cache[name] = (declared[0], declared[1] * self.prior_scale)
        if hit is None:
            mean, best_m = 0.0, ""
            for prefix, v in self.priors.get("prior_mean", {}).items():
                if name.startswith(prefix) and len(prefix) > len(best_m):
                    best_m, mean = prefix, float(v)
            best, sd = "", 1.0
            for prefix, entry in self.priors["prior"].items():
                if name.startswith(prefix) and len(prefix) > len(best):
                    best, sd = prefix, float(entry["sd"])
            if name.startswith("d:") and "|m:" in name and "d:|m:" in self.priors["prior"]:
                # A device's own deviation from a mechanism ("d:<device>|m:..."): the device
                # id sits between the two parts, so no prefix can name it. A mechanism that
                # is a level rather than a share of a time declares its own.
                own_sd = mechanisms.device_sd(name.partition("|")[2])
                sd = own_sd if own_sd is not None else float(self.priors["prior"]["d:|m:"]["sd"])
            elif (
                name.startswith("d:")
                and "|fs:" in name
                and "d:|fs:*" in self.priors["prior"]
                and name.rpartition("*")[2] in spec.FS_SHAPE_TERMS
            ):
                # ... and from a filesystem's own shape on the device (spec.FS_SHAPE_TERMS),
                # its fsync and metadata terms by their own entry where priors.toml has one
                mediated = name.rpartition("*")[2] in spec.FS_MEDIATED
                key = "d:|fs:*mediated" if mediated else "d:|fs:*"
                sd = float(self.priors["prior"].get(key, self.priors["prior"]["d:|fs:*"])["sd"])
            if name.startswith(CONFIG_PREFIXES):
                sd *= self.prior_scale
            if name.startswith("fs:") and name.endswith(spec.ERA_SUFFIX):
                sd *= ERA_TWIN_WIDTH
            hit = cache[name] = (mean, sd)
        return hit

    @property
    def device_predictive_scale(self) -> float:
        """priors.toml [predictive] device_sd_scale: the width a prediction states for a
        device's own deviations (``d:``) against the width the fit shrinks them with."""
        return float(self.priors.get("predictive", {}).get("device_sd_scale", 1.0))

    def predictive_prior(self, name: str) -> tuple[float, float]:
        """(mean, sd) a prediction states for a coefficient the fit never saw: its prior,
        but a device's own deviation (``d:``) at its predictive width. The fit's width for
        those sets how far one device's findings move the effects every device shares (a
        choice for the means, made on held-out matrices); how far an unmeasured cell of a
        measured device lands from the shared effects is what devices held out show, and
        that is narrower (benchmarks/uncertainty_calibration.py)."""
        mean, sd = self.prior(name)
        if name.startswith("d:"):
            sd *= self.device_predictive_scale
        return mean, sd

    def weight(self, obs: Observation) -> float:
        w = self.priors["weights"]
        # A kind's weight keeps data of old device kinds from posing as today's figures. A
        # device with an identity has its own level and deviation terms, which take what is
        # peculiar to it whatever its weight, so its rows count in full there
        # ("weights.identified"); the shared effects get only the prior-variance share.
        if obs.device_id and "identified" in w:
            weight = float(w["identified"]) * obs.weight
        else:
            weight = float(w.get(obs.device_kind, 0.3)) * obs.weight
        if "[cv_over_40pct]" in obs.note or "cv>40%" in obs.note:
            weight *= float(w["cv_over_40pct"])
        if obs.energy_source == "estimate" and obs.metric in ({"watts"} | EFFICIENCY_METRICS):
            weight *= float(w["estimate_energy"])
        return weight

    def device_params(self, kind: str) -> dict[str, float]:
        return self.devices.get(kind) or self.devices["nvme"]

    def params_for(
        self, kind: str, device_id: str = "", fitted: Mapping[str, DeviceParams] | None = None
    ) -> DeviceParams:
        """The device's fitted parameters when there are some, else its kind's prior."""
        if fitted and device_id in fitted:
            return fitted[device_id]
        return prior_params(kind, self.devices, device_id)
