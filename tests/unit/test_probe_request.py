"""ProbeRequest: one frozen, validated request that says itself as the `fsadvisor probe`
command line. The line it renders, parsed by the real CLI, gives back the same request."""

from __future__ import annotations

import dataclasses
import shlex

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

import fsadvisor.cli.app as cli
from fsadvisor.errors import ConfigError
from fsadvisor.service import probing
from fsadvisor.service.request import ProbeRequest


class Captured(Exception):
    pass


@pytest.fixture
def parse_cli(monkeypatch):
    """argv -> the ProbeRequest the CLI builds from it (nothing is planned or run)."""
    cli.register_all()
    seen = []

    def capture(request):
        seen.append(request)
        raise Captured

    monkeypatch.setattr(probing, "plan_probe", capture)
    monkeypatch.setattr(probing, "root_problem", lambda: None)
    monkeypatch.setattr(probing, "cleanup_stale_state", lambda db=None: probing.CleanupReport())

    def parse(argv: list[str]) -> ProbeRequest:
        assert argv[:2] == ["fsadvisor", "probe"]
        seen.clear()
        result = CliRunner().invoke(cli.app, argv[1:])
        assert isinstance(result.exception, Captured), result.output
        return seen[0]

    return parse


names = st.lists(
    st.sampled_from(["ext4", "xfs", "btrfs", "f2fs"]), min_size=1, max_size=4, unique=True
).map(tuple)
requests = st.builds(
    ProbeRequest,
    scratch=st.sampled_from(["1G", "2G", "512M", "1.5G"]),
    scratch_dir=st.none() | st.just("/tmp/dir with space"),
    filesystems=names,
    configs=st.lists(
        st.sampled_from(['{"filesystem":"xfs","mount":["noatime"]}', '{"filesystem": "ext4"}']),
        max_size=2,
    ).map(tuple),
    schedulers=st.lists(
        st.sampled_from(["none", "mq-deadline", "kyber", "bfq"]),
        min_size=1,
        max_size=4,
        unique=True,
    ).map(tuple),
    profile=st.none() | st.sampled_from(["oltp", "my profile.toml"]),
    micro=st.booleans(),
    variants=st.booleans(),
    baseline=st.booleans(),
    workloads=st.none() | st.just(("4k-randread-qd32", "meta-stat")),
    reps=st.none() | st.integers(1, 20),
    runtime_s=st.none() | st.sampled_from([0.5, 10.0, 30.0, 2.25]),
    cooldown_s=st.none() | st.sampled_from([0.0, 5.0]),
    size=st.none() | st.just("64M"),
    quick=st.booleans(),
    resume=st.booleans(),
    energy=st.sampled_from(["auto", "estimate", "rapl"]),
    idle_watts=st.none() | st.just("42"),
    idle_seconds=st.none() | st.just(3.0),
    plp=st.sampled_from(["yes", "no", "unknown"]),
    db=st.none() | st.just("/tmp/x y.db"),
    dry_run=st.booleans(),
    force=st.booleans(),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)  # parse_cli is stateless
@given(req=requests)
def test_to_argv_parsed_by_the_cli_is_the_same_request(parse_cli, req):
    assert parse_cli(req.to_argv()) == req
    assert shlex.split(req.command_line()) == req.to_argv()


def test_to_argv_leaves_defaults_out_and_quotes():
    req = ProbeRequest.make(scratch="1G", profile="oltp", quick=True, db="/tmp/a b.db")
    # with a profile the CLI probes adaptively by default: this request is the full matrix
    assert req.to_argv() == [
        "fsadvisor",
        "probe",
        "--scratch",
        "1G",
        "--profile",
        "oltp",
        "--quick",
        "--db",
        "/tmp/a b.db",
        "--full",
    ]
    assert req.to_argv(adaptive=True)[-2:] == ["--db", "/tmp/a b.db"]
    assert req.command_line().endswith("--db '/tmp/a b.db' --full")
    assert ProbeRequest.make(scratch="1G", agcounts="4,16").to_argv()[-2:] == ["--agcounts", "4,16"]


def test_request_is_frozen_and_checked_on_every_creation():
    req = ProbeRequest.make(scratch="1G")
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.plp = "yes"  # type: ignore[misc]
    with pytest.raises(ConfigError, match="--plp must be"):
        dataclasses.replace(req, plp="maybe")
    assert req.scratch_bytes == 1 << 30


@pytest.mark.parametrize(
    "kw, message",
    [
        ({}, "give either a DEVICE or --scratch"),
        ({"scratch": "1G", "device": "/dev/x"}, "give either"),
        ({"scratch": "1M"}, "--scratch must be at least 320M"),
        ({"scratch": "lots"}, "--scratch 'lots' is not a size"),
        ({"scratch": "1G", "energy": "sun"}, "unknown --energy"),
        ({"scratch": "1G", "energy": "meter-log"}, "needs --meter-log"),
        ({"scratch": "1G", "clock_offset_s": 2.0}, "--clock-offset applies to --meter-log"),
        (
            {"scratch": "1G", "idle_seconds": -1.0},
            "--idle-seconds must be between 0 and 3,600 s, not -1",
        ),
        ({"scratch": "1G", "configs": ("[1]",)}, "--config must be a JSON object"),
        ({"scratch": "1G", "configs": ("{",)}, "--config is not JSON"),
        ({"scratch": "1G", "agcounts": "4,x"}, "--agcounts: 'x' is not a whole number"),
        ({"scratch": "1G", "size": "big"}, "--size 'big' is not a size"),
        ({"scratch": "1G", "db": ":memory:"}, "not :memory:"),
    ],
)
def test_bad_requests_are_refused_in_one_line(kw, message):
    device = kw.pop("device", None)
    with pytest.raises(ConfigError, match=message):
        ProbeRequest.make(device, inspect=False, **kw)


def test_the_device_is_inspected_once_when_the_request_is_made(monkeypatch):
    from fsadvisor.domain import Device
    from fsadvisor.host import device as devmod

    calls = []

    def inspect(path, plp="unknown"):
        calls.append(path)
        return Device(path=path, size_bytes=8 << 30, kind="nvme", plp=plp)

    monkeypatch.setattr(devmod, "inspect", inspect)
    req = ProbeRequest.make(
        "/dev/fake0", plp="yes", dry_run=True, micro=False, profile="oltp", db="/tmp/layout-test.db"
    )
    assert calls == ["/dev/fake0"] and req.device_info.plp == "yes"
    plan = probing.plan_probe(req)
    assert calls == ["/dev/fake0"]  # planning used the request's device
    assert plan.device_info is req.device_info and plan.device_size_bytes == 8 << 30
