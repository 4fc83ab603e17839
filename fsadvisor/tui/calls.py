"""What the TUI's workers run: every call the TUI makes into fsadvisor.service, in one place.

Each function is one service call returning data. Nothing here imports textual, so these
run in a thread worker (never on the UI thread: a pane's ``@work(thread=True)`` method calls
one of them and posts a message with the result) and in tests alike. Like the CLI, the TUI
imports only fsadvisor.service, .domain and .errors (tests/unit/test_front_end_imports.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from fsadvisor.domain import Device, Profile
from fsadvisor.errors import FsAdvisorError
from fsadvisor.service import advice
from fsadvisor.service.advice import DEFAULT_DEVICE_SPEC, DeviceDescription, Recommendation
from fsadvisor.service.probing import (
    BlockDevice,
    Interruptions,
    ProbePreview,
    ProbeRequest,
    ProbeSummary,
    ProgressEvent,
    clock,
)
from fsadvisor.service.whatif import (
    FSYNC_POLICIES,
    WhatIf,
    edit_workload,
    format_size,
    with_workload,
)
from fsadvisor.service.worth_inputs import WorthInputs
from fsadvisor.limits import LIMITS
from fsadvisor.service import probing
from fsadvisor.service.energy import energy_check
from fsadvisor.service.store import history as store_history

# The heavier service modules beyond the ranking's (the adaptive probe, matrix results,
# reports, the yearly figures, capture) are imported by the calls that use them, each saying
# so: they load when a tab or action first needs them, not when the TUI opens (start-up).

__all__ = [
    "USER_ERRORS",
    "DEFAULT_DEVICE_SPEC",
    "ProbePreview",
    "list_profiles",
    "get_profile",
    "recommend",
    "device",
    "energy_sources",
    "history",
    "probe_preview",
    "with_constraints",
    "WhatIf",
    "whatif_session",
    "live_recommend",
    "edit_workload",
    "with_workload",
    "FSYNC_POLICIES",
    "format_size",
    "matrix_cells",
    "export_matrix",
    "recommendation_chart",
    "compare_cells",
    "device_history_chart",
    "capture",
    "probe_request",
    "root_problem",
    "WorthInputs",
    "yearly_worth",
    "worth_lines",
    "block_devices",
    "block_device",
    "device_confirmed",
    "new_cancel",
    "Interruptions",
    "run_probe",
    "inspect",
    "BlockDevice",
    "ProbeSummary",
    "ProgressEvent",
    "adaptive_choice",
    "joint_choice",
    "run_adaptive_probe",
    "runs_adaptively",
    "live_text",
    "clock",
]

# The errors a front end turns into one line instead of a traceback: the same set the CLI's
# ``domain_errors`` catches (malformed TOML/JSON surfaces as ValueError).
USER_ERRORS = (FsAdvisorError, ValueError, FileNotFoundError)


def list_profiles() -> list[Profile]:
    return advice.list_profiles()


def get_profile(path: str) -> Profile:
    """A profile TOML file (or preset name); FsAdvisorError when it cannot be read."""
    path = path.strip()
    if not path:
        raise FsAdvisorError("type the path of a profile TOML file first")
    return advice.get_profile(path)


def recommend(
    profile: Profile, device: str | None, top: int = 5, db: str | None = None
) -> Recommendation:
    """advice.recommend for the in-memory Profile the form edited."""
    return advice.recommend(profile, device=device, top=top, db=db)


def device(spec: str | None) -> DeviceDescription:
    """The device (a path is inspected read-only) with its XFS allocation-group range and
    default, which the AG column of the recommendations is chosen from."""
    return advice.describe_device(spec)


def energy_sources() -> list[dict[str, Any]]:
    return energy_check()


def history(db: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    return store_history(limit=limit, db=db)


def probe_preview(
    target: str,
    profile: str | None = None,
    quick: bool = True,
    plp: str = "unknown",
    db: str | None = None,
    filesystems: str | None = None,
    runtime_s: str | None = None,
    adaptive: dict | None = None,
    **options: Any,
) -> ProbePreview:
    """A dry run of ``fsadvisor probe``: ``target`` is a device
    path or ``scratch:SIZE``. Nothing is executed, not even fio's io_uring self-test.
    ``adaptive`` (see :func:`adaptive_choice`) previews ``probe --adaptive`` instead, as
    does the --resume of an adaptive probe; with more profiles (:func:`joint_choice`) the
    one adaptive session for all of them, as ``probe --profile A --profile B`` does."""
    from fsadvisor.service import adaptive as ad  # the adaptive probe: only when asked for

    profiles, weights = joint_choice(profile, adaptive)
    if profiles and options.get("resume") and len(profiles) > 1:
        raise FsAdvisorError(
            "several profiles run as one new adaptive probe; resume alone "
            "continues an interrupted probe of several"
        )
    request = probe_request(
        target,
        profiles[0] if profiles else profile,
        quick,
        plp,
        db,
        filesystems,
        runtime_s,
        dry_run=True,
        **options,
    )
    on, confidence, budget = adaptive_choice(adaptive)
    if len(profiles) > 1:
        return ad.adaptive_preview(request, confidence, budget, profiles, weights)
    if ad.is_adaptive(request, on):
        return ad.adaptive_preview(request, confidence, budget)
    return probing.preview(request)


def adaptive_choice(adaptive: dict | None) -> tuple[bool, float, str | None]:
    """The form's adaptive fields -> (on, target confidence, budget or None), checked as the
    CLI checks --target-confidence and --budget."""
    from fsadvisor.service import adaptive as ad  # the adaptive probe: only when asked for

    a = adaptive or {}
    text = str(a.get("target") or "").strip()
    try:
        confidence = float(text) if text else ad.DEFAULT_TARGET
    except ValueError:
        raise FsAdvisorError(
            f"target confidence must be a number "
            f"{LIMITS['target-confidence'].between_text}, not {text!r}"
        ) from None
    ad.check_target(confidence)
    budget = str(a.get("budget") or "").strip() or None
    if budget is not None:
        ad.parse_budget(budget)  # one line now, not after the confirmation
    return bool(a.get("on")), confidence, budget


def joint_choice(
    profile: str | None,
    adaptive: dict | None,
) -> tuple[list[str], list[float] | None]:
    """The profiles a probe measures: ``profile`` (the Profile tab's, "with profile") and the
    form's more profiles (``adaptive["profiles"]``: presets or files, comma-separated), and
    their weights (``adaptive["weights"]``, "2,1": one per profile, checked as the CLI checks
    --profile-weights; None: all equal). Two or more are one adaptive session."""
    from fsadvisor.service import adaptive as ad  # the adaptive probe: only when asked for

    a = adaptive or {}
    more = [p.strip() for p in str(a.get("profiles") or "").split(",") if p.strip()]
    profiles = ([profile] if profile else []) + more
    text = str(a.get("weights") or "").strip()
    if not text:
        return profiles, None
    if len(profiles) < 2:
        raise FsAdvisorError(
            "weights weigh several profiles against each other: add "
            "profiles, or leave the weights blank"
        )
    try:
        values = [float(w) for w in text.split(",")]
    except ValueError:
        raise FsAdvisorError(f"weights {text!r} are not a list of numbers (e.g. 2,1)") from None
    return profiles, ad.check_weights(profiles, values)


def run_adaptive_probe(
    request: ProbeRequest,
    adaptive: dict | None,
    confirm: str | None,
    on_progress,
    cancel: Interruptions,
    profiles: list[str] | None = None,
    weights: list[float] | None = None,
):
    """The real ``probe --adaptive`` (a thread worker): service.adaptive.run_adaptive_request;
    returns its AdaptiveSummary (``.probe``, ``.decision``; with several ``profiles`` one
    session for them all, ``.joint`` the answer per profile)."""
    from fsadvisor.service import adaptive as ad  # the adaptive probe: only when asked for

    _on, confidence, budget = adaptive_choice(adaptive)
    return ad.run_adaptive_request(
        request,
        confidence,
        budget,
        confirm=confirm,
        on_progress=on_progress,
        interruptions=cancel,
        profiles=profiles,
        weights=weights,
    )


def runs_adaptively(request: ProbeRequest, adaptive: dict | None) -> bool:
    """Asked for on the form, or the --resume of an adaptive probe (reads the state file)."""
    from fsadvisor.service import adaptive as ad  # the adaptive probe: only when asked for

    return ad.is_adaptive(request, adaptive_choice(adaptive)[0])


def live_text(event: ProgressEvent) -> str:
    """A live "sample" event in words (block layer, with its stat file; watts or no meter)."""

    return probing.live_text(event)


def probe_request(
    target: str,
    profile: str | None = None,
    quick: bool = True,
    plp: str = "unknown",
    db: str | None = None,
    filesystems: str | None = None,
    runtime_s: str | None = None,
    dry_run: bool = False,
    **options: Any,
) -> ProbeRequest:
    """A probe of ``target`` (a device path or ``scratch:SIZE``) as ``fsadvisor probe``
    takes it: ``filesystems`` comma-separated (blank: the probe's default), ``runtime_s``
    seconds per run (blank: the plan's, 10 s with --quick); ``options`` are any other
    ProbeRequest field (``schedulers="none"``, ``baseline=False``, ...)."""
    target = target.strip()
    if not target:
        raise FsAdvisorError(
            "give a device path (e.g. /dev/nvme1n1) or scratch:SIZE (e.g. scratch:2G)"
        )
    scratch = target.partition(":")[2] if target.startswith("scratch:") else None
    opts: dict[str, Any] = dict(options)
    if filesystems and filesystems.strip():
        opts["filesystems"] = filesystems
    if runtime_s and runtime_s.strip():
        try:
            opts["runtime_s"] = float(runtime_s)
        except ValueError:
            raise FsAdvisorError(
                f"runtime must be a number of seconds, not {runtime_s!r}"
            ) from None
    return ProbeRequest.make(
        None if scratch is not None else target,
        scratch=scratch,
        profile=profile,
        quick=quick,
        plp=plp,
        db=db,
        dry_run=dry_run,
        **opts,
    )


def root_problem() -> str | None:
    """Why this process cannot probe (not root), or None."""

    return probing.root_problem()


def block_devices() -> list[BlockDevice]:
    """The machine's block devices, each with the probe's safety verdict (reads only)."""

    return probing.block_devices()


def block_device(path: str, force: bool = False) -> BlockDevice:
    """``force``: the verdict ``--force`` gets (a leftover signature no longer refuses it;
    the confirmation then says that signature is destroyed)."""

    return probing.block_device(path, force=force)


def device_confirmed(device: str, typed: str | None) -> bool:
    """The CLI's rule: the device typed back exactly (as given or resolved)."""

    return probing.device_confirmed(device, typed)


def new_cancel() -> Interruptions:
    """What the Cancel button calls ``cancel()`` on (from the UI thread)."""
    return Interruptions()


def run_probe(
    request: ProbeRequest, confirm: str | None, on_progress, cancel: Interruptions
) -> ProbeSummary:
    """The real probe (a thread worker): service.probing.run_request."""

    return probing.run_request(
        request, confirm=confirm, on_progress=on_progress, interruptions=cancel
    )


def inspect(path: str) -> Device:
    """The device at ``path`` (read-only), e.g. the scratch loop device while it exists."""
    return advice.resolve_device(path)


def with_constraints(profile: Profile, **changes: Any) -> Profile:
    return replace(profile, constraints=replace(profile.constraints, **changes))


def whatif_session(db: str | None = None) -> WhatIf:
    """One session per app: it keeps the device context and a workload's predictions, so a
    constraint edit refilters and a workload edit predicts again without fitting again."""
    return WhatIf(db)


def live_recommend(
    session: WhatIf, profile: Profile, device: str | None, top: int = 5
) -> Recommendation:
    """What ``recommend`` answers for the same arguments, from the session's caches."""
    return session.recommend(profile, device, top=top)


def matrix_cells(matrix_id: str, db: str | None = None) -> dict[str, Any]:
    from fsadvisor.service.matrix_results import matrix_cells as cells  # the matrices tab's

    return cells(matrix_id, db)


def export_matrix(
    matrix_id: str, fmt: str, out: str, db: str | None = None, profile: str | None = None
) -> str:
    """csv/json of the matrix's cells, or ``html``: its report (service.report; for
    ``profile`` when the matrix names none). Returns the absolute path written: a relative
    one means nothing to someone who started the TUI from another directory."""
    from fsadvisor.service import matrix_results  # the matrices tab's (its report, exporters)

    if fmt == "html":
        return str(Path(matrix_results.export_report(matrix_id, out, db, profile)).resolve())
    return str(Path(matrix_results.export_matrix(matrix_id, fmt, out, db)).resolve())


def yearly_worth(
    rec: Recommendation, worth_inputs: WorthInputs, db: str | None = None
) -> dict[str, Any]:
    """``recommend --load L [--price P]``: per ranked entry its year (kWh, cost), and #1
    against the runner-up and the distribution default (service.worth)."""
    from fsadvisor.service import worth  # the yearly cost: only with a load given

    return worth.yearly_worth(rec, worth_inputs, db=db)


def worth_lines():
    """service.worth's line formatters (yearly_line, summary_lines), loaded on first use."""
    from fsadvisor.service import worth  # the yearly cost: only with a load given

    return worth.yearly_line, worth.summary_lines


def recommendation_chart(rec: Recommendation, db: str | None = None):
    """The chart of the CLI's ``recommend --plot`` (service.report.recommendation_chart):
    predicted ops/J bars with 95% whiskers (the 90% interval widened); a configuration the
    store has runs of on this device also gets its measured bar (M) and a "measured on DEV:
    n runs" note. The pane draws it on its plot widget (``chart.draw(plt, width)``)."""
    # the report's chart and the store's measured bars: only when the plot is shown
    from fsadvisor.service.report import measured_on_device, recommendation_chart as chart

    return chart(rec, measured_on_device(rec, db))


def compare_cells(doc: dict[str, Any], a: int, b: int) -> dict[str, Any]:
    """Two cells of an opened matrix side by side, B − A by Welch (service.compare's verdict)."""
    from fsadvisor.service.matrix_results import compare_cells as compare  # the matrices tab's

    return compare(doc, a, b)


def device_history_chart(device: str, db: str | None = None):
    """The device's matrices over time: measured ops/J (or IOPS) per configuration, as a
    line chart to draw (service.matrix_results.history_chart); None without measured runs."""
    # the matrices tab's history chart: only when a device's history is opened
    from fsadvisor.service.matrix_results import device_history, history_chart

    return history_chart(device_history(device, db))


def capture(device: str, seconds: float, out: str) -> dict[str, Any]:
    """``fsadvisor profiles capture --device DEV --seconds N -o OUT``: samples
    /proc/diskstats (read-only), writes the profile TOML with its assumptions; returns the
    measured figures and the assumptions to confirm."""
    from fsadvisor.service.capture import capture as run  # diskstats sampling: capture's own

    device = device.strip()
    if not device:
        raise FsAdvisorError("give the block device to sample (e.g. /dev/nvme0n1 or sda)")
    if not out.strip():
        raise FsAdvisorError("give the file to write the captured profile to")
    return run(device, seconds, out=out.strip())
