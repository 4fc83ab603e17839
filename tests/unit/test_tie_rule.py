"""One tie rule in the whole answer (rank._order's tie set), and the README's description of
the headline, the ties and the ``--json`` keys matches what recommend prints.

Over every preset, on the default NVMe and on a data-centre NVMe with PLP:
- the ``1=`` entries are the first ones listed, as many as the tie set has (up to ``--top``);
- ``lead.tied_with`` counts that set; #1 is "clearly ahead" exactly when it is alone in it,
  and the confidence calls the leaders tied on the same set;
- #1 is the simplest of its tie set (fewest non-default settings) unless the rule put it
  first for what was measured ("measured here": on this device with this workload;
  "measured": data behind its filesystem);
- P of #1 is printed once, is the first leader's, and the leaders' figures are probabilities
  that together cover at least 1 (P within 1% of the best overlap);
- no two listed entries are twins (the same prediction) of one filesystem."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from fsadvisor.domain import Device
from fsadvisor.predict.rank import complexity
from fsadvisor.profiles import list_presets
from fsadvisor.service import advice, answer

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
TOP = 6


def _presets():
    return [p if isinstance(p, str) else p.name for p in list_presets()]


def _readme_keys(name: str) -> set[str]:
    """The keys the README lists for a JSON object: "`name` (`a`, `b`, ...)"."""
    m = re.search(rf"`{name}` \(((?:[^()]|\([^()]*\))*)\)", README)
    assert m, f"README lists no keys for `{name}`"
    body = re.sub(r"\[[^\]]*\]", "", m.group(1))  # a list's item keys are checked apart
    while "{" in body:  # ... and so are a nested object's
        body = re.sub(r"\{[^{}]*\}", "", body)
    body = body.split(";")[0]
    return set(re.findall(r"`([a-z_]+)`", body))


@pytest.mark.parametrize("device", [None, "samsung-pm9a3-3.84tb-u2"])
def test_one_tie_set_behind_every_tie_the_answer_states(device, tmp_db):
    kwargs = {"plp": "yes"} if device else {}
    for name in _presets():
        rec = advice.recommend(name, device, top=TOP, **kwargs)
        lead, conf, ranked = rec.lead, rec.confidence, rec.ranked
        first = ranked[0]
        n_tie = lead["tied_with"] + 1
        labels = [r.label for r in ranked]
        # the tie set is listed first, and only it carries #1's label
        shown = min(n_tie, len(ranked))
        if n_tie > 1:
            assert labels[:shown] == ["1="] * shown, (name, labels)
        else:
            assert labels[0] == "1", (name, labels)
        assert "1=" not in labels[shown:], (name, labels)
        assert lead["clearly_ahead"] == (n_tie == 1 and len(ranked) > 1), name
        assert conf.tied == (n_tie > 1), name
        # #1 is the simplest of its tie set unless measured data put it first
        if first.order_rule not in ("measured", "measured here"):
            dev = rec.device
            assert all(
                complexity(first.config, dev) <= complexity(r.config, dev) for r in ranked[:shown]
            ), (name, [r.config.label() for r in ranked])
        # one P per configuration, #1's first and printed once
        assert conf.labels[0] == first.config.label(), name
        assert len(set(conf.labels)) == len(conf.labels), name
        assert all(0.0 <= p <= 1.0 for p in conf.p_best) and sum(conf.p_best) >= 1 - 1e-9
        line = next(ln for ln in answer.confidence_lines(rec) if ln.startswith("confidence:"))
        assert line.count(first.config.label()) == 1, line
        # no listed twins: two entries of one filesystem never share a prediction
        seen = {(r.config.fs, round(r.score, 6)) for r in ranked}
        assert len(seen) == len(ranked), (name, [r.config.label() for r in ranked])


def test_the_readme_describes_the_headline_ties_and_json_keys_as_printed(tmp_db):
    cli.register_all()
    runner = CliRunner()
    for name in ("oltp", "analytics-scan", "build-unpack"):
        r = runner.invoke(cli.app, ["recommend", "-p", name, "--json", "--top", "3"])
        assert r.exit_code == 0, r.output
        doc = json.loads(r.output)
        assert set(doc["lead"]) == _readme_keys("lead")
        for knob in doc["lead"]["worth"].values():
            assert set(knob) == {"best", "against", "gain", "low", "high", "resolved"}
            assert knob["low"] <= knob["gain"] <= knob["high"]
        assert set(doc["confidence"]) == _readme_keys("confidence")
        assert all(set(x) == {"config", "p_best"} for x in doc["confidence"]["leaders"])
        head, sure = doc["summary"].split("How sure: ")
        matters, _, use = head.partition(" Recommended: ")
        assert matters.startswith("What matters: ") and " — " in use
        tied = doc["lead"]["tied_with"]
        if tied:
            assert sure.startswith(f"tied with {tied} other configuration")
            assert "tied with N\nother configurations within the data's resolution" in README
            assert ("any of them will do" in sure) == doc["confidence"]["settled"]
            assert all(x["tie_label"] == "1=" for x in doc["recommendations"][: tied + 1])
        else:
            assert sure.startswith("clearly ahead of #2") or sure.startswith("the only")
        text = runner.invoke(cli.app, ["recommend", "-p", name]).output
        assert "confidence: P(within 1% of the best): " in text
    assert "`P(within 1% of the best)`" in README and "`#1=`" in README


def test_among_equals_a_configuration_measured_on_this_device_goes_first():
    """The tie set's order: measured here (this device, this workload) > a filesystem with
    data > fewest settings > score. Two candidates 0.5% apart (inside TIE_TOLERANCE): the
    simpler leads while neither is measured; the measured one leads once it is, even when
    it is the more complex and the lower-scored."""
    from fsadvisor.domain import FsConfig
    from fsadvisor.predict.rank import _order

    dev = Device(None, 1 << 40, kind="nvme")
    plain = FsConfig.make("xfs", scheduler="none")
    tuned = FsConfig.make("xfs", mount=["noatime", "logbsize=256k"], scheduler="none")
    kept = [(1000.0, plain, 0, []), (995.0, tuned, 1, [])]
    assert _order(kept, dev, 2).ordered[0][1] == plain
    kept = [(1000.0, tuned, 0, []), (995.0, plain, 1, [])]
    assert _order(kept, dev, 2).ordered[0][1] == plain  # simpler first among equals
    measured_here = _order(kept, dev, 2, here=lambda c: c == tuned)
    assert measured_here.ordered[0][1] == tuned and measured_here.tied == 2
    kept = [(1000.0, plain, 0, []), (995.0, tuned, 1, [])]
    assert _order(kept, dev, 2, here=lambda c: c == tuned).ordered[0][1] == tuned
    # outside the tie set a measurement changes nothing: the better one leads
    kept = [(1000.0, plain, 0, []), (900.0, tuned, 1, [])]
    assert _order(kept, dev, 2, here=lambda c: c == tuned).ordered[0][1] == plain


def test_the_fit_knows_which_cells_a_probe_of_this_device_ran(probed_store):
    """measured_here: this device's identity (its loop class here), this configuration under
    any scheduler, this workload; never another workload, configuration or device."""
    from dataclasses import replace as dc_replace

    from fsadvisor.domain import FsConfig
    from fsadvisor.profiles import load_profile

    model = advice.get_model(str(probed_store))
    dev = Device(path="/dev/loop9", size_bytes=8 << 30, kind="loop", model="loop on ext4 (test)")
    other = Device(path="/dev/nvme0n1", size_bytes=1 << 40, kind="nvme", model="another")
    w = load_profile("oltp").workload
    xfs = FsConfig.make("xfs", mount=["noatime"], scheduler="kyber")
    assert model.measured_here(dev, xfs, w)
    assert model.measured_here(dev, FsConfig.make("ext4"), w)
    assert not model.measured_here(dev, FsConfig.make("xfs"), w)
    assert not model.measured_here(dev, xfs, dc_replace(w, iodepth=w.iodepth * 2))
    assert not model.measured_here(other, xfs, w)
    assert not model.measured_here(Device(None, 1 << 40, kind="loop"), xfs, w)


def test_a_variant_its_own_base_clearly_beats_is_not_tied_first():
    """The band around the leader is measured against the leader alone: XFS against ext4 is
    uncertain on a device nobody measured, so ext4 and an ext4 variant 15% below it both sit
    within 1 sd of XFS -- but the variant's gap to ext4 is one the model is sure of (the terms
    the two share cancel), and "1=" beside ext4 would be a confident odd pick."""
    import numpy as np

    from fsadvisor.predict.rank import TIE_TOLERANCE, _undominated

    # rows: [xfs effect, ext4 effect, data=journal's penalty term]; cov: xfs and ext4 each
    # +-25%, the penalty's coefficient +-3%
    X = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    cov = np.diag([0.25**2, 0.25**2, 0.03**2])
    logv = np.log(np.array([1183.0, 1147.0, 974.0]))
    tol = -np.log(1 - TIE_TOLERANCE)
    band = np.arange(3)
    assert list(_undominated(band, logv, tol, X, cov)) == [0, 1]
    # with the penalty as uncertain as the filesystems, it stays in the tie
    loose = np.diag([0.25**2, 0.25**2, 0.25**2])
    assert list(_undominated(band, logv, tol, X, loose)) == [0, 1, 2]


def test_the_oltp_answer_ties_no_data_journal_variant_with_ext4(tmp_db):
    rec = advice.recommend("oltp", None, top=TOP)
    tied = [r.config for r in rec.ranked if r.label == "1="]
    assert any(c.fs == "ext4" and not c.mount for c in tied), [c.label() for c in tied]
    assert not [c for c in tied if "data=journal" in c.mount], [c.label() for c in tied]


def test_the_tui_detail_counts_the_tie_the_headline_counts(tmp_db):
    """The TUI's detail of #1 says how many configurations it is tied with: the tie set the
    headline counts ("tied with N other configurations"), not the confidence's leaders, of
    which it keeps at most MAX_LEADERS (oltp on NVMe: 10 tied, 8 leaders)."""
    from fsadvisor.predict.confidence import MAX_LEADERS
    from fsadvisor.tui.present import detail_text

    rec = advice.recommend("oltp", None, top=TOP)
    n = rec.lead["tied_with"] + 1
    assert n > MAX_LEADERS >= len(rec.confidence.labels)  # the case that tells them apart
    text = detail_text(rec.ranked[0], rec).plain
    assert f"one of the {n} configurations the model cannot yet tell apart" in text
    words = " ".join(" ".join(answer.headline(rec)).split())  # whatever the wrap
    assert f"tied with {n - 1} other configurations" in words
