"""The HTML report in a real browser: headless Chromium renders it, and the test checks the
screenshot is not blank and shows the charts, that every image decoded at the size it was
drawn (no broken image), and that the page logged no console error. The checks themselves are
tested against a page with a broken image and a console error, so they can fail."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

import fsadvisor.cli.app as cli

pytestmark = pytest.mark.device
cli.register_all()

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Reports every image's decoded size into the title, which --dump-dom prints. Added to a copy
# of the report only: the report itself carries no script.
PROBE_SCRIPT = """<script>
window.addEventListener('load', () => {
  document.title = JSON.stringify(Array.from(document.images).map(i => ({
    complete: i.complete, w: i.naturalWidth, h: i.naturalHeight, shown: i.clientWidth})));
});
</script>"""
CHART_ORANGE = (0xC0, 0x50, 0x1C)  # fsadvisor.report.charts PREDICTED_STYLE
CHART_BLUE = (0x1F, 0x5F, 0xA8)  # MEASURED_STYLE


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    if CHROMIUM is None:
        # CI installs it (.ci/run): there a missing browser is a broken install, not a skip.
        if os.environ.get("CI") == "true":
            pytest.fail("chromium not installed but CI=true: .ci/run installs Debian's chromium")
        pytest.skip("chromium not installed (Debian package chromium)")
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def images_of(tmp_path, page) -> list[dict]:
    probe = page.with_name(page.stem + "-probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE_SCRIPT + "</body>"))
    res = _chromium(tmp_path, "--dump-dom", "--virtual-time-budget=10000", probe.as_uri())
    m = re.search(r"<title>(.*?)</title>", res.stdout, re.S)
    assert m, res.stderr[-2000:]
    return json.loads(html.unescape(m.group(1)))


def console_errors(tmp_path, page) -> list[str]:
    res = _chromium(tmp_path, "--dump-dom", "--virtual-time-budget=5000", page.as_uri())
    # Chromium prints every console message as ":INFO:CONSOLE:<line>] "text", source: ..."
    # without its level; the report runs no script, so any message at all is a fault
    # (a blocked resource, a parse error).
    return [ln for ln in res.stderr.splitlines() if ":CONSOLE" in ln]


def screenshot(tmp_path, page, size=(1400, 2600)):
    import matplotlib.image as mpimg

    shot = tmp_path / (page.stem + ".png")
    _chromium(tmp_path, f"--screenshot={shot}", f"--window-size={size[0]},{size[1]}", page.as_uri())
    assert shot.exists() and shot.stat().st_size > 0
    return mpimg.imread(shot)  # float RGBA/RGB in 0..1


def _near(img, rgb, tol=0.06) -> int:
    import numpy as np

    target = np.array(rgb) / 255.0
    return int((np.abs(img[..., :3] - target).max(axis=-1) < tol).sum())


def test_the_checks_catch_a_broken_page(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><head><title>x</title></head><body>"
        '<img src="data:image/png;base64,AAAA"><script>console.error("boom")</script>'
        "</body></html>"
    )
    imgs = images_of(tmp_path, bad)
    assert imgs and imgs[0]["w"] == 0  # a broken image has no natural width
    assert any("boom" in ln for ln in console_errors(tmp_path, bad))


def test_report_renders_in_chromium(probed_store, tmp_path):
    import numpy as np

    out = tmp_path / "report.html"
    r = CliRunner().invoke(
        cli.app, ["report", "--profile", "oltp", "--matrix", "m-new", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    page = out.read_text()
    assert "<script" not in page

    imgs = images_of(tmp_path, out)
    assert len(imgs) == page.count("<img ") == 1
    for im in imgs:
        # charts.workload_png: 13 in wide at 100 dpi; max(2.8, 1.4 + 0.45 n) in high
        assert im["complete"] and im["w"] == 1300, im
        assert 200 <= im["h"] <= 1200 and 0 < im["shown"] <= 1400, im
    assert console_errors(tmp_path, out) == []

    img = screenshot(tmp_path, out)
    grey = img[..., :3].mean(axis=-1)
    assert (grey < 0.9).mean() > 0.02, "screenshot is (almost) blank"
    assert np.unique((img[..., :3] * 255).astype(int).reshape(-1, 3), axis=0).shape[0] > 50
    # both kinds of points reached the screen: predicted diamonds and measured circles
    assert _near(img, CHART_ORANGE) > 200
    assert _near(img, CHART_BLUE) > 200
