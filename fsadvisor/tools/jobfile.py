"""Reading fio job files (runner/*.fio): their sections and keys, as fio reads them.

fio's job-file syntax is INI: ``[global]`` defaults, one section per job, ``key=value`` or a
bare ``key`` (a flag), ``#``/``;`` comments. Keys are case-sensitive and ``${VAR}`` is left
as written (fio expands it from the environment when it runs the file).
"""

from __future__ import annotations

import configparser

from fsadvisor.errors import ConfigError


def sections(text: str, origin: str) -> tuple[dict[str, str], list[tuple[str, dict[str, str]]]]:
    """([global] keys, [(job name, its own keys)]) in file order."""
    parser = configparser.ConfigParser(
        interpolation=None,
        delimiters=("=",),
        comment_prefixes=("#", ";"),
        strict=True,
        allow_no_value=True,
        default_section="\0none",
    )
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # fio keys are case-sensitive
    try:
        parser.read_string(text, source=origin)
    except configparser.Error as e:
        raise ConfigError(f"{origin}: not a fio job file: {' '.join(str(e).split())}") from None
    glob = dict(parser["global"]) if parser.has_section("global") else {}
    jobs = [(s, dict(parser[s])) for s in parser.sections() if s != "global"]
    return glob, jobs
