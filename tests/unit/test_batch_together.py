"""`predict --batch` predicts lines that arrive together and share a workload and a device
in one predict_many, with the answers of one line at a time, and still answers
a program that sends one request and waits."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys

import pytest

from fsadvisor import catalog
from fsadvisor.predict import predict as M
from fsadvisor.service import advice

from _jsonclose import assert_close

CONFIGS = [c.to_dict() for c in catalog.candidates(1 << 40)[::37]]


def _lines():
    lines = [
        json.dumps({"id": i, "config": c, "profile": ("oltp", "analytics-scan")[i % 2]})
        for i, c in enumerate(CONFIGS)
    ]
    lines[3] = "{broken"
    lines[7] = json.dumps({"config": {"filesystem": "zfs"}, "profile": "oltp"})
    lines[9] = ""
    lines[11] = json.dumps({"config": CONFIGS[0], "profile": "oltp", "bogus": 1})
    return lines + lines[:5]  # and repeats


@pytest.mark.parametrize("spec,profile", [("nvme:1T", "build-unpack"), ("sata-ssd:480G", "oltp")])
def test_alone_gives_each_the_prediction_made_for_it_by_itself(spec, profile):
    model = advice.get_model()
    dev = advice.resolve_device(spec)
    w = advice.get_profile(profile).workload
    cfgs = catalog.candidates(dev.size_bytes)[::11]
    together = M.predict_many(model, cfgs, w, dev, alone=True)
    for cfg, p in zip(cfgs, together):
        one = M.predict(model, cfg, w, dev)
        assert_close(p.to_dict(), one.to_dict())
        assert_close(p.uncertainty, one.uncertainty)
    # On the SATA drive the power interval's floor binds: predicted as a set, its lower
    # ends differ from the ones each gets alone (what `alone` is for).
    if spec.startswith("sata"):
        shared = M.predict_many(model, cfgs, w, dev)
        assert any(
            a.uncertainty["watts_90"][0] != b.uncertainty["watts_90"][0]
            for a, b in zip(shared, together)
        )


def test_groups_answer_as_one_line_at_a_time(monkeypatch):
    lines = _lines()
    one_by_one = list(advice.predict_batch(lines))
    calls = []
    real = advice.predict_many

    def counting(model, cfgs, *a, **k):
        calls.append(len(cfgs))
        return real(model, cfgs, *a, **k)

    monkeypatch.setattr(advice, "predict_many", counting)
    grouped = list(advice.predict_chunks([lines[:20], lines[20:]]))
    assert_close(grouped, one_by_one)
    assert [o.get("line") for o in grouped if "error" in o] == [4, 8, 12, len(CONFIGS) + 4]
    # two presets in the first group, then the rest of each: four predict_many calls
    # over many configurations, not one per line
    assert len(calls) == 4 and sum(calls) == len(CONFIGS) - 4  # 3 bad lines, 1 blank


def test_bytes_lines_and_a_line_that_does_not_decode():
    out = list(
        advice.predict_chunks(
            [
                [
                    json.dumps({"config": CONFIGS[0], "profile": "oltp"}).encode(),
                    b"\xff\xfe\xfa{}",
                    b"  ",
                ]
            ]
        )
    )
    assert "predicted" in out[0]
    assert out[1]["line"] == 2 and "error" in out[1]
    assert len(out) == 2


def _cli(env_path):
    env = dict(
        os.environ, FSADVISOR_DB=str(env_path / "s.db"), XDG_CACHE_HOME=str(env_path / "cache")
    )
    return subprocess.Popen(
        [sys.executable, "-m", "fsadvisor.cli", "predict", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def test_a_pipe_of_requests_gives_the_same_answers(tmp_path):
    lines = _lines()
    p = _cli(tmp_path)
    out, err = p.communicate(("\n".join(lines)).encode())  # no newline after the last
    assert p.returncode == 0, err.decode()
    got = [json.loads(x) for x in out.decode().splitlines()]
    assert_close(got, list(advice.predict_batch(lines, db=str(tmp_path / "s.db"))))


def test_one_request_is_answered_before_the_next_is_sent(tmp_path):
    p = _cli(tmp_path)
    try:
        for i in range(2):
            req = {"id": i, "config": CONFIGS[i], "profile": "oltp"}
            # written in two parts: a line split across reads is still one line
            text = json.dumps(req).encode() + b"\n"
            p.stdin.write(text[:10])
            p.stdin.flush()
            p.stdin.write(text[10:])
            p.stdin.flush()
            ready, _, _ = select.select([p.stdout], [], [], 60)
            assert ready, "no answer while stdin stays open"
            assert json.loads(p.stdout.readline())["id"] == i
    finally:
        p.stdin.close()
        p.wait(timeout=60)
    assert p.returncode == 0
