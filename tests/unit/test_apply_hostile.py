"""Hostile names in everything `apply` writes. A device or mount point name is checked
against the kernel's naming before use; each value written into the Ansible task file is
data (``!unsafe``), never a template; the udev rule never quotes an unchecked kernel name;
``--out`` never writes through a symbolic link or into a directory others can write.

The Ansible case is run for real (ansible-playbook --check on localhost): the lookup a
hostile device name carries must not run on the controller.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsadvisor.catalog.artifacts import build
from fsadvisor.catalog.udev import Target, udev_rule
from fsadvisor.domain import FsConfig
from fsadvisor.errors import ConfigError
from fsadvisor.service.device_target import target_for
from fsadvisor.service import apply as apply_svc

XFS = FsConfig.make("xfs", scheduler="none")
HOSTILE_DEVICES = [
    "/dev/{{ lookup('pipe','touch /tmp/PWNED') }}",
    '/dev/*",MODE="0666',
    '/dev/nvme0n1\nRUN+="/bin/sh"',
    "/dev/nvme0n1 ; reboot",
    "/dev/$(reboot)",
    "/dev/../etc/passwd",
    "/dev/./nvme0n1",
    "/dev/nvme0n1'",
]
HOSTILE_MOUNTPOINTS = [
    "/srv/data\n",
    "/srv/da ta",
    "/srv/{{ x }}",
    "/srv/../etc",
    "srv/data",
    "/srv/data;reboot",
    '/srv/dat"a',
]


@pytest.mark.parametrize("device", HOSTILE_DEVICES)
def test_a_hostile_device_name_is_refused_in_one_line(device):
    with pytest.raises(ConfigError) as e:
        apply_svc.apply(config='{"filesystem": "xfs"}', device=device, mountpoint="/srv/data")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("mountpoint", HOSTILE_MOUNTPOINTS)
def test_a_hostile_mount_point_is_refused_in_one_line(mountpoint):
    with pytest.raises(ConfigError) as e:
        apply_svc.check_mountpoint(mountpoint)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "device",
    [
        "/dev/nvme0n1",
        "/dev/disk/by-id/nvme-Samsung_SSD_990_PRO_2TB_S6Z1NJ0W",
        "/dev/mapper/vg0-data",
        "/dev/md127",
        "/dev/dm-0",
    ],
)
def test_ordinary_device_names_pass_the_check(device):
    assert target_for(device).path == device


@pytest.mark.parametrize("name", ['*",MODE="0666', "sd*", 'nvme0n1"', "a b", "", "x\nRUN"])
def test_the_udev_rule_never_quotes_an_unchecked_kernel_name(name):
    with pytest.raises(ConfigError):
        udev_rule(Target(f"/dev/{name}", name), "none")


def test_the_udev_rule_of_an_ordinary_loop_device_names_it():
    rule = udev_rule(Target("/dev/loop7", "loop7"), "mq-deadline")
    assert 'KERNEL=="loop7"' in rule and 'ATTR{queue/scheduler}="mq-deadline"' in rule


def _ansible_check(tmp_path: Path, tasks: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "ansible-playbook"
    if not exe.exists():
        pytest.skip("ansible-core not installed")
    (tmp_path / "tasks.yml").write_text(tasks)
    (tmp_path / "play.yml").write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n  vars:\n"
        f"    fsadvisor_udev_rules_dir: {tmp_path}/udev\n    fsadvisor_fstab: {tmp_path}/fstab\n"
        f"    fsadvisor_systemd_dir: {tmp_path}/systemd\n    fsadvisor_mount: false\n"
        f"    ansible_python_interpreter: {sys.executable}\n"
        "  tasks:\n    - ansible.builtin.import_tasks: tasks.yml\n"
    )
    env = dict(
        os.environ,
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "at"),
        ANSIBLE_HOME=str(tmp_path / "ah"),
        ANSIBLE_NOCOLOR="1",
    )
    return subprocess.run(
        [str(exe), "-i", "localhost,", "--check", "play.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_a_template_in_a_device_name_is_data_to_ansible_even_past_the_checks(tmp_path):
    """build() given a Target the service would have refused: the task file still carries
    the name as data, so ansible-playbook --check never runs the lookup it contains."""
    marker = tmp_path / "PWNED"
    hostile = f"/dev/{{{{ lookup('pipe','touch {marker}') }}}}"
    a = build(XFS, Target(hostile, "nvme0n1", id_wwn="eui.1"), "/srv/data", with_mount_unit=True)
    p = _ansible_check(tmp_path, a.files["fsadvisor-apply-tasks.yml"])
    # the play ran its tasks (a syntax error would stop it before any template is read)
    assert "PLAY [localhost]" in p.stdout and "TASK [" in p.stdout, p.stdout + p.stderr
    assert not marker.exists(), p.stdout[-3000:]


def test_a_unit_name_with_an_escaped_dash_keeps_its_backslash(tmp_path):
    """systemd names /srv/my-data's unit srv-my\\x2ddata.mount: the copy task's dest keeps
    the backslash (YAML double quotes would read \\x2d as "-")."""
    import yaml

    class AnsibleLoader(yaml.SafeLoader):
        """YAML as Ansible reads it: ``!unsafe`` marks a string as data."""

    AnsibleLoader.add_constructor("!unsafe", lambda ld, node: ld.construct_scalar(node))
    a = build(XFS, Target("/dev/nvme0n1", "nvme0n1"), "/srv/my-data", with_mount_unit=True)
    assert "srv-my\\x2ddata.mount" in a.files
    tasks = yaml.load(a.files["fsadvisor-apply-tasks.yml"], Loader=AnsibleLoader)  # noqa: S506
    copy = next(t for t in tasks if t["name"] == "Install the mount unit")["ansible.builtin.copy"]
    assert copy["dest"].endswith("/srv-my\\x2ddata.mount")
    svc = next(t for t in tasks if "ansible.builtin.systemd_service" in t)
    assert svc["ansible.builtin.systemd_service"]["name"] == "srv-my\\x2ddata.mount"


def test_out_never_writes_through_a_symbolic_link(tmp_path):
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    precious = tmp_path / "precious"
    precious.write_text("keep me")
    os.chmod(precious, 0o600)
    (out / "fstab").symlink_to(precious)
    (out / "mkfs.sh").symlink_to(precious)
    a = build(XFS, Target("/dev/nvme0n1", "nvme0n1"), "/srv/data")
    written = apply_svc.write(a, out)
    assert precious.read_text() == "keep me" and (precious.stat().st_mode & 0o777) == 0o600
    assert not (out / "fstab").is_symlink() and (out / "fstab").read_text() == a.files["fstab"]
    assert (out / "mkfs.sh").stat().st_mode & 0o777 == 0o755
    assert str(out / "fsadvisor-apply.json") in written
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary left


def test_out_refuses_a_symlinked_or_shared_directory(tmp_path):
    a = build(XFS, Target("/dev/nvme0n1", "nvme0n1"), "/srv/data")
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(ConfigError, match="symbolic link"):
        apply_svc.write(a, tmp_path / "link")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(ConfigError, match="writable by others"):
        apply_svc.write(a, shared)
    assert list(real.iterdir()) == [] and list(shared.iterdir()) == []
