"""`fsadvisor apply`'s artifacts (catalog.artifacts) and service (service.apply), without
touching a device: the device-formatting path is in tests/device/test_apply_execute.py."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path
from unittest.mock import patch

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fsadvisor.catalog import artifacts
from fsadvisor.catalog.artifacts import build, systemd_escape_path
from fsadvisor.catalog.udev import Target, kernel_pattern, udev_rule
from fsadvisor.cli.app import register_all, app
from fsadvisor.domain import FsConfig
from fsadvisor.service.apply import apply, check_mountpoint

register_all()
XFS = FsConfig.make("xfs", mount=("noatime",), scheduler="none", ag_count=8)


def _rule_line(text: str) -> str:
    (line,) = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    return line


def test_udev_rule_matches_the_drive_by_wwn_then_serial_then_kernel_name():
    wwn = _rule_line(
        udev_rule(
            Target(
                "/dev/nvme0n1",
                "nvme0n1",
                id_wwn="eui.0025385b71b0ab12",
                id_serial="Samsung_SSD_S5P2",
            ),
            "none",
        )
    )
    assert 'KERNEL=="nvme[0-9]*n[0-9]*"' in wwn and 'ENV{ID_WWN}=="eui.0025385b71b0ab12"' in wwn
    assert "ID_SERIAL" not in wwn
    ser = _rule_line(udev_rule(Target("/dev/sdb", "sdb", id_serial="ST4000_Z1"), "mq-deadline"))
    assert 'KERNEL=="sd[a-z]*"' in ser and 'ENV{ID_SERIAL}=="ST4000_Z1"' in ser
    assert ser.endswith('ATTR{queue/scheduler}="mq-deadline"')
    loop = _rule_line(udev_rule(Target("/dev/loop3", "loop3"), "none"))
    assert 'KERNEL=="loop3"' in loop and "ENV{ID_" not in loop
    for line in (wwn, ser, loop):
        # partitions share the disk's ID_* and have no scheduler
        assert 'ENV{DEVTYPE}=="disk"' in line and line.startswith('ACTION=="add|change"')


@pytest.mark.parametrize("bad", ['x" , RUN+="/bin/sh', "ab*", "a b", "", "q[1]"])
def test_udev_values_that_could_break_the_rule_fall_back_to_the_kernel_name(bad):
    line = _rule_line(udev_rule(Target("/dev/sdc", "sdc", id_wwn=bad, id_serial=bad), "none"))
    assert 'KERNEL=="sdc"' in line and "RUN" not in line and line.count('"') % 2 == 0


@pytest.mark.parametrize(
    "name, pattern",
    [
        ("nvme0n1", "nvme[0-9]*n[0-9]*"),
        ("nvme12n3", "nvme[0-9]*n[0-9]*"),
        ("sda", "sd[a-z]*"),
        ("sdab", "sd[a-z]*"),
        ("vdb", "vd[a-z]*"),
        ("mmcblk0", "mmcblk[0-9]*"),
        ("loop7", "loop[0-9]*"),
        ("dm-0", "dm-0"),
    ],
)
def test_kernel_pattern_per_kind(name, pattern):
    assert kernel_pattern(name) == pattern


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abcXYZ019._@+-", min_size=1, max_size=8), min_size=1, max_size=4))
def test_unit_name_is_systemd_escape_path(parts):
    path = "/" + "/".join(parts)
    if not shutil.which("systemd-escape") or any(p in (".", "..") for p in parts):
        return
    want = subprocess.run(
        ["systemd-escape", "--path", path], capture_output=True, text=True
    ).stdout.strip()
    assert systemd_escape_path(path) == want


class AnsibleLoader(yaml.SafeLoader):
    """YAML as Ansible reads it: ``!unsafe`` marks a string as data (never templated)."""


AnsibleLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def load_tasks(text: str):
    return yaml.load(text, Loader=AnsibleLoader)  # noqa: S506 - a SafeLoader subclass


def test_build_dry_run_placeholders_and_ansible_yaml():
    a = build(
        XFS, Target("/dev/nvme0n1", "nvme0n1", id_wwn="eui.1"), "/srv/data", with_mount_unit=True
    )
    assert a.fstab_line == "UUID=<uuid> /srv/data xfs noatime 0 0"
    assert a.mkfs_argv == [
        "mkfs.xfs",
        "-f",
        "-b",
        "size=4096",
        "-i",
        "size=512",
        "-d",
        "agcount=8",
        "/dev/nvme0n1",
    ]
    assert set(a.files) == {
        "mkfs.sh",
        "fstab",
        "60-fsadvisor-scheduler.rules",
        "srv-data.mount",
        "fsadvisor-apply-tasks.yml",
    }
    unit = a.files["srv-data.mount"]
    assert "What=/dev/disk/by-uuid/<uuid>" in unit and "Where=/srv/data" in unit
    assert "Options=noatime" in unit and "Type=xfs" in unit
    tasks = load_tasks(a.files["fsadvisor-apply-tasks.yml"])
    names = [t["name"] for t in tasks]
    assert names[0] == "Look for an existing signature on the device"
    fmt = next(t for t in tasks if t["name"].startswith("Format"))
    assert fmt["ansible.builtin.command"]["argv"] == a.mkfs_argv
    assert fmt["when"] == "fsadvisor_blkid.rc == 2"  # never over an existing signature
    rule = next(t for t in tasks if "udev rule" in t["name"] and "ansible.builtin.copy" in t)
    assert rule["ansible.builtin.copy"]["content"] == a.files["60-fsadvisor-scheduler.rules"]
    assert any("ansible.builtin.systemd_service" in t for t in tasks)


def test_real_uuid_once_known():
    a = build(XFS, Target("/dev/sdb", "sdb", uuid="0b5c9f5e-1111-2222-3333-444455556666"))
    assert a.fstab_line.startswith("UUID=0b5c9f5e-1111-2222-3333-444455556666 /srv/data xfs")
    fstab_task = load_tasks(a.files["fsadvisor-apply-tasks.yml"])
    line = next(t for t in fstab_task if "lineinfile" in str(t))["ansible.builtin.lineinfile"]
    assert line["line"] == "UUID={{ fsadvisor_uuid.stdout }} /srv/data xfs noatime 0 0"


def test_ansible_syntax_check_of_the_tasks(tmp_path):
    exe = Path(__import__("sys").executable).parent / "ansible-playbook"
    if not exe.exists():
        pytest.skip("ansible-core not installed")
    a = build(XFS, Target("/dev/nvme0n1", "nvme0n1"), "/srv/data")
    (tmp_path / "tasks.yml").write_text(a.files["fsadvisor-apply-tasks.yml"])
    (tmp_path / "play.yml").write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.import_tasks: tasks.yml\n"
    )
    p = subprocess.run(
        [str(exe), "--syntax-check", "-i", "localhost,", str(tmp_path / "play.yml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr


def test_service_dry_run_writes_files(tmp_path):
    out = apply(
        config='{"filesystem": "ext4"}',
        device="/dev/nvme7n7",
        out=tmp_path / "o",
        mountpoint="/srv/db",
    )
    assert out["executed"] is False and out["uuid"] is None
    written = {Path(p).name for p in out["written"]}
    assert {
        "mkfs.sh",
        "fstab",
        "60-fsadvisor-scheduler.rules",
        "fsadvisor-apply-tasks.yml",
        "fsadvisor-apply.json",
    } == written
    assert (tmp_path / "o" / "fstab").read_text() == "UUID=<uuid> /srv/db ext4 defaults 0 2\n"
    meta = json.loads((tmp_path / "o" / "fsadvisor-apply.json").read_text())
    assert meta["mkfs_command"][0] == "mkfs.ext4" and meta["kernel_name"] == "nvme7n7"


@pytest.mark.parametrize(
    "args, says",
    [
        (["-d", "/dev/nvme7n7"], "give --config JSON, or --rank N with --profile NAME"),
        (["-d", "/dev/nvme7n7", "--rank", "1"], "--rank needs --profile"),
        (
            ["-d", "/dev/nvme7n7", "-c", '{"filesystem": "xfs"}', "--rank", "1"],
            "give --config JSON",
        ),
        (["-d", "/dev/nvme7n7", "-c", '{"filesystem": "zfs"}'], "zfs"),
        (["-d", "/dev/nvme7n7", "-c", "{bad"], "not valid JSON"),
        (["-d", "nvme:1T", "-c", '{"filesystem": "xfs"}'], "block device path under /dev"),
        (
            ["-d", "/dev/nvme7n7", "-c", '{"filesystem": "xfs"}', "--mountpoint", "/srv/my data"],
            "--mountpoint must be",
        ),
        (["-d", "/dev/nvme7n7", "--rank", "0", "-p", "oltp"], "--rank must be between 1 and 1,000"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(args, says):
    r = CliRunner().invoke(app, ["apply", *args])
    assert r.exit_code == 2 and says in r.output and r.output.count("\n") == 1, r.output


def test_cli_rank_of_the_recommendation(tmp_path, monkeypatch):
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "s.db"))
    r = CliRunner().invoke(app, ["recommend", "-p", "oltp", "--json", "--top", "2"])
    second = json.loads(r.output)["recommendations"][1]
    r = CliRunner().invoke(
        app, ["apply", "-d", "/dev/nvme7n7", "--rank", "2", "-p", "oltp", "--json"]
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["config"] == second["config"] and out["config_from"].startswith("rank 2")
    assert out["mkfs_command"][:-1] == second["mkfs_command"][:-1]


@pytest.mark.parametrize("mp", ["/srv/data", "/a", "/srv/db-1/x_y", "/mnt/a.b"])
def test_good_mountpoints(mp):
    assert check_mountpoint(mp) == mp


@pytest.mark.parametrize("mp", ["srv", "/srv/../etc", "/srv/{{x}}", "/a b", "/a\nb", "", "/./a"])
def test_bad_mountpoints(mp):
    with pytest.raises(Exception, match="--mountpoint"):
        check_mountpoint(mp)


def test_whole_disk_of_a_partition_from_sysfs(tmp_path):
    from fsadvisor.host.device import Host, whole_disk

    disk = tmp_path / "devices" / "pci0" / "block" / "sdb"
    (disk / "sdb1").mkdir(parents=True)
    (disk / "sdb1" / "partition").write_text("1\n")
    cls = tmp_path / "class" / "block"
    cls.mkdir(parents=True)
    (cls / "sdb").symlink_to(disk)
    (cls / "sdb1").symlink_to(disk / "sdb1")
    host = Host(sys_root=str(tmp_path))
    assert whole_disk("/dev/sdb1", host) == "sdb"
    assert whole_disk("/dev/sdb", host) == "sdb"
    rule = udev_rule(Target("/dev/sdb1", "sdb", id_serial="S1"), "none")
    assert "its disk sdb" in rule and 'ENV{ID_SERIAL}=="S1"' in rule


# The lines of apply's files that are commands or rules a person or a program reads whole:
# the mkfs command, the fstab line, the udev rule (apply --dry-run prints the files).
WHOLE = ("mkfs.", "UUID=", "ACTION==")


def _may_be_long(name: str, line: str, a) -> bool:
    """The one line of each file that may be longer than 80 columns, and why: a command runs
    as shown only whole; fstab and udev read one line as one entry (the udev rule's file is
    what the host gets: one line); systemd joins a line continued with a backslash to the
    next with a blank, which would split a path (Description= holds the mount point too).
    The playbook has none: YAML folds any value and reads it back the same."""
    if name == "mkfs.sh":
        return line == shlex.join(a.mkfs_argv)
    if name == "fstab":
        return line == a.fstab_line
    if name.endswith(".rules"):
        return line == _rule_line(a.files[name])
    if name.endswith(".mount"):
        return line.startswith(("Description=", "Where="))
    return False


@settings(max_examples=40, deadline=None)
@given(
    mountpoint=st.sampled_from(
        [
            "/srv/data",
            "/srv/a very long mount point/with blanks and {{ braces }}/x" + "y" * 40,
            "/mnt/" + "/".join(["d" * 60] * 3),
            "/srv/two  blanks/ opens a name/" + "z" * 90 + "/ends in a blank ",
        ]
    ),
    target=st.sampled_from(
        [
            Target("/dev/nvme0n1", "nvme0n1"),
            Target(
                "/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_2TB_S6B0NL0T123456X",
                "nvme0n1",
                id_wwn="eui.0025385b11b12345",
            ),
            Target("/dev/sdb", "sdb", id_serial="WD-WX12345678"),
        ]
    ),
    unit=st.booleans(),
)
def test_apply_files_fold_comments_and_yaml_to_80_columns_and_read_back_the_same(
    mountpoint, target, unit
):
    """Every line of apply's files within 80 columns but the ones _may_be_long names (a
    unit file's long path with a comment above it saying why); the playbook reads back (as
    Ansible's YAML) to the same argv, files and paths as the files beside it, and to the
    very document it is unfolded (every value, regexp, Jinja line, argv, unit name and the
    udev rule as one line)."""
    a = build(XFS, target, mountpoint, with_mount_unit=unit)
    for name, text in a.files.items():
        lines = text.splitlines()
        long = [i for i, ln in enumerate(lines) if len(ln) > 80]
        assert [lines[i] for i in long if not _may_be_long(name, lines[i], a)] == [], name
        for i in long:
            if name.endswith(".mount"):
                key = lines[i].split("=")[0]
                assert (
                    lines[i - 1] == f"# {key}= holds the path whole: a continued line "
                    "would put a blank in it"
                )
    assert [
        ln
        for ln in a.files["60-fsadvisor-scheduler.rules"].splitlines()
        if ln.startswith("ACTION==")
    ] == [_rule_line(a.files["60-fsadvisor-scheduler.rules"])]
    tasks = load_tasks(a.files["fsadvisor-apply-tasks.yml"])
    with patch.object(artifacts, "COLUMNS", 1 << 20):  # no line to fold
        wide = build(XFS, target, mountpoint, with_mount_unit=unit).files
    assert load_tasks(wide["fsadvisor-apply-tasks.yml"]) == tasks
    fmt = next(t for t in tasks if t["name"].startswith("Format"))
    assert fmt["ansible.builtin.command"]["argv"] == a.mkfs_argv
    copies = [t["ansible.builtin.copy"] for t in tasks if "ansible.builtin.copy" in t]
    rule = next(c for c in copies if c["dest"].endswith("/60-fsadvisor-scheduler.rules"))
    assert rule["content"] == a.files["60-fsadvisor-scheduler.rules"]
    assert (
        rule["dest"] == "{{ fsadvisor_udev_rules_dir | default('/etc/udev/rules.d') }}/"
        "60-fsadvisor-scheduler.rules"
    )
    mounted = next(t for t in tasks if t["name"] == "Create the mount point")
    assert mounted["ansible.builtin.file"]["path"] == mountpoint
    if unit:
        name = systemd_escape_path(mountpoint) + ".mount"
        c = next(c for c in copies if c["dest"].endswith("/" + name))
        assert c["content"] == a.files[name].replace(
            "/dev/disk/by-uuid/<uuid>", "/dev/disk/by-uuid/{{ fsadvisor_uuid.stdout }}"
        )


def test_apply_dry_run_prints_its_files_within_80_columns_but_commands(tmp_db):
    """apply --dry-run at 80 columns: a longer line is a command, the fstab line or the
    udev rule, whole."""
    register_all()
    r = CliRunner().invoke(
        app,
        [
            "apply",
            "--rank",
            "1",
            "-p",
            "oltp",
            "--device",
            "/dev/nvme0n1",
            "--mount-unit",
            "--dry-run",
        ],
        env={"COLUMNS": "80"},
    )
    assert r.exit_code == 0, r.output
    long = [ln for ln in r.output.splitlines() if len(ln) > 80]
    assert [ln for ln in long if not ln.strip().startswith(WHOLE)] == []
