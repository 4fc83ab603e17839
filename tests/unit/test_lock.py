"""The locks in requirements/ are the program the quick start installs: every pin lies in
pyproject.toml's supported ranges, every dependency pyproject names is pinned, every pin has
its hashes, and the program the tests run is the program users run (the packages both locks
hold are pinned to the same versions)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCKS = {"main": ROOT / "requirements" / "main.txt", "test": ROOT / "requirements" / "test.txt"}
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")


def pins(path: Path) -> dict[str, tuple[Version, int]]:
    """name -> (version, number of hashes) of a pip-compile lock with --generate-hashes."""
    out: dict[str, tuple[Version, int]] = {}
    name = None
    for line in path.read_text().splitlines():
        m = _PIN.match(line)
        if m:
            name = canonicalize_name(m.group(1))
            assert name not in out, f"{path.name}: {name} pinned twice"
            out[name] = (Version(m.group(2)), 0)
        elif name and line.strip().startswith("--hash=sha256:"):
            v, n = out[name]
            out[name] = (v, n + 1)
        elif line and not line.startswith((" ", "#")):
            pytest.fail(f"{path.name}: a line that is neither a pin nor a comment: {line!r}")
    return out


def declared(extra: str | None) -> list[Requirement]:
    reqs = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    if extra:
        reqs += [Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"][extra]]
    reqs += [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]
    return reqs


@pytest.mark.parametrize("lock, extra", [("main", None), ("test", "test")])
def test_every_declared_dependency_is_pinned_within_its_range(lock, extra):
    pinned = pins(LOCKS[lock])
    for req in declared(extra):
        name = canonicalize_name(req.name)
        assert name in pinned, f"{req} is not in requirements/{lock}.txt"
        version = pinned[name][0]
        assert req.specifier.contains(version, prereleases=True), (
            f"requirements/{lock}.txt pins {name}=={version}, outside pyproject's {req}"
        )


@pytest.mark.parametrize("lock", LOCKS)
def test_every_pin_is_exact_and_hashed(lock):
    pinned = pins(LOCKS[lock])
    assert len(pinned) > 10
    unhashed = [n for n, (_, hashes) in pinned.items() if hashes == 0]
    assert not unhashed, f"pins without --hash in requirements/{lock}.txt: {unhashed}"


def test_tests_run_the_versions_users_install():
    main, test = pins(LOCKS["main"]), pins(LOCKS["test"])
    differ = {
        n: (main[n][0], test[n][0]) for n in main.keys() & test.keys() if main[n][0] != test[n][0]
    }
    assert not differ
    assert main.keys() <= test.keys(), main.keys() - test.keys()


def test_every_runtime_dependency_has_an_upper_bound():
    # A supported range, not just a floor: a new major release is a different program until
    # the tests have run on it (.ci/newest reports on the newest allowed).
    for req in declared(None)[: len(PYPROJECT["project"]["dependencies"])]:
        assert any(s.operator in ("<", "<=", "~=", "==") for s in req.specifier), str(req)


def test_the_parser_reads_a_lock_as_pip_compile_writes_it(tmp_path):
    lock = tmp_path / "x.txt"
    lock.write_text(
        "#\n# header\n#\nfoo-bar==1.2.3 \\\n    --hash=sha256:aa \\\n"
        "    --hash=sha256:bb\n    # via baz\nqux==2.0 \\\n    --hash=sha256:cc\n"
    )
    assert pins(lock) == {"foo-bar": (Version("1.2.3"), 2), "qux": (Version("2.0"), 1)}
    lock.write_text("foo>=1\n")
    with pytest.raises(pytest.fail.Exception):
        pins(lock)
