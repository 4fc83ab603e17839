"""FsConfig.mount_value reads a memo of the mount tuple's options: the same
answers as scanning the options in order, first match winning."""

from __future__ import annotations

from hypothesis import given, strategies as st

from fsadvisor.domain import FsConfig

_KEYS = st.sampled_from(["data", "noatime", "commit", "compress", "", "a=b", "x"])
_OPTS = st.builds(
    lambda k, sep, v: f"{k}{sep}{v}",
    _KEYS,
    st.sampled_from(["", "="]),
    st.sampled_from(["", "journal", "zstd:3", "5", "=", "a=b"]),
)


def _scan(mount, key):
    for opt in mount:
        k, _, v = opt.partition("=")
        if k == key:
            return v
    return None


@given(st.lists(_OPTS, max_size=6), _KEYS)
def test_mount_value_is_the_first_matching_option(opts, key):
    cfg = FsConfig("ext4", mount=tuple(opts))
    assert cfg.mount_value(key) == _scan(opts, key)
    # a list from JSON (unhashable) answers alike
    odd = FsConfig("ext4")
    object.__setattr__(odd, "mount", list(opts))
    assert odd.mount_value(key) == _scan(opts, key)
