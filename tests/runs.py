"""Run directories for tests, written through the typed records and the results store (never as
hand-typed JSON): a run.json with sensible defaults, summary rows, samples and scores."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.eval.store import (
    Machine,
    RunRecord,
    SampleRecord,
    SampleWriter,
    ScoreRow,
    SuiteRef,
    SummaryRow,
    Versions,
    write_run,
    write_scores,
    write_summary,
)

TEST_MACHINE = Machine(cpu="Test CPU", cores=2, system="Linux 6.1", machine_id="0123456789ab")
"""The one machine made-up runs were measured on (so compare gates their timings)."""


def run_record(run_id: str, **fields: Any) -> RunRecord:
    """A run.json record of an oracle run of a next-call suite; ``fields`` override."""
    values: dict[str, Any] = {
        "run_id": run_id,
        "suite": SuiteRef(name="smoke", version="1", kind="next_call", path="suites/smoke"),
        "engine": "oracle",
        "engine_note": "oracle: replays gold answers through the grammar; measures grammars, not a model",
        "model": "oracle",
        "families": ["function_gemma", "qwen"],
        "strategies": ["none", "ebnf", "structural_tag", "json_schema"],
        "epochs": 1,
        "concurrency": 1,
        "sample_timeout_s": 300.0,
        "max_steps_per_turn": 8,
        "versions": Versions(harness="0.1.0", xgrammar="0.2.8", pydantic_monty="1.4.0", python="3.11"),
        "machine": TEST_MACHINE,
        "started_at": "2026-11-21T00:00:00Z",
        "finished_at": "2026-11-21T00:01:00Z",
        **fields,
    }
    return RunRecord(**values)


def write_run_dir(
    path: Path,
    run: RunRecord,
    summary: Iterable[SummaryRow | dict[str, Any]],
    *,
    samples: Sequence[SampleRecord] = (),
    scores: Sequence[ScoreRow] = (),
) -> Path:
    """A results directory with run.json and summary.json, and samples.jsonl/scores.parquet when given."""
    path.mkdir(parents=True, exist_ok=True)
    write_run(path, run)
    write_summary(path, [r if isinstance(r, SummaryRow) else SummaryRow.model_validate(r) for r in summary])
    if samples:
        asyncio.run(_write_samples(path / "samples.jsonl", samples))
    if scores:
        write_scores(path, scores)
    return path


async def _write_samples(path: Path, samples: Sequence[SampleRecord]) -> None:
    async with SampleWriter(path) as writer:
        for sample in samples:
            writer.put(sample)
