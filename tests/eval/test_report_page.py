"""report.html in a real browser: Debian's chromium driven by playwright (never a browser playwright
downloads). The page must load with no console error and no request beyond its own folder, show every
sample, filter and sort them, open one's detail (loaded then: transcript, exact prompt, gold calls with
their output, the tree diff of a state failure, the same case under each strategy), and show its
figures; a screenshot is saved with the test output
(and under $HARNESS_ARTIFACTS when set).

The setup installs Debian's ``chromium`` package when /usr/bin/chromium is missing (``apt-get install -y
chromium``, as root; ``apt-get update`` first if the package lists are empty)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.eval.report import write_report
from harness.eval.run import RunOptions, RunPlace, run_suite

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


def _wrong_echo(run_dir: Path) -> str:
    """Make one saved answer a wrong call that still parses (a mkdir where gold lists the folder),
    re-score: a state failure whose tree diff the page shows. Returns its sample id."""
    from harness.eval.score import score_run

    lines = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    target = next(x for x in lines if x["case_id"] == "mira-look-00" and x["strategy"] == "ebnf"
                  and x["family"] == "function_gemma")
    target["steps"][0]["tool_calls"] = [{"name": "mkdir", "arguments": {"dir_name": "wrong"}}]
    (run_dir / "samples.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    asyncio.run(score_run(run_dir))
    return str(target["sample_id"])


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """report.html of two runs side by side: the oracle on the smoke suite with a token bound that cuts
    some gold answers (so there are failures to filter) and one answer made wrong (a state failure),
    and the embedded engine's fixture run."""
    root = tmp_path_factory.mktemp("page")
    oracle = root / "smoke-oracle-cut"
    asyncio.run(run_suite(ROOT / "suites" / "smoke", RunOptions(engine="oracle", max_tokens=24), RunPlace(out=oracle)))
    _wrong_echo(oracle)
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
    # Every figure is a file beside the page, loaded and decoded by the browser.
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

    # One sample's detail, loaded from report-data/ when it is opened.
    page.click("#sample-rows tr.sample")
    page.wait_for_selector("#sample-rows td.detail div.detail")
    detail = page.inner_text("#sample-rows td.detail")
    for part in ("Scores", "Prompt (case", "user:", "Gold answer", "Gold calls and their tool output", "Raw output",
                 "finish length", "truncated: 1", "The same case under each strategy (qwen, epoch 1)",
                 "Exact prompt sent ("):
        assert part in detail, part
    assert len(page.query_selector_all("table.side-by-side tr")) == 1 + 4  # a heading and the 4 strategies
    page.click("details.prompt summary")
    assert "<|im_start|>system" in page.inner_text("details.prompt pre")  # the prompt as Qwen's template renders it

    # A state failure shows the tree the sample left against gold's.
    for select, value in (("#f-run", "0"), ("#f-family", ""), ("#f-kind", "state:tree_differs"), ("#f-result", "")):
        page.select_option(select, value)
    (wrong,) = visible_samples(page)
    assert wrong["id"] == "mira-look-00/function_gemma/ebnf/1"
    page.click("#sample-rows tr.sample")
    page.wait_for_selector("#sample-rows td.detail div.detail")
    detail = page.inner_text("#sample-rows td.detail")
    assert "File-system tree after the call (gold -, this sample +)" in detail
    assert "+/mira/wrong/" in detail  # the folder the wrong call made, which gold's tree has not
    assert 'ls {} -> {"current_directory_content": [' in detail  # the gold call and its output

    # Sorting by a column, both ways.
    page.select_option("#f-kind", "")
    page.select_option("#f-run", "")
    page.click("th[data-sort=latency]")
    latencies = [float(t or "inf") for t in page.eval_on_selector_all(
        "#sample-rows tr.sample", "rows => rows.map(r => r.children[6].textContent)")]
    assert latencies == sorted(latencies)
    page.click("th[data-sort=latency]")
    again = [float(t or "inf") for t in page.eval_on_selector_all(
        "#sample-rows tr.sample", "rows => rows.map(r => r.children[6].textContent)")]
    assert [x for x in again if x != float("inf")] == sorted((x for x in latencies if x != float("inf")), reverse=True)

    # A failure table's kind link filters the samples to it.
    page.click("a.kind-link")
    linked = visible_samples(page)
    assert linked and len({(s["family"], s["strategy"]) for s in linked}) == 1
    page.click("#sample-rows tr.sample")  # the screenshot shows a detail
    page.wait_for_selector("#sample-rows td.detail div.detail")

    shot = save_screenshot(page, tmp_path, "report-page.png")
    assert shot.stat().st_size > 10_000
    assert problems == []
    assert requests == []  # nothing fetched from anywhere but the report's own folder
    page.close()


def test_a_link_to_one_sample_opens_it(report_page: Path, browser: Any) -> None:
    """``harness compare`` links each flip to ``report.html#sample=<id>``: the page opens that sample."""
    from urllib.parse import quote

    page = browser.new_page(viewport={"width": 1400, "height": 900})
    data = report_page.read_text()
    sample_id = "priya-inbox-03/qwen/json_schema/1"
    assert sample_id in data
    page.goto(report_page.as_uri() + "#sample=" + quote(sample_id, safe=""))
    page.wait_for_selector("#sample-rows td.detail")
    assert page.eval_on_selector("#sample-rows tr.sample.open", "row => row.dataset.id") == sample_id
    assert all(s["id"] == sample_id for s in visible_samples(page))
    assert page.input_value("#f-text") == sample_id
    page.close()


def test_the_page_holds_an_index_and_the_details_load_lazily(report_page: Path) -> None:
    html = report_page.read_text()
    chunks = sorted((report_page.parent / "report-data").glob("chunk-*.js"))
    assert chunks and "<start_function_call>call:" not in html  # transcripts are not in the page
    assert any("<start_function_call>call:" in c.read_text() for c in chunks)
    assert "data:image/png;base64" not in html
