"""The fast paths give the same answers as the code before them.

The golden files were written by this test (FSADVISOR_REGEN_GOLDEN=1): the JSON of
`recommend --json` for three profiles and of `predict --batch` over fixed lines (good lines
and each kind of bad line). A model or data change that moves the numbers on purpose
regenerates them (and says so in its commit); an optimisation must not.

"The same answers" is judged by structure, order and stated tolerances (tests/unit/_golden.py):
key sets, the order of the recommendations, strings with their numbers taken out and integers
exactly; floats to 1e-9 relative (another BLAS kernel or numpy sums in another order); Monte
Carlo figures (P(best)) within their sampling error; numbers in sentences within their last
printed digit.
"""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from _golden import mc_tolerance, same

cli.register_all()
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
    # The goldens were recorded on a kernel without f2fs; their f2fs warnings say so on any
    # host (the kernel check itself is tested in test_catalog/test_cli_advice).
    import fsadvisor.catalog as catalog

    monkeypatch.setattr(catalog, "kernel_supports", lambda fs: fs != "f2fs")


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if REGEN:
        path.write_text(text)
    golden = path.read_text()
    if name.endswith(".jsonl"):
        same(
            [json.loads(x) for x in text.splitlines()],
            [json.loads(x) for x in golden.splitlines()],
            name,
        )
    else:
        same(json.loads(text), json.loads(golden), name)


def test_same_tells_a_real_change_from_rounding():
    same({"a": [1.0, "x"]}, {"a": [1.0 + 1e-15, "x"]})
    for changed in (
        {"a": [1.0001, "x"]},
        {"a": [1.0, "y"]},
        {"b": [1.0, "x"]},
        {"a": [1.0]},
        {"a": [1.0, "x 2"]},
    ):
        with pytest.raises(AssertionError):
            same(changed, {"a": [1.0, "x"]})
    # numbers in sentences: within the last printed digit, a count exactly
    same("score 1.24 ops/J", "score 1.25 ops/J")
    for changed in ("score 1.27 ops/J", "score 1.2 ops/J", "tied with 186"):
        with pytest.raises(AssertionError):
            same(changed, "score 1.25 ops/J" if "score" in changed else "tied with 185")


def test_monte_carlo_figures_are_judged_by_their_sampling_error():
    tol = mc_tolerance(0.04)  # 4 se of a difference of two 4000-draw estimates, ~0.018
    assert 0.015 < tol < 0.02
    same({"p_best": 0.036}, {"p_best": 0.0437})  # the two BLAS kernels' figures before
    with pytest.raises(AssertionError):
        same({"p_best": 0.08}, {"p_best": 0.0437})
    with pytest.raises(AssertionError):  # a model float is not a sampled one
        same({"score": 0.036}, {"score": 0.0437})
    same(
        "best with probability 0.06; strict P(best): a 0.04",
        "best with probability 0.07; strict P(best): a 0.05",
    )
    with pytest.raises(AssertionError):
        same("best with probability 0.16", "best with probability 0.07")


@pytest.mark.parametrize("profile", PROFILES)
def test_recommend_json_is_unchanged(profile):
    r = runner.invoke(cli.app, ["recommend", "--profile", profile, "--json"])
    assert r.exit_code == 0, r.output
    # re-serialised with sorted keys so the comparison is of values, not of key order
    _check(
        f"recommend_{profile}.json",
        json.dumps(json.loads(r.output), indent=1, sort_keys=True) + "\n",
    )


def test_predict_batch_json_is_unchanged():
    lines = (GOLDEN / "batch_fixed.jsonl").read_text()
    r = runner.invoke(cli.app, ["predict", "--batch"], input=lines)
    assert r.exit_code == 0, r.output
    outs = [json.loads(x) for x in r.output.splitlines() if x.strip()]
    assert len(outs) == len([x for x in lines.splitlines() if x.strip()])
    _check("batch_fixed.out.jsonl", "".join(json.dumps(o, sort_keys=True) + "\n" for o in outs))
