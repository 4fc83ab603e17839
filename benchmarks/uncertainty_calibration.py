"""Is the model's stated uncertainty of a difference borne out on devices it has not seen?

    python benchmarks/uncertainty_calibration.py               # raw-only
    python benchmarks/uncertainty_calibration.py --share 0.2   # with 20% of each device's cells

For every device of the shipped data with raw-device runs and filesystem cells, and for the
held-out disk-backed loop matrices (benchmarks/data/fidelity-diskloop*.sql.gz, which no fit
trains on), fit without the device's filesystem cells (or with --share of them) and compare
each pair of its configurations measured with the same workload:
z = (measured log ratio - predicted log ratio) / sqrt(model sd of the difference^2 + the
two cells' own sampling variance) (fsadvisor.predict.validate.uncertainty_check). Calibrated,
rms z is 1 and 68% / 95% of |z| fall below 1 / 2. recommend's tie rule reads this sd: too wide
and the answer falls to a measured or simpler candidate that is not equal; too narrow and a
lead the data does not support is stated with confidence. A deterministic analysis of stored
runs (fits only): the machine's load does not move it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DUMPS = sorted((ROOT / "benchmarks" / "data").glob("fidelity-diskloop*.sql.gz"))


def _shipped(tmp: str):
    """The shipped data's observations and device calibrations, read through a scratch store."""
    os.environ["FSADVISOR_DB"] = os.path.join(tmp, "store.db")
    os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
    from fsadvisor.service import advice

    return advice._observations(None), advice.stored_device_params(None), None


def _dump(path: Path, tmp: str):
    """A held-out matrix's store (a dump beside fidelity.py), read as fidelity.py reads it."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fidelity

    from fsadvisor.predict import validate
    from fsadvisor.service.device_figures import current_calibration
    from fsadvisor.store import open_store

    db = fidelity.restore_store(str(path), tmp)
    store = open_store(db)
    store.ensure_seeded()
    obs = store.observations()
    devices = [
        d
        for d in validate.eligible_devices(obs)
        if not d.startswith(("ram-loop:", "zram:"))
        and any(o.device_id == d and o.source.startswith("probe ") for o in obs)
    ]
    params = {d: p for d in devices if (p := current_calibration(store, d)[0]) is not None}
    return obs, params, (devices, db)


def _scaled(settings, factor: float):
    """``settings`` with the device-deviation priors' sds multiplied by ``factor``."""
    if factor == 1.0:
        return settings
    from fsadvisor.predict.settings import ModelSettings

    prior = dict(settings.priors["prior"])
    for key in ("d:", "d:|m:", "d:|fs:*", "d:|fs:*mediated"):
        if key in prior:
            prior[key] = {**prior[key], "sd": float(prior[key]["sd"]) * factor}
    return ModelSettings(
        {**settings.priors, "prior": prior},
        settings.devices,
        settings.prior_scale,
        settings.calibration_source,
    )


def _predictive(settings, scale: float | None):
    """``settings`` stating a device's own deviations at ``scale`` x their fit prior."""
    if scale is None:
        return settings
    from fsadvisor.predict.settings import ModelSettings

    return ModelSettings(
        {**settings.priors, "predictive": {"device_sd_scale": scale}},
        settings.devices,
        settings.prior_scale,
        settings.calibration_source,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--share", type=float, default=0.0, help="share of each device's cells given")
    ap.add_argument("--seed", type=int, default=0, help="which random draw of the given cells")
    ap.add_argument(
        "--device-sd-scale",
        type=float,
        default=1.0,
        help="multiply the prior sd of a measured device's own deviations (priors.toml "
        '"d:", "d:|m:", "d:|fs:*", "d:|fs:*mediated") by this, to see what a narrower or '
        "wider prior would state",
    )
    ap.add_argument(
        "--predictive-sd-scale",
        type=float,
        default=None,
        help="state a device's own deviations at this multiple of the fit's prior sd "
        "(priors.toml [predictive] device_sd_scale; default: as shipped), leaving the fit's "
        "means alone",
    )
    args = ap.parse_args(argv)
    from fsadvisor.predict import validate
    from fsadvisor.predict.settings import ModelSettings

    print(
        f"# held-out pairs, model sd of the log difference against the measured one "
        f"(share of cells given {args.share:.0%}, draw {args.seed}, device-deviation priors "
        f"x{args.device_sd_scale:g}, stated at x"
        f"{'shipped' if args.predictive_sd_scale is None else args.predictive_sd_scale}); "
        "calibrated: rms z 1, "
        "68% within 1 sd, 95% within 2"
    )
    sources = [("shipped data", None)] + [(p.name, p) for p in DUMPS]
    for name, path in sources:
        with tempfile.TemporaryDirectory(prefix="fsadvisor-uncertainty-") as tmp:
            obs, params, held = _shipped(tmp) if path is None else _dump(path, tmp)
            settings = _predictive(
                _scaled(ModelSettings.load(db=held[1] if held else None), args.device_sd_scale),
                args.predictive_sd_scale,
            )
            devices = held[0] if held else validate.eligible_devices(obs)
            print(f"## {name}")
            for d in devices:
                r = validate.uncertainty_check(
                    obs, d, settings, args.share, args.seed, device_params=params
                )
                if not r["pairs"]:
                    continue
                print(
                    f"{d[:60]:60s} {r['metric']:13s} pairs {r['pairs']:4d}  median |error| "
                    f"{r['median_abs_error']:.3f}, median sd {r['median_sd']:.3f}  rms z "
                    f"{r['rms_z']:.2f}  within 1 sd {r['within_1sd']:.0%}, 2 sd "
                    f"{r['within_2sd']:.0%}"
                    + (
                        f"; {r['certain_pairs']} called certain (sd < 1%), measured "
                        f"{r['certain_median_abs_error']:.3f} apart (median)"
                        if r["certain_pairs"]
                        else ""
                    )
                )
                for w in r["worst"][:3]:
                    a, b = w["pair"]
                    print(
                        f"    z {w['z']:+.1f}: {w['workload']}: {a} / {b}: measured - predicted "
                        f"{w['error']:+.2f}, sd {w['sd']:.2f}"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
