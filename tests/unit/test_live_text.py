"""The live reading in words (service.probing.live_text), shared by the CLI and the TUI:
block-layer completions with the file they came from, and watts with source and scope only
when a meter reads live."""

from __future__ import annotations

from hypothesis import given, strategies as st

from fsadvisor.probe.report import ProgressEvent
from fsadvisor.service.probing import live_text, si_number


def sample(**kw) -> ProgressEvent:
    base = dict(iops=71234.0, bw_bytes_s=291.8e6, sample_source="/sys/block/loop3/stat")
    return ProgressEvent("sample", 0, 1, **{**base, **kw})


def test_live_text_names_the_block_layer_and_the_meter():
    assert (
        live_text(sample(watts=41.52, energy_source="rapl", energy_scope="cpu+dram"))
        == "71.2k IOPS, 292 MB/s (block layer, /sys/block/loop3/stat), 41.5 W (rapl, cpu+dram)"
    )
    assert live_text(sample(energy_source="estimate")).endswith("), no meter")
    assert live_text(sample()).endswith("), no meter")
    # a real meter that has no reading yet (RAPL needs two) is not "no meter"
    assert live_text(sample(energy_source="ipmi")).endswith("no live watts (ipmi)")


@given(st.floats(0, 1e12, allow_nan=False))
def test_si_number_is_short(x):
    text = si_number(x)
    assert len(text) <= 5 and text[0].isdigit()
