"""Each device mechanism is declared once (predict/mechanisms.py MECHANISMS): its value, its
prior with the reason, its words. The priors, the why-lines and which filesystems count as
measured for a workload are derived from that one table, and a mechanism whose work the
workload does not do contributes nothing at all."""

from __future__ import annotations

import itertools
import math
import tomllib

from fsadvisor.domain import FsConfig, Workload
from fsadvisor.predict import features, mechanisms, spec
from fsadvisor.catalog.device_params import HOST_PRIOR
from fsadvisor.infra.resources import data_dir

P = {
    "read_latency_us": 80.0,
    "write_latency_us": 20.0,
    "flush_latency_us": 500.0,
    "flush_latency_us_plp": 20.0,
    "parallelism": 64.0,
    "read_iops_cap": 800_000.0,
    "write_iops_cap": 300_000.0,
    "read_bw_bytes_s": 6e9,
    "write_bw_bytes_s": 4e9,
    **HOST_PRIOR,
}
WORKLOADS = [
    Workload(rw=rw, bs_bytes=bs, iodepth=qd, numjobs=nj, fsync_every=fs, direct=direct)
    for rw, bs, qd, nj, fs, direct in itertools.product(
        ("randread", "randwrite", "write", "randrw", "filecreate", "filedelete"),
        (4096, 131072),
        (1, 32),
        (1, 4),
        (0, 1),
        (True, False),
    )
]
CONFIGS = [
    FsConfig.make(fs, mount=m, scheduler=s)
    for fs, m, s in itertools.product(
        ("ext4", "xfs", "btrfs", "f2fs"),
        ((), ("nodatacow",), ("data=journal",)),
        ("none", "mq-deadline", "bfq"),
    )
]


def _all_features():
    for cfg, w in itertools.product(CONFIGS, WORKLOADS):
        yield cfg, w, mechanisms.features(cfg, w, P, "unknown", era2010=True)


def test_every_mechanism_term_has_its_entry_prior_and_words():
    seen = set()
    for _cfg, _w, f in _all_features():
        for name in f:
            m = mechanisms.describe(name)
            assert m is not None, name
            assert m.text and m.cite and m.prior[2]
            assert mechanisms.prior(name) is not None, name
            seen.add(m.name)
    assert seen == set(mechanisms.BY_NAME)  # the sweep reaches every declared mechanism


def test_priors_are_derived_from_the_table():
    for m in mechanisms.MECHANISMS:
        assert mechanisms.PRIORS[m.name] == m.prior
        if m.deviation:
            assert mechanisms.prior(f"{m.name}:anything") == m.deviation[:2]
        for who, pr in m.deviations.items():
            assert mechanisms.prior(f"{m.name}:{who}") == pr[:2]
    assert mechanisms.prior("m:fsync:xfs@2010") == (0.0, mechanisms.ERA_2010_SD)
    # one era suffix for the effects (spec) and the mechanisms: a 2010 row loads on both
    assert mechanisms.ERA_SUFFIX == spec.ERA_SUFFIX


def test_the_words_live_in_one_place():
    # models/mechanisms.toml keeps words only for terms that are no mechanism
    words = tomllib.loads((data_dir("models") / "mechanisms.toml").read_text())
    assert not [k for k in words if k.startswith("m:")]


def test_where_the_work_is_not_done_the_mechanism_is_absent():
    for cfg, w, f in _all_features():
        fs, reads_only = cfg.fs, w.read_pct == 100
        if reads_only or fs != "btrfs" or "nodatacow" in cfg.mount:
            assert "m:cow" not in f, (cfg, w)
        if reads_only or "data=journal" not in cfg.mount or fs != "ext4":
            assert "m:data_journal" not in f, (cfg, w)
        if cfg.scheduler == "none":
            assert not [k for k in f if k.startswith(("m:sched", "m:dispatch"))], (cfg, w)
        if cfg.scheduler == "none" or w.iodepth == 1 or not w.direct:
            # a scheduler's dispatch order needs a batch to order: a deep direct async queue
            assert not [k for k in f if k.startswith("m:dispatch")], (cfg, w)
        if not w.fsync_every:
            assert not [k for k in f if k.startswith(("m:fsync", "m:flush"))], (cfg, w)
        if fs != "btrfs" or w.direct or not w.fsync_every or reads_only:
            # btrfs writes back and logs buffered data at fsync; direct writes have none
            assert "m:btrfs.fsync_serial" not in f, (cfg, w)
            assert "m:btrfs.fsync_csum" not in f, (cfg, w)
        if "nodatacow" in cfg.mount:
            # nodatacow implies nodatasum: no checksums to compute, log or verify
            assert not [k for k in f if k.startswith(("m:btrfs.fsync_csum", "m:btrfs.csum"))]
        if w.metadata_frac == 0:
            assert not [k for k in f if k.startswith("m:meta_cpu")], (cfg, w)
        if reads_only or w.direct or fs not in ("ext2", "ext3", "ext4"):
            # buffer heads: ext2/3/4's buffered writes only
            assert "m:ext_buffer_heads" not in f, (cfg, w)


def test_measured_for_a_workload_means_the_mechanisms_it_exercises():
    fsync = Workload(rw="randwrite", bs_bytes=4096, fsync_every=1)
    create = Workload(rw="filecreate", bs_bytes=4096)
    assert mechanisms.own_data_terms("xfs", fsync) == [("fs:xfs*fsync", "m:fsync:xfs")]
    assert mechanisms.own_data_terms("btrfs", create) == [("fs:btrfs*meta", "m:meta_cpu:btrfs")]
    assert mechanisms.own_data_terms("xfs", Workload(rw="randread", bs_bytes=4096)) == []


def test_why_lines_name_a_mechanism_in_words_never_its_tag():
    from fsadvisor.predict.rank import _mechanism, _plain_feature

    for name in ("m:fsync", "m:fsync:btrfs", "m:flush:xfs@2010", "pwf:m:cpu:btrfs", "m:sched:bfq"):
        words = _mechanism(name)
        assert words is not None and words["text"] == mechanisms.describe(name).text
        assert "m:" not in words["text"]
    assert "mechanism" in _plain_feature("m:unknown")  # only an undeclared term gets plain words


def _f(fs, w, mount=()):
    return mechanisms.features(FsConfig.make(fs, mount=mount), w, P, "unknown")


def test_the_mechanisms_of_the_second_reference_matrix_apply_only_where_their_work_is():
    one = Workload(rw="write", bs_bytes=65536, iodepth=1, numjobs=1, fsync_every=32, direct=False)
    four = Workload(rw="write", bs_bytes=65536, iodepth=1, numjobs=4, fsync_every=32, direct=False)
    # fsync from several writers: only with several writers that fsync
    assert "m:fsync_writers:btrfs" in _f("btrfs", four)
    assert "m:fsync_writers:btrfs" not in _f("btrfs", one)
    assert not any(
        k.startswith("m:fsync_writers")
        for k in _f("btrfs", Workload(rw="write", bs_bytes=65536, numjobs=4, direct=False))
    )
    # ... whatever btrfs's data options: nodatacow does not change the log's commits
    assert (
        _f("btrfs", four)["m:fsync_writers"] == _f("btrfs", four, ("nodatacow",))["m:fsync_writers"]
    )
    # the copy-on-write data path: direct writes of copy-on-write data only
    direct = Workload(rw="write", bs_bytes=131072, iodepth=8)
    assert "m:btrfs.write" in _f("btrfs", direct)
    assert "m:btrfs.write" not in _f("btrfs", direct, ("nodatacow",))
    assert "m:btrfs.write" not in _f("btrfs", four)  # buffered: merged at writeback
    # CoW metadata per write: random overwrites only
    assert "m:cow" in _f("btrfs", Workload(rw="randwrite", bs_bytes=4096, iodepth=32))
    assert "m:cow" not in _f("btrfs", direct)
    # checksums verified on reads: per byte, none with nodatacow, none for writes
    big = Workload(rw="randread", bs_bytes=131072, iodepth=64, numjobs=4)
    small = Workload(rw="randread", bs_bytes=4096, iodepth=64, numjobs=4)
    assert _f("btrfs", big)["m:btrfs.csum_read"] < _f("btrfs", small)["m:btrfs.csum_read"] < 0
    assert "m:btrfs.csum_read" not in _f("btrfs", big, ("nodatacow",))
    assert "m:btrfs.csum_read" not in _f("btrfs", direct)
    assert "m:btrfs.csum_read" not in _f("ext4", big)
    # deletes are their own work, only where the workload deletes
    assert "m:delete:btrfs" in _f("btrfs", Workload(rw="filedelete", bs_bytes=4096))
    assert not any(
        k.startswith("m:delete") for k in _f("btrfs", Workload(rw="filecreate", bs_bytes=4096))
    )


def test_compression_work_follows_the_algorithm():
    from fsadvisor.predict.spec import option_features

    w = Workload(rw="write", bs_bytes=131072, iodepth=8)

    def size(opt):
        return option_features("btrfs", {}, (opt,), None, w, "nvme").get("opt:compress*wf", 0.0)

    assert (
        size("compress=lzo")
        < size("compress=zstd:1")
        == size("compress=zstd:3")
        < size("compress=zstd:9")
    )
    assert size("compress=zstd:3") < size("compress=zlib")
    assert size("compress") == size("compress=zlib")  # btrfs's bare compress is zlib
    assert size("compress=no") == 0.0
    assert size("compress-force=zstd") == size("compress=zstd")


def test_an_ext4_without_a_journal_pays_no_commit_flush():
    # No journal, no commit record to order behind a flush: its fsync writes the inode in
    # place (m:fsync's write) behind the flush the bare device's fsync already pays.
    w = Workload(rw="randwrite", bs_bytes=4096, fsync_every=1)
    journaled = mechanisms.features(FsConfig.make("ext4"), w, P, "unknown")
    bare = mechanisms.features(FsConfig.make("ext4", mkfs={"journal": False}), w, P, "unknown")
    assert journaled["m:flush"] < 0 and "m:flush" not in bare
    assert bare["m:fsync"] == journaled["m:fsync"]
    assert not mechanisms.journaled(FsConfig.make("ext2"))
    assert mechanisms.journaled(FsConfig.make("xfs"))


def test_writes_run_to_the_ceiling_their_own_concurrency_demonstrates():
    # The disk-backed loop device's calibrated figures: a read knee of 4.5 in flight, but
    # 114k QD32 random writes at 86 us each at QD1 -- about 10 writes in flight. Writes are
    # not held to the read knee (they were, at less than half what they ran).
    p = dict(
        P,
        parallelism=4.5,
        read_latency_us=54.0,
        write_latency_us=86.0,
        read_iops_cap=78_000.0,
        write_iops_cap=114_000.0,
    )
    write32 = Workload(rw="randwrite", bs_bytes=4096, iodepth=32)
    read32 = Workload(rw="randread", bs_bytes=4096, iodepth=32)
    assert mechanisms.roofline(write32, p)[0] > 0.8 * 114_000
    # reads keep their knee (4.5 / 54 us against the 78k ceiling), QD1 its service time
    assert mechanisms.roofline(read32, p)[0] < 0.9 * 78_000
    qd1 = mechanisms.roofline(Workload(rw="randwrite", bs_bytes=4096), p)[0]
    assert abs(qd1 - 1e6 / 86.0) / qd1 < 0.01


def test_a_create_without_fsync_is_host_time_not_device_time():
    # The device's level terms correct its figures; a create that never waits for the
    # device is priced in host CPU time, so they do not reach it. With an fsync per create
    # most of its time is the device's again.
    create = Workload(rw="filecreate", bs_bytes=4096)
    synced = Workload(rw="filecreate", bs_bytes=4096, fsync_every=1)
    assert mechanisms.host_cpu_share(create, P) == 1.0
    assert mechanisms.host_cpu_share(synced, P) < 0.5
    f = features.workload_features(create, "nvme", 0.0, "dev", features.device_share(create, P))
    assert all(v == 0.0 for v in f.values())
    g = features.workload_features(synced, "nvme", 0.0, "dev", features.device_share(synced, P))
    assert g["k:nvme"] > 0.5 and g["k:dev:dev"] == g["k:nvme"]
    read = Workload(rw="randread", bs_bytes=4096)
    assert (
        features.workload_features(read, "nvme", 0.0, "", features.device_share(read, P))["k:nvme"]
        == 1.0
    )


def test_cpu_work_of_deep_queue_reads_counts_only_where_the_cpu_binds():
    # The disk-backed loop's calibrated reads: 75k a second at QD32 with the host 22% busy
    # (5.9 us of its 2 CPUs per read, 2.9 us of fio's thread). There btrfs, ext4 and XFS read
    # within 8% of each other; CPU priced in series put btrfs at half.
    disk = dict(P, parallelism=4.5, read_latency_us=54.0, read_iops_cap=78_000.0)
    measured = dict(disk, submit_cpu_us_read=2.9, host_cpu_us_read=5.9)
    # a RAM-backed device whose raw reads kept the host 90% busy: nearly all of it counts
    ram = dict(
        P,
        parallelism=32.0,
        read_latency_us=4.0,
        read_iops_cap=265_000.0,
        submit_cpu_us_read=2.5,
        host_cpu_us_read=6.8,
    )
    read32 = Workload(rw="randread", bs_bytes=4096, iodepth=32)

    def cpu(p, w, fs="btrfs"):
        f = mechanisms.features(FsConfig.make(fs), w, p, "unknown")
        return f["m:cpu"]

    assert cpu(disk, read32) < 0  # no CPU figures: in series, as before
    assert abs(cpu(measured, read32)) < 0.35 * abs(cpu(disk, read32))
    ram_serial = {k: v for k, v in ram.items() if not k.endswith("_cpu_us_read")}
    assert abs(cpu(ram, read32)) > 0.8 * abs(cpu(ram_serial, read32))
    # the same for btrfs's checksum work on reads
    csum = mechanisms.features(FsConfig.make("btrfs"), read32, measured, "unknown")
    csum_serial = mechanisms.features(FsConfig.make("btrfs"), read32, disk, "unknown")
    assert abs(csum["m:btrfs.csum_read"]) < 0.35 * abs(csum_serial["m:btrfs.csum_read"])
    # queue depth 1 waits for its CPU work whatever the device: unchanged
    read1 = Workload(rw="randread", bs_bytes=4096)
    assert cpu(measured, read1) == cpu(disk, read1)
    # writes stay in series (their filesystem work is ordered with the I/O); a 70/30 mix
    # keeps the write share in full
    write32 = Workload(rw="randwrite", bs_bytes=4096, iodepth=32)
    assert cpu(measured, write32) == cpu(disk, write32)
    mix = Workload(rw="randrw", bs_bytes=4096, iodepth=32, rwmixread=70)
    assert cpu(disk, mix) < cpu(measured, mix) <= 0.3 * cpu(disk, mix)
    # a synchronous engine or buffered I/O has no queue for the CPU to hide behind
    psync = Workload(rw="randread", bs_bytes=4096, iodepth=32, ioengine="psync")
    assert cpu(measured, psync) == cpu(disk, psync)


def test_an_fsyncs_host_cpu_weighs_where_writes_are_cheap_and_fades_behind_a_flush():
    # zram-like: 15 us writes, a free flush; the disk-backed loop: 118 us writes, 234 us
    # flushes. The same 20 us of CPU per fsync is a third of the first's fsync and a few
    # per cent of the second's; without an fsync there is none.
    ram = dict(P, write_latency_us=15.0, flush_latency_us=1.0, flush_latency_us_plp=1.0)
    disk = dict(P, write_latency_us=118.0, flush_latency_us=234.0, flush_latency_us_plp=234.0)
    fsync1 = Workload(rw="randwrite", bs_bytes=4096, fsync_every=1)

    def fsync_cpu(p, w):
        return mechanisms.features(FsConfig.make("xfs"), w, p, "unknown").get("m:fsync_cpu")

    assert fsync_cpu(ram, Workload(rw="randwrite", bs_bytes=4096)) is None
    assert fsync_cpu(ram, fsync1) < 3 * fsync_cpu(disk, fsync1) < 0
    assert abs(fsync_cpu(disk, fsync1)) < 0.06


def test_serial_per_byte_work_weighs_with_the_write_size_and_the_device_speed():
    # data=journal's journal thread and btrfs's copy-on-write completion both do work per
    # KiB that every writer waits behind. On a RAM-fast device (the reference RAM-backed
    # loop: 128 KiB direct writes 4.9-6.6x below plain ext4 under data=journal, 10-12.7x under btrfs)
    # it dominates large writes; on a slow device the same work hides in the device time.
    # Neither applies where its option or filesystem says there is no such work.
    ram = dict(P, write_latency_us=10.0, write_iops_cap=250_000.0, write_bw_bytes_s=6e9)
    slow = dict(P, write_latency_us=2000.0, write_iops_cap=300.0, write_bw_bytes_s=1.5e8)
    big = Workload(rw="write", bs_bytes=131072, iodepth=8)
    small = Workload(rw="randwrite", bs_bytes=4096, iodepth=32)

    def term(mount, fs, w, p, name):
        return mechanisms.features(FsConfig.make(fs, mount=mount), w, p, "unknown").get(name)

    for fs, mount, name in (
        ("ext4", ("data=journal",), "m:data_journal"),
        ("btrfs", (), "m:btrfs.write"),
    ):
        assert term(mount, fs, big, ram, name) < -1.5  # e^-1.5: below a quarter
        assert term(mount, fs, small, ram, name) < -0.5
        assert term(mount, fs, big, slow, name) > 0.3 * term(mount, fs, big, ram, name)
    # data=journal's work is all per byte: 4 KiB writes pay far less of it than 128 KiB
    # (the reference loop: 2.7x against 4.9-6.6x); btrfs's has a per-request part as large as
    # 30 KiB's, so there both sizes fall about as far (4 KiB 8.8-12.7x, 128 KiB 10-12.7x)
    dj = ("data=journal",)
    assert term(dj, "ext4", small, ram, "m:data_journal") > 0.6 * term(
        dj, "ext4", big, ram, "m:data_journal"
    )
    assert term(("nodatacow",), "btrfs", big, ram, "m:btrfs.write") is None
    assert term((), "ext4", big, ram, "m:data_journal") is None
    # reads do none of it
    assert (
        term(("data=journal",), "ext4", Workload(rw="read", bs_bytes=131072), ram, "m:data_journal")
        is None
    )


def test_ext4_buffered_writes_pay_per_block_and_smaller_blocks_pay_more():
    """ext4's buffered write path handles a buffer head per filesystem block: 64 KiB buffered
    appends with 1 KiB blocks did half the writes of 4 KiB blocks on the RAM-backed loop
    (30.3k against 61.0k), and XFS (no buffer heads) did 84.9k. The cost is per block of
    each write, so it grows with the write and with smaller blocks, weighs on a RAM-fast
    device and hides on a slow one; direct writes and reads do none of it."""
    ram = dict(P, write_latency_us=10.0, write_iops_cap=250_000.0, write_bw_bytes_s=6e9)
    slow = dict(P, write_latency_us=2000.0, write_iops_cap=300.0, write_bw_bytes_s=1.5e8)
    append = Workload(rw="write", bs_bytes=65536, numjobs=4, direct=False, ioengine="psync")

    def term(fs, w, p, mkfs=None):
        cfg = FsConfig.make(fs, mkfs or {})
        return mechanisms.features(cfg, w, p, "unknown").get("m:ext_buffer_heads")

    x4k, x1k = term("ext4", append, ram), term("ext4", append, ram, {"block_size": 1024})
    assert x1k < x4k < 0
    assert x1k < 2 * x4k  # four times the blocks: more than twice the log cost
    assert term("ext4", append, slow) > 0.1 * x4k
    small = Workload(rw="write", bs_bytes=4096, numjobs=4, direct=False, ioengine="psync")
    assert term("ext4", small, ram) > x4k
    for fs in ("xfs", "btrfs", "f2fs"):
        assert term(fs, append, ram) is None
    assert term("ext4", Workload(rw="write", bs_bytes=65536, direct=True), ram) is None
    assert term("ext4", Workload(rw="read", bs_bytes=65536, direct=False), ram) is None


def test_a_scheduler_is_priced_per_request_an_operation_waits_for():
    """m:sched: the scheduler's work per request, for each request an operation sends through
    the queue. A direct 4 KiB write at queue depth 1 sends one; the same write with an fsync
    sends its flush too, and on a journaled filesystem the commit's writes and flush; the bare
    device's fsync is its flush alone. The scheduler's value is never a gain."""
    ram = {**P, "read_latency_us": 8.0, "write_latency_us": 8.0, "flush_latency_us": 6.0}
    write = Workload(rw="randwrite", bs_bytes=4096, iodepth=1, fsync_every=0, direct=True)
    fsync = Workload(rw="randwrite", bs_bytes=4096, iodepth=1, fsync_every=1, direct=True)

    def us(cfg, w):
        # the scheduler's microseconds per operation its feature stands for: x = -log1p(us / t_op)
        t_op = 1e6 / mechanisms.roofline(w, ram, "unknown")[0]
        x = mechanisms.features(cfg, w, ram, "unknown")["m:sched"]
        assert x < 0
        return math.expm1(-x) * t_op

    dl = {fs: FsConfig.make(fs, scheduler="mq-deadline") for fs in ("raw", "ext4")}
    one = us(dl["raw"], write)
    assert abs(us(dl["raw"], fsync) / one - 2.0) < 1e-6  # the write and its flush
    journaled = us(dl["ext4"], fsync) / one
    assert abs(journaled - (3.0 + mechanisms.COMMIT_ROUND_TRIPS)) < 1e-6
    no_journal = FsConfig.make("ext4", {"journal": False}, scheduler="mq-deadline")
    assert abs(us(no_journal, fsync) / one - 3.0) < 1e-6  # the inode's write, no commit
    # the bare device under a scheduler has its mechanism and nothing of a filesystem's
    raw = mechanisms.features(dl["raw"], fsync, ram, "unknown")
    assert set(raw) == {"m:sched", "m:sched:mq-deadline"}
    assert mechanisms.features(FsConfig.make("raw"), fsync, ram, "unknown") == {}
    # buffered writes reach the queue merged at writeback: a small share of a request each
    buffered = Workload(rw="randwrite", bs_bytes=4096, iodepth=1, direct=False)
    assert us(dl["ext4"], buffered) < 0.1 * us(dl["ext4"], write)


def test_a_scheduler_costs_a_slow_device_next_to_nothing():
    slow = {**P, "read_latency_us": 8000.0, "write_latency_us": 8000.0}
    w = Workload(rw="randwrite", bs_bytes=4096, iodepth=1, fsync_every=1, direct=True)
    fast = mechanisms.features(FsConfig.make("ext4", scheduler="bfq"), w, P, "unknown")
    hdd = mechanisms.features(FsConfig.make("ext4", scheduler="bfq"), w, slow, "unknown")
    assert fast["m:sched"] < hdd["m:sched"] < 0
    assert abs(hdd["m:sched"]) < 0.01


def test_a_schedulers_dispatch_order_is_a_level_only_a_deep_queue_has():
    """m:dispatch: at a deep asynchronous queue a scheduler dispatches its batch in its own
    order, a level of either sign (log units, value 1); in series there is no batch and the
    effect is exactly zero. The bare device has it too. A measured device's own deviation
    from it is a few percent (its own prior, not the 0.4 of a mechanism priced in time)."""
    from fsadvisor.predict.settings import ModelSettings

    deep = Workload(rw="randwrite", bs_bytes=4096, iodepth=32, ioengine="io_uring", direct=True)
    qd1 = Workload(rw="randwrite", bs_bytes=4096, iodepth=1, ioengine="io_uring", direct=True)
    for fs in ("raw", "ext4", "xfs", "btrfs"):
        f = mechanisms.features(FsConfig.make(fs, scheduler="kyber"), deep, P, "unknown")
        assert f["m:dispatch"] == 1.0 and f["m:dispatch:kyber"] == 1.0, fs
        assert "m:dispatch" not in mechanisms.features(
            FsConfig.make(fs, scheduler="kyber"), qd1, P, "unknown"
        )
    raw = mechanisms.features(FsConfig.make("raw", scheduler="mq-deadline"), deep, P, "unknown")
    assert {k.partition(":mq-deadline")[0] for k in raw} == {"m:sched", "m:dispatch"}
    s = ModelSettings.load(use_store_calibration=False)
    assert s.prior("d:some-device|m:dispatch:mq-deadline") == (0.0, 0.05)
    assert s.prior("d:some-device|m:sched:mq-deadline")[1] == s.priors["prior"]["d:|m:"]["sd"]
