"""Device discovery and the safety verdict without root: parsers fed with outputs recorded on
this machine (util-linux 2.38.1, kernel 6.18, loop devices), the pure ``judge`` on facts, and
sysfs lookups against fake trees (no dm/md driver here: domain notes §6)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from fsadvisor.host import device

from fsadvisor.host import loopdev
from fsadvisor.host.device import DeviceFacts, Host, judge
from fsadvisor.domain import Device
from fsadvisor.errors import ConfigError, DeviceRefused, FsAdvisorError

# -------------------------------------------------------------- recorded outputs
# lsblk -J -b -o NAME,PATH,TYPE,SIZE,RO,MOUNTPOINTS,FSTYPE,PKNAME,MODEL,SERIAL,WWN,ROTA,LOG-SEC,REV,TRAN /dev/vda
LSBLK_VDA = """{
   "blockdevices": [
      {
         "name": "vda", "path": "/dev/vda", "type": "disk", "size": 274877906944, "ro": false,
         "mountpoints": [
             "/"
         ],
         "fstype": null, "pkname": null, "model": null, "serial": null, "wwn": null,
         "rota": true, "log-sec": 512, "rev": null, "tran": null
      }
   ]
}"""
# the same columns on a 64 MiB loop device after sfdisk (one 32 MiB partition), mkfs.ext4 on
# the partition and a mount of it: FSTYPE stays null although it is mounted (domain notes §5).
LSBLK_LOOP_PARTED = """{
   "blockdevices": [
      {
         "name": "loop0", "path": "/dev/loop0", "type": "loop", "size": 67108864, "ro": false,
         "mountpoints": [
             null
         ],
         "fstype": null, "pkname": null, "model": null, "serial": null, "wwn": null,
         "rota": true, "log-sec": 512,
         "children": [
            {
               "name": "loop0p1", "path": "/dev/loop0p1", "type": "part", "size": 33554432,
               "ro": false,
               "mountpoints": [
                   "/tmp/devexp/m"
               ],
               "fstype": null, "pkname": "loop0", "model": null, "serial": null, "wwn": null,
               "rota": true, "log-sec": 512
            }
         ]
      }
   ]
}"""
# lsblk -J -b -o NAME,PATH,TYPE,SIZE,RO,MOUNTPOINTS,FSTYPE,PKNAME on an active swap loop device
LSBLK_SWAP = """{
   "blockdevices": [
      {"name": "loop0", "path": "/dev/loop0", "type": "loop", "size": 67108864, "ro": false,
       "mountpoints": ["[SWAP]"], "fstype": null, "pkname": null}
   ]
}"""
# lsblk on a detached loop device: exit status 32 and an empty list
LSBLK_EMPTY = """{
   "blockdevices": [

   ]
}"""
FINDMNT_PART = """{
   "filesystems": [
      {
         "target": "/tmp/devexp/m",
         "source": "/dev/loop0p1",
         "fstype": "ext4",
         "options": "rw,relatime"
      }
   ]
}"""
BLKID_EXT4_PART = """DEVNAME=/dev/loop0p1
UUID=9ba4263f-9d61-4311-87a3-3ca9a75d3bd6
VERSION=1.0
BLOCK_SIZE=1024
TYPE=ext4
USAGE=filesystem
PART_ENTRY_SCHEME=dos
PART_ENTRY_UUID=37a94053-01
PART_ENTRY_TYPE=0x83
PART_ENTRY_NUMBER=1
PART_ENTRY_OFFSET=2048
PART_ENTRY_SIZE=65536
PART_ENTRY_DISK=7:0
"""
BLKID_DOS = "DEVNAME=/dev/loop0\nPTUUID=37a94053\nPTTYPE=dos\n"
BLKID_LVM = (
    "DEVNAME=c.img\nUUID=AAAAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAAAA\nVERSION=LVM2\\ 001\n"
    "TYPE=LVM2_member\nUSAGE=raid\n"
)
WIPEFS_EMPTY = """{
   "signatures": [

   ]
}"""
WIPEFS_DOS = """{
   "signatures": [
      {
         "device": "loop0",
         "offset": "0x1fe",
         "type": "dos",
         "uuid": null,
         "label": null
      }
   ]
}"""
WIPEFS_SWAP = """{
   "signatures": [
      {"device": "loop0", "offset": "0xff6", "type": "swap",
       "uuid": "6d23d270-9cb7-4113-a13f-9c081582bfdc", "label": null}
   ]
}"""
SWAPS = """Filename				Type		Size		Used		Priority
/dev/loop0                              partition	65532		0		-2
/srv/my\\040swap                         file	65532		0		-3
"""
MOUNTS = """proc /proc proc rw,relatime 0 0
/dev/vda / ext4 rw,relatime,discard 0 0
/dev/loop0p1 /tmp/with\\040space ext4 rw,relatime 0 0
"""
STAT_17 = (
    "   34923     7109  1556402     4333    12575    11777  1046304     3177        0     3112"
    "     7761     4220       59   252432      213     1652       37\n"
)
# nvme id-ctrl -o json (abridged to the fields read; no NVMe device on this machine)
NVME_ID_CTRL = json.dumps(
    {
        "vid": 5197,
        "sn": "S4EWNX0R123456      ",
        "mn": "Samsung SSD 980 PRO 1TB    ",
        "fr": "5B2QGXA7",
        "vwc": 7,
    }
)


def one_line_refusal(exc: BaseException) -> None:
    assert isinstance(exc, FsAdvisorError), repr(exc)
    assert str(exc) and "\n" not in str(exc), repr(str(exc))


# -------------------------------------------------------------- parsers on recorded outputs


def test_lsblk_whole_disk_mounted_although_fstype_null():
    (vda,) = device.parse_lsblk(LSBLK_VDA)
    assert (vda["name"], vda["type"], vda["size"], vda["mountpoints"]) == (
        "vda",
        "disk",
        274877906944,
        ["/"],
    )
    assert vda["fstype"] is None and vda["children"] == []


def test_lsblk_tree_drops_null_mountpoints_and_keeps_children():
    (disk,) = device.parse_lsblk(LSBLK_LOOP_PARTED)
    assert disk["mountpoints"] == []
    names = [(n["name"], n["type"], n["mountpoints"]) for n in device.walk(disk)]
    assert names == [("loop0", "loop", []), ("loop0p1", "part", ["/tmp/devexp/m"])]
    assert device.walk(disk)[1]["pkname"] == "loop0"


def test_lsblk_swap_and_empty():
    assert device.parse_lsblk(LSBLK_SWAP)[0]["mountpoints"] == ["[SWAP]"]
    assert device.parse_lsblk(LSBLK_EMPTY) == []


@pytest.mark.parametrize(
    "text",
    [
        '{"blockdevices": {}}',
        '{"blockdevices": [{"path": "/dev/x"}]}',
        '{"blockdevices": [{"name": "a", "children": 3}]}',
        '{"blockdevices": [{"name": "a", "mountpoints": "/"}]}',
        '{"blockdevices": [{"name": "a", "size": "1G"}]}',
        '{"blockdevices": [{"name": "a", "log-sec": -1}]}',
        "[]",
        "lsblk: oops",
    ],
)
def test_lsblk_malformed_is_a_refusal(text):
    with pytest.raises(DeviceRefused) as ei:
        device.parse_lsblk(text)
    one_line_refusal(ei.value)


def test_findmnt():
    assert device.parse_findmnt(FINDMNT_PART) == [
        {"target": "/tmp/devexp/m", "source": "/dev/loop0p1", "fstype": "ext4"}
    ]
    assert device.parse_findmnt("") == []  # findmnt -S prints nothing (exit 1) when unmounted
    nested = {
        "filesystems": [
            {
                "target": "/",
                "source": "/dev/vda",
                "children": [{"target": "/boot", "source": "/dev/vda1"}],
            }
        ]
    }
    assert [f["target"] for f in device.parse_findmnt(json.dumps(nested))] == ["/", "/boot"]


def test_blkid_export_and_signature_names():
    part = device.parse_blkid_export(BLKID_EXT4_PART)
    assert part["TYPE"] == "ext4" and part["PART_ENTRY_DISK"] == "7:0"
    assert device.parse_blkid_export(BLKID_LVM)["VERSION"] == "LVM2 001"
    assert device.signature_names(
        device.parse_blkid_export(BLKID_DOS), device.parse_wipefs(WIPEFS_DOS)
    ) == ["dos"]
    assert device.signature_names(device.parse_blkid_export(BLKID_LVM), []) == ["LVM2_member"]
    assert device.signature_names({}, device.parse_wipefs(WIPEFS_SWAP)) == ["swap"]
    assert device.signature_names({"TYPE": "ext4"}, device.parse_wipefs(WIPEFS_DOS)) == [
        "dos",
        "ext4",
    ]
    assert device.signature_names({}, device.parse_wipefs(WIPEFS_EMPTY)) == []
    assert device.parse_wipefs("") == []


@pytest.mark.parametrize("text", ["not an export line", "lower=case", "=x"])
def test_blkid_malformed(text):
    with pytest.raises(DeviceRefused) as ei:
        device.parse_blkid_export(text)
    one_line_refusal(ei.value)


@pytest.mark.parametrize(
    "text", ['{"signatures": [{}]}', '{"signatures": [{"type": 3}]}', '{"x": []}', "wipefs: x"]
)
def test_wipefs_malformed(text):
    with pytest.raises(DeviceRefused) as ei:
        device.parse_wipefs(text)
    one_line_refusal(ei.value)


def test_mounts_and_swaps_decode_octal_escapes():
    assert device.parse_mounts(MOUNTS)[1:] == [
        ("/dev/vda", "/"),
        ("/dev/loop0p1", "/tmp/with space"),
    ]
    assert device.parse_swaps(SWAPS) == ["/dev/loop0", "/srv/my swap"]
    assert device.parse_swaps("Filename Type Size Used Priority\n") == []


def test_scheduler_list():
    assert device.parse_scheduler("none [mq-deadline] kyber bfq \n") == (
        "mq-deadline",
        ["none", "mq-deadline", "kyber", "bfq"],
    )
    assert device.parse_scheduler("[none] mq-deadline") == ("none", ["none", "mq-deadline"])
    assert device.parse_scheduler("none") == ("none", ["none"])
    for bad in ("", "none kyber", "[a] [b", "none; rm"):
        with pytest.raises(DeviceRefused):
            device.parse_scheduler(bad)


def test_stat_fields_for_11_15_17_field_kernels():
    assert device.parse_stat(STAT_17) == {  # /sys/block/vda/stat here, order per domain notes §5
        "read_ios": 34923,
        "read_merges": 7109,
        "read_sectors": 1556402,
        "read_ticks_ms": 4333,
        "write_ios": 12575,
        "write_merges": 11777,
        "write_sectors": 1046304,
        "write_ticks_ms": 3177,
        "in_flight": 0,
        "io_ticks_ms": 3112,
        "time_in_queue_ms": 7761,
        "discard_ios": 4220,
        "discard_merges": 59,
        "discard_sectors": 252432,
        "discard_ticks_ms": 213,
        "flush_ios": 1652,
        "flush_ticks_ms": 37,
    }
    assert list(device.parse_stat(" ".join(["1"] * 11))) == list(device.STAT_FIELDS[:11])
    assert list(device.parse_stat(" ".join(["1"] * 15)))[-1] == "discard_ticks_ms"
    for bad in ("", "1 2 3", " ".join(["1"] * 16), " ".join(["-1"] * 17), " ".join(["١"] * 11)):
        with pytest.raises(DeviceRefused):
            device.parse_stat(bad)


def test_nvme_id_ctrl_strips_padding():
    assert device.parse_nvme_id_ctrl(NVME_ID_CTRL) == {
        "model": "Samsung SSD 980 PRO 1TB",
        "serial": "S4EWNX0R123456",
        "firmware": "5B2QGXA7",
    }
    assert device.parse_nvme_id_ctrl('{"mn": "  "}') == {}


# -------------------------------------------------------------- hypothesis: never a crash

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "path",
                    "type",
                    "size",
                    "mountpoints",
                    "children",
                    "blockdevices",
                    "filesystems",
                    "target",
                    "source",
                    "signatures",
                    "mn",
                    "sn",
                    "fr",
                ]
            )
            | st.text(max_size=4),
            kids,
            max_size=5,
        )
    ),
    max_leaves=20,
)
TEXT_PARSERS = [
    device.parse_lsblk,
    device.parse_findmnt,
    device.parse_blkid_export,
    device.parse_wipefs,
    device.parse_mounts,
    device.parse_swaps,
    device.parse_scheduler,
    device.parse_stat,
    device.parse_nvme_id_ctrl,
]


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200), which=st.sampled_from(TEXT_PARSERS))
def test_parsers_on_garbage_text(text, which):
    try:
        which(text)
    except DeviceRefused as e:
        one_line_refusal(e)


@settings(max_examples=300, deadline=None)
@given(
    value=json_values,
    wrap=st.sampled_from([None, "blockdevices", "filesystems", "signatures"]),
    which=st.sampled_from(
        [device.parse_lsblk, device.parse_findmnt, device.parse_wipefs, device.parse_nvme_id_ctrl]
    ),
)
def test_json_parsers_on_arbitrary_json(value, wrap, which):
    doc = value if wrap is None else {wrap: value}
    try:
        out = which(json.dumps(doc))
    except DeviceRefused as e:
        one_line_refusal(e)
        return
    if which is device.parse_lsblk:  # what it accepts is safe to walk
        for node in out:
            for n in device.walk(node):
                assert isinstance(n["name"], str) and all(
                    isinstance(m, str) for m in n["mountpoints"]
                )


@settings(max_examples=200, deadline=None)
@given(
    n=st.sampled_from([11, 15, 17]),
    values=st.lists(st.integers(0, 2**64), min_size=17, max_size=17),
)
def test_stat_roundtrip(n, values):
    parsed = device.parse_stat(" ".join(map(str, values[:n])))
    assert list(parsed.values()) == values[:n] and list(parsed) == list(device.STAT_FIELDS[:n])


# -------------------------------------------------------------- device_from_spec, kind


@pytest.mark.parametrize(
    "spec,kind,size",
    [
        ("nvme:1.92T", "nvme", int(1.92 * (1 << 40))),
        ("2T", "nvme", 2 << 40),
        ("sata-ssd:480G", "sata-ssd", 480 << 30),
        ("hdd:4TiB", "hdd", 4 << 40),
        ("loop:512m", "loop", 512 << 20),
    ],
)
def test_device_from_spec(spec, kind, size):
    d = device.device_from_spec(spec)
    assert d == Device(path=None, size_bytes=size, kind=kind, rotational=kind == "hdd")


def test_device_from_spec_plp_and_path(tmp_path):
    assert device.device_from_spec("1T", plp="yes").plp == "yes"
    (tmp_path / "x").touch()
    with pytest.raises(DeviceRefused, match="regular file"):
        device.device_from_spec(str(tmp_path / "x"))
    with pytest.raises(DeviceRefused, match="no such"):
        device.device_from_spec("./missing-device")
    with pytest.raises(ConfigError, match="plp"):
        device.device_from_spec("1T", plp="maybe")


@pytest.mark.parametrize(
    "spec",
    ["", "nvme:", "ssd:1T", "nvme:-1G", "0", "nvme:0G", "1X", "nvme:1T:2", "1.5.5G", "NVME:1T"],
)
def test_device_from_spec_rejects(spec):
    with pytest.raises(ConfigError) as ei:
        device.device_from_spec(spec)
    one_line_refusal(ei.value)


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("", "empty --device"),
        ("  ", "empty --device"),
        ("nvme:1K", "device size 1K is below 8 MiB"),
        ("8188k", "below 8 MiB"),
        ("nvme:99999999999999999999999T", "is above 1 EiB"),
        ("sata-ssd:1025P", "is above 1 EiB"),
    ],
)
def test_device_from_spec_refuses_empty_tiny_and_absurd_sizes(spec, needle):
    with pytest.raises(ConfigError, match=needle) as ei:
        device.device_from_spec(spec)
    one_line_refusal(ei.value)


def test_device_from_spec_size_bounds_are_the_catalogs():
    from fsadvisor.catalog import geometry

    smallest = min(geometry.MIN_DEVICE_BYTES.values())
    assert smallest == 8 << 20  # ext4; xfs needs 300 MiB, btrfs 114,294,784 B
    assert device.device_from_spec("nvme:8M").size_bytes == smallest
    assert device.device_from_spec("nvme:1024P").size_bytes == 1 << 60


@settings(max_examples=300, deadline=None)
@given(
    spec=st.text(max_size=30).filter(
        lambda s: not s.strip().startswith(("/", ".")) and os.sep not in s
    )
)
def test_device_from_spec_never_crashes(spec):
    try:
        d = device.device_from_spec(spec)
    except ConfigError as e:
        one_line_refusal(e)
    else:
        assert (
            8 << 20 <= d.size_bytes <= 1 << 60 and d.kind in device.DEVICE_KINDS and d.path is None
        )


@pytest.mark.parametrize(
    "name,rota,tran,kind",
    [
        ("nvme0n1", False, None, "nvme"),
        ("nvme12n3", False, "nvme", "nvme"),
        ("loop7", True, None, "loop"),
        ("sda", False, "sata", "sata-ssd"),
        ("sdb", True, "sata", "hdd"),
        ("sdc", True, None, "hdd"),
        ("vda", True, None, "unknown"),
        ("zram0", False, None, "zram"),
        ("nvme0", False, None, "unknown"),
    ],
)
def test_device_kind(name, rota, tran, kind):
    assert device.device_kind(name, rota, tran) == kind


# -------------------------------------------------------------- judge: one reason each, gravest first


def facts(**kw) -> DeviceFacts:
    base = dict(path="/dev/loop0", resolved="/dev/loop0", name="loop0", size_bytes=64 << 20)
    base.update(kw)
    return DeviceFacts(**base)


def test_clean_device_is_ok():
    v = judge(facts())
    assert (v.ok, v.reason, v.resolved_path, v.needs_force) == (True, None, "/dev/loop0", False)


@pytest.mark.parametrize(
    "kw,needle",
    [
        (
            dict(
                path="/dev/vda",
                resolved="/dev/vda",
                name="vda",
                protected=[("/", "/dev/vda", "vda")],
            ),
            "/dev/vda holds /; never probed",
        ),
        (
            dict(
                path="/dev/vda3",
                resolved="/dev/vda3",
                name="vda3",
                parent="vda",
                protected=[("/", "/dev/vda2", "vda")],
            ),
            "on disk vda, whose /dev/vda2 holds /",
        ),
        (dict(protected=[("/boot", "/dev/sda1", "sda")]), "holds /boot"),
        (
            dict(protected=[("swap", "/dev/loop0", "loop0")]),
            "/dev/loop0 is active swap (/proc/swaps); never probed",
        ),
        (
            dict(name="loop0p1", parent="loop0", protected=[("swap", "/dev/loop0p2", "loop0")]),
            "on disk loop0, whose /dev/loop0p2 is active swap",
        ),
        (
            dict(mounted=[("/dev/loop0", "/mnt/x")]),
            "/dev/loop0 is mounted on /mnt/x; unmount it first",
        ),
        (dict(mounted=[("/dev/loop0p1", "/mnt/x")]), "mounted through /dev/loop0p1 on /mnt/x"),
        (dict(holders={"loop0": ["dm-0"]}), "held by dm-0"),
        (
            dict(children=[{"name": "md0", "type": "raid1", "children": [], "mountpoints": []}]),
            "used by md0 (raid1)",
        ),
        (dict(ro=True), "/dev/loop0 is read-only"),
        (
            dict(name="loop0p1", parent="loop0", path="/dev/loop0p1", resolved="/dev/loop0p1"),
            "partition of loop0",
        ),
        (
            dict(children=[{"name": "loop0p1", "type": "part", "children": [], "mountpoints": []}]),
            "has partitions (loop0p1)",
        ),
        (dict(size_bytes=0), "no medium"),
        (dict(readable=False), "needs root"),
        (dict(signatures=["ext4"]), "ext4 signature found; pass --force"),
    ],
)
def test_each_refusal_has_its_reason(kw, needle):
    v = judge(facts(**kw))
    assert not v.ok and needle in v.reason and "\n" not in v.reason
    assert v.needs_force == (needle.startswith("ext4"))
    assert judge(facts(**kw), force=True).ok == needle.startswith(
        "ext4"
    )  # force only beats signatures


def test_gravest_reason_wins_and_symlink_is_named():
    v = judge(
        facts(
            path="/tmp/link",
            protected=[("/", "/dev/loop0", "loop0")],
            mounted=[("/dev/loop0", "/")],
            ro=True,
            signatures=["ext4"],
        ),
        force=True,
    )
    assert v.reason == "/tmp/link (-> /dev/loop0) holds /; never probed"
    assert v.signatures == ["ext4"] and not v.needs_force
    v = judge(
        facts(mounted=[("/dev/loop0", "/m")], holders={"loop0": ["dm-1"]}, signatures=["ext4"])
    )
    assert "mounted" in v.reason and not v.needs_force


@settings(max_examples=300, deadline=None)
@given(
    protected=st.booleans(),
    mounted=st.booleans(),
    held=st.booleans(),
    ro=st.booleans(),
    partition=st.booleans(),
    parts=st.booleans(),
    empty=st.booleans(),
    readable=st.booleans(),
    sigs=st.lists(
        st.sampled_from(["ext4", "dos", "LVM2_member", "linux_raid_member"]),
        max_size=2,
        unique=True,
    ),
    force=st.booleans(),
)
def test_judge_is_ok_only_when_nothing_objects(
    protected, mounted, held, ro, partition, parts, empty, readable, sigs, force
):
    f = facts(
        protected=[("/", "/dev/vda", "vda")] if protected else [],
        mounted=[("/dev/loop0", "/m")] if mounted else [],
        holders={"loop0": ["md0"]} if held else {},
        ro=ro,
        parent="loop9" if partition else None,
        children=[{"name": "loop0p1", "type": "part", "children": [], "mountpoints": []}]
        if parts
        else [],
        size_bytes=0 if empty else 1 << 30,
        readable=readable,
        signatures=sigs,
    )
    v = judge(f, force=force)
    objections = protected or mounted or held or ro or partition or parts or empty or not readable
    # an array or LVM member is refused like a partitioned device, with or without --force
    member = bool({"LVM2_member", "linux_raid_member"} & set(sigs))
    assert v.ok == (not objections and not member and (not sigs or force))
    assert v.needs_force == (not objections and not member and bool(sigs) and not force)
    assert (v.reason is None) == v.ok and (v.ok or "\n" not in v.reason)
    assert v.signatures == sigs and v.resolved_path == "/dev/loop0"


def test_force_allows_a_filesystem_signature_and_reports_it():
    v = judge(facts(signatures=["xfs"]), force=True)
    assert v.ok and v.signatures == ["xfs"]


@pytest.mark.parametrize(
    "member",
    [
        "LVM2_member",
        "linux_raid_member",
        "crypto_LUKS",
        "zfs_member",
        "bcache",
        "ceph_bluestore",
        "isw_raid_member",
        "some_future_member",
    ],
)
def test_a_member_of_an_array_volume_group_or_encrypted_volume_is_refused_even_with_force(member):
    for force in (False, True):
        v = judge(facts(signatures=[member, "xfs"]), force=force)
        assert not v.ok and not v.needs_force and member in v.reason
        assert "--force does not override it" in v.reason and "\n" not in v.reason


# -------------------------------------------------------------- paths that are no block device


def test_non_block_paths_are_refused(tmp_path):
    f = tmp_path / "image"
    f.write_bytes(b"\0" * 4096)
    link = tmp_path / "by-id-link"
    link.symlink_to(tmp_path)
    cases = {
        str(f): "is a regular file, not a block device",
        str(tmp_path): "is a directory, not a block device",
        str(link): f"resolves to {tmp_path}) is a directory",
        "/dev/null": "is a character device, not a block device",
        str(tmp_path / "nope"): "no such file or device",
    }
    for path, needle in cases.items():
        v = device.safety_verdict(path)
        assert not v.ok and needle in v.reason, (path, v)
        with pytest.raises(DeviceRefused, match="not a block device|no such") as ei:
            device.require_safe(path, force=True)
        one_line_refusal(ei.value)
        with pytest.raises(DeviceRefused):
            device.inspect(path)


# -------------------------------------------------------------- fake sysfs: holders, partitions, scheduler


def fake_sysfs(root: Path, rdev: int, partition: bool, holder: str | None = None) -> Path:
    """/sys/dev/block/MAJ:MIN -> devices/virtual/block/disk0[/disk0p1], like the real tree."""
    disk = root / "devices" / "virtual" / "block" / "disk0"
    (disk / "queue").mkdir(parents=True)
    (disk / "queue" / "scheduler").write_text("none [mq-deadline] kyber bfq\n")
    (disk / "stat").write_text(STAT_17)
    node = disk
    if partition:
        node = disk / "disk0p1"
        node.mkdir()
        (node / "partition").write_text("1\n")
        (node / "stat").write_text(" ".join(["3"] * 11))
    (node / "holders").mkdir()
    if holder:
        (node / "holders" / holder).symlink_to(root / "devices" / "virtual" / "block" / holder)
    (root / "dev" / "block").mkdir(parents=True)
    (root / "dev" / "block" / f"{os.major(rdev)}:{os.minor(rdev)}").symlink_to(
        os.path.relpath(node, root / "dev" / "block")
    )
    return node


def a_block_node() -> str:
    for p in ("/dev/loop0", "/dev/vda", "/dev/zram0"):
        if os.path.exists(p) and stat.S_ISBLK(os.stat(p).st_mode):
            return p
    pytest.skip("no block device node to stat")


def test_holders_from_fake_sysfs(tmp_path):
    dev = a_block_node()
    node_dir = fake_sysfs(tmp_path, os.stat(dev).st_rdev, partition=False, holder="dm-0")
    assert device.holders(node_dir) == ["dm-0"]
    assert device.holders(tmp_path / "absent") == []
    node = device.sys_node(dev, Host(sys_root=str(tmp_path)))
    assert (node.name, node.parent, node.queue_dir) == ("disk0", None, node_dir / "queue")


def test_partition_resolves_to_its_disk_for_scheduler_and_not_for_stat(tmp_path):
    dev = a_block_node()
    fake_sysfs(tmp_path, os.stat(dev).st_rdev, partition=True)
    host = Host(sys_root=str(tmp_path))
    node = device.sys_node(dev, host)
    assert (node.name, node.parent) == ("disk0p1", "disk0")
    assert device.read_scheduler(dev, host) == (
        "mq-deadline",
        ["none", "mq-deadline", "kyber", "bfq"],
    )
    assert device.block_stat(dev, host) == dict(zip(device.STAT_FIELDS[:11], [3] * 11))
    sched = tmp_path / "devices/virtual/block/disk0/queue/scheduler"
    with pytest.raises(
        ConfigError,
        match="unknown scheduler 'cfq' for disk0; available: none, mq-deadline, kyber, bfq",
    ):
        device.set_scheduler(dev, "cfq", host)
    assert "[mq-deadline]" in sched.read_text()  # nothing written for an unknown name
    assert device.set_scheduler(dev, "kyber", host) == "mq-deadline"  # the previous one, to restore
    assert sched.read_text() == "kyber"


def test_missing_scheduler_is_not_supported(tmp_path):
    dev = a_block_node()
    node_dir = fake_sysfs(tmp_path, os.stat(dev).st_rdev, partition=False)
    (node_dir / "queue" / "scheduler").unlink()  # zram0 here has a queue/ but no scheduler
    with pytest.raises(device.NotSupported, match="no I/O scheduler"):
        device.read_scheduler(dev, Host(sys_root=str(tmp_path)))


def test_a_device_without_a_scheduler_runs_as_none(tmp_path):
    # zram is bio-based: queue/ but no queue/scheduler. Selecting "none" is a no-op that
    # writes nothing; any real scheduler is a one-line ConfigError.
    dev = a_block_node()
    node_dir = fake_sysfs(tmp_path, os.stat(dev).st_rdev, partition=False)
    (node_dir / "queue" / "scheduler").unlink()
    host = Host(sys_root=str(tmp_path))
    assert device.set_scheduler(dev, "none", host) == device.NO_SCHEDULER == "none"
    assert not (node_dir / "queue" / "scheduler").exists()
    with pytest.raises(ConfigError, match="disk0 has no I/O scheduler to select; only 'none'"):
        device.set_scheduler(dev, "mq-deadline", host)


def test_no_sysfs_entry_is_a_refusal(tmp_path):
    dev = a_block_node()
    v = device.safety_verdict(dev, host=Host(sys_root=str(tmp_path)))
    assert not v.ok and "no sysfs entry" in v.reason


# -------------------------------------------------------------- tools: fail closed


def test_missing_tool_refuses(tmp_path):
    with pytest.raises(DeviceRefused, match="lsblk not found: cannot check the device safely"):
        device.run_tool(["lsblk", "-J"], Host(tool_path=str(tmp_path)))


def test_tool_timeout_refuses():
    with pytest.raises(DeviceRefused, match="sleep timed out after 0.2s"):
        device.run_tool(["sleep", "5"], Host(timeout_s=0.2))


def test_needs_root(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert device.needs_root() == "probing needs root (run with sudo); --dry-run works without it"
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert device.needs_root() is None


# -------------------------------------------------------------- loopdev: mounts and detach


def loop_fixture(tmp_path, name="loop9", major_minor="7:9", attached=True):
    """A fake /sys with one block device, a device path resolving to its name, and a fake
    /proc/self/mounts holding two non-ASCII / escaped mounts of it and one of another disk."""
    sysdir = tmp_path / "sys" / "block" / name
    sysdir.mkdir(parents=True)
    (sysdir / "dev").write_text(major_minor + "\n")
    if attached:
        (sysdir / "loop").mkdir()
    dev = tmp_path / "dev" / name
    dev.parent.mkdir(exist_ok=True)
    dev.touch()
    mounts = tmp_path / "mounts"
    mounts.write_text(
        f"{dev} /mnt/café ext4 rw 0 0\n"
        f"/dev/vda / ext4 rw 0 0\n"
        f"{dev} /mnt/日本\\040x xfs rw 0 0\n"
        f"proc /proc proc rw 0 0\n",
        encoding="utf-8",
    )
    return str(dev), tmp_path / "sys", mounts


@pytest.fixture
def ran(monkeypatch):
    calls: list[list[str]] = []
    monkeypatch.setattr(loopdev.hostrun, "run", lambda argv, **kw: calls.append(list(argv)))
    return calls


def test_mountpoints_of_keeps_non_ascii_names(tmp_path):
    dev, _, mounts = loop_fixture(tmp_path)
    # unicode_escape used to turn "café" into "cafÃ©".
    assert loopdev.mountpoints_of(dev, mounts) == ["/mnt/café", "/mnt/日本 x"]
    assert loopdev.mountpoints_of(str(tmp_path / "dev" / "other"), mounts) == []
    assert loopdev.mountpoints_of(dev, tmp_path / "no-such-file") == []


def test_detach_unmounts_and_detaches_an_attached_loop(tmp_path, ran):
    dev, sys_root, mounts = loop_fixture(tmp_path)
    loopdev.detach(dev, sys_root=sys_root, mounts_path=mounts)
    assert ran == [
        ["umount", "-l", "/mnt/café"],
        ["umount", "-l", "/mnt/日本 x"],
        ["losetup", "--detach", dev],
    ]


def test_detach_of_a_detached_loop_is_a_no_op(tmp_path, ran):
    dev, sys_root, mounts = loop_fixture(tmp_path, attached=False)
    loopdev.detach(dev, sys_root=sys_root, mounts_path=mounts)
    assert ran == []


@pytest.mark.parametrize(
    "name, major_minor",
    [("vda", "253:0"), ("zram0", "252:0"), ("loop9p1", "259:0"), ("nvme0n1", None)],
)
def test_detach_refuses_what_is_not_a_loop_device(tmp_path, ran, name, major_minor):
    dev, sys_root, mounts = loop_fixture(tmp_path, name, major_minor or "x", attached=False)
    if major_minor is None:
        (sys_root / "block" / name / "dev").unlink()
    with pytest.raises(loopdev.LoopError, match=r"^refusing to detach .*: not a loop device") as ei:
        loopdev.detach(dev, sys_root=sys_root, mounts_path=mounts)
    assert "\n" not in str(ei.value)
    assert ran == []  # nothing unmounted, nothing detached


def test_detach_judges_the_symlink_target(tmp_path, ran):
    dev, sys_root, mounts = loop_fixture(tmp_path, "vda", "253:0", attached=False)
    link = tmp_path / "dev" / "loop3"  # named like a loop device, pointing at a disk
    link.symlink_to(dev)
    with pytest.raises(loopdev.LoopError):
        loopdev.detach(str(link), sys_root=sys_root, mounts_path=mounts)
    assert ran == []


# -------------------------------------------------------------- loop/zram device classes

MOUNTINFO = """22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
30 22 0:27 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,size=1G
31 22 0:28 / /mnt/with\\040space rw - xfs /dev/loop9 rw
"""


def test_mountinfo_names_the_backing_filesystem():
    assert device.parse_mountinfo_fs(MOUNTINFO, 253, 1) == ("ext4", "/dev/vda1")
    assert device.parse_mountinfo_fs(MOUNTINFO, 0, 27) == ("tmpfs", "tmpfs")
    assert device.parse_mountinfo_fs(MOUNTINFO, 0, 28) == ("xfs", "/dev/loop9")
    assert device.parse_mountinfo_fs(MOUNTINFO, 8, 0) is None


@pytest.mark.parametrize(
    "fstype,source,dio,kind,model",
    [
        ("tmpfs", "tmpfs", True, "ram-loop", "loop on tmpfs, direct I/O"),
        ("ramfs", "none", False, "ram-loop", "loop on ramfs, buffered I/O"),
        ("ext4", "/dev/vda1", True, "loop", "loop on ext4 (/dev/vda1), direct I/O"),
        (None, None, None, "loop", "loop on unknown filesystem, I/O mode unknown"),
    ],
)
def test_loop_class_is_the_backing_class(fstype, source, dio, kind, model):
    assert device.loop_class(fstype, source, dio) == (kind, model)


def test_zram_algorithm():
    assert device.parse_comp_algorithm("lzo [lzo-rle] lz4 zstd") == "lzo-rle"
    assert device.parse_comp_algorithm("zstd") == "zstd"
    assert device.parse_comp_algorithm("") == "unknown"


def test_ram_kinds_are_device_specs():
    assert device.device_from_spec("ram-loop:2G").kind == "ram-loop"
    assert device.device_from_spec("zram:1G").kind == "zram"


def test_partition_tables_are_told_from_other_signatures():
    # wipefs -O ...,USAGE (util-linux 2.38) on a GPT disk: both headers and the protective MBR
    wipefs_gpt = [
        {"type": "gpt", "usage": "partition-table"},
        {"type": "PMBR", "usage": "partition-table"},
    ]
    assert device.partition_table_names({"PTTYPE": "gpt"}, wipefs_gpt) == ["PMBR", "gpt"]
    assert device.partition_table_names(device.parse_blkid_export(BLKID_DOS), []) == ["dos"]
    # without the USAGE column the type names still say it
    assert device.partition_table_names({}, [{"type": "dos"}]) == ["dos"]
    assert (
        device.partition_table_names({"TYPE": "ext4"}, [{"type": "ext4", "usage": "filesystem"}])
        == []
    )


def test_partition_table_is_refused_whatever_the_force():
    facts = device.DeviceFacts(
        path="/dev/x",
        resolved="/dev/x",
        name="x",
        size_bytes=1 << 30,
        signatures=["PMBR", "gpt"],
        partition_tables=["PMBR", "gpt"],
    )
    for force in (False, True):
        v = device.judge(facts, force=force)
        assert not v.ok and not v.needs_force and "wipefs -a /dev/x" in v.reason


def test_loop_backing_file_matches_through_symlinks_and_deleted_nodes(tmp_path):
    node = tmp_path / "dev-x"
    node.write_text("")
    link = tmp_path / "link"
    link.symlink_to(node)
    paths = {str(node)}
    assert device._same_file(str(link), paths, set())
    assert device._same_file(f"{node} (deleted)", paths, set())
    assert not device._same_file(str(tmp_path / "other"), paths, set())


def test_loop_backing_files_from_a_fake_sysfs(tmp_path):
    for name, backing in (
        ("loop0", "/dev/sdz\n"),
        ("loop1", None),
        ("loop2", "/srv/img (deleted)\n"),
    ):
        d = tmp_path / "block" / name
        d.mkdir(parents=True)
        if backing is not None:
            (d / "loop").mkdir()
            (d / "loop" / "backing_file").write_text(backing)
    host = device.Host(sys_root=str(tmp_path))
    assert device.loop_backing_files(host) == [
        ("loop0", "/dev/sdz"),
        ("loop2", "/srv/img (deleted)"),
    ]
