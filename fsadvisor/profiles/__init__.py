"""Workload profiles: the TOML parser (:mod:`.parse`), the writer (:mod:`.write`) and the
shipped presets (``presets/*.toml``, :mod:`.presets`)."""

from fsadvisor.profiles.parse import (
    load_profiles,
    profile_from_dict,
    profiles_from_toml,
    workload_from_dict,
)
from fsadvisor.profiles.presets import list_presets, load_profile
from fsadvisor.profiles.write import profile_to_toml, profiles_to_toml

# The package's interface: what front ends, the store and the tests name.
__all__ = [
    "list_presets",
    "load_profile",
    "load_profiles",
    "profile_from_dict",
    "profiles_from_toml",
    "workload_from_dict",
    "profile_to_toml",
    "profiles_to_toml",
]
