"""service/whatif: the live what-if answers exactly what advice.recommend answers, refilters
a workload's predictions on a constraint edit, and predicts again (never refits) on a
workload edit; edit_workload accepts what the form types and names the range otherwise."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.domain import Workload
from fsadvisor.errors import FsAdvisorError
from fsadvisor.service import advice, whatif


@pytest.fixture()
def db(tmp_path, monkeypatch):
    path = tmp_path / "fsadvisor.db"
    monkeypatch.setenv("FSADVISOR_DB", str(path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return str(path)


def _constrained(p, **c):
    return replace(p, constraints=replace(p.constraints, **c))


def test_same_answer_as_recommend_for_every_preset(db):
    session = whatif.WhatIf(db)
    # every preset on the default device; a few on another device with PLP stated (each
    # question costs a full advice.recommend, ~0.15 s on the 2-core test machine)
    cases = [(p, None, "unknown") for p in advice.list_profiles()]
    cases += [(p, "sata-ssd:480G", "yes") for p in advice.list_profiles()[::10]]
    for p, device, plp in cases:
        q = _constrained(p, plp=plp)
        try:
            want = advice.recommend(q, device, top=5, db=db).to_dict()
        except FsAdvisorError as e:
            assert "no configuration" in str(e)
            with pytest.raises(FsAdvisorError, match="no configuration"):
                session.recommend(q, device, top=5)
            continue
        assert session.recommend(q, device, top=5).to_dict() == want, (p.name, device, plp)


def test_constraint_edit_refilters_workload_edit_repredicts_and_nothing_refits(db, monkeypatch):
    session = whatif.WhatIf(db)
    p = advice.get_profile("oltp")
    first = session.recommend(p)
    assert session.predictions_made == 1
    fits = []
    real_fit = advice.fit
    monkeypatch.setattr(advice, "fit", lambda *a, **k: fits.append(1) or real_fit(*a, **k))
    best_iops = max(r.prediction.iops for r in first.ranked)
    q = _constrained(p, min_iops=best_iops * 0.999)
    cut = session.recommend(q)
    assert session.predictions_made == 1  # refiltered, not predicted again
    assert cut.excluded["fails_min_iops"] > first.excluded["fails_min_iops"]
    assert cut.to_dict() == advice.recommend(q, top=5, db=db).to_dict()
    more_jobs = replace(p, workload=whatif.edit_workload(p.workload, jobs=p.workload.numjobs * 2))
    again = session.recommend(more_jobs)
    assert session.predictions_made == 2
    assert again.to_dict() == advice.recommend(more_jobs, top=5, db=db).to_dict()
    assert fits == []  # the fit cached by get_model served every question


W = Workload(
    rw="randrw",
    rwmixread=70,
    bs_bytes=8192,
    iodepth=4,
    numjobs=16,
    working_set_bytes=64 << 30,
    file_size_bytes=64 << 30,
)


@given(
    jobs=st.integers(1, 4096),
    qd=st.integers(1, 4096),
    pct=st.integers(0, 100),
    bs_k=st.sampled_from([1, 4, 8, 16, 64, 128, 1024]),
)
@settings(max_examples=60, deadline=None)
def test_edit_workload_applies_valid_text(jobs, qd, pct, bs_k):
    w = whatif.edit_workload(W, jobs=f"{jobs:,}", iodepth=str(qd), read_pct=str(pct), bs=f"{bs_k}k")
    assert (w.numjobs, w.iodepth, w.bs_bytes, w.read_pct) == (jobs, qd, bs_k * 1024, pct)
    assert w.random  # a random workload stays random whatever the mix
    assert w.rw == ("randread" if pct == 100 else "randwrite" if pct == 0 else "randrw")


@given(text=st.text(max_size=12))
@settings(max_examples=80, deadline=None)
def test_edit_workload_rejects_junk_with_a_named_error(text):
    try:
        w = whatif.edit_workload(W, jobs=text)
    except FsAdvisorError as e:
        assert "jobs must be" in str(e)
    else:
        assert 1 <= w.numjobs <= 4096


@pytest.mark.parametrize(
    "kw,msg",
    [
        ({"jobs": "0"}, "jobs must be between 1 and 4,096"),
        ({"iodepth": "5000"}, "queue depth must be between 1 and 4,096"),
        ({"bs": "100"}, "request size must be between 512 and 64m"),
        ({"bs": "fast"}, "request size must be a size"),
        ({"read_pct": "101"}, "read share % must be between 0 and 100"),
        ({"working_set": "1k"}, "working set must be between 1m and 1024t"),
        ({"fsync": "sometimes"}, "fsync policy must be one of none, every_n, per_transaction"),
    ],
)
def test_edit_workload_names_the_range(kw, msg):
    with pytest.raises(FsAdvisorError, match=msg):
        whatif.edit_workload(W, **kw)


def test_sequential_stays_sequential_and_fsync_policy_sets_the_interval():
    seq = replace(W, rw="write", rwmixread=0)
    assert whatif.edit_workload(seq, read_pct="30").rw == "rw"
    w = whatif.edit_workload(W, fsync="every_n", fsync_every="32")
    assert (w.fsync_mode, w.writes_per_fsync) == ("every_n", 32)
    assert whatif.edit_workload(w, fsync="none").writes_per_fsync == 0
    ws = whatif.edit_workload(W, working_set="8g")
    assert ws.working_set_bytes == ws.file_size_bytes == 8 << 30
    meta = replace(W, rw="filecreate")
    with pytest.raises(FsAdvisorError, match="metadata workload"):
        whatif.edit_workload(meta, read_pct="50")
