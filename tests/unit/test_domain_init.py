"""FsConfig's hand-written __init__ (for speed) is the dataclass one: the same
parameters, in order, with the fields' defaults, and it stays frozen."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.domain import FsConfig, Workload


def test_fsconfig_init_matches_its_fields():
    params = list(inspect.signature(FsConfig.__init__).parameters.values())[1:]
    fields = dataclasses.fields(FsConfig)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields):
        want = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert p.default == want, f.name


def test_fsconfig_is_still_a_frozen_hashable_value():
    a = FsConfig("xfs", (("crc", 1),), ("noatime",), "kyber", 8)
    b = FsConfig(fs="xfs", mkfs=(("crc", 1),), mount=("noatime",), scheduler="kyber", ag_count=8)
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert dataclasses.asdict(a) == {
        "fs": "xfs",
        "mkfs": (("crc", 1),),
        "mount": ("noatime",),
        "scheduler": "kyber",
        "ag_count": 8,
    }
    assert a.with_(scheduler="none") == FsConfig("xfs", (("crc", 1),), ("noatime",), "none", 8)
    assert repr(FsConfig("ext4")) == (
        "FsConfig(fs='ext4', mkfs=(), mount=(), scheduler='none', ag_count=None)"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.fs = "ext4"


@given(
    st.builds(
        Workload,
        rw=st.sampled_from(["randread", "write", "randrw", "filecreate"]),
        bs_bytes=st.integers(512, 1 << 20),
        iodepth=st.integers(1, 256),
        numjobs=st.integers(1, 64),
        fsync_every=st.integers(0, 100),
        file_size_max_bytes=st.none() | st.integers(1, 1 << 30),
        create_frac=st.floats(0, 1),
    )
)
@settings(max_examples=50, deadline=None)
def test_workload_to_dict_is_asdict(w):
    # the shallow dict stands for dataclasses.asdict: every field is a scalar
    from dataclasses import asdict

    d = w.to_dict()
    assert d == asdict(w) and list(d) == list(asdict(w))
    assert all(isinstance(v, (str, int, float, bool, type(None))) for v in d.values())
