"""details.jsonl: scoring keeps what report.html shows of the gold calls and of state failures, and the
report reads it from the run directory, never running a tool itself.

A BFCL multi-turn run (Python classes in the tool worker) shows BFCL's own gold outputs (before, the
report re-ran the gold on a file system: "no Python session for this call" for every one); a run
directory reports wherever it is, its suite's folder gone; a run scored before details.jsonl renders
with a note, and ``harness score`` writes the file for it."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.eval.report import write_report
from harness.eval.report.details import DETAILS_MISSING
from harness.eval.run import RunOptions, RunPlace, run_suite
from harness.eval.score import score_run
from harness.eval.store import (
    DETAILS_FILE,
    RunDirError,
    load_samples,
    read_details,
    read_summary,
    sample_line,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def report_data(page_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every case and sample of the report's ``report-data`` chunks, by their keys (``<run>/<id>``)."""
    cases: dict[str, Any] = {}
    samples: dict[str, Any] = {}
    for path in sorted((page_dir / "report-data").glob("chunk-*.js")):
        text = path.read_text(encoding="utf-8")
        chunk = json.loads(text[text.index(", ") + 2:-3])  # reportChunk(N, {...});
        cases.update(chunk["cases"])
        samples.update(chunk["samples"])
    return cases, samples


def made_wrong(run_dir: Path, sample_id: str, call: dict[str, Any], first: bool = True) -> None:
    """One saved answer with ``call`` added first (``first``) or in place of its calls."""
    samples = list(load_samples(run_dir / "samples.jsonl").samples.values())
    for i, sample in enumerate(samples):
        if sample.sample_id == sample_id:
            step = sample.steps[0]
            calls = [call, *(c.model_dump() for c in step.tool_calls)] if first else [call]
            steps = (step.model_validate({**step.model_dump(), "tool_calls": calls}), *sample.steps[1:])
            samples[i] = sample.model_copy(update={"steps": steps})
    (run_dir / "samples.jsonl").write_text("".join(sample_line(s) for s in samples), encoding="utf-8")


def _never(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError("the report ran a tool")


@pytest.fixture
def no_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    """``harness report`` without its figures (drawing them is most of its time, and not the point here)."""
    monkeypatch.setattr("harness.eval.report.write.draw", lambda *_args: [])


# -- BFCL multi-turn: Python classes in the tool worker ---------------------------------------------------


@pytest.fixture(scope="module")
def bfcl_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The oracle on the first two entries of the BFCL fixture (BFCL's own classes), one lane."""
    pytest.importorskip("bfcl_eval", reason="BFCL's reference package is not installed: pip install --no-deps bfcl-eval")
    from harness.bfcl import import_bfcl

    root = tmp_path_factory.mktemp("bfcl-details")
    import_bfcl(DATA / "bfcl_fs_sample.json", DATA / "bfcl_fs_sample_answers.json", root / "suite")
    options = RunOptions(engine="oracle", families=("qwen",), strategies=("ebnf",), limit=2)  # type: ignore[arg-type]
    outcome = asyncio.run(run_suite(root / "suite", options, RunPlace(out=root / "run")))
    return root / "run", outcome


def test_run_suite_returns_the_summary_it_wrote(bfcl_run: tuple[Path, Any]) -> None:
    run_dir, outcome = bfcl_run
    assert outcome.summary and outcome.summary == read_summary(run_dir)


@pytest.mark.usefixtures("no_plots")
def test_a_bfcl_multi_turn_report_shows_bfcls_gold_outputs(bfcl_run: tuple[Path, Any], tmp_path: Path) -> None:
    run_dir, _ = bfcl_run
    details = read_details(run_dir)
    assert details is not None and sorted(details.cases) == ["multi_turn_base_900", "multi_turn_base_901"]
    assert details.samples == {}  # the oracle's answers are gold's: no state differs
    write_report([run_dir], tmp_path)
    cases, _ = report_data(tmp_path)
    assert "no Python session" not in "".join(p.read_text() for p in (tmp_path / "report-data").glob("*.js"))
    gold = {(g["turn"], g["call"]): json.loads(g["output"]) for g in cases["0/multi_turn_base_900"]["gold_outputs"]}
    assert len(gold) == 4  # cd, sort (turn 0); echo, diff (turn 1): what BFCL's GorillaFileSystem answered
    assert "current_working_directory" in gold[(0, 'cd {"folder": "docs"}')]
    assert "one\\ntwo" in gold[(0, 'sort {"file_name": "b.txt"}')]
    tweet = cases["0/multi_turn_base_901"]["gold_outputs"][1]
    assert tweet["call"].startswith("post_tweet") and "User not authenticated" in tweet["output"]  # BFCL's TwitterAPI


@pytest.mark.usefixtures("no_plots")
def test_a_class_state_failure_is_kept_and_reported_without_the_worker(
        bfcl_run: tuple[Path, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.tools import PymSource, PythonClassSource

    run_dir, _ = bfcl_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    wrong = "multi_turn_base_900/qwen/ebnf/1"
    made_wrong(copy, wrong, {"name": "mkdir", "arguments": {"dir_name": "extra"}})
    asyncio.run(score_run(copy))
    details = read_details(copy)
    assert details is not None and list(details.samples) == [wrong]
    difference = details.samples[wrong].difference
    assert (difference.state, difference.turn) == ("instances", 0)  # the extra folder, after the first turn
    assert any(line.startswith("+") and "extra" in line for line in difference.lines)
    monkeypatch.setattr(PythonClassSource, "open", _never)  # the report opens no session and runs no tool
    monkeypatch.setattr(PymSource, "open", _never)
    write_report([copy], tmp_path / "report")
    cases, samples = report_data(tmp_path / "report")
    shown = samples[f"0/{wrong}"]
    assert shown["diff_title"] == "Python instances after user turn 0 (gold -, this sample +)"
    assert shown["diff"] == list(difference.lines)
    assert len(cases["0/multi_turn_base_900"]["gold_outputs"]) == 4


# -- runs scored before details.jsonl, on .pym tools ----------------------------------------------------


@pytest.mark.usefixtures("no_plots")
@pytest.mark.parametrize("run", ["smoke-oracle", "fs-episodes-oracle"])
def test_an_old_run_renders_with_a_note_and_score_writes_its_details(
        run: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept run of an earlier version (next-call points, episodes): no details.jsonl, so no gold outputs
    and a note; re-scored, ``harness report`` shows every case's gold outputs (and a state failure's
    diff), the suite's folder unreachable and the sandbox never asked."""
    from typer.testing import CliRunner

    from harness.cli.main import app
    from harness.eval.report.data import families, load_runs, strategies
    from harness.eval.report.details import build_chunks
    from harness.eval.report.html import page_data
    from harness.eval.report.tables import run_facts
    from harness.tools import PymSource

    copy = tmp_path / run
    shutil.copytree(DATA / "runs" / run, copy)
    monkeypatch.chdir(ROOT)  # such a run finds its suite by the path run.json records
    runs = load_runs([copy])
    chunk_of, chunks = build_chunks(runs)
    assert all(case.gold_outputs == [] for chunk in chunks for case in chunk.cases.values())
    assert any("details.jsonl absent" in value for _, value in run_facts(runs[0]))  # report.md says so
    page = page_data(runs, families(runs), strategies(runs), chunk_of, len(chunks))
    assert page.runs[0].details_missing == DETAILS_MISSING  # and the page, where the gold outputs go

    wrong = next(iter(load_samples(copy / "samples.jsonl").samples))
    if run == "smoke-oracle":  # a wrong call that still parses: a state failure with a tree diff
        made_wrong(copy, wrong, {"name": "mkdir", "arguments": {"dir_name": "wrong"}}, first=False)
    asyncio.run(score_run(copy))
    assert (copy / DETAILS_FILE).is_file()
    monkeypatch.chdir(tmp_path)  # the suite run.json names is not found from here
    monkeypatch.setattr(PymSource, "open", _never)
    result = CliRunner().invoke(app, ["report", str(copy), "--out", str(tmp_path / "after")])
    assert result.exit_code == 0, result.output
    assert DETAILS_MISSING not in (tmp_path / "after" / "report.html").read_text()
    assert "not found" in (tmp_path / "after" / "report.md").read_text()  # no prompts: the suite is gone
    cases, samples = report_data(tmp_path / "after")
    assert cases and all(case["gold_outputs"] for case in cases.values())
    assert all(g["call"] and g["output"] for case in cases.values() for g in case["gold_outputs"])
    if run == "smoke-oracle":
        shown = samples[f"0/{wrong}"]
        assert shown["diff_title"] == "File-system tree after the call (gold -, this sample +)"
        assert any(line.startswith("+/") and line.endswith("/wrong/") for line in shown["diff"])


def test_a_damaged_details_file_is_named_with_its_line(tmp_path: Path) -> None:
    (tmp_path / DETAILS_FILE).write_text('{"kind": "case", "case_id": "a", "gold": []}\n{"kind": "case"}\n')
    with pytest.raises(RunDirError, match=r"details.jsonl: line 2: not a detail record: .*case_id"):
        read_details(tmp_path)
    (tmp_path / DETAILS_FILE).unlink()
    assert read_details(tmp_path) is None  # scored before the file existed
