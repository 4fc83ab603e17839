"""predict/features.py remembers a configuration's settings features across schedulers:
the answer is the same dict, in the same order, and never shared; the scheduler adds none."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor import catalog
from fsadvisor.domain import FsConfig, Workload
from fsadvisor.predict import features as F

CONFIGS = catalog.candidates(1 << 40)
SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq", "cfq", "noop", "")


@given(
    i=st.integers(0, len(CONFIGS) - 1),
    sched=st.sampled_from(SCHEDULERS),
    rwmixread=st.integers(0, 100),
    fsync_every=st.integers(0, 4),
    kind=st.sampled_from(["nvme", "sata-ssd", "hdd"]),
)
@settings(max_examples=150, deadline=None)
def test_remembered_settings_plus_scheduler_is_the_whole_computation(
    i, sched, rwmixread, fsync_every, kind
):
    cfg = CONFIGS[i].with_(scheduler=sched)
    w = Workload(rw="randrw", rwmixread=rwmixread, fsync_every=fsync_every)
    got = F.config_features(cfg, w, kind)
    # the uncached settings part and nothing of the scheduler's: it acts only through its
    # mechanism (m:sched), never a bare term of its own
    want = F._settings_features(cfg.fs, cfg.mkfs, cfg.mount, cfg.ag_count, w, kind)
    assert not any(k.startswith("sched:") for k in got)
    assert list(got.items()) == list(want.items())
    assert got == F.config_features(cfg.with_(scheduler="none"), w, kind)


def test_callers_may_change_what_they_get():
    cfg, w = FsConfig.make("xfs", {"inode_size": 1024}, ["noatime"], ag_count=16), Workload()
    first = F.config_features(cfg, w, "nvme")
    first["fs:xfs"] = 99.0
    first["extra"] = 1.0
    assert F.config_features(cfg, w, "nvme")["fs:xfs"] == 1.0
    assert "extra" not in F.config_features(cfg, w, "nvme")


def test_unhashable_mkfs_value_and_raw_device():
    w = Workload()
    cfg = FsConfig("ext4", mkfs=(("features", ["^has_journal"]),))
    # no declared mechanism reads ext4's mkfs "features": a term on any work, named after it
    assert F.config_features(cfg, w, "nvme") == {"opt:ext4.mkfs.features=['^has_journal']*any": 1.0}
    raw = F.config_features(None, w, "nvme")
    assert raw["fs:raw"] == 1.0 and not any(k.startswith(("opt:", "sched:")) for k in raw)


def test_logbsize_term():
    w = Workload(fsync_every=1)
    f = F.config_features(FsConfig.make("xfs", mount=["logbsize=256k"]), w, "nvme")
    # log2(256k / 32k) / 3 x the commits the workload forces: its fsync'd writes (half of a
    # 50% mix) plus metadata (none)
    assert f["opt:xfs.logbsize*sync"] == 0.5
