"""The device library: every shipped entry loads, every figure cites a defined source, and
the loader refuses what breaks the rules (tests build small libraries in tmp dirs)."""

import math
import textwrap
import tomllib

import pytest
from hypothesis import given, settings, strategies as st

from fsadvisor.catalog import devicelib
from fsadvisor.catalog.devicelib import DeviceLibraryError, find, load_library, parse_file
from fsadvisor.predict.datasheet import DATASHEET_LOG_SD, library_device_params, params_for
from fsadvisor.catalog.device_params import PARAM_KEYS, PRIOR_LOG_SD


def test_every_shipped_entry_loads_and_every_figure_has_a_source():
    lib = load_library()
    assert len(lib) >= 20
    files = sorted(p.name for p in devicelib.library_dir().glob("*.toml"))
    assert {
        "samsung.toml",
        "micron.toml",
        "intel-solidigm.toml",
        "kioxia.toml",
        "wd.toml",
        "crucial.toml",
    } <= set(files)
    for name, d in lib.items():
        assert d.figures, name
        for key, f in d.figures.items():
            assert f.source.title and f.source.url and f.source.date, (name, key)
            assert f.source.kind in devicelib.SOURCE_KINDS
            for v, s, _ in f.disagrees:
                # where sources disagree, a manufacturer figure is never the one set aside
                assert not (s.manufacturer and not f.source.manufacturer), (name, key)


def test_the_library_covers_the_seed_drives_and_the_classes_the_issue_asks_for():
    lib = load_library()
    assert lib["samsung-990-pro-2tb"].plp == "no"  # seed 000's drive
    assert lib["samsung-pm9a3-3.84tb-u2"].plp == "yes"  # seed 002's drive
    nvme_dc_plp = [
        d
        for d in lib.values()
        if d.kind == "nvme" and d.drive_class == "data-center" and d.plp == "yes"
    ]
    nvme_dc_other = [
        d
        for d in lib.values()
        if d.kind == "nvme" and d.drive_class == "data-center" and d.plp != "yes"
    ]
    sata = [d for d in lib.values() if d.kind == "sata-ssd"]
    consumer_nvme = [d for d in lib.values() if d.kind == "nvme" and d.drive_class == "consumer"]
    assert nvme_dc_plp and nvme_dc_other and len(sata) >= 3 and len(consumer_nvme) >= 3


def test_spot_values_match_their_documents():
    lib = load_library()
    d = lib["samsung-990-pro-2tb"]
    assert d.value("seq_read_mb_s") == 7450 and d.value("rand_read_iops") == 1_400_000
    assert d.figures["seq_read_mb_s"].source.id == "mezha-990pro-2023"  # family figure
    s4500 = lib["intel-dc-s4500-960gb"]
    assert s4500.value("rand_read_iops") == 72000 and s4500.figures["rand_read_iops"].qd == 32
    assert s4500.figures["plp"].source.kind == "manufacturer-datasheet"
    # The two Micron 9200 datasheet editions disagree; the disagreement is kept, not hidden.
    m = lib["micron-9200-pro-3.84tb"].figures["seq_read_mb_s"]
    assert m.value == 3150 and [v for v, _, _ in m.disagrees] == [3500]


def _lib(tmp_path, text: str):
    (tmp_path / "v.toml").write_text(textwrap.dedent(text))
    devicelib._load.cache_clear()
    return load_library(tmp_path)


GOOD = """
vendor = "V"
[sources.doc]
title = "V1 datasheet"
date = "2024-01"
url = "https://example.invalid/v1.pdf"
kind = "manufacturer-datasheet"
[[drive]]
name = "v-one-1tb"
model = "V One"
kind = "nvme"
class = "consumer"
capacity_gb = 1000
seq_read_mb_s = { v = 3000, src = "doc" }
"""


def test_a_minimal_library_loads(tmp_path):
    lib = _lib(tmp_path, GOOD)
    assert lib["v-one-1tb"].size_bytes == 1_000_000_000_000


@pytest.mark.parametrize(
    "change, message",
    [
        ('seq_read_mb_s = { v = 3000, src = "doc" }', None),
        ("seq_read_mb_s = { v = 3000 }", "has no source"),
        ("seq_read_mb_s = 3000", "a figure is a table"),
        ('seq_read_mb_s = { v = 3000, src = "nope" }', "not defined"),
        ('seq_read_mb_s = { v = -1, src = "doc" }', "positive finite"),
        ('seq_read_mb_s = { v = nan, src = "doc" }', "positive finite"),
        ('seq_reed_mb_s = { v = 3000, src = "doc" }', "did you mean 'seq_read_mb_s'"),
        ('plp = { v = "yes", src = "doc" }', "true or false"),
    ],
)
def test_the_loader_refuses_a_figure_that_breaks_the_rules(tmp_path, change, message):
    text = GOOD.replace('seq_read_mb_s = { v = 3000, src = "doc" }', change)
    if message is None:
        assert _lib(tmp_path, text)
        return
    with pytest.raises(DeviceLibraryError, match=message):
        _lib(tmp_path, text)


def test_a_manufacturer_figure_cannot_be_set_aside_for_a_review(tmp_path):
    text = GOOD.replace(
        'kind = "manufacturer-datasheet"',
        'kind = "manufacturer-datasheet"\n'
        '[sources.rev]\ntitle = "A review"\ndate = "2024"\nurl = "https://r.invalid"\nkind = "review"',
    )
    text = text.replace(
        'seq_read_mb_s = { v = 3000, src = "doc" }',
        'seq_read_mb_s = { v = 3100, src = "rev", disagrees = [{ v = 3000, src = "doc" }] }',
    )
    with pytest.raises(DeviceLibraryError, match="manufacturer's figure must be the value"):
        _lib(tmp_path, text)


def test_an_uncited_source_and_a_duplicate_name_are_errors(tmp_path):
    extra = GOOD.replace(
        "[[drive]]",
        '[sources.unused]\ntitle = "x"\ndate = "x"\nurl = "x"\nkind = "review"\n[[drive]]',
    )
    with pytest.raises(DeviceLibraryError, match="cited by no figure"):
        _lib(tmp_path, extra)
    (tmp_path / "w.toml").write_text(textwrap.dedent(GOOD))
    with pytest.raises(DeviceLibraryError, match="also in"):
        _lib(tmp_path, GOOD)


def test_find_takes_names_and_unique_prefixes_and_suggests_close_names():
    assert find("Samsung-990-Pro-2TB").name == "samsung-990-pro-2tb"
    assert find("samsung-pm9a3-3.84tb-u").name == "samsung-pm9a3-3.84tb-u2"
    with pytest.raises(DeviceLibraryError, match="matches 3 drives"):
        find("samsung-990-pro")
    with pytest.raises(DeviceLibraryError, match="closest: .*samsung-990-pro-2tb"):
        find("samsung-99o-pro-2tb")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_find_never_raises_anything_but_a_library_error(text):
    try:
        d = find(text)
    except DeviceLibraryError as e:
        assert str(e)
    else:
        assert d.name.startswith(text.strip().lower())


@pytest.mark.parametrize(
    "spec, named",
    [
        ("samsung-990-pro-2tb", True),
        ("nvme:1T", False),
        ("2T", False),
        ("/dev/nvme0n1", False),
        ("./x", False),
        ("sata-ssd:480G", False),
        ("typo-drive", True),
    ],
)
def test_which_device_specs_are_library_names(spec, named):
    assert devicelib.looks_like_name(spec) is named


def test_datasheet_params_use_the_figures_with_a_datasheet_sd_and_the_prior_for_the_rest():
    p = library_device_params("samsung-990-pro-2tb")
    assert set(p.values) == set(PARAM_KEYS)
    assert p.values["read_bw_bytes_s"] == 7450e6 and p.values["write_bw_bytes_s"] == 6900e6
    assert p.values["read_iops_cap"] == 1_400_000 and p.values["write_iops_cap"] == 1_550_000
    assert p.log_sd["read_iops_cap"] == DATASHEET_LOG_SD
    # no latency in its sources: the kind's prior, with the prior's wider sd
    with open(devicelib.library_dir().parents[1] / "models" / "devices.toml", "rb") as f:
        nvme = tomllib.load(f)["nvme"]
    assert p.values["read_latency_us"] == nvme["read_latency_us"]
    assert p.log_sd["read_latency_us"] == PRIOR_LOG_SD
    assert "mezha" not in p.source and "Samsung 990 PRO SSD lineup" in p.source
    assert "models/devices.toml [nvme]" in p.source
    assert p.details["plp"] == "no"


def test_a_stated_latency_and_the_sata_prior_are_used_for_a_sata_drive():
    p = library_device_params("intel-dc-s4500-960gb")
    assert p.kind == "sata-ssd" and p.values["read_latency_us"] == 110
    assert p.values["write_latency_us"] == 52 and p.log_sd["write_latency_us"] == DATASHEET_LOG_SD
    assert p.details["power_w"] == {"active_power_w": 5.6, "idle_power_w": 1.1}
    assert "[sata-ssd]" in p.source


def test_qd1_iops_becomes_a_latency_when_no_latency_is_stated(tmp_path):
    lib = _lib(
        tmp_path,
        GOOD.replace(
            'seq_read_mb_s = { v = 3000, src = "doc" }',
            'rand_read_iops_qd1 = { v = 12500, src = "doc" }',
        ),
    )
    p = params_for(lib["v-one-1tb"])
    assert math.isclose(p.values["read_latency_us"], 80.0)


@pytest.mark.parametrize(
    "states, message",
    [
        ("[{ ps = 0, max_w = 6.3, op = true }, { ps = 3, max_w = 0.05, op = false }]", None),
        ("[]", "non-empty list"),
        ("[{ ps = 0 }]", "needs ps and max_w"),
        ("[{ ps = -1, max_w = 1.0 }]", "state number"),
        ("[{ ps = 0, max_w = 0 }]", "positive finite"),
    ],
)
def test_power_state_tables_are_checked(tmp_path, states, message):
    text = GOOD.replace(
        'seq_read_mb_s = { v = 3000, src = "doc" }',
        f'power_states = {{ v = {states}, src = "doc" }}',
    )
    if message is None:
        d = _lib(tmp_path, text)["v-one-1tb"]
        assert d.value("power_states")[1] == {"ps": 3, "max_w": 0.05, "op": False}
        assert params_for(d).details["power_states"][0]["max_w"] == 6.3
        return
    with pytest.raises(DeviceLibraryError, match=message):
        _lib(tmp_path, text)


def test_shipped_power_state_tables_match_their_logs():
    lib = load_library()
    # ssdmeter's PM981 page (EXA72D2Q), section "Thermal": 7.02 / 5.10 / 3.50 W operational,
    # 0.08 / 0.01 W non operational.
    pm981 = lib["samsung-pm981-1tb"].value("power_states")
    assert [s["max_w"] for s in pm981] == [7.02, 5.10, 3.50, 0.08, 0.01]
    assert [s["op"] for s in pm981] == [True, True, True, False, False]
    assert lib["samsung-pm981-1tb"].figures["power_states"].source.kind == "device-identify-log"


def test_audited_figures_say_what_their_stored_pages_say():
    """Outcomes of the audit of the stored pages (datasets/devices/README.md, "Audit")."""
    lib = load_library()
    # A "no PLP" needs text saying so for that capacity or the series: the MX500's only such
    # text is a 250 GB retailer page, so the 1 TB drives' PLP stays unknown.
    assert (
        lib["crucial-mx500-1tb"].plp == "unknown" and lib["crucial-mx500-1tb-m2"].plp == "unknown"
    )
    # The 990 PRO: per-capacity retailer pages where one exists, seed 002's series statement else.
    assert {
        n: lib[n].figures["plp"].source.id
        for n in ("samsung-990-pro-1tb", "samsung-990-pro-2tb", "samsung-990-pro-4tb")
    } == {
        "samsung-990-pro-1tb": "syspartsdirect-990pro-1tb",
        "samsung-990-pro-2tb": "seed002",
        "samsung-990-pro-4tb": "syspartsdirect-990pro-4tb",
    }
    # Micron's own FAQ states the P400m's capacitor-backed PLP.
    p400m = lib["micron-p400m-400gb"].figures["plp"]
    assert p400m.value is True and p400m.source.manufacturer
    # Drives whose only figure came from a page that is not in the store are gone.
    assert "samsung-950-pro-256gb" not in lib
    assert lib["skhynix-gold-p31-1tb"].value("power_states") is None
    # The M.2 PM9A3's press-release figure is kept beside the datasheet's.
    m2 = lib["samsung-pm9a3-3.84tb-m2"].figures["seq_read_mb_s"]
    assert m2.value == 4500 and [v for v, _, _ in m2.disagrees] == [3500]


def test_shipped_qd1_figures_become_the_latency_prior():
    # Samsung 980 1 TB: 17,000 / 54,000 IOPS at QD1 -> 58.8 / 18.5 us per request.
    p = library_device_params("samsung-980-1tb")
    assert p.values["read_latency_us"] == pytest.approx(1e6 / 17000)
    assert p.values["write_latency_us"] == pytest.approx(1e6 / 54000)
    assert p.details["from_datasheet"]["read_latency_us"] == "rand_read_iops_qd1"
