"""FsConfig's hand-written __init__ (issue 13, speed) is the dataclass one: the same
parameters, in order, with the fields' defaults, and it stays frozen."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from fsadvisor.domain import FsConfig


def test_fsconfig_init_matches_its_fields():
    params = list(inspect.signature(FsConfig.__init__).parameters.values())[1:]
    fields = dataclasses.fields(FsConfig)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields):
        want = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert p.default == want, f.name


def test_fsconfig_is_still_a_frozen_hashable_value():
    a = FsConfig("xfs", (("crc", 1),), ("noatime",), "kyber", 8)
    b = FsConfig(fs="xfs", mkfs=(("crc", 1),), mount=("noatime",), scheduler="kyber",
                 ag_count=8)
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert dataclasses.asdict(a) == {"fs": "xfs", "mkfs": (("crc", 1),),
                                     "mount": ("noatime",), "scheduler": "kyber",
                                     "ag_count": 8}
    assert a.with_(scheduler="none") == FsConfig("xfs", (("crc", 1),), ("noatime",), "none", 8)
    assert repr(FsConfig("ext4")) == ("FsConfig(fs='ext4', mkfs=(), mount=(), "
                                      "scheduler='none', ag_count=None)")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.fs = "ext4"
