"""fsadvisor/tomlcache.py: a TOML file read through its cached JSON copy is exactly what
tomllib gives for it (types included), a changed, replaced or freshly written file is parsed
again, and a copy that is damaged, foreign or cannot be written never changes an answer."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor import tomlcache
from fsadvisor.resources import data_dir, presets_dir

ROOT = Path(__file__).resolve().parents[2]


def same(a, b) -> bool:
    """Equal and of the same types all the way down (1 is not 1.0; NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "fsadvisor" / "toml"


def _settled(path: Path) -> None:
    """Stamp ``path`` as changed a minute ago (mtime; ctime is the kernel's and stays now)."""
    old = os.stat(path).st_mtime - 60
    os.utime(path, (old, old))


def _copies(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.json")) if cache.is_dir() else []


SHIPPED = sorted([*data_dir("models").glob("*.toml"), *presets_dir().glob("*.toml")])


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_toml_reads_back_exactly(path, cache, monkeypatch):
    monkeypatch.setattr(tomlcache, "SETTLED_S", 0.0)  # a fresh checkout's files are new
    with open(path, "rb") as f:
        want = tomllib.load(f)
    first = tomlcache.load_toml(path)  # parsed, and the copy written
    assert _copies(cache), "no copy was kept"
    again = tomlcache.load_toml(path)  # from the copy
    assert same(first, want) and same(again, want)


def test_the_copy_is_what_a_second_read_returns(tmp_path, cache, monkeypatch):
    # Proof that the second read comes from the copy: the parser is not called again.
    monkeypatch.setattr(tomlcache, "SETTLED_S", 0.0)
    f = tmp_path / "a.toml"
    f.write_text('x = 1\ny = [1.5, "s", {z = true}]\n')
    calls = []

    def parse(raw: bytes) -> dict:
        calls.append(raw)
        return tomlcache.parse_toml(raw)

    assert tomlcache.load(f, parse) == {"x": 1, "y": [1.5, "s", {"z": True}]}
    assert tomlcache.load(f, parse) == {"x": 1, "y": [1.5, "s", {"z": True}]}
    assert len(calls) == 1


def test_a_changed_file_is_parsed_again(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(tomlcache, "SETTLED_S", 0.0)
    f = tmp_path / "a.toml"
    f.write_text("x = 1\n")
    assert tomlcache.load_toml(f) == {"x": 1}
    f.write_text("x = 2\n")  # same size; its ctime (and here mtime) moved
    _settled(f)
    assert tomlcache.load_toml(f) == {"x": 2}


def test_a_file_replaced_by_another_is_parsed_again(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(tomlcache, "SETTLED_S", 0.0)
    f, g = tmp_path / "a.toml", tmp_path / "b.toml"
    f.write_text("x = 1\n")
    assert tomlcache.load_toml(f) == {"x": 1}
    g.write_text("x = 3\n")
    st0 = os.stat(f)
    os.utime(g, ns=(st0.st_atime_ns, st0.st_mtime_ns))  # even with the old file's mtime
    os.replace(g, f)  # another inode
    assert tomlcache.load_toml(f) == {"x": 3}


def test_a_freshly_written_file_is_not_copied(tmp_path, cache):
    # Racy-clean rule: a file changed within SETTLED_S could change again within the same
    # clock tick with the same size; its parse is not kept.
    f = tmp_path / "a.toml"
    f.write_text("x = 1\n")
    assert tomlcache.load_toml(f) == {"x": 1}
    assert _copies(cache) == []
    f.write_text("x = 2\n")
    assert tomlcache.load_toml(f) == {"x": 2}


def test_a_damaged_or_foreign_copy_is_a_miss(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(tomlcache, "SETTLED_S", 0.0)
    f = tmp_path / "a.toml"
    f.write_text("x = 1\n")
    tomlcache.load_toml(f)
    (copy,) = _copies(cache)
    key = json.loads(copy.read_text())["key"]  # a copy with the right key but no data
    for junk in (b"", b"{", b"[1, 2]", b'{"magic": "fsadvisor-toml-1", "key": [1], "data": {"x": 9}}',
                 b'{"magic": "other", "data": {"x": 9}}', b"\xff\xfe", b"[" * 100_000,
                 b'{"magic": "fsadvisor-toml-1", "key": %s}' % json.dumps(key).encode()):
        copy.write_bytes(junk)
        assert tomlcache.load_toml(f) == {"x": 1}, junk


def test_an_unwritable_cache_directory_costs_only_a_parse(tmp_path, monkeypatch):
    monkeypatch.setattr(tomlcache, "SETTLED_S", 0.0)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # mkdir under a file fails
    f = tmp_path / "a.toml"
    f.write_text("x = 1\n")
    assert tomlcache.load_toml(f) == {"x": 1}
    assert tomlcache.load_toml(f) == {"x": 1}


def test_dates_are_never_copied(tmp_path, cache, monkeypatch):
    # JSON has no dates: a document holding one is parsed every time, never turned into text.
    monkeypatch.setattr(tomlcache, "SETTLED_S", 0.0)
    f = tmp_path / "a.toml"
    f.write_text("when = 2026-11-25\nat = 2026-11-25T01:02:03Z\n")
    for _ in range(2):
        doc = tomlcache.load_toml(f)
        assert doc["when"] == dt.date(2026, 11, 25)
        assert isinstance(doc["at"], dt.datetime)
    assert _copies(cache) == []


def test_a_missing_file_is_the_callers_oserror(tmp_path, cache):
    with pytest.raises(FileNotFoundError):
        tomlcache.load_toml(tmp_path / "none.toml")


def test_profile_errors_are_unchanged_through_the_cache(tmp_path, cache, monkeypatch):
    # The profile parser's own errors still come from the file, cached or not.
    from fsadvisor.errors import ProfileError
    from fsadvisor.profiles import load_profile
    monkeypatch.setattr(tomlcache, "SETTLED_S", 0.0)
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"name = \xff\n")
    with pytest.raises(ProfileError, match="not UTF-8 text"):
        load_profile(str(bad))
    broken = tmp_path / "broken.toml"
    broken.write_text("name = [\n")
    with pytest.raises(ProfileError, match="malformed TOML"):
        load_profile(str(broken))
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(str(tmp_path / "missing.toml"))
    assert _copies(cache) == []  # nothing is kept of a file that did not parse


TOML_SCALARS = (st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1)
                | st.floats(allow_nan=True, allow_infinity=True) | st.booleans()
                | st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
TOML_VALUES = st.recursive(
    TOML_SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8),
                      inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8, alphabet=st.characters(blacklist_categories=("Cs",))),
                       TOML_VALUES, max_size=5))
def test_json_gives_back_every_value_tomllib_makes(doc):
    # What a copy holds is json.dumps of a parse; every value tomllib makes other than a
    # date or time (ints of any sign and size TOML allows, floats with NaN and infinities,
    # strings with any character, nested tables and arrays) must come back type for type.
    import json
    assert tomlcache.json_exact(doc)
    assert same(json.loads(json.dumps(doc)), doc)


@given(st.one_of(st.dates(), st.datetimes(), st.times()))
def test_a_date_anywhere_is_not_json_exact(value):
    assert not tomlcache.json_exact({"a": [1, {"b": value}]})
