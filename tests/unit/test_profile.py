"""Profiles: presets load, both spellings of a workload agree, TOML round-trips, and every
bad input becomes one ProfileError line (never another exception)."""

from __future__ import annotations

import dataclasses
import math
import tomllib

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fsadvisor.profiles import parse as prof
from fsadvisor.domain import METADATA_MODES, RW_MODES, Constraints, Profile, Workload
from fsadvisor.errors import ProfileError
from fsadvisor.profiles import (
    list_presets,
    load_profile,
    load_profiles,
    profile_from_dict,
    profile_to_toml,
    profiles_from_toml,
    profiles_to_toml,
    workload_from_dict,
)
from fsadvisor.sizes import format_size

FIO_MICRO = [
    f"fio-{rw}-{bs}-j{n}"
    for rw in ("randread", "randwrite", "read", "write", "randrw")
    for bs in ("4k", "128k")
    for n in (1, 4, 8)
]
YCSB = [f"rocksdb-ycsb-{x}" for x in "abcdef"]
FILEBENCH = [f"filebench-{p}-004" for p in ("webserver", "fileserver", "varmail", "oltp")] + [
    f"filebench-{p}-003" for p in ("webserver", "fileserver", "varmail")
]
FS_OVERHEAD = [
    "fs-overhead-randwrite-4k-qd32",
    "fs-overhead-randwrite-4k-fsync1",
    "fs-overhead-metadata-create",
]
PRACTICAL = ["oltp", "build-unpack", "log-append", "analytics-scan"]
SYSBENCH = ["sysbench-fileio-rndrw"]  # seed 001's sysbench fileio, at sysbench's defaults
ALL_PRESETS = FIO_MICRO + YCSB + FILEBENCH + FS_OVERHEAD + PRACTICAL + SYSBENCH


def one_line_error(exc: ProfileError) -> str:
    msg = str(exc)
    assert msg and msg.splitlines() == [msg], repr(msg)
    return msg


# ---------------------------------------------------------------- presets


def test_preset_names_are_exactly_the_promised_ones():
    names = [p.name for p in list_presets()]
    assert names == sorted(names)
    assert sorted(names) == sorted(ALL_PRESETS)


@pytest.mark.parametrize("name", ALL_PRESETS)
def test_every_preset_loads_by_name_and_cites_a_source(name):
    p = load_profile(name)
    assert p.name == name
    assert len(p.description) > 20
    assert p.source.startswith(("seed 00", "practical preset: "))
    # the workload spelled as a flat dict of its own fields gives it back unchanged
    assert workload_from_dict(p.workload.to_dict()) == p.workload


def test_fio_micro_follows_seed_000():
    for name in FIO_MICRO:
        w = load_profile(name).workload
        rw, bs, jobs = name.split("-")[1:]
        assert (w.rw, w.bs_bytes, w.numjobs) == (
            rw,
            {"4k": 4096, "128k": 131072}[bs],
            int(jobs[1:]),
        )
        assert (w.iodepth, w.ioengine, w.direct, w.working_set_bytes) == (
            64,
            "io_uring",
            True,
            100 << 30,
        )
        assert (
            w.read_pct
            == {"randread": 100, "read": 100, "randwrite": 0, "write": 0, "randrw": 50}[rw]
        )
        # bandwidth work (sequential, >= 128 KiB) is ranked by bytes, the rest by ops
        assert w.rank_by == ("bytes" if rw in ("read", "write") and bs == "128k" else "ops")


def test_ycsb_presets():
    mixes = {"a": 50, "b": 95, "c": 100, "d": 95, "e": 95, "f": 67}
    for x, pct in mixes.items():
        p = load_profile(f"rocksdb-ycsb-{x}")
        assert p.fio_job is None and p.workload.op == "db_op"
        assert p.workload.read_pct == pct and p.workload.numjobs == 4
        assert p.workload.bs_bytes == 4096 and p.workload.working_set_bytes == 50 << 30


def test_filebench_presets_keep_both_sources():
    web4, web3 = load_profile("filebench-webserver-004"), load_profile("filebench-webserver-003")
    assert (web4.workload.nrfiles, web4.workload.file_size_bytes, web4.workload.numjobs) == (
        20000,
        32 << 10,
        100,
    )
    assert (web3.workload.nrfiles, web3.workload.file_size_bytes, web3.workload.numjobs) == (
        1000,
        16 << 10,
        100,
    )
    assert web4.workload.read_pct == web3.workload.read_pct == 91  # 10:1
    assert "Table 1" in web4.source and "Table 2" in web3.source
    for name in FILEBENCH:
        personality = name.split("-")[1]
        assert load_profile(name).fio_job == f"filebench-{personality}.fio"
    for name in ("filebench-varmail-004", "filebench-varmail-003"):
        w = load_profile(name).workload
        assert (w.fsync_mode, w.fsync_every, w.dir_shape) == ("every_n", 1, "flat")
    oltp = load_profile("filebench-oltp-004").workload
    assert (oltp.numjobs, oltp.bs_bytes, oltp.nrfiles, oltp.file_size_bytes) == (
        210,
        2048,
        10,
        512 << 20,
    )
    assert (oltp.rw, oltp.read_pct, oltp.fsync_every) == ("randrw", 95, 1)  # 20:1, O_DSYNC log
    fs = load_profile("filebench-fileserver-004").workload
    assert fs.create_frac > 0 and fs.stat_frac > 0 and fs.delete_frac > 0 and fs.read_pct == 33


def test_practical_and_seed_002_presets():
    oltp = load_profile("oltp")
    assert (oltp.workload.rw, oltp.workload.rwmixread, oltp.workload.bs_bytes) == (
        "randrw",
        70,
        8192,
    )
    assert (oltp.workload.numjobs, oltp.workload.iodepth, oltp.workload.direct) == (16, 1, False)
    assert oltp.workload.fsync_mode == "per_transaction" and oltp.constraints.durability
    assert load_profile("analytics-scan").workload.rank_by == "bytes"
    log = load_profile("log-append").workload
    assert (log.rw, log.bs_bytes, log.fsync_mode, log.fsync_every, log.numjobs) == (
        "write",
        65536,
        "every_n",
        32,
        4,
    )
    build = load_profile("build-unpack").workload
    assert build.metadata_frac >= 0.5 and build.dir_shape == "deep" and build.rank_by == "ops"
    create = load_profile("fs-overhead-metadata-create").workload
    assert (create.rw, create.nrfiles, create.file_size_bytes, create.op) == (
        "filecreate",
        50000,
        4096,
        "file",
    )
    assert not create.direct and create.ioengine == "filecreate"
    f1 = load_profile("fs-overhead-randwrite-4k-fsync1").workload
    assert (f1.iodepth, f1.fsync_every, f1.fsync_mode) == (1, 1, "every_n")
    assert load_profile("fs-overhead-randwrite-4k-qd32").workload.iodepth == 32


def test_every_preset_round_trips_through_toml():
    presets = list_presets()
    for p in presets:
        assert profiles_from_toml(profile_to_toml(p), stem="x") == [p]
    assert profiles_from_toml(profiles_to_toml(presets)) == presets


def test_unknown_preset_lists_close_matches():
    with pytest.raises(ProfileError) as e:
        load_profile("oltpp")
    assert "did you mean oltp" in one_line_error(e.value)
    with pytest.raises(ProfileError) as e:
        load_profile("filebench-web")
    assert "filebench-webserver-004" in one_line_error(e.value)
    with pytest.raises(ProfileError) as e:
        load_profile("zzzzzz")
    assert f"{len(ALL_PRESETS)} known" in one_line_error(e.value)


# ---------------------------------------------------------------- files


def test_error_names_file_field_and_problem(tmp_path):
    f = tmp_path / "oltp.toml"
    f.write_text('description = "x"\n[workload]\nread_pct = 140\n')
    with pytest.raises(ProfileError) as e:
        load_profile(f)
    assert (
        one_line_error(e.value)
        == "profile oltp.toml: workload.read_pct = 140 is out of range 0..100"
    )


def test_single_profile_file_takes_its_name_from_the_stem(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('[fio]\nrw = "randread"\nbs = "16k"\n')
    p = load_profile(str(f))
    assert p.name == "mine" and p.workload.rw == "randread" and p.workload.bs_bytes == 16384


def test_multi_profile_file_needs_a_pick(tmp_path):
    f = tmp_path / "two.toml"
    f.write_text('[profiles.a.fio]\nrw = "read"\n\n[profiles.b.workload]\nread_pct = 0\n')
    assert [p.name for p in load_profiles(f)] == ["a", "b"]
    assert load_profile(f"{f}:b").workload.rw == "randwrite"
    with pytest.raises(ProfileError) as e:
        load_profile(f)
    assert "two.toml:NAME" in one_line_error(e.value)
    with pytest.raises(ProfileError) as e:
        load_profile(f"{f}:c")
    assert "two.toml" in one_line_error(e.value)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[workload\nread_pct = 1", "malformed TOML"),
        (
            "[workload]\nreadpct = 50",
            "workload.readpct is not a known key (did you mean read_pct?)",
        ),
        ('[fio]\nrw = "randrw"\n[workload]\nread_pct = 70\n[fio.x]\n', "fio.x is not a known key"),
        (
            '[fio]\nrw = "randread"\n[workload]\nread_pct = 70',
            'workload.read_pct = 70 contradicts fio.rw = "randread"',
        ),
        ('[fio]\nbs = "8k"\n[workload]\nrequest_size = "4k"', "contradicts"),
        (
            "[workload]\nfsync = 1",
            "workload.fsync = 1 must be one of none, every_n, per_transaction",
        ),
        ('[fio]\nfsync = "none"', 'fio.fsync = "none" must be an integer'),
        ('[workload]\nfsync = "every_n"', "needs fsync_every"),
        ("[workload]\njobs = 0", "workload.jobs = 0 is out of range 1..4096"),
        ("[fio]\niodepth = 5000", "fio.iodepth = 5000 is out of range 1..4096"),
        ('[workload]\nrequest_size = "0"', "is out of range"),
        ('[workload]\nrequest_size = "1G"', "is out of range"),
        ('[workload]\nrequest_size = "4q"', "is not a size"),
        ('[workload]\npattern = "randm"', "did you mean random?"),
        ('[fio]\nrw = "randomread"', 'fio.rw = "randomread" must be one of'),
        ("[workload]\nmetadata = { create = 0.7, stat = 0.5 }", "sum to 1.2, more than 1"),
        ("[workload]\nmetadata = { rename = 0.1 }", "workload.metadata.rename is not a known key"),
        (
            "[workload]\nmetadata = { create = 1.5 }",
            "workload.metadata.create = 1.5 is out of range 0..1",
        ),
        ('[workload]\nfile_size = "64k"\nfile_size_max = "4k"', "is smaller than"),
        ('[workload]\nfile_size_max = "4k"', "is smaller than the mean file size 1g"),
        (
            '[constraints]\nplp = "maybe"',
            'constraints.plp = "maybe" must be one of yes, no, unknown',
        ),
        ('[constraints]\nfeatures = ["dedup"]', 'constraints.features = "dedup" must be one of'),
        ("[constraints]\nmin_iops = -1", "constraints.min_iops = -1 is out of range"),
        ('[constraints]\ndurability = "yes"', "must be true or false"),
        ("colour = 1", "colour is not a known key"),
        ("workload = 3", "workload = 3 must be a table"),
        ("[profiles.a]\n[workload]\n", "must be inside a [profiles.<name>] table"),
    ],
)
def test_bad_profile_text(tmp_path, text, fragment):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ProfileError) as e:
        load_profiles(f)
    msg = one_line_error(e.value)
    assert msg.startswith("profile bad.toml")
    assert fragment in msg


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "profile bad.toml: no [workload] or [fio] table"),
        (
            'description = "only words"\n[constraints]\nmin_iops = 1\n',
            "profile bad.toml: no [workload] or [fio] table",
        ),
        (
            '[workload]\nrw = "randread"\n',
            "profile bad.toml: workload.rw is a fio-style key: put it under [fio]",
        ),
        (
            "[workload]\niodepth = 4\n",
            "profile bad.toml: workload.iodepth is a fio-style key: put it under [fio]",
        ),
        (
            "[fio]\nread_pct = 70\n",
            "profile bad.toml: fio.read_pct is a descriptive key: put it under [workload]",
        ),
        (
            "[workload]\nrequest_size = 256\ndirect = true\n",
            "profile bad.toml: workload.request_size = 256 is below 512 bytes: with direct = true O_DIRECT "
            "needs whole logical blocks (>= 512 B); use direct = false or a larger request size",
        ),
        (
            '[fio]\nbs = "100"\n',
            'profile bad.toml: fio.bs = "100" is below 512 bytes: with direct I/O (the default) O_DIRECT '
            "needs whole logical blocks (>= 512 B); use direct = false or a larger request size",
        ),
        (
            "[fio]\nbs = 1000\ndirect = 1\n",
            "fio.bs = 1000 is not a multiple of 512 bytes: with direct = true",
        ),
    ],
)
def test_empty_misplaced_and_undirectable_profiles(tmp_path, text, message):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ProfileError) as e:
        load_profile(f)
    assert message in one_line_error(e.value)


def test_many_profile_file_names_the_empty_one(tmp_path):
    f = tmp_path / "two.toml"
    f.write_text('[profiles.a.fio]\nrw = "read"\n\n[profiles.b]\ndescription = "nothing"\n')
    with pytest.raises(ProfileError) as e:
        load_profiles(f)
    assert one_line_error(e.value) == "profile two.toml [profiles.b]: no [workload] or [fio] table"


@pytest.mark.parametrize("d", [{"bs": 256}, {"request_size": "511"}, {"bs": "4097", "direct": 1}])
def test_direct_bs_below_or_off_512_is_refused_buffered_is_fine(d):
    with pytest.raises(ProfileError, match="O_DIRECT needs whole logical blocks"):
        workload_from_dict(d)
    w = workload_from_dict(d | {"direct": False})
    assert not w.direct and w.bs_bytes == prof.parse_size(d.get("bs", d.get("request_size")))
    assert workload_from_dict({"bs": 512}).bs_bytes == 512  # one sector is enough


def test_absurd_numbers_are_profile_errors():
    with pytest.raises(ProfileError) as e:
        profiles_from_toml("[workload]\njobs = " + "9" * 5000)  # beyond int()'s digit limit
    one_line_error(e.value)
    for text in (
        "a = " + "[" * 100_000,
        "[workload]\njobs = " + "[" * 500 + "]" * 500,
        "x." * 20_000 + "y = 1",
        "[" + "x." * 20_000 + "y]",
    ):
        with pytest.raises(ProfileError) as e:
            profiles_from_toml(text)
        one_line_error(e.value)
    with pytest.raises(ProfileError) as e:
        workload_from_dict({"jobs": 10**5000})
    assert one_line_error(e.value).startswith(
        "workload: jobs = <16610-bit integer> is out of range"
    )


def test_unreadable_and_non_utf8_files(tmp_path):
    f = tmp_path / "bin.toml"
    f.write_bytes(b"\xff\xfe\x00name = 1")
    with pytest.raises(ProfileError) as e:
        load_profiles(f)
    assert "not UTF-8" in one_line_error(e.value)
    with pytest.raises(ProfileError) as e:
        load_profiles(tmp_path / "missing.toml")
    assert "cannot read" in one_line_error(e.value)


# ---------------------------------------------------------------- flat dicts


def test_flat_fio_style_row_as_in_datasets():
    row = {
        "rw": "randrw",
        "bs": "8k",
        "rwmixread": 70,
        "iodepth": 1,
        "numjobs": 16,
        "fsync": 1,
        "direct": 0,
        "ioengine": "psync",
        "size": "64G",
        "create_frac": 0.1,
        "dir_depth": 3.3,
        "dir_shape": "deep",
        "op": "transaction",
        "rank_by": "ops",
        "description": "ignored",
        "source": "seed 004, Table 1",
    }
    w = workload_from_dict(row)
    assert (w.rw, w.rwmixread, w.bs_bytes, w.numjobs, w.direct) == ("randrw", 70, 8192, 16, False)
    assert (w.fsync_mode, w.fsync_every, w.create_frac, w.op) == ("every_n", 1, 0.1, "transaction")
    assert w.working_set_bytes == w.file_size_bytes == 64 << 30


def test_flat_fsync_string_is_the_descriptive_mode():
    assert workload_from_dict({"fsync": "per_transaction"}).fsync_every == 1
    assert workload_from_dict({"fsync": "per_transaction", "fsync_every": 8}).fsync_every == 8
    assert workload_from_dict({"fsync": 0}).fsync_mode == "none"
    with pytest.raises(ProfileError):
        workload_from_dict({"fsync": "none", "fsync_every": 3})


def test_defaults_and_normalisation():
    w = workload_from_dict({})
    assert w == Workload()
    assert workload_from_dict({"rw": "randrw", "rwmixread": 100}) == workload_from_dict(
        {"rw": "randread"}
    )
    assert workload_from_dict({"rw": "rw", "rwmixread": 0}).rw == "write"
    assert workload_from_dict({"rw": "randread", "rwmixread": 30}).rwmixread == 50  # fio ignores it
    w = workload_from_dict({"rw": "filestat", "nrfiles": 10})
    assert (w.ioengine, w.op, w.read_pct, w.random) == ("filestat", "file", 100, True)
    assert workload_from_dict({"ioengine": "filedelete"}).rw == "filedelete"
    with pytest.raises(ProfileError):
        workload_from_dict({"ioengine": "filecreate", "rw": "read"})


def test_sizes_derive_from_each_other():
    w = workload_from_dict({"size": "1G", "nrfiles": 4})
    assert w.file_size_bytes == 256 << 20 and w.working_set_bytes == 1 << 30
    w = workload_from_dict({"filesize": "16k", "nrfiles": 1000})
    assert w.working_set_bytes == 16000 << 10
    w = workload_from_dict({"filesize": "4k-12k", "nrfiles": 2})
    assert (w.file_size_bytes, w.file_size_max_bytes) == (8 << 10, 12 << 10)
    with pytest.raises(ProfileError):
        workload_from_dict({"filesize": "12k-4k"})
    with pytest.raises(ProfileError):
        workload_from_dict({"filesize": "1024T", "nrfiles": 2})


@pytest.mark.parametrize(
    "d, rank",
    [
        ({"rw": "read", "bs": "128k"}, "bytes"),
        ({"rw": "write", "bs": "1m"}, "bytes"),
        ({"rw": "read", "bs": "64k"}, "ops"),
        ({"rw": "randread", "bs": "1m"}, "ops"),
        ({"rw": "read", "bs": "1m", "stat_frac": 0.1}, "ops"),
        ({"rw": "read", "bs": "1m", "rank_by": "ops"}, "ops"),
    ],
)
def test_rank_by_default(d, rank):
    assert workload_from_dict(d).rank_by == rank


def test_workload_from_dict_names_its_origin():
    with pytest.raises(ProfileError) as e:
        workload_from_dict({"read_pct": 140}, where="workloads.toml [w1]")
    assert one_line_error(e.value) == "workloads.toml [w1]: read_pct = 140 is out of range 0..100"
    with pytest.raises(ProfileError):
        workload_from_dict(["rw", "read"])  # type: ignore[arg-type]


# ---------------------------------------------------------------- hypothesis

SIZES_BS = st.integers(1, 64 << 20)
SIZES_BIG = st.integers(1, 1 << 40)


def size_text(n: st.SearchStrategy[int]) -> st.SearchStrategy:
    return n.flatmap(lambda v: st.sampled_from([v, format_size(v)]))


@st.composite
def facts(draw):
    """One workload's facts, independent of spelling."""
    random = draw(st.booleans())
    direct = draw(st.booleans())
    # O_DIRECT needs whole 512-byte blocks (the profile refuses anything else).
    bs = draw(SIZES_BS.map(lambda n: max(512, n - n % 512)) if direct else SIZES_BS)
    return {
        "random": random,
        "read_pct": draw(st.integers(0, 100)),
        "bs": bs,
        "jobs": draw(st.integers(1, 4096)),
        "qd": draw(st.integers(1, 4096)),
        "fsync_every": draw(st.integers(0, 1000)),
        "direct": direct,
        "ioengine": draw(st.sampled_from(["psync", "libaio", "io_uring", "sync"])),
        "files": draw(st.integers(1, 1000)),
        "file_size": draw(SIZES_BIG),
        "working_set": draw(st.one_of(st.none(), SIZES_BIG)),
    }


def descriptive(f) -> dict:
    d = {
        "pattern": "random" if f["random"] else "sequential",
        "read_pct": f["read_pct"],
        "request_size": format_size(f["bs"]),
        "jobs": f["jobs"],
        "queue_depth": f["qd"],
        "fsync": "every_n" if f["fsync_every"] else "none",
        "direct": f["direct"],
        "ioengine": f["ioengine"],
        "files": f["files"],
        "file_size": format_size(f["file_size"]),
    }
    if f["fsync_every"]:
        d["fsync_every"] = f["fsync_every"]
    if f["working_set"] is not None:
        d["working_set"] = format_size(f["working_set"])
    return d


def fio_style(f) -> dict:
    pct, prefix = f["read_pct"], "rand" if f["random"] else ""
    rw = (
        prefix + "read"
        if pct == 100
        else prefix + "write"
        if pct == 0
        else (prefix + "rw" if f["random"] else "rw")
    )
    d = {
        "rw": rw,
        "bs": f["bs"],
        "numjobs": f["jobs"],
        "iodepth": f["qd"],
        "fsync": f["fsync_every"],
        "direct": int(f["direct"]),
        "ioengine": f["ioengine"],
        "nrfiles": f["files"],
        "filesize": f["file_size"],
    }
    if rw in ("rw", "randrw"):
        d["rwmixread"] = pct
    if f["working_set"] is not None:
        d["size"] = f["working_set"]
    return d


@settings(max_examples=200, deadline=None)
@given(facts())
def test_both_forms_give_the_same_workload(f):
    assume(f["working_set"] is not None or f["file_size"] * f["files"] <= 1 << 50)
    desc = profile_from_dict({"workload": descriptive(f)}, "p").workload
    fio = profile_from_dict({"fio": fio_style(f)}, "p").workload
    assert desc == fio
    assert workload_from_dict(descriptive(f)) == workload_from_dict(fio_style(f)) == desc
    assert desc.read_pct == f["read_pct"] and desc.random == f["random"]
    assert desc.bs_bytes == f["bs"] and desc.concurrency == f["jobs"] * f["qd"]


@settings(max_examples=100, deadline=None)
@given(facts(), st.data())
def test_same_facts_given_both_ways_agree_and_differing_ones_fail(f, data):
    both = profile_from_dict({"workload": descriptive(f), "fio": fio_style(f)}, "p")
    assert both.workload == workload_from_dict(fio_style(f))
    # change one fact on the fio side only: now the two spellings contradict each other
    key, bad = data.draw(
        st.sampled_from(
            [
                ("numjobs", f["jobs"] % 4096 + 1),
                ("iodepth", f["qd"] % 4096 + 1),
                ("bs", f["bs"] % (64 << 20) + 1),
                ("nrfiles", f["files"] % 1000 + 1),
                ("ioengine", "posixaio"),
                ("direct", 1 - int(f["direct"])),
            ]
        )
    )
    fio = fio_style(f) | {key: bad}
    with pytest.raises(ProfileError) as e:
        profile_from_dict({"workload": descriptive(f), "fio": fio}, "p")
    assert "contradicts" in one_line_error(e.value)


@st.composite
def valid_profile_dicts(draw):
    w = descriptive(draw(facts()))
    w.setdefault("working_set", draw(size_text(SIZES_BIG)))
    if draw(st.booleans()):
        a, b = sorted(draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=2, max_size=2)))
        w["metadata"] = {"create": a, "stat": b - a, "delete": draw(st.floats(0, 1 - b))}
    w["dir_depth"] = draw(st.floats(0, 64, allow_nan=False))
    w["op"] = draw(st.sampled_from(prof.OPS))
    if draw(st.booleans()):
        w["rank_by"] = draw(st.sampled_from(prof.RANK_BY))
    if draw(st.booleans()):
        w["file_size_max"] = draw(SIZES_BIG.filter(lambda n: n >= prof.parse_size(w["file_size"])))
    cons = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "min_iops": st.floats(0, 1e9),
                "min_mb_s": st.integers(0, 10**6),
                "max_p99_ms": st.floats(0.001, 1e6),
                "durability": st.booleans(),
                "features": st.lists(st.sampled_from(prof.FEATURES), unique=True),
                "plp": st.sampled_from(prof.PLP_VALUES),
                "allow_risky": st.booleans(),
            },
        )
    )
    text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
    return {
        "description": draw(text),
        "source": draw(text),
        "workload": w,
        "constraints": cons,
        "tags": draw(st.lists(text, max_size=3)),
        **({"fio_job": "x.fio"} if draw(st.booleans()) else {}),
    }


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    valid_profile_dicts(),
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20),
)
def test_generated_valid_profiles_load_and_round_trip(d, name):
    assume(name.strip() and not any(c in name for c in "\n\r\t"))
    p = profile_from_dict(d, name)
    assert isinstance(p, Profile) and p.name == name
    text = profile_to_toml(p)
    assert profiles_from_toml(text, stem="ignored") == [p]
    twin = dataclasses.replace(p, name=name + "2")
    assert profiles_from_toml(profiles_to_toml([p, twin])) == [p, twin]
    assert workload_from_dict(p.workload.to_dict()) == p.workload


INVALID = {
    "read_pct": st.one_of(
        st.integers(101, 10**6), st.integers(max_value=-1), st.just("70"), st.just(70.5)
    ),
    "pattern": st.text().filter(lambda s: s not in prof.PATTERNS),
    "request_size": st.one_of(
        st.just(0),
        st.just("0k"),
        st.integers(65 << 20, 1 << 60),
        st.text().filter(lambda s: not s.strip().isdigit()),
        st.just(4.0),
    ),
    "jobs": st.one_of(st.integers(max_value=0), st.integers(4097), st.just(True), st.just("4")),
    "queue_depth": st.one_of(st.integers(max_value=0), st.integers(4097)),
    "fsync": st.one_of(st.integers(), st.text().filter(lambda s: s not in prof.FSYNC_MODES)),
    "direct": st.one_of(st.integers().filter(lambda i: i not in (0, 1)), st.text()),
    "ioengine": st.text().filter(lambda s: s not in prof.IOENGINES),
    "files": st.one_of(st.integers(max_value=0), st.integers(10**8 + 1)),
    "metadata": st.one_of(
        st.floats(),
        st.fixed_dictionaries({"create": st.floats(1.0001, 1e300)}),
        st.dictionaries(
            st.text().filter(lambda s: s not in prof.METADATA_KEYS), st.floats(0, 1), min_size=1
        ),
    ),
    "dir_shape": st.text().filter(lambda s: s not in prof.DIR_SHAPES),
    "dir_depth": st.one_of(
        st.floats(64.0001),
        st.floats(max_value=-0.0001),
        st.just(math.nan),
        st.integers(65, 10**400),
    ),
    "op": st.text().filter(lambda s: s not in prof.OPS),
    "rank_by": st.text().filter(lambda s: s not in prof.RANK_BY),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(valid_profile_dicts(), st.data())
def test_one_invalid_value_is_one_line_naming_the_field(d, data):
    key = data.draw(st.sampled_from(sorted(INVALID)))
    bad = data.draw(INVALID[key])
    d["workload"][key] = bad
    if key == "fsync":
        d["workload"].pop("fsync_every", None)
    with pytest.raises(ProfileError) as e:
        profile_from_dict(d, "p", origin="profile p.toml")
    msg = one_line_error(e.value)
    assert msg.startswith("profile p.toml: workload.")
    assert f"workload.{key}" in msg


@settings(max_examples=200, deadline=None)
@given(
    valid_profile_dicts(),
    st.text(min_size=1),
    st.sampled_from(["top", "workload", "fio", "constraints"]),
)
def test_unknown_keys_are_rejected(d, key, where):
    known = {
        "top": prof.PROFILE_KEYS,
        "workload": prof.DESCRIPTIVE_KEYS,
        "fio": prof.FIO_KEYS,
        "constraints": prof.CONSTRAINT_KEYS,
    }[where]
    assume(key not in known)
    # A fio-style key under [workload] is not unknown: it gets its own, more helpful message
    # (the 'workload.rw is a fio-style key' cases of the bad-profile table above).
    assume(not (where == "workload" and key in prof.FIO_KEYS))
    if where == "top":
        d[key] = 1
    else:
        d.setdefault(where, {})[key] = 1
    with pytest.raises(ProfileError) as e:
        profile_from_dict(d, "p")
    if where == "fio" and key in prof.DESCRIPTIVE_KEYS:
        # Likewise a descriptive key under [fio] says where it belongs (hypothesis found
        # fio.file_size_max, which the st.text keys reach only rarely).
        assert f"fio.{key} is a descriptive key: put it under [workload]" in one_line_error(e.value)
    else:
        assert "is not a known key" in one_line_error(e.value)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), st.integers(), min_size=1))
def test_unknown_flat_keys_are_rejected(d):
    assume(not set(d) <= set(prof.FLAT_KEYS))
    with pytest.raises(ProfileError) as e:
        workload_from_dict(d)
    one_line_error(e.value)


ANY_VALUE = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=12),
        st.sampled_from(["4k", "1G", "random", "none", "every_n", "randrw", "filecreate", "yes"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(list(prof.METADATA_KEYS) + ["x"]), inner, max_size=3),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(prof.FLAT_KEYS + ("junk",)), ANY_VALUE, max_size=8))
def test_arbitrary_flat_dicts_load_or_raise_profile_error(d):
    try:
        w = workload_from_dict(d)
    except ProfileError as e:
        one_line_error(e)
    else:
        assert isinstance(w, Workload) and w.rw in RW_MODES
        assert 0 <= w.metadata_frac <= 1 and w.bs_bytes >= 1


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(prof.PROFILE_KEYS + ("profiles",)),
        st.one_of(
            ANY_VALUE,
            st.dictionaries(
                st.sampled_from(prof.FLAT_KEYS + prof.CONSTRAINT_KEYS), ANY_VALUE, max_size=6
            ),
        ),
        max_size=6,
    )
)
def test_arbitrary_documents_load_or_raise_profile_error(doc):
    try:
        profs = prof._profiles_in(doc, "stem", "profile f.toml")
    except ProfileError as e:
        one_line_error(e)
    else:
        assert all(isinstance(p, Profile) for p in profs)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet="[]=\"\n.ab_ 0123456789kGrw{},#-'\\")))
def test_garbage_toml_text_is_profile_error(text):
    try:
        profs = profiles_from_toml(text, stem="g", origin="profile g.toml")
    except ProfileError as e:
        assert one_line_error(e).startswith("profile g.toml")
    else:
        tomllib.loads(text)  # only real TOML may get through, and then as profiles
        assert all(isinstance(p, Profile) for p in profs)


def test_constraints_defaults_and_values():
    p = profile_from_dict(
        {
            "workload": {},
            "constraints": {
                "min_iops": 5000,
                "max_p99_ms": 5,
                "features": ["snapshots", "checksums"],
                "plp": "yes",
                "allow_risky": True,
            },
        },
        "c",
    )
    assert p.constraints == Constraints(
        min_iops=5000.0,
        max_p99_ms=5.0,
        features=("checksums", "snapshots"),
        plp="yes",
        allow_risky=True,
    )
    assert profile_from_dict({"workload": {}}, "d").constraints == Constraints()
    assert Constraints().plp == "unknown" and not Constraints().allow_risky
    with pytest.raises(ProfileError):
        profile_from_dict({"workload": {}, "constraints": {"max_p99_ms": 0}}, "c")


def test_metadata_modes_round_trip():
    for rw in METADATA_MODES:
        p = profile_from_dict({"fio": {"rw": rw, "nrfiles": 100, "filesize": "4k"}}, rw)
        assert profiles_from_toml(profile_to_toml(p), stem="x") == [p]


def test_the_documented_example_loads_and_both_halves_agree():
    doc = prof.__doc__
    block = doc[doc.index("Format::") + len("Format::") : doc.index("A preset file holds")]
    text = "\n".join(line[4:] for line in block.splitlines())
    (p,) = profiles_from_toml(text)
    assert p.name == "oltp" and p.fio_job == "filebench-oltp.fio"
    w = p.workload
    assert (w.rw, w.rwmixread, w.bs_bytes, w.numjobs, w.fsync_mode, w.op) == (
        "randrw",
        70,
        8192,
        16,
        "per_transaction",
        "transaction",
    )
    assert p.constraints.features == ("snapshots",) and p.constraints.min_iops == 5000
