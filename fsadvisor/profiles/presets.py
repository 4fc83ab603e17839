"""The shipped presets: ``presets/*.toml`` and the presets derived from runner/ job files
(:mod:`.jobfiles`), by name. Built on the parser (:mod:`.parse`), as the job-file presets are."""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Callable, Sequence

from fsadvisor.domain import Profile
from fsadvisor.errors import ProfileError, one_line
from fsadvisor.infra.resources import presets_dir
from fsadvisor.profiles.parse import load_profiles, show_value


@functools.lru_cache(maxsize=4)
def _preset_index(directory: str) -> dict[str, Profile]:
    # presets/*.toml, plus seed 000's micro matrix made from its job file (runner/micro.fio,
    # the one source of that matrix: fsadvisor/profiles/jobfiles.py).
    # Imported here: its job-file reader (configparser) is wanted only for the whole index;
    # recommend finds its preset by _preset_fast without it (start-up).
    from fsadvisor.profiles.jobfiles import micro_presets

    index: dict[str, Profile] = {}
    where: dict[str, str] = {}
    sources: list[tuple[str, Callable[[], Sequence[Profile]]]] = [
        (f.name, functools.partial(load_profiles, f))
        for f in sorted(Path(directory).glob("*.toml"))
    ]
    sources.append(("runner/micro.fio", micro_presets))
    for origin, profiles in sources:
        for prof in profiles():
            if prof.name in index:
                raise ProfileError(
                    f"preset {prof.name} is defined in both {where[prof.name]} and {origin}"
                )
            index[prof.name] = prof
            where[prof.name] = origin
    return index


def _preset_fast(directory: str, name: str) -> Profile | None:
    """The preset ``name`` from the one file that mentions it, without parsing all 50 (every
    `recommend` starts here). None sends the caller to the full index, which also reports
    duplicates and close matches."""
    needles = (f"[profiles.{name}]", f'[profiles."{name}"]', f'name = "{name}"')
    hits = [
        f
        for f in sorted(Path(directory).glob("*.toml"))
        if any(n in f.read_text(encoding="utf-8", errors="replace") for n in needles)
    ]
    if len(hits) != 1:
        return None
    for prof in load_profiles(hits[0]):
        if prof.name == name:
            return prof
    return None


@functools.lru_cache(maxsize=64)
def _shipped(name: str) -> Profile | None:
    if "/" in name or name.endswith(".toml"):
        return None
    directory = str(presets_dir())
    return _preset_fast(directory, name) or _preset_index(directory).get(name)


def is_preset(profile: Profile) -> bool:
    """Whether ``--profile <its name>`` measures this profile's workload: a shipped preset as
    shipped, not a profile file's profile nor the what-if form's edit of one, which keep the
    name. Cached by name: an answer asks twice, the what-if form at every edit."""
    shipped = _shipped(profile.name)
    return shipped is not None and shipped.workload == profile.workload


def list_presets() -> list[Profile]:
    """Every shipped preset, sorted by name."""
    return [p for _, p in sorted(_preset_index(str(presets_dir())).items())]


def load_profile(name_or_path: str | Path) -> Profile:
    """A preset by name, or a profile file by path (``file.toml:NAME`` picks one of many)."""
    text = str(name_or_path)
    pick = None
    if ".toml:" in text and not Path(text).is_file():
        text, _, pick = text.rpartition(":")
    looks_like_path = (
        isinstance(name_or_path, Path) or pick is not None or "/" in text or text.endswith(".toml")
    )
    if looks_like_path or Path(text).is_file():
        profiles = load_profiles(text)
        if pick is not None:
            for prof in profiles:
                if prof.name == pick:
                    return prof
            return _no_such(pick, [p.name for p in profiles], f"profile in {Path(text).name}")
        if len(profiles) == 1:
            return profiles[0]
        names = ", ".join(p.name for p in profiles[:8]) + (" ..." if len(profiles) > 8 else "")
        raise ProfileError(
            f"profile {Path(text).name}: holds {len(profiles)} profiles "
            f"({names}); pick one as {Path(text).name}:NAME"
        )
    found = _preset_fast(str(presets_dir()), text)
    if found is not None:
        return found
    index = _preset_index(str(presets_dir()))
    if text in index:
        return index[text]
    return _no_such(text, list(index), "preset or profile file")


def _no_such(name: str, names: list[str], scope: str) -> Profile:
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
    if not close:  # a family prefix ("filebench-", "fio-") still deserves suggestions
        close = sorted(n for n in names if n.startswith(name[:4]))[:5]
    hint = f"; did you mean {', '.join(close)}?" if close else f" ({len(names)} known)"
    raise ProfileError(one_line(f"no {scope} named {show_value(name)}{hint}"))
