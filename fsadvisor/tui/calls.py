"""What the TUI's workers run: one call into fsadvisor.service each, returning data.

Nothing here imports textual, so these run in a worker thread and in tests alike.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from typing import Any

from fsadvisor.domain import Device, Profile
from fsadvisor.errors import FsAdvisorError
from fsadvisor.predict.rank import Recommendation

# The errors a front end turns into one line instead of a traceback: the same set the CLI's
# ``domain_errors`` catches (malformed TOML/JSON surfaces as ValueError).
USER_ERRORS = (FsAdvisorError, ValueError, FileNotFoundError)


def recommend(profile: Profile, device: str | None, top: int = 5,
              db: str | None = None) -> Recommendation:
    """advice.recommend for the in-memory Profile the form edited."""
    from fsadvisor.service import advice

    return advice.recommend(profile, device=device, top=top, db=db)


def device(spec: str | None) -> tuple[Device, tuple[int, int], int]:
    """The device (a path is inspected read-only) with its XFS allocation-group range and
    default, which the AG column of the recommendations is chosen from."""
    from fsadvisor import catalog
    from fsadvisor.service import advice

    dev = advice.resolve_device(spec)
    return dev, catalog.ag_count_range(dev.size_bytes), catalog.default_ag_count(dev.size_bytes)


def energy_sources() -> list[dict[str, Any]]:
    from fsadvisor.service.energy import energy_check

    return energy_check()


def history(db: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    from fsadvisor.service.store import history as store_history

    return store_history(limit=limit, db=db)


@dataclass
class ProbePreview:
    command: str  # the CLI line that runs this probe for real
    lines: list[str]  # what it would execute (comments start with #)
    cells: int
    estimated_s: float


def probe_preview(target: str, profile: str | None = None, quick: bool = True,
                  plp: str = "unknown", db: str | None = None) -> ProbePreview:
    """A dry run of ``fsadvisor probe``: ``target`` is a device path or ``scratch:SIZE``.
    Nothing is executed, not even fio's io_uring self-test (plan_probe(dry_run=True))."""
    from fsadvisor.service import probing

    target = target.strip()
    if not target:
        raise FsAdvisorError("give a device path (e.g. /dev/nvme1n1) or scratch:SIZE (e.g. scratch:2G)")
    scratch = target.partition(":")[2] if target.startswith("scratch:") else None
    plan = probing.plan_probe(None if scratch is not None else target, scratch=scratch,
                              profile=profile, quick=quick, plp=plp, db=db, dry_run=True)
    note = probing.dry_run_verdict(plan)
    lines = probing.dry_run(plan)
    if note:
        lines.insert(1, f"# {note}")
    argv = ["fsadvisor", "probe"]
    argv += ["--scratch", scratch] if scratch is not None else [target]
    if profile:
        argv += ["--profile", profile]
    if quick:
        argv.append("--quick")
    if plp != "unknown":
        argv += ["--plp", plp]
    if db:
        argv += ["--db", db]
    return ProbePreview(command=shlex.join(argv), lines=lines, cells=len(plan.cells()),
                        estimated_s=float(plan.estimated_seconds()))


def with_constraints(profile: Profile, **changes: Any) -> Profile:
    return replace(profile, constraints=replace(profile.constraints, **changes))
