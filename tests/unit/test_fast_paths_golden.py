"""Issue 13: the fast paths give the same numbers as the code before them.

The golden files were written by this test (FSADVISOR_REGEN_GOLDEN=1) from the code *before*
the speed-ups (ranking's _order, predict_batch's per-batch loading, predict_many): the JSON of
`recommend --json` for three profiles and of `predict --batch` over fixed lines (good lines
and each kind of bad line). A model or data change that moves the numbers on purpose
regenerates them; an optimisation must not.
"""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fsadvisor.cli as cli

cli._register()
runner = CliRunner()
GOLDEN = Path(__file__).parent / "golden"
PROFILES = ("oltp", "analytics-scan", "build-unpack")
REGEN = os.environ.get("FSADVISOR_REGEN_GOLDEN") == "1"


@pytest.fixture(autouse=True)
def _store(tmp_db, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    from fsadvisor.service import advice
    advice._cache.clear()


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if REGEN:
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed"


@pytest.mark.parametrize("profile", PROFILES)
def test_recommend_json_is_unchanged(profile):
    r = runner.invoke(cli.app, ["recommend", "--profile", profile, "--json"])
    assert r.exit_code == 0, r.output
    # re-serialised with sorted keys so the comparison is of values, not of key order
    _check(f"recommend_{profile}.json", json.dumps(json.loads(r.output), indent=1,
                                                   sort_keys=True) + "\n")


def test_predict_batch_json_is_unchanged():
    lines = (GOLDEN / "batch_fixed.jsonl").read_text()
    r = runner.invoke(cli.app, ["predict", "--batch"], input=lines)
    assert r.exit_code == 0, r.output
    outs = [json.loads(x) for x in r.output.splitlines() if x.strip()]
    assert len(outs) == len([x for x in lines.splitlines() if x.strip()])
    _check("batch_fixed.out.jsonl", "".join(json.dumps(o, sort_keys=True) + "\n" for o in outs))
