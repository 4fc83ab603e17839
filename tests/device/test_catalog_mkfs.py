"""The catalog against the machine: every mkfs value it can generate is accepted by the real
mkfs (and lands on disk), every generated mount option set mounts, and where the catalog refuses
something because the kernel does, the kernel really does ("the machine wins").

One 2 GiB loop device over a sparse file serves the whole module (every case reformats it);
the 4Kn case adds a second, short-lived one. Nothing else is touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time

import pytest

from fsadvisor import catalog

from fsadvisor.host import loopdev
from fsadvisor.domain import FsConfig
from fsadvisor.errors import ConfigError

pytestmark = pytest.mark.device

GIB = 1 << 30
LOOP_BYTES = 2 * GIB  # the size the XFS log rule was first observed on
LOOP_SECTOR = 512  # losetup's default logical sector size


def _run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def _attach(backing: str, sector_size: int | None = None) -> str:
    """A loop device for ``backing``; retries while other jobs hold every loop device."""
    argv = ["losetup", "--find", "--show", "--direct-io=on"]
    if sector_size:
        argv += ["--sector-size", str(sector_size)]
    last = ""
    for _ in range(10):
        p = _run(argv + [backing])
        if p.returncode == 0:
            return p.stdout.strip()
        last = p.stderr.strip()
        time.sleep(2)
    pytest.skip(f"no free loop device: {last}")


@contextlib.contextmanager
def _scratch(directory, size_bytes: int, sector_size: int | None = None):
    if os.geteuid() != 0 or not shutil.which("losetup"):
        pytest.skip("needs root and losetup")
    img = os.path.join(directory, f"catalog-{size_bytes}-{sector_size or 512}.img")
    loopdev.create_backing_file(img, size_bytes)
    dev = None
    try:
        dev = _attach(img, sector_size)
        yield dev
    finally:
        if dev:
            loopdev.detach(dev)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(img)


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    with _scratch(tmp_path_factory.mktemp("catalog"), LOOP_BYTES) as dev:
        yield dev


@contextlib.contextmanager
def mounted(config: FsConfig, dev: str, directory):
    """Mount with the catalog's argv; yields the mount options the kernel reports."""
    mnt = os.path.join(directory, "mnt")
    os.makedirs(mnt, exist_ok=True)
    p = _run(catalog.mount_argv(config, dev, mnt))
    if p.returncode != 0:
        raise AssertionError(
            f"mount {catalog.mount_options_string(config)}: {p.stderr.strip()} {_dmesg_tail()}"
        )
    try:
        yield _run(["findmnt", "-n", "-o", "OPTIONS", mnt]).stdout.strip().split(",")
    finally:
        _run(["umount", mnt])


def _dmesg_tail() -> str:
    return _run(["dmesg"]).stdout.strip().splitlines()[-1:][0] if shutil.which("dmesg") else ""


def _mkfs(config: FsConfig, dev: str) -> subprocess.CompletedProcess:
    return _run(catalog.mkfs_argv(config, dev))


def _must_mkfs(config: FsConfig, dev: str) -> None:
    p = _mkfs(config, dev)
    assert p.returncode == 0, f"{catalog.mkfs_argv(config, dev)}: {p.stderr.strip()}"


def _on_disk(fs: str, dev: str) -> dict[str, object]:
    """The geometry the filesystem really got, read back with each filesystem's own tool."""
    if fs == "ext4":
        out = _run(["dumpe2fs", "-h", dev]).stdout
        field = lambda name: re.search(rf"^{name}:\s+(.*)$", out, re.M).group(1).strip()  # noqa: E731
        return {
            "block_size": int(field("Block size")),
            "inode_size": int(field("Inode size")),
            "journal": "has_journal" in field("Filesystem features").split(),
        }
    if fs == "xfs":
        out = _run(
            ["xfs_db", "-r", "-c", "sb 0", "-c", "p agcount blocksize inodesize", dev]
        ).stdout
        v = dict(re.findall(r"^(\w+) = (\d+)$", out, re.M))
        return {
            "ag_count": int(v["agcount"]),
            "block_size": int(v["blocksize"]),
            "inode_size": int(v["inodesize"]),
        }
    if fs == "btrfs":
        out = _run(["btrfs", "inspect-internal", "dump-super", dev]).stdout
        return {
            "nodesize": int(re.search(r"^nodesize\s+(\d+)", out, re.M).group(1)),
            "checksum": re.search(r"^csum_type\s+\d+ \((\w+)\)", out, re.M).group(1),
        }
    p = _run(["dump.f2fs", dev])
    m = re.search(r"superblock features = \w+ :[ \t]*(.*)$", p.stdout + p.stderr, re.M)
    return {"features": set(m.group(1).split()) if m else set()}


# ----------------------------------------------------------------------------- mkfs values


def _mkfs_cases():
    """Every value the catalog accepts for every mkfs option (a superset of what candidates()
    generates), each in the smallest valid configuration, plus each distinct f2fs feature set
    the candidates use."""
    cases = []
    for fs, options in catalog.MKFS_OPTIONS.items():
        for name, spec in options.items():
            if spec.kind == "features":
                values = [
                    f if f in ("extra_attr", "sb_checksum") else f"extra_attr,{f}"
                    for f in spec.choices
                ]
                values += sorted(
                    {
                        c.mkfs_dict.get(name, "")
                        for c in catalog.candidates(
                            LOOP_BYTES, filesystems=[fs], schedulers=["none"]
                        )
                    }
                )
                values = list(dict.fromkeys(values))
            else:
                values = list(spec.choices)
            cases += [pytest.param(fs, name, v, id=f"{fs}-{name}-{v or 'none'}") for v in values]
    return cases


@pytest.mark.parametrize("fs,name,value", _mkfs_cases())
def test_mkfs_accepts_every_catalog_value(loop, fs, name, value):
    config = catalog.canonical(FsConfig.make(fs, {name: value}))
    _must_mkfs(config, loop)
    got = _on_disk(fs, loop)
    if fs == "f2fs":
        assert got["features"] == set(filter(None, value.split(",")))
    elif fs == "btrfs" and name == "checksum":
        assert got["checksum"].startswith(value)  # dump-super says xxhash64, blake2b
    else:
        assert got[name] == value


def test_generated_mkfs_values_are_all_covered():
    """The parametrisation above must include every value candidates() can put in a config."""
    covered = {(fs, n, v) for fs, n, v in (p.values for p in _mkfs_cases())}
    for c in catalog.candidates(10**12) + catalog.candidates(LOOP_BYTES):
        for name, value in c.mkfs:
            assert (c.fs, name, value) in covered


def test_every_generated_ag_count_for_this_size(loop):
    ags = sorted({c.ag_count for c in catalog.candidates(LOOP_BYTES) if c.ag_count is not None})
    assert ags, "candidates() generated no AG counts for 2 GiB"
    for ag in ags:
        _must_mkfs(FsConfig.make("xfs", ag_count=ag), loop)
        assert _on_disk("xfs", loop)["ag_count"] == ag
    _must_mkfs(FsConfig.make("xfs"), loop)
    assert _on_disk("xfs", loop)["ag_count"] == catalog.default_ag_count(LOOP_BYTES)


# ----------------------------------------------------------------------------- XFS AG bounds


def test_xfs_agcount_bounds_on_2gib(loop):
    lo, hi = catalog.ag_count_range(LOOP_BYTES, 4096, LOOP_SECTOR)
    assert (lo, hi) == catalog.ag_count_range(LOOP_BYTES) == (2, 31)
    for ag in (lo, hi):
        catalog.validate(FsConfig.make("xfs", ag_count=ag), LOOP_BYTES, LOOP_SECTOR)
        _must_mkfs(FsConfig.make("xfs", ag_count=ag), loop)
        assert _on_disk("xfs", loop)["ag_count"] == ag
    # one past the rule: the catalog refuses and so does mkfs.xfs, for the reason the rule names
    for ag, reason in (
        (hi + 1, "Log size must be at least 64MB"),
        (lo - 1, "at least 2 superblocks"),
    ):
        with pytest.raises(ConfigError):
            catalog.validate(FsConfig.make("xfs", ag_count=ag), LOOP_BYTES, LOOP_SECTOR)
        p = _run(["mkfs.xfs", "-f", "-d", f"agcount={ag}", loop])
        assert p.returncode != 0 and reason in p.stdout + p.stderr


def test_xfs_agcount_bound_on_4kn_sectors(tmp_path):
    # 32 * 16395 blocks: with 512-byte sectors 32 AGs fit, with 4 KiB sectors the AG header
    # grows by 3 blocks and only 31 do (fsadvisor/catalog/geometry.py).
    size = 32 * 16395 * 4096
    assert catalog.ag_count_range(size, 4096, 512)[1] == 32
    lo, hi = catalog.ag_count_range(size, 4096, 4096)
    assert hi == 31 and catalog.ag_count_range(size) == (lo, hi)
    with _scratch(tmp_path, size, sector_size=4096) as dev:
        assert (
            open(f"/sys/block/{os.path.basename(dev)}/queue/logical_block_size").read().strip()
            == "4096"
        )
        _must_mkfs(FsConfig.make("xfs", ag_count=hi), dev)
        p = _run(["mkfs.xfs", "-f", "-d", f"agcount={hi + 1}", dev])
        assert p.returncode != 0 and "Log size must be at least 64MB" in p.stdout + p.stderr
        # and 1-2 KiB blocks do not fit 4 KiB sectors, for either filesystem
        for fs in ("ext4", "xfs"):
            small = FsConfig.make(fs, {"block_size": 2048})
            with pytest.raises(ConfigError):
                catalog.validate(small, size, sector_size=4096)
            assert _mkfs(small, dev).returncode != 0
        assert not [
            c
            for c in catalog.candidates(size, sector_size=4096)
            if c.mkfs_dict.get("block_size", 4096) < 4096
        ]


# ----------------------------------------------------------------------------- mount options

# The mkfs settings that change what mount accepts (the first is the default); every other mkfs
# value is mount-neutral.
MOUNT_CONTEXTS = {"ext4": ({"journal": True}, {"journal": False}), "xfs": ({},), "btrfs": ({},)}


def _mount_sets(fs: str, context: dict) -> list[tuple[str, ...]]:
    """Distinct generated mount option sets of the configs built with ``context``; for the
    default context also every spec example (the boundary values of each range)."""

    def value(c, k):
        return c.mkfs_dict.get(k, catalog.MKFS_OPTIONS[fs][k].default)

    sets = [
        c.mount
        for c in catalog.candidates(LOOP_BYTES, filesystems=[fs], schedulers=["none"])
        if all(value(c, k) == v for k, v in context.items())
    ]
    if context == MOUNT_CONTEXTS[fs][0]:
        sets += [
            tuple(ex.split(","))
            for spec in catalog.MOUNT_OPTIONS[fs].values()
            if not spec.removed
            for ex in spec.examples
        ]
    return list(dict.fromkeys(sets))


@pytest.mark.parametrize(
    "fs,context",
    [(fs, ctx) for fs, ctxs in MOUNT_CONTEXTS.items() for ctx in ctxs],
    ids=lambda v: (
        v if isinstance(v, str) else (",".join(f"{k}={x}" for k, x in v.items()) or "default")
    ),
)
def test_every_generated_mount_option_set_mounts(loop, tmp_path, fs, context):
    sets = _mount_sets(fs, context)
    assert len(sets) >= 4
    _must_mkfs(FsConfig.make(fs, context), loop)
    failures = []
    for mount in sets:
        config = catalog.canonical(FsConfig.make(fs, context, mount))
        catalog.validate(config, LOOP_BYTES)
        try:
            with mounted(config, loop, tmp_path) as active:
                # the kernel lists what it applied: a value it silently dropped would be a lie
                for opt in mount:
                    if opt.startswith(("data=", "commit=", "logbufs=", "logbsize=", "compress=")):
                        assert opt in active, f"{opt} not in {active}"
        except AssertionError as e:
            failures.append(f"{','.join(mount)}: {e}")
    assert not failures, "\n".join(failures)


def test_f2fs_mkfs_works_and_mount_matches_kernel_support(loop, tmp_path):
    config = catalog.default_config("f2fs", LOOP_BYTES)
    _must_mkfs(config, loop)
    supported = catalog.kernel_supports("f2fs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    p = _run(catalog.mount_argv(config, loop, str(mnt)))
    try:
        # the catalog's answer is the machine's: this kernel has no f2fs, so the mount fails
        assert (p.returncode == 0) == supported, p.stderr
    finally:
        if p.returncode == 0:
            _run(["umount", str(mnt)])


# ----------------------------------------------------------------------------- the machine wins


def _kernel_refuses(config: FsConfig, dev: str, tmp_path) -> str:
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    argv = ["mount", "-t", config.fs, "-o", ",".join(config.mount), dev, str(mnt)]
    p = _run(argv)
    if p.returncode == 0:
        _run(["umount", str(mnt)])
        raise AssertionError(f"the kernel accepted {argv}")
    return _dmesg_tail()


@pytest.mark.parametrize("opt", ["nobarrier", "barrier"])
def test_xfs_barrier_options_are_gone_from_this_kernel(loop, tmp_path, opt):
    config = FsConfig.make("xfs", mount=[opt])
    with pytest.raises(ConfigError, match="removed in Linux 4.19"):
        catalog.validate(config)
    _must_mkfs(FsConfig.make("xfs"), loop)
    _kernel_refuses(config, loop, tmp_path)


@pytest.mark.parametrize(
    "fs,mkfs,mount",
    [
        ("ext4", {}, ["journal_async_commit"]),  # ordered is the default mode
        ("ext4", {}, ["data=ordered", "journal_async_commit"]),
        ("ext4", {"journal": False}, ["data=writeback"]),
        ("ext4", {"journal": False}, ["commit=60"]),
        ("xfs", {}, ["logbufs=9"]),
        ("xfs", {}, ["logbufs=1"]),
        ("xfs", {}, ["logbsize=512k"]),
        ("xfs", {}, ["allocsize=2g"]),
        ("btrfs", {}, ["space_cache=v1"]),
    ],
    ids=lambda v: ",".join(v) if isinstance(v, list) else None,
)
def test_catalog_refuses_what_the_kernel_refuses(loop, tmp_path, fs, mkfs, mount):
    with pytest.raises(ConfigError):
        catalog.validate(FsConfig.make(fs, mkfs, mount))
    base = catalog.canonical(FsConfig.make(fs, mkfs))
    _must_mkfs(base, loop)
    _kernel_refuses(FsConfig(fs, base.mkfs, tuple(mount)), loop, tmp_path)


def test_journal_async_commit_mounts_outside_ordered_mode(loop, tmp_path):
    # positive control for the refusal above: the option itself is fine
    _must_mkfs(FsConfig.make("ext4"), loop)
    config = FsConfig.make("ext4", mount=["data=writeback", "journal_async_commit"])
    with mounted(config, loop, tmp_path) as active:
        assert "journal_async_commit" in active


def test_btrfs_compress_silently_undoes_nodatacow(loop, tmp_path):
    """Why the catalog refuses nodatacow with compress=: the kernel mounts it, with datacow."""
    with pytest.raises(ConfigError):
        catalog.validate(FsConfig.make("btrfs", mount=["nodatacow", "compress=zstd:3"]))
    _must_mkfs(FsConfig.make("btrfs"), loop)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    p = _run(["mount", "-t", "btrfs", "-o", "nodatacow,compress=zstd:3", loop, str(mnt)])
    assert p.returncode == 0, p.stderr
    try:
        active = _run(["findmnt", "-n", "-o", "OPTIONS", str(mnt)]).stdout.strip().split(",")
        assert "compress=zstd:3" in active and "nodatacow" not in active
    finally:
        _run(["umount", str(mnt)])


def test_schedulers_are_the_kernels(loop):
    listed = open(f"/sys/block/{os.path.basename(loop)}/queue/scheduler").read()
    names = set(listed.replace("[", "").replace("]", "").split())
    assert {c.scheduler for c in catalog.candidates(LOOP_BYTES)} <= names


def _presets_printed_choices() -> list[FsConfig]:
    """Every distinct configuration `recommend` prints a mkfs command for (its five ranked
    entries and the best of each filesystem) over every preset, on the default NVMe and on a
    data-centre NVMe with PLP, each with its sector size left to the default (4096 assumed)."""
    from fsadvisor.profiles import list_presets
    from fsadvisor.service import advice

    printed: dict[tuple, FsConfig] = {}
    for p in list_presets():
        name = p if isinstance(p, str) else p.name
        for device, plp in ((None, None), ("samsung-pm9a3-3.84tb-u2", "yes")):
            rec = advice.recommend(name, device=device, plp=plp, top=5)
            for r in rec.ranked + list(rec.best_per_filesystem.values()):
                # the scheduler and mount options do not change the mkfs command
                printed.setdefault((r.config.fs, r.config.mkfs, r.config.ag_count), r.config)
    return list(printed.values())


def test_every_printed_mkfs_command_formats_a_4kn_and_a_512e_device(tmp_path, tmp_db):
    """Every distinct mkfs command recommend prints for every preset runs on a loop device
    with 4096-byte logical sectors (4Kn) and on one with 512-byte sectors (512e), and the
    filesystem it leaves is the one named. 16 GiB sparse backing files: a sub-4K block would
    fail on the 4Kn device ("block size ... cannot be smaller than sector size")."""
    configs = _presets_printed_choices()
    assert configs
    size = 16 * GIB
    for sector in (4096, 512):
        with _scratch(tmp_path, size, sector_size=sector) as dev:
            for cfg in configs:
                argv = catalog.mkfs_argv(cfg, dev)
                p = _run(argv, timeout=300)
                if cfg.fs == "f2fs" and p.returncode != 0 and not shutil.which("mkfs.f2fs"):
                    pytest.skip("mkfs.f2fs missing")
                assert p.returncode == 0, (sector, cfg.label(), argv, p.stderr[-500:])
                probe = _run(["blkid", "-p", "-o", "value", "-s", "TYPE", dev])
                assert probe.stdout.strip() == cfg.fs, (sector, cfg.label(), probe.stdout)


def test_a_device_path_keeps_its_own_sector_size(tmp_path, tmp_db):
    """recommend on a 4Kn loop device holds the candidates to its 4096-byte sectors (no
    smaller block anywhere in the list) and says so; --sector-size cannot contradict sysfs."""
    from fsadvisor.errors import ConfigError
    from fsadvisor.service import advice

    with _scratch(tmp_path, 2 * GIB, sector_size=4096) as dev:
        rec = advice.recommend("filebench-fileserver-004", device=dev, top=20)
        assert rec.device.logical_block_size == 4096
        assert "logical sector size 4096 B (the device's own)" in rec.notes
        for r in rec.ranked + list(rec.best_per_filesystem.values()):
            assert dict(r.config.mkfs).get("block_size", 4096) >= 4096, r.config.label()
        with pytest.raises(ConfigError, match="reports 4096-byte logical sectors"):
            advice.recommend("filebench-fileserver-004", device=dev, sector_size=512)
