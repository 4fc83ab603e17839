"""The yearly figures' inputs (fsadvisor/service/worth_inputs.py), declared once: an
instance refuses what cannot be a load, price, server count or PUE, and a tariff without its
load, in one line; recommend, compare and report offer exactly its fields as options, where
the command puts them, and are called with the instance they make."""

import dataclasses
import inspect
import math

import pytest
from hypothesis import given, settings, strategies as st

import fsadvisor.cli.app as cli
from fsadvisor.cli.options import with_worth_options
from fsadvisor.errors import FsAdvisorError
from fsadvisor.service.worth_inputs import NO_LOAD, WorthInputs

FLAGS = [f"--{f.name}" for f in dataclasses.fields(WorthInputs)]


@pytest.mark.parametrize(
    "load, price, servers, pue, message",
    [
        (-1.0, None, 1, 1.0, "--load must be between 0 and"),
        (float("nan"), None, 1, 1.0, "--load must be between .*not nan"),
        (float("inf"), None, 1, 1.0, "--load must be between .*not inf"),
        (1e13, None, 1, 1.0, "--load must be between"),
        (10.0, -0.1, 1, 1.0, "--price must be between 0 and"),
        (10.0, float("inf"), 1, 1.0, "--price must be between"),
        (10.0, 0.3, 0, 1.0, "--servers must be between 1 and"),
        (10.0, 0.3, 2.5, 1.0, "--servers must be a whole number"),
        (10.0, 0.3, 1, 0.9, "--pue must be between 1 and 5"),
        (10.0, 0.3, 1, float("nan"), "--pue must be between .*not nan"),
        (None, 0.3, 1, 1.0, "need --load"),
    ],
)
def test_bad_inputs_are_refused_in_one_line(load, price, servers, pue, message):
    with pytest.raises(FsAdvisorError, match=message) as e:
        WorthInputs(load, price, servers, pue)
    assert "\n" not in str(e.value)


def test_good_inputs_pass():
    WorthInputs(None, None, 1, 1.0)
    WorthInputs(0.0, 0.0, 3, 1.4)


@settings(max_examples=200, deadline=None)
@given(
    load=st.one_of(st.floats(), st.none()),
    price=st.one_of(st.floats(), st.none()),
    servers=st.integers(min_value=-5, max_value=5),
    pue=st.floats(),
)
def test_worth_inputs_accept_exactly_the_sane_values(load, price, servers, pue):
    # the ranges of fsadvisor/limits.py: load 0..1e12, price 0..1e7, pue 1..5
    sane = (
        (load is None or (math.isfinite(load) and 0 <= load <= 1e12))
        and (price is None or (math.isfinite(price) and 0 <= price <= 1e7))
        and servers >= 1
        and math.isfinite(pue)
        and 1.0 <= pue <= 5
        and (load is not None or (price is None and servers == 1 and pue == 1.0))
    )
    try:
        WorthInputs(load, price, servers, pue)
    except FsAdvisorError:
        assert not sane
    else:
        assert sane


def test_no_load_is_no_yearly_figures():
    assert not NO_LOAD.given and WorthInputs(load=0.0).given


@pytest.mark.parametrize("command", ["recommend", "compare", "report"])
def test_the_commands_offer_the_declared_inputs_together_in_their_order(command):
    cli.register_all()
    cmd = next(c for c in cli.app.registered_commands if c.callback.__name__ == command)
    names = list(inspect.signature(cmd.callback).parameters)
    first = names.index("load")
    assert names[first : first + len(FLAGS)] == [flag[2:] for flag in FLAGS]
    assert "worth_inputs" not in names


def test_a_command_gets_the_inputs_its_options_make():
    seen = []

    @with_worth_options("what it adds")
    def command(before: int = 0, worth_inputs: WorthInputs = NO_LOAD, after: int = 0):
        seen.append((before, worth_inputs, after))

    params = inspect.signature(command).parameters
    assert list(params) == ["before", *(flag[2:] for flag in FLAGS), "after"]
    assert "adds what it adds." in params["load"].annotation.__metadata__[0].help
    command(before=1, load=5.0, price=0.2, servers=2, pue=1.5, after=3)
    assert seen == [(1, WorthInputs(load=5.0, price=0.2, servers=2, pue=1.5), 3)]
    with pytest.raises(FsAdvisorError, match="need --load"):
        command(load=None, price=None, servers=2, pue=1.0)
