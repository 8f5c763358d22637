"""`taurus report --html`: one self-contained file that headless Chromium
renders with every plot decoded and no console error; runs side by side
and a sweep (tests/test_sweep.py)."""
import os
import re
import shutil
import subprocess

import pytest

from taurus.cli import main

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "dctcp_dumbbell.toml")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                    "(make deps installs it)")


def _run(out, *sets):
    args = ["run", EXAMPLE, "--out", str(out), "--no-progress", "--set", 'experiment.duration="3ms"',
            "--set", 'experiment.warmup="1ms"']
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("html")
    _run(d / "agent")
    _run(d / "native", 'cc.mode="native"', "outputs.plots=false")   # plots drawn for the report
    return d


def _chromium(page, tmp_path) -> tuple[str, str, bytes]:
    """(DOM after load, browser log, screenshot PNG) of the page, headless."""
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0"]
    dom = subprocess.run(base + ["--virtual-time-budget=5000", "--dump-dom", f"file://{page}"],
                         capture_output=True, text=True, timeout=120)
    shot = tmp_path / "shot.png"
    subprocess.run(base + ["--window-size=1200,1600", f"--screenshot={shot}", f"file://{page}"],
                   capture_output=True, timeout=120)
    return dom.stdout, dom.stderr, shot.read_bytes()


def test_report_html_of_two_runs_is_self_contained(runs, tmp_path, capsys):
    page = tmp_path / "r.html"
    assert main(["report", "--html", str(runs / "agent"), str(runs / "native"), "-o", str(page)]) == 0
    text = page.read_text()
    assert "src=\"http" not in text and "href=\"http" not in text          # nothing fetched
    assert text.count("<img") == 4            # rates and queue of each run
    assert "dctcp agent jit=true" in text and "dctcp native" in text
    assert "[experiment]" in text             # the experiment file, embedded
    assert not os.path.exists(runs / "native" / "rates.png")    # the run is left as it was


@needs_chromium
def test_chromium_renders_every_plot_without_console_errors(runs, tmp_path):
    import numpy as np
    from matplotlib.image import imread
    page = tmp_path / "r.html"
    assert main(["report", "--html", str(runs / "agent"), str(runs / "native"), "-o", str(page)]) == 0
    dom, log, shot = _chromium(page, tmp_path)
    ok = re.search(r'data-images-ok="(\d+)"', dom)
    broken = re.search(r'data-images-broken="(\d+)"', dom)
    assert ok and int(ok.group(1)) == 4 and broken and int(broken.group(1)) == 0, dom[:300]
    assert "CONSOLE" not in log or ":ERROR:CONSOLE" not in log, log
    (tmp_path / "s.png").write_bytes(shot)
    img = imread(str(tmp_path / "s.png"))
    assert img.shape[0] >= 1000 and img.shape[1] >= 1000
    assert float(np.std(img[..., :3])) > 0.05            # not blank: text, tables and plots
