"""report.html in a real browser: Debian's chromium driven by playwright (never a browser playwright
downloads). The page must load with no console error and no network request, show every sample,
filter them, open one's transcript, and show its figures; a screenshot is saved with the test output
(and under $HARNESS_ARTIFACTS when set).

The setup installs Debian's ``chromium`` package when /usr/bin/chromium is missing (``apt-get install -y
chromium``, as root; ``apt-get update`` first if the package lists are empty)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.eval.report import write_report
from harness.eval.run import RunSpec, run_suite

pytestmark = pytest.mark.slow  # installs a browser on first use, runs the oracle twice, draws every plot

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]
LOCAL_RUN = ROOT / "tests" / "data" / "runs" / "smoke-local"
"""A run of the embedded engine (written by an earlier version): the page shows two engines side by side."""


def _apt(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["apt-get", *args], capture_output=True, text=True, env=env, check=False)


def ensure_chromium() -> Path:
    """Debian's chromium, installed with apt-get when missing."""
    if CHROMIUM.exists():
        return CHROMIUM
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        pytest.fail(f"{CHROMIUM} is missing and cannot be installed here (needs apt-get as root): apt-get install chromium")
    done = _apt("install", "-y", "--no-install-recommends", "chromium")
    if done.returncode != 0:  # a fresh image has no package lists yet
        _apt("update")
        done = _apt("install", "-y", "--no-install-recommends", "chromium")
    if done.returncode != 0 or not CHROMIUM.exists():
        pytest.fail(f"apt-get install chromium failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return CHROMIUM


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """report.html of two runs side by side: the oracle on the smoke suite with a token bound that cuts
    some gold answers (so there are failures to filter), and the embedded engine's fixture run."""
    root = tmp_path_factory.mktemp("page")
    oracle = root / "smoke-oracle-cut"
    asyncio.run(run_suite(RunSpec(suite_dir=ROOT / "suites" / "smoke", engine="oracle", out=oracle, max_tokens=16)))
    out = root / "report"
    write_report([oracle, LOCAL_RUN], out)
    return out / "report.html"


@pytest.fixture(scope="module")
def browser(report_page: Path) -> Iterator[Any]:
    """Chromium under playwright (its event loop runs in this thread: the page is written first)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install -e '.[dev]' (it drives Debian's chromium)")
    executable = ensure_chromium()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(executable), args=LAUNCH_ARGS)
        yield browser
        browser.close()


def save_screenshot(page: Any, tmp_path: Path, name: str) -> Path:
    shot = tmp_path / name
    page.screenshot(path=str(shot), full_page=True)
    artifacts = os.environ.get("HARNESS_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / name)
    return shot


def visible_samples(page: Any) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "#sample-rows tr.sample", "rows => rows.map(r => ({id: r.dataset.id, family: r.dataset.family, "
        "strategy: r.dataset.strategy, result: r.children[4].textContent, kinds: r.children[5].textContent}))")


def test_the_report_page_works_in_a_real_browser(report_page: Path, browser: Any, tmp_path: Path) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("request", lambda request: None if request.url.startswith(("file:", "data:")) else requests.append(request.url))
    page.goto(report_page.as_uri())
    page.wait_for_selector("#sample-rows tr.sample")

    everything = visible_samples(page)
    total = page.evaluate("JSON.parse(document.getElementById('report-data').textContent).samples.length")
    assert len(everything) == min(total, 200) and total == 48 + 24  # 2 families x 4 strategies x 6 cases, and 1 x 4 x 6
    assert "of " + str(total) + " matching samples" in page.inner_text("#count")
    # Every figure is embedded and decoded by the browser.
    images = page.eval_on_selector_all("figure img", "imgs => imgs.map(i => [i.complete, i.naturalWidth])")
    assert images and all(done and width > 200 for done, width in images)
    assert "Which strategy" in page.inner_text("#verdict")

    # Filters: a family, then the failures of one error kind.
    page.select_option("#f-family", "qwen")
    qwen = visible_samples(page)
    assert 0 < len(qwen) < len(everything) and {s["family"] for s in qwen} == {"qwen"}
    page.select_option("#f-kind", "length:max_tokens")
    page.select_option("#f-result", "fail")
    cut = visible_samples(page)
    assert cut and all("length:max_tokens" in s["kinds"] and s["result"] == "fail" for s in cut)
    assert len(cut) < len(qwen)

    # One sample's transcript: prompt, raw output, the cut, gold.
    page.click("#sample-rows tr.sample")
    detail = page.inner_text("#sample-rows td.detail")
    for part in ("Scores", "Prompt (case", "user:", "Gold answer", "Raw output", "finish length", "truncated: 1"):
        assert part in detail, part

    # A failure table's kind link filters the samples to it.
    page.select_option("#f-family", "")
    page.click("a.kind-link")
    linked = visible_samples(page)
    assert linked and len({(s["family"], s["strategy"]) for s in linked}) == 1
    page.click("#sample-rows tr.sample")  # the screenshot shows a transcript
    page.wait_for_selector("#sample-rows td.detail")

    shot = save_screenshot(page, tmp_path, "report-page.png")
    assert shot.stat().st_size > 10_000
    assert problems == []
    assert requests == []  # nothing fetched at view time
    page.close()
