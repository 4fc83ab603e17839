"""Presets derived from a runner/ job file: seed 000's fio micro matrix, ``fio-<rw>-<bs>-j<n>``.

runner/micro.fio is the source of that matrix (the file seed 000's experiments can be rerun
with by plain fio); the 30 presets are its ten sections at each of the paper's process
counts, so the two never disagree and a section added there is a preset here. Seed 000
§III-B: one 100 GB file, 4 KB and 128 KB requests, 1, 4 or 8 processes, iodepth 64, direct
io_uring; the mixed case is 50% random reads / 50% random writes.
"""

from __future__ import annotations

import functools

from fsadvisor.domain import Profile
from fsadvisor.errors import ConfigError
from fsadvisor.profiles.parse import profile_from_dict
from fsadvisor.infra.resources import data_dir
from fsadvisor.tools import jobfile

SEED_000_NUMJOBS = (1, 4, 8)  # seed 000 §III-B: "1, 4 or 8 processes" (micro.fio's NUMJOBS)
SEED_000_FILE = "100G"  # seed 000 §III-B: one 100 GB file
SEED_000_ENGINE = "io_uring"  # what seed 000 ran; micro.fio leaves it to ${IOENGINE}
SOURCE = "seed 000, Section III.B (fio microbenchmarks)"
TAGS = ["micro", "seed-000"]
WORDS = {
    "randread": "random reads",
    "randwrite": "random writes",
    "read": "sequential reads",
    "write": "sequential writes",
    "randrw": "random {mix}/{rest} read/write mix",
}
PROFILE_KEYS = ("rw", "bs", "iodepth", "rwmixread", "direct")  # the job keys a preset takes


def _description(rw: str, bs: str, numjobs: int, keys: dict[str, str]) -> str:
    mix = int(keys.get("rwmixread", 50))
    what = WORDS[rw].format(mix=mix, rest=100 - mix)
    procs = "1 process" if numjobs == 1 else f"{numjobs} processes"
    return (
        f"fio {what}, {bs.upper()}B requests, {procs} x iodepth {keys['iodepth']}, "
        f"direct {SEED_000_ENGINE} on a {SEED_000_FILE[:-1]} GB file"
    )


@functools.lru_cache(maxsize=1)
def micro_presets() -> tuple[Profile, ...]:
    path = data_dir("runner") / "micro.fio"
    origin = "runner/micro.fio"
    glob, jobs = jobfile.sections(path.read_text(encoding="utf-8"), origin)
    out = []
    for section, own in jobs:
        keys = {**glob, **own}
        rw, bs = keys["rw"], keys["bs"]
        if section != f"{rw}-{bs}":
            raise ConfigError(f"{origin}: section [{section}] should be named {rw}-{bs}")
        for n in SEED_000_NUMJOBS:
            fio = {"rw": rw, "bs": bs, "iodepth": int(keys["iodepth"]), "numjobs": n}
            if rw in ("rw", "randrw"):
                fio["rwmixread"] = int(keys["rwmixread"])
            fio.update(
                direct=int(keys["direct"]), ioengine=SEED_000_ENGINE, nrfiles=1, size=SEED_000_FILE
            )
            name = f"fio-{section}-j{n}"
            out.append(
                profile_from_dict(
                    {
                        "description": _description(rw, bs, n, keys),
                        "source": SOURCE,
                        "tags": TAGS,
                        "fio": fio,
                    },
                    name,
                    origin=f"{origin} [{section}] x {n} jobs",
                )
            )
    return tuple(out)
