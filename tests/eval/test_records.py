"""The typed records on files written before them (tests/data/runs, see its README): every file
loads, writes back equal in meaning, and re-scoring old samples gives the summary they came with."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.eval.score import score_run
from harness.eval.store import (
    RunDirError,
    RunRecord,
    SampleRecord,
    SampleWriter,
    SummaryRow,
    load_run_dir,
    read_errors,
    read_run,
    read_scores,
    read_summary,
    write_errors,
    write_run,
    write_scores,
    write_summary,
)
from harness.run_options import RunOptions

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "tests" / "data" / "runs"
OLD_RUNS = sorted(p.name for p in RUNS.iterdir() if p.is_dir())
ORACLE_RUNS = [name for name in OLD_RUNS if name.endswith("-oracle")]

# What changed since those files were written: a model call was a "turn" (now a "step", whose user
# turn is "turn"), the rejection rate was "grammar_rejections"; fields added since read as defaults.
RENAMED_SAMPLE_KEYS = {"turns": "steps", "setup_ms": "workspace_ms"}
RENAMED_STEP_KEYS = {"user_turn": "turn"}
RENAMED_METRICS = {"grammar_rejections": "grammar_rejection"}
NEW_SAMPLE_DEFAULTS = {"max_steps_turns": []}
NEW_STEP_DEFAULTS = {"turn": None, "finish_reason": None, "prompt_id": None, "constraint_first": None}
NEW_STATS_DEFAULTS = {
    "target_steps": None, "target_mask_diff_steps": None, "target_only_tokens": [], "forced_tokens": None,
    "compile_found": None, "grammar_backend": None, "grammar_reason": None,
}
NEW_RUN_DEFAULTS = {
    "bundle": None, "resumed_at": [], "machine": None, "engine_details": None, "max_tokens_source": None, "setup": None,
    "models": None, "inputs": None, "merged_from": [], "server_constraints": None, "not_enforced": [], "answers_audited": False,
}
"""And a run's options, at run.json's top level then, are in ``options`` now (``RunOptions``), but for the
served model ids (``model``, ``models``), which stay where they were."""
SERVED = {"model", "models"}


def old_run_as_today(raw: dict[str, Any]) -> dict[str, Any]:
    out = {**NEW_RUN_DEFAULTS, **raw}
    moved = {k: out.pop(k) for k in list(out) if k in RunOptions.model_fields and k not in SERVED}
    versions = {"llguidance": None, **out["versions"]}
    return {**out, "versions": versions, "options": {**RunOptions().model_dump(mode="json"), **moved}}


def renamed(raw: dict[str, Any], names: dict[str, str], defaults: dict[str, Any]) -> dict[str, Any]:
    return {**defaults, **{names.get(k, k): v for k, v in raw.items()}}


def old_sample_as_today(raw: dict[str, Any]) -> dict[str, Any]:
    out = renamed(raw, RENAMED_SAMPLE_KEYS, NEW_SAMPLE_DEFAULTS)
    out["steps"] = [renamed(step, RENAMED_STEP_KEYS, NEW_STEP_DEFAULTS) for step in out["steps"]]
    for step in out["steps"]:
        if step.get("stats") is not None:
            step["stats"] = {**NEW_STATS_DEFAULTS, **step["stats"]}
    return out


def old_summary_row_as_today(raw: dict[str, Any]) -> dict[str, Any]:
    return {**raw, "metric": RENAMED_METRICS.get(raw["metric"], raw["metric"])}


def written_back(run: str, tmp_path: Path) -> Path:
    """The old run directory read through the records and written again through the store."""
    old = load_run_dir(RUNS / run)
    new = tmp_path / run
    new.mkdir()
    write_run(new, old.run)
    write_summary(new, old.summary)
    assert old.scores is not None and old.errors is not None and old.samples is not None
    write_scores(new, old.scores)
    write_errors(new, old.errors)

    async def samples() -> None:
        async with SampleWriter(new / "samples.jsonl") as writer:
            for sample in old.samples.samples.values():  # type: ignore[union-attr]
                writer.put(sample)

    asyncio.run(samples())
    return new


@pytest.mark.parametrize("run", OLD_RUNS)
def test_old_files_write_back_equal_in_meaning(run: str, tmp_path: Path) -> None:
    old, new = RUNS / run, written_back(run, tmp_path)
    assert json.loads((new / "run.json").read_text()) == old_run_as_today(json.loads((old / "run.json").read_text()))
    old_samples = [json.loads(line) for line in (old / "samples.jsonl").read_text().splitlines()]
    new_samples = [json.loads(line) for line in (new / "samples.jsonl").read_text().splitlines()]
    assert new_samples == [old_sample_as_today(s) for s in old_samples]
    old_summary = json.loads((old / "summary.json").read_text())
    assert json.loads((new / "summary.json").read_text()) == [old_summary_row_as_today(r) for r in old_summary]
    assert json.loads((new / "errors.json").read_text()) == json.loads((old / "errors.json").read_text())
    assert read_scores(new) == read_scores(old)
    # and through the readers again: the same records
    assert read_run(new) == read_run(old)
    assert load_run_dir(new).samples.samples == load_run_dir(old).samples.samples  # type: ignore[union-attr]
    assert read_errors(new) == read_errors(old)


NEW_ORACLE_METRICS = {"truncated", "ms_per_token_p50", "tokens_p50", "grammar_us_per_token_p50"}
"""What summary.json gained since the fixtures were written, for an oracle run."""


@pytest.mark.parametrize("run", ORACLE_RUNS)
def test_rescoring_old_samples_gives_their_summary(run: str, tmp_path: Path) -> None:
    # Oracle runs: gold calls against gold calls, so the figures do not depend on the tools' semantics.
    copy = tmp_path / run
    shutil.copytree(RUNS / run, copy)
    suite = ROOT / read_run(copy).suite.path
    summary = asyncio.run(score_run(copy, suite_dir=suite))
    old_metrics = {row.metric for row in read_summary(RUNS / run)}
    # Rates now say how many cases they count (one epoch: as many as samples), the rest is unchanged.
    assert all(row.cases == row.n for row in summary if row.metric in old_metrics and row.cases is not None)
    assert [row.model_copy(update={"cases": None}) for row in summary if row.metric in old_metrics] == read_summary(
        RUNS / run)
    # Metrics added since: no answer of a gold replay is cut; speed per token wherever there are tokens.
    new = {(row.metric, row.value) for row in summary if row.metric not in old_metrics}
    assert {metric for metric, _ in new} == NEW_ORACLE_METRICS
    assert ("truncated", 0.0) in new
    assert [row for row in read_scores(copy) if row.metric != "truncated"] == read_scores(RUNS / run)
    assert read_errors(copy) == read_errors(RUNS / run)


def test_old_names_are_read() -> None:
    sample = SampleRecord.model_validate_json((RUNS / "fs-episodes-oracle" / "samples.jsonl").read_text().splitlines()[0])
    assert sample.steps and {step.turn for step in sample.steps} >= {0, 1}
    assert SummaryRow.model_validate({"family": "q", "strategy": "e", "metric": "grammar_rejections", "value": 0.0}).metric == "grammar_rejection"


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda r: r.pop("options"), "options: Field required"),
        (lambda r: r["options"].update(epochs="two"), "options.epochs: Input should be a valid integer"),
        (lambda r: r["options"].update(enigne="oracle"), "options.enigne: unknown key: did you mean 'engine'?"),
        (lambda r: r.update(enigne="oracle"), "enigne: unknown key"),
        (lambda r: r["suite"].pop("kind"), "suite.kind: Field required"),
    ],
)
def test_a_bad_run_json_names_its_field(tmp_path: Path, edit: Any, problem: str) -> None:
    raw = read_run(RUNS / "smoke-oracle").model_dump(mode="json")  # today's format
    edit(raw)
    (tmp_path / "run.json").write_text(json.dumps(raw))
    with pytest.raises(RunDirError, match=f"run.json: .*{problem}"):
        read_run(tmp_path)
    RunRecord.model_validate_json((RUNS / "smoke-oracle" / "run.json").read_text())  # the original is fine
