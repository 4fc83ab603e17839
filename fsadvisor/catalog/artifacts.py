"""What `fsadvisor apply` hands a configuration-management user: files to drop in.

Pure text builders (no I/O): the mkfs command, the fstab line, a udev rule that sets the
I/O scheduler on the target device alone, an optional systemd ``.mount`` unit, and an Ansible
task file doing the same with ansible-core's builtin modules only (ansible.posix's ``mount``
is not in ansible-core, so the fstab line is kept with ``lineinfile`` and mounted with
``mount``).

The udev rule, and the device as it names it (``Target``), are catalog/udev.py's.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

from fsadvisor.catalog.commands import fstab_line, mkfs_argv, mount_options_string
from fsadvisor.catalog.rules import canonical

# The udev rule and the device it names are catalog/udev.py's (recommend prints the rule
# without loading this builder).
from fsadvisor.catalog.udev import UDEV_RULE_PATH, UUID_PLACEHOLDER, Target, udev_rule
from fsadvisor.domain import FsConfig
from fsadvisor.infra import scripttext
from fsadvisor.infra.scripttext import COLUMNS, comment


@dataclass
class Artifacts:
    config: FsConfig
    target: Target
    mountpoint: str
    files: dict[str, str] = field(default_factory=dict)  # file name -> content
    mkfs_argv: list[str] = field(default_factory=list)
    fstab_line: str = ""

    def to_dict(self) -> dict:
        return {
            "config": self.config.to_dict(),
            "device": self.target.path,
            "kernel_name": self.target.kernel_name,
            "uuid": self.target.uuid or None,
            "mountpoint": self.mountpoint,
            "mkfs_command": self.mkfs_argv,
            "mkfs_command_line": shlex.join(self.mkfs_argv),
            "fstab": self.fstab_line,
            "files": dict(self.files),
        }


def systemd_escape_path(path: str) -> str:
    """``systemd-escape --path``: the unit name of a mount point (systemd.unit(5))."""
    p = "/".join(x for x in path.split("/") if x)
    if not p:
        return "-"
    out = []
    for i, ch in enumerate(p):
        if ch == "/":
            out.append("-")
        elif ch.isascii() and (ch.isalnum() or ch in ":_" or (ch == "." and i > 0)):
            out.append(ch)
        else:
            out += [f"\\x{b:02x}" for b in ch.encode()]
    return "".join(out)


def mount_unit(config: FsConfig, target: Target, mountpoint: str) -> tuple[str, str]:
    """(unit file name, text) of a systemd mount unit for the formatted device."""
    cfg = canonical(config)
    what = (
        f"/dev/disk/by-uuid/{target.uuid}"
        if target.uuid
        else f"/dev/disk/by-uuid/{UUID_PLACEHOLDER}"
    )
    name = systemd_escape_path(mountpoint) + ".mount"
    return name, "".join(
        line + "\n"
        for line in [
            "# written by fsadvisor apply; the unit name must match Where=",
            "[Unit]",
            *_whole(f"Description=fsadvisor: {cfg.label()} on {mountpoint}"),
            "",
            "[Mount]",
            *_whole(f"What={what}"),
            *_whole(f"Where={mountpoint}"),
            f"Type={cfg.fs}",
            f"Options={mount_options_string(cfg)}",
            "",
            "[Install]",
            "WantedBy=multi-user.target",
        ]
    )


def _whole(setting: str) -> list[str]:
    """A unit file's setting that holds a path, one line however long: systemd joins a line
    ended by a backslash to the next with a blank in place of the break, which would split
    the path. A longer line says so in a comment above it."""
    # the unit file's own width: COLUMNS here is how the playbook's YAML folds its text
    if len(setting) <= scripttext.COLUMNS:
        return [setting]
    key = setting.split("=")[0]
    return [f"# {key}= holds the path whole: a continued line would put a blank in it", setting]


def _yaml(value) -> str:
    # JSON is YAML: every scalar and list here is emitted as JSON, so no value is ever
    # reinterpreted by YAML (a "no" or a "0755" stays a string).
    return json.dumps(value)


def _data(value) -> str:
    """A value that is data, never a template: each string tagged ``!unsafe``, so Ansible
    does not evaluate a ``{{ ... }}`` a device or path name might carry (on the controller,
    even under --check). JSON inside: YAML reads it back unchanged."""
    if isinstance(value, list):
        return "[" + ", ".join(_data(v) for v in value) + "]"
    return f"!unsafe {json.dumps(value)}"


# A JSON string's tokens: an escape (\n, \", \u00e9) or one plain character.
_TOKEN = re.compile(r"\\u[0-9a-fA-F]{4}|\\.|[^\\]")


def _entry(key: str, value: str, indent: str = "    ") -> list[str]:
    """``key: value`` (``value`` as _yaml or _data wrote it) within 80 columns, read back by
    YAML as the same value: a list of more goes one item a line (a block sequence); a
    double-quoted string goes on over lines (_scalar), a file's text a line of YAML per line
    of it, each folded where it is longer (the file on the host keeps its lines whole: a
    udev rule stays one line there)."""
    line = f"{indent}{key}: {value}"
    if len(line) <= COLUMNS:
        return [line]
    if value.startswith("["):
        items = re.findall(r'(?:!unsafe )?"(?:[^"\\]|\\.)*"', value)
        return [f"{indent}{key}:"] + [
            line for item in items for line in _scalar(f"{indent}  - ", item, indent + "    ")
        ]
    return _scalar(f"{indent}{key}: ", value, indent + "  ")


def _scalar(prefix: str, value: str, hang: str) -> list[str]:
    """One double-quoted (maybe tagged) string after ``prefix``, continued on lines indented
    by ``hang``: after each of its ``\n`` with an escaped line break (a file's text), else
    after a ``/`` where the line is full (a path); a piece longer than a line folds
    (_folded)."""
    if len(prefix + value) <= COLUMNS:
        return [prefix + value]
    tag, _, quoted = value.partition(" ") if value.startswith("!") else ("", "", value)
    tokens = _TOKEN.findall(quoted[1:-1])
    lines = "\\n" in tokens
    room = COLUMNS - len(hang) - 3  # a line's backslash or quote, and an escaped blank
    pieces = [""]
    for t in tokens:
        if not lines and len(pieces[-1]) + len(t) > room:
            pieces.append("")
        pieces[-1] += t
        if t == ("\\n" if lines else "/"):
            pieces.append("")
    out = [f'{prefix}{tag + " " if tag else ""}"' + ("\\" if lines else "")]
    for piece in (p for p in pieces if p):
        # +2: room for the backslash that breaks the line, or for the closing quote
        if lines or len(out[-1]) + len(piece) + 2 > COLUMNS:
            if not lines:
                out[-1] += "\\"
            out += _folded(piece, hang)
            out[-1] += "\\" if lines else ""
        else:
            out[-1] += piece
    if lines:  # the last piece's line ends the string, without a break
        out[-1] = out[-1][:-1]
    out[-1] += '"'
    return out


# Where a fold may break a piece: a blank after a non-blank with something after it. A run
# of blanks leaves its others to the next word (escaped there: a fold keeps only one).
_FOLD_AT = re.compile(r"(?<=[^ ]) (?=.)")


def _folded(piece: str, hang: str) -> list[str]:
    """A piece of a double-quoted string (as JSON escaped it) that opens a line, within 80
    columns, read back by YAML the same: broken at a blank with a plain line break (YAML
    reads it as that one blank); a blank left in a word (one that opens the piece, the
    others of a run) is escaped (``\\ ``), since YAML drops the blanks that open or close a
    line; a word longer than a line is broken between its characters with an escaped line
    break (YAML joins the two with nothing). Each line keeps a column for the backslash
    that may close it."""
    out: list[str] = []
    for word in _FOLD_AT.split(piece):
        word = word.replace(" ", "\\ ")
        if out and len(out[-1]) + 1 + len(word) + 1 <= COLUMNS:
            out[-1] += " " + word
            continue
        out.append(hang)
        for t in _TOKEN.findall(word):
            if len(out[-1]) + len(t) + 1 > COLUMNS and out[-1] != hang:
                out[-1] += "\\"
                out.append(hang)
            out[-1] += t
    return out


# A destination directory the playbook may override (a test points it elsewhere), then the
# file name as data: JSON-quoted, so a systemd unit name's "\x2d" stays a backslash.
TEMPLATE_DIR = "{{{{ {var} | default('{default}') }}}}/"


def ansible_tasks(
    config: FsConfig,
    target: Target,
    mountpoint: str,
    udev_text: str,
    unit: tuple[str, str] | None = None,
) -> str:
    """An Ansible task file (ansible-core builtins only) that formats the device only when it
    holds no filesystem signature, installs the udev rule, and mounts by UUID through fstab
    (or the mount unit). Paths are variables so a test can point them elsewhere:
    ``fsadvisor_fstab``, ``fsadvisor_udev_rules_dir``, ``fsadvisor_systemd_dir``,
    ``fsadvisor_mount`` (false: write the configuration, mount nothing)."""
    cfg = canonical(config)
    dev = target.path
    mkfs = mkfs_argv(cfg, dev)
    fstab_rest = fstab_line(cfg, "UUID=X", mountpoint).split(" ", 1)[1]
    rule_name = UDEV_RULE_PATH.rsplit("/", 1)[1]
    fstab_regexp = r"^\S+\s+" + re.escape(mountpoint) + r"\s"
    t = [
        *comment(
            "written by fsadvisor apply: include_tasks/import_tasks this file on the host "
            f"that has {dev}. It formats {dev} only when blkid finds no signature on it."
        ),
        "- name: Look for an existing signature on the device",
        "  ansible.builtin.command:",
        *_entry("argv", _data(["blkid", "-p", "-o", "export", dev])),
        "  register: fsadvisor_blkid",
        "  changed_when: false",
        # blkid -p: 0 found, 2 nothing found; anything else is an error to stop on
        "  failed_when: fsadvisor_blkid.rc not in [0, 2]",
        f"- name: Format the device ({cfg.fs})",
        "  ansible.builtin.command:",
        *_entry("argv", _data(mkfs)),
        "  when: fsadvisor_blkid.rc == 2",
        "- name: Read the filesystem UUID",
        "  ansible.builtin.command:",
        *_entry("argv", _data(["blkid", "-p", "-o", "value", "-s", "UUID", dev])),
        "  register: fsadvisor_uuid",
        "  changed_when: false",
        "- name: Check the device holds the expected filesystem",
        "  ansible.builtin.command:",
        *_entry("argv", _data(["blkid", "-p", "-o", "value", "-s", "TYPE", dev])),
        "  register: fsadvisor_type",
        "  changed_when: false",
        f"  failed_when: fsadvisor_type.stdout != {_yaml(cfg.fs)}",
        "- name: Install the I/O scheduler udev rule",
        "  ansible.builtin.copy:",
        *_entry(
            "dest",
            _yaml(
                TEMPLATE_DIR.format(var="fsadvisor_udev_rules_dir", default="/etc/udev/rules.d")
                + rule_name
            ),
        ),
        *_entry("content", _data(udev_text)),
        '    mode: "0644"',
        "  register: fsadvisor_udev",
        "- name: Apply the udev rule now",
        "  ansible.builtin.command:",
        *_entry(
            "argv",
            _data(
                ["udevadm", "trigger", "--action=change", "--sysname-match=" + target.kernel_name]
            ),
        ),
        "  when: fsadvisor_udev.changed and (fsadvisor_mount | default(true) | bool)",
        "- name: Create the mount point",
        "  ansible.builtin.file:",
        *_entry("path", _data(mountpoint)),
        "    state: directory",
        '    mode: "0755"',
        "  when: fsadvisor_mount | default(true) | bool",
    ]
    if unit is None:
        t += [
            "- name: Mount by UUID in fstab",
            "  ansible.builtin.lineinfile:",
            "    path: \"{{ fsadvisor_fstab | default('/etc/fstab') }}\"",
            *_entry("regexp", _data(fstab_regexp)),
            *_entry("line", _yaml("UUID={{ fsadvisor_uuid.stdout }} " + fstab_rest)),
            "    create: true",
            '    mode: "0644"',
            "- name: Is it mounted already",
            "  ansible.builtin.command:",
            *_entry("argv", _data(["findmnt", "--mountpoint", mountpoint])),
            "  register: fsadvisor_findmnt",
            "  changed_when: false",
            "  failed_when: false",
            "  when: fsadvisor_mount | default(true) | bool",
            "- name: Mount it",
            "  ansible.builtin.command:",
            *_entry("argv", _data(["mount", mountpoint])),
            "  when: (fsadvisor_mount | default(true) | bool) and fsadvisor_findmnt.rc != 0",
        ]
    else:
        name, _ = unit
        unit_for_uuid = mount_unit(
            cfg, Target(dev, target.kernel_name, uuid="UUIDVAR"), mountpoint
        )[1].replace("UUIDVAR", "{{ fsadvisor_uuid.stdout }}")
        t += [
            "- name: Install the mount unit",
            "  ansible.builtin.copy:",
            *_entry(
                "dest",
                _yaml(
                    TEMPLATE_DIR.format(var="fsadvisor_systemd_dir", default="/etc/systemd/system")
                    + name
                ),
            ),
            *_entry("content", _yaml(unit_for_uuid)),
            '    mode: "0644"',
            "- name: Start and enable the mount",
            "  ansible.builtin.systemd_service:",
            *_entry("name", _data(name)),
            "    state: started",
            "    enabled: true",
            "    daemon_reload: true",
            "  when: fsadvisor_mount | default(true) | bool",
        ]
    return "\n".join(t) + "\n"


def build(
    config: FsConfig, target: Target, mountpoint: str = "/srv/data", with_mount_unit: bool = False
) -> Artifacts:
    """Every artifact for ``config`` on ``target``, by file name."""
    cfg = canonical(config)
    a = Artifacts(config=cfg, target=target, mountpoint=mountpoint)
    a.mkfs_argv = mkfs_argv(cfg, target.path)
    a.fstab_line = fstab_line(cfg, target.fstab_spec, mountpoint)
    rule = udev_rule(target, cfg.scheduler)
    a.files["mkfs.sh"] = "".join(
        line + "\n"
        for line in [
            "#!/bin/sh",
            *comment(f"written by fsadvisor apply: DESTROYS the data on {target.path}"),
            "set -e",
            shlex.join(a.mkfs_argv),
        ]
    )
    a.files["fstab"] = a.fstab_line + "\n"
    a.files[UDEV_RULE_PATH.rsplit("/", 1)[1]] = rule
    unit = mount_unit(cfg, target, mountpoint) if with_mount_unit else None
    if unit is not None:
        a.files[unit[0]] = unit[1]
    a.files["fsadvisor-apply-tasks.yml"] = ansible_tasks(cfg, target, mountpoint, rule, unit)
    return a
