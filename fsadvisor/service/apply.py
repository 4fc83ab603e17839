"""`fsadvisor apply`: the artifacts a configuration-management user drops in for one
configuration on one device (fsadvisor.catalog.artifacts), and, with ``execute``, the
formatting itself.

A dry run (the default) only reads: the device's kernel name and udev identity. Formatting
goes through the probe's safety verdict (fsadvisor.host.device.safety_verdict: never a
mounted, held, partitioned or system device; signatures only with ``force``) and needs the
device typed back (``confirm``, the probe's --yes-wipe); after mkfs the fstab line and the
mount unit carry the real UUID. Nothing is mounted and no rule is installed here: that is
what the artifacts are for.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from fsadvisor import catalog, limits
from fsadvisor.catalog.artifacts import Artifacts, build
from fsadvisor.catalog.udev import Target
from fsadvisor.domain import FsConfig
from fsadvisor.errors import ConfigError, DeviceRefused, FsAdvisorError
from fsadvisor.host.run import CommandNotFound, run
from fsadvisor.host.trust import untrusted_dir
from fsadvisor.service.device_target import target_for

# Each step of apply imports what only it uses, saying so where it does (the configuration
# from JSON or from a rank, formatting's device inspection and safety checks with
# --execute, tempfile when files are written), so a dry run loads none of the others.

_MOUNTPOINT = re.compile(r"(/[A-Za-z0-9._@+-]+)+/?")
# A device path: /dev/ and path components of the characters kernel and udev names use
# (nvme0n1, disk/by-id/nvme-Samsung_SSD_990_PRO_2TB_S6Z..., mapper/vg-lv): nothing a YAML
# template, a udev rule or a shell could read as syntax.


def check_mountpoint(mountpoint: str) -> str:
    # Plain characters only: the path is written into fstab, a unit name, YAML and a udev
    # comment, and each has its own escaping rules.
    if (
        not _MOUNTPOINT.fullmatch(mountpoint or "")
        or "/../" in mountpoint + "/"
        or "/./" in mountpoint + "/"
    ):
        raise ConfigError(
            f"--mountpoint must be an absolute path of letters, digits and "
            f"._@+- (e.g. /srv/data), not {mountpoint!r}"
        )
    return mountpoint.rstrip("/") or "/"


def resolve_config(
    config: str | dict | None = None,
    rank: int | None = None,
    profile: str | None = None,
    device: str | None = None,
    db: str | None = None,
) -> tuple[FsConfig, str]:
    """The configuration to apply and where it came from: ``config`` (JSON), or rank
    ``rank`` of the recommendation for ``profile`` on ``device``."""
    if config is not None:
        if rank is not None:
            raise ConfigError("give --config JSON, or --rank N with --profile NAME")
        if profile is not None:
            raise ConfigError("--profile goes with --rank, not with --config")
        # the import service's parser (it loads the store and the records): --config only
        from fsadvisor.service.importing import parse_config

        return parse_config(config), "--config"
    if rank is None:
        raise ConfigError("give --config JSON, or --rank N with --profile NAME")
    if profile is None:
        raise ConfigError("--rank needs --profile NAME (the recommendation it ranks)")
    limits.check("rank", rank)
    from fsadvisor.service.advice import recommend  # the model (numpy): --rank only

    rec = recommend(profile, device=device, top=rank, db=db)
    if len(rec.ranked) < rank:
        raise ConfigError(
            f"the recommendation for {profile} has only {len(rec.ranked)} "
            f"configuration(s); --rank {rank} does not exist"
        )
    return rec.ranked[rank - 1].config, f"rank {rank} of recommend --profile {profile}"


def apply(
    config: str | dict | None = None,
    rank: int | None = None,
    profile: str | None = None,
    device: str = "",
    mountpoint: str = "/srv/data",
    out: str | os.PathLike[str] | None = None,
    execute: bool = False,
    confirm: str | None = None,
    force: bool = False,
    mount_unit: bool = False,
    db: str | None = None,
) -> dict[str, Any]:
    """Build (and with ``out`` write) the artifacts; with ``execute`` format the device
    first. Returns the artifacts as a dict, plus what was written and done."""
    mountpoint = check_mountpoint(mountpoint)
    target = target_for(device)
    cfg, origin = resolve_config(
        config, rank, profile, device if os.path.exists(device) else None, db
    )
    size = _size_bytes(device)
    catalog.validate(cfg, size)
    done: list[str] = []
    if execute:
        target = _format(cfg, target, confirm, force)
        done.append(f"formatted {target.path} as {cfg.fs} (UUID {target.uuid})")
    arts = build(cfg, target, mountpoint, with_mount_unit=mount_unit)
    written = write(arts, out) if out is not None else []
    return {
        **arts.to_dict(),
        "config_from": origin,
        "executed": execute,
        "done": done,
        "written": written,
    }


def _size_bytes(device: str) -> int | None:
    try:
        with open(device, "rb") as f:
            return f.seek(0, os.SEEK_END) or None
    except OSError:
        return None


def _format(cfg: FsConfig, target: Target, confirm: str | None, force: bool) -> Target:
    # the device inspection and the probe's safety checks (its runner): --execute only
    from fsadvisor.host import device as devmod
    from fsadvisor.service.probing import device_confirmed, root_problem

    if why := root_problem():
        raise DeviceRefused(why)
    verdict = devmod.safety_verdict(target.path, force=force)
    if not verdict.ok:
        raise DeviceRefused(verdict.reason or f"{target.path}: refused")
    if not device_confirmed(target.path, confirm):
        raise DeviceRefused(
            f"not confirmed: type the device exactly as {target.path} (or "
            "pass --yes-wipe with it) to let apply format it"
        )
    argv = catalog.mkfs_argv(cfg, verdict.resolved_path or target.path)
    try:
        proc = run(argv, timeout_s=600)  # host/run.py: own process group, one failure wording
    except CommandNotFound:
        raise FsAdvisorError(f"{argv[0]} is not installed") from None
    if proc.returncode != 0:
        why = " ".join((proc.stderr or proc.stdout).split())[:200]
        raise FsAdvisorError(f"{argv[0]} failed (exit {proc.returncode}): {why}")
    ident = devmod.signature_identity(verdict.resolved_path or target.path)
    if not ident or ident.get("TYPE") != cfg.fs or not ident.get("UUID"):
        raise FsAdvisorError(f"{target.path}: mkfs ran but blkid finds no {cfg.fs} UUID on it")
    return replace(target, uuid=ident["UUID"])


def write(arts: Artifacts, out: str | os.PathLike[str]) -> list[str]:
    """Write every artifact into ``out``, which must be a directory no one else can write
    (host/trust.py). Each file is written to a new temporary file there and renamed over the
    name: an existing symbolic link is replaced, never followed, and its target untouched."""
    d = Path(out)
    if d.is_symlink():
        raise ConfigError(f"--out {out} is a symbolic link; give the directory itself")
    d.mkdir(parents=True, exist_ok=True)
    if why := untrusted_dir(d):
        raise ConfigError(f"--out: {why}")
    docs = dict(arts.files)
    docs["fsadvisor-apply.json"] = (
        json.dumps({k: v for k, v in arts.to_dict().items() if k != "files"}, indent=2) + "\n"
    )
    paths = []
    for name, text in docs.items():
        paths.append(_write_new(d, name, text, 0o755 if name.endswith(".sh") else 0o644))
    return paths


def _write_new(d: Path, name: str, text: str, mode: int) -> str:
    import tempfile  # and random with it: only when files are written

    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, d / name)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return str(d / name)
