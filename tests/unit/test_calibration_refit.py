"""A calibration stored by another version's fit: refitted once from its own stored runs
(same identity, runs and calibration date; the old fit's version kept) and said so in one
line of recommend's and predict's output; kept and flagged when its runs are not in the
store; and a current one read as it is, with nothing written and no fit loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from fsadvisor.domain import Device, Workload
from fsadvisor.predict.device_fit import RawRun, fit_device_params
from fsadvisor.catalog.device_params import devices_table
from fsadvisor.predict.fit_version import fit_version
from fsadvisor.records import RunRecord
from fsadvisor.service import advice, device_figures
from fsadvisor.store import Store, open_store, quick_version

LOOP = Device(
    path="/dev/loop3", size_bytes=1 << 30, kind="loop", model="loop on ext4 (/dev/vda1), direct I/O"
)
CALIBRATED_AT = 1_790_000_000.0  # 2026-09-21
# randread QD1 and QD32, three repetitions each: read latency and read ceiling are measured
CELLS = {1: (10_000.0, 10_300.0, 9_800.0), 32: (60_000.0, 61_000.0, 59_500.0)}


def _record_runs(store: Store) -> list[int]:
    ids = []
    for depth, reps in CELLS.items():
        for rep, iops in enumerate(reps, 1):
            ids.append(
                store.record_run(
                    RunRecord(
                        cell_key=f"raw-device none | 4k-randread-qd{depth}",
                        device=LOOP,
                        config=None,
                        workload_name=f"4k-randread-qd{depth}",
                        workload=Workload(rw="randread", bs_bytes=4096, iodepth=depth),
                        rep=rep,
                        status="ok",
                        started_at=1.7e9,
                        wall_s=3.0,
                        metrics={
                            "iops": iops,
                            "mb_s": iops * 4096 / 1e6,
                            "mean_latency_us": depth * 1e6 / iops,
                        },
                    )
                )
            )
    return ids


def _stored_by_older_code(db: str, with_runs: bool = True) -> dict:
    """A calibration as an older fit left it: no fit version (or another one), and a read
    ceiling this fit would not give (unlifted); its runs in the store or not."""
    with open_store(db) as store:
        store.ensure_seeded()  # as any store in use is (quick_version reads its fingerprint)
        ids = _record_runs(store)
        rows = [r for r in store.runs(status="ok") if r["run_id"] in ids]
        now = fit_device_params(
            [RawRun.from_store_row(r) for r in rows],
            "loop",
            devices_table(),
            device_id=LOOP.identity,
        )
        details = {k: v for k, v in now.details.items() if k != "fit_version"}
        old = replace(now, values={**now.values, "read_iops_cap": 1234.0}, details=details)
        store.save_device_params(old, run_ids=ids if with_runs else (), fitted_at=CALIBRATED_AT)
    return {"now": now, "old": old, "ids": ids}


def _row(db: str) -> dict:
    with open_store(db) as store:
        return dict(next(iter(store._db["device_params"].rows)))


def test_a_stale_calibration_is_refitted_once_from_its_runs_and_then_is_current(tmp_db):
    db = str(tmp_db)
    made = _stored_by_older_code(db)
    version_before = quick_version(db)

    params, note = device_figures.device_params_and_note(LOOP, db)
    assert note == (
        "calibration of /dev/loop3 refitted from its 6 stored runs with this version's fit"
    )
    # the same measurements, this version's derived parameters
    assert params.device_id == LOOP.identity and params.details["fit_version"] == fit_version()
    assert params.values == made["now"].values and params.values["read_iops_cap"] != 1234.0
    assert sorted(params.details["run_ids"]) == sorted(made["ids"])
    assert params.details["refitted_from"] == {"fit_version": None, "calibrated_at": CALIBRATED_AT}
    # still dated by when the device was measured, and the model's cache key moved on
    assert "2026-09-21" in device_figures.describe(params)
    assert quick_version(db) != version_before

    row = _row(db)
    again, note_again = device_figures.device_params_and_note(LOOP, db)
    assert note_again is None and again.values == params.values
    assert _row(db) == row  # current now: nothing written the second time

    # a later version's refit keeps the first calibration date and names the version it replaced
    with open_store(db) as store:
        store.save_device_params(
            replace(again, details={**again.details, "fit_version": "older"}), run_ids=made["ids"]
        )
        later, said = device_figures.current_calibration(store, LOOP.identity)
    assert said and later.details["refitted_from"] == {
        "fit_version": "older",
        "calibrated_at": CALIBRATED_AT,
    }


def test_a_stale_calibration_without_its_runs_is_kept_and_flagged(tmp_db):
    db = str(tmp_db)
    made = _stored_by_older_code(db, with_runs=False)
    row = _row(db)
    for _ in range(2):  # kept, so said on every output until `calibrate` runs again
        params, note = device_figures.device_params_and_note(LOOP, db)
        assert params.values == made["old"].values
        assert note == (
            "calibration of /dev/loop3 predates this version's fit and its runs "
            "are not in the store: its parameters are kept; run `fsadvisor "
            "calibrate /dev/loop3` to refit them"
        )
    assert _row(db) == row
    # the model's fit reads it as stored too
    assert advice.stored_device_params(db)[LOOP.identity].values == made["old"].values


def test_a_current_calibration_is_read_without_a_write(tmp_db, monkeypatch):
    db = str(tmp_db)
    made = _stored_by_older_code(db)
    with open_store(db) as store:
        store.save_device_params(made["now"], run_ids=made["ids"], fitted_at=CALIBRATED_AT)
    row = _row(db)

    def no_write(*args, **kwargs):
        raise AssertionError("a current calibration was written")

    monkeypatch.setattr(Store, "save_device_params", no_write)
    params, note = device_figures.device_params_and_note(LOOP, db)
    assert note is None and params.values == made["now"].values
    assert advice.stored_device_params(db)[LOOP.identity].values == made["now"].values
    assert _row(db) == row


LOOKUP = """
import sys
from fsadvisor.domain import Device
from fsadvisor.service import device_figures
dev = Device(path="/dev/loop3", size_bytes=1 << 30, kind="loop",
             model="loop on ext4 (/dev/vda1), direct I/O")
p, note = device_figures.device_params_and_note(dev, sys.argv[1])
assert p.measured and note is None, note
print(sorted(m for m in ("fsadvisor.predict.device_fit", "fsadvisor.service.calibration")
             if m in sys.modules))
"""
# (numpy is not asked about: opening the store loads sqlite-utils, which imports it, for a
# device path with or without a calibration; a warm `recommend` on a spec opens no store.)


def test_checking_a_current_calibration_loads_no_fit(tmp_db):
    db = str(tmp_db)
    made = _stored_by_older_code(db)
    with open_store(db) as store:
        store.save_device_params(made["now"], run_ids=made["ids"])
    out = subprocess.run([sys.executable, "-c", LOOKUP, db], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "[]"


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    advice._cache.clear()
    yield
    advice._cache.clear()


def test_recommend_and_predict_say_it_once_in_text_and_json(tmp_db, own_cache, monkeypatch):
    db = str(tmp_db)
    _stored_by_older_code(db)
    rec = advice.recommend("oltp", LOOP, top=3, db=db)
    said = [n for n in rec.notes if n.startswith("calibration of /dev/loop3")]
    assert said == [
        "calibration of /dev/loop3 refitted from its 6 stored runs with this version's fit"
    ]
    # right under the device parameters it is about
    assert rec.notes.index(said[0]) == 1 and rec.notes[0].startswith("device parameters: ")
    assert json.loads(json.dumps(rec.to_dict()))["notes"].count(said[0]) == 1
    # refitted: the next output has nothing to say
    again = advice.recommend("oltp", LOOP, top=3, db=db)
    assert not [n for n in again.notes if n.startswith("calibration of")]

    # predict: a calibration of the device as an older fit left it, without its runs
    with open_store(db) as store:
        current = store.device_params(LOOP.identity)
        store.save_device_params(
            replace(current, details={**current.details, "fit_version": "older"})
        )
    monkeypatch.setattr(advice, "resolve_device", lambda spec, *a, **k: LOOP)
    out = advice.predict_one({"filesystem": "ext4"}, profile="oltp", device="/dev/loop3", db=db)
    assert out["basis"]["calibration"].startswith(
        "calibration of /dev/loop3 predates this version's fit"
    )
    # and the human output prints it once, under the device parameters
    from typer.testing import CliRunner

    import fsadvisor.cli.app as cli

    text = (
        CliRunner()
        .invoke(
            cli.app,
            [
                "predict",
                "--config",
                '{"filesystem": "ext4"}',
                "--profile",
                "oltp",
                "--device",
                "/dev/loop3",
                "--db",
                db,
            ],
        )
        .output
    )
    # (the lines wrap at the terminal's width: judged on the text)
    assert text.count("predates this version's fit") == 1, text
    assert text.index("device parameters:") < text.index("predates"), text
