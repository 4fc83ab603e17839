"""The probe's standard micro matrix, read from fio job files: runner/probe-micro/*.fio.

Why job files are the source (and not the presets or a Python table): a job file is what fio
itself runs, so the workload a user reads, runs by hand (``TARGET=... fio runner/probe-micro/
01-4k-randread-qd32.fio``) and the one the probe measures are the same text; the presets are
fsadvisor's own notation and a Python table is readable only here. Adding a workload to the
matrix is adding a file; the order of the matrix is the order of the file names.

The probe does not run the file: it reads the job's own keys (rw, bs, iodepth, rwmixread,
fsync, ioengine for the metadata engines, nrfiles, filesize) into a
:class:`~fsadvisor.domain.Workload` and builds its fio command from that
(:func:`fsadvisor.tools.fio.workload_argv`), so every cell gets the plan's runtime, data set
and best I/O engine. Keys that say how plain fio runs the file (``${TARGET}``, size, runtime,
percentiles) are not part of the workload. What follows from the keys is derived, not
written twice: metadata jobs (file create/stat/delete) count files as their operations and
never run on the raw device; sequential jobs of 128 KiB and more are ranked by bytes per
joule, as profiles are (fsadvisor/profiles/parse.py).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from fsadvisor.domain import METADATA_MODES, Workload
from fsadvisor.errors import ConfigError
from fsadvisor.infra.resources import data_dir
from fsadvisor.sizes import parse_size
from fsadvisor.tools import jobfile

MICRO_DIR = "probe-micro"  # under runner/
BYTES_RANK_MIN_BS = 128 << 10  # as fsadvisor/profiles/parse.py: bandwidth jobs rank by bytes
# fio keys a micro job may set, besides the ones that only make the file runnable by hand.
WORKLOAD_KEYS = {"rw", "bs", "iodepth", "rwmixread", "fsync", "ioengine", "nrfiles", "filesize"}
HAND_RUN_KEYS = {
    "description",
    "filename",
    "directory",
    "size",
    "runtime",
    "time_based",
    "direct",
    "numjobs",
    "group_reporting",
    "lat_percentiles",
    "percentile_list",
    "filename_format",
    "create_on_open",
    "fallocate",
    "openfiles",
}
FRACTION_OF = {"filecreate": "create_frac", "filestat": "stat_frac", "filedelete": "delete_frac"}


def job_keys(text: str, origin: str) -> tuple[str, dict[str, str]]:
    """(section name, its keys over [global]) of a one-job fio file."""
    glob, jobs = jobfile.sections(text, origin)
    if len(jobs) != 1:
        raise ConfigError(f"{origin}: a micro workload file holds exactly one job, not {len(jobs)}")
    name, own = jobs[0]
    keys = {**glob, **own}
    unknown = set(keys) - WORKLOAD_KEYS - HAND_RUN_KEYS
    if unknown:
        raise ConfigError(
            f"{origin}: fio keys the probe would not honour: {', '.join(sorted(unknown))}"
        )
    return name, keys


def workload_of(keys: dict[str, str], origin: str) -> tuple[Workload, bool]:
    """(the Workload, whether it also runs on the raw device) from a job's fio keys."""
    kw: dict[str, Any] = {}
    try:
        engine = keys.get("ioengine", "")
        if engine in METADATA_MODES:
            kw.update(rw=engine, ioengine=engine, op="file")
            kw[FRACTION_OF[engine]] = 1.0
        else:
            kw["rw"] = keys["rw"]
        if "bs" in keys:
            kw["bs_bytes"] = parse_size(keys["bs"])
        for key in ("iodepth", "rwmixread", "nrfiles"):
            if key in keys:
                kw[key] = int(keys[key])
        if "fsync" in keys:
            kw.update(fsync_every=int(keys["fsync"]), fsync_mode="every_n")
        if "filesize" in keys:
            kw["file_size_bytes"] = parse_size(keys["filesize"])
    except (KeyError, ValueError) as e:
        raise ConfigError(f"{origin}: {e}") from None
    meta = kw["rw"] in METADATA_MODES
    if meta:
        kw["working_set_bytes"] = kw.get("nrfiles", 1) * kw.get("file_size_bytes", 1 << 30)
    elif kw["rw"] in ("read", "write") and kw.get("bs_bytes", 4096) >= BYTES_RANK_MIN_BS:
        kw["rank_by"] = "bytes"
    return Workload(**kw), not meta


@functools.lru_cache(maxsize=2)
def micro_jobs(directory: str | None = None) -> tuple[tuple[str, Workload, bool], ...]:
    """(name, Workload, raw baseline) of every job file in ``directory``, by file name."""
    path = Path(directory) if directory else data_dir("runner") / MICRO_DIR
    out = []
    for f in sorted(path.glob("*.fio")):
        name, keys = job_keys(f.read_text(encoding="utf-8"), f"runner/{MICRO_DIR}/{f.name}")
        w, raw = workload_of(keys, f"runner/{MICRO_DIR}/{f.name}")
        out.append((name, w, raw))
    names = [n for n, _, _ in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"runner/{MICRO_DIR}: two job files name the same workload")
    return tuple(out)
