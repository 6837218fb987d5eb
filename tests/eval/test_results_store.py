"""The results store: samples.jsonl writing and tolerant reading, summary statistics."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from harness.eval.score import error_counts, summarize, wilson
from harness.eval.store import (
    RunDirError,
    SampleRecord,
    SampleWriter,
    ScoreRow,
    StepRecord,
    StepStats,
    ToolResultRecord,
    load_samples,
    make_sample_id,
    repair_samples,
    sample_line,
)


def sample(sample_id: str, *steps: StepRecord) -> SampleRecord:
    return SampleRecord(
        sample_id=sample_id, case_id=sample_id.split("/")[0], family="qwen", strategy="ebnf", epoch=1,
        kind="next_call", status="ok", error_kind=None, error=None, steps=steps, duration_ms=1.0, harness_ms=0.1,
    )


def _record(i: int) -> SampleRecord:
    return sample(make_sample_id(f"c{i}", "qwen", "ebnf", 1))


async def test_writer_appends_every_record_as_one_line(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    async with SampleWriter(path) as writer:
        for i in range(50):
            writer.put(_record(i))
    lines = path.read_text().splitlines()
    assert [json.loads(x)["sample_id"] for x in lines] == [f"c{i}/qwen/ebnf/1" for i in range(50)]
    async with SampleWriter(path) as writer:  # a second writer appends, never truncates
        writer.put(_record(50))
    assert len(path.read_text().splitlines()) == 51
    assert list(load_samples(path).samples.values()) == [_record(i) for i in range(51)]


def test_torn_last_line_is_ignored_and_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    good = "".join(sample_line(_record(i)) for i in range(3))
    path.write_text(good + sample_line(_record(3))[:17])
    log = load_samples(path)
    assert list(log.samples) == [f"c{i}/qwen/ebnf/1" for i in range(3)]
    assert log.torn_tail_at == len(good.encode())
    repair_samples(path)
    assert path.read_text() == good


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{oops", "line 2: not JSON"),
        ('{"sample_id": "x"}', "line 2: not a sample record: case_id: Field required"),
        (sample_line(_record(9)).replace('"kind":"next_call"', '"kind":"nxt"'), "line 2: not a sample record: kind:"),
    ],
)
def test_bad_line_in_the_middle_is_an_error_naming_line_and_field(tmp_path: Path, bad_line: str, message: str) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(sample_line(_record(0)) + bad_line.strip() + "\n" + sample_line(_record(1)))
    with pytest.raises(RunDirError, match=f"samples.jsonl: {message}"):
        load_samples(path)


def test_wilson_interval_matches_the_formula() -> None:
    low, high = wilson(8, 10)
    assert math.isclose(low, 0.4902, abs_tol=1e-4) and math.isclose(high, 0.9433, abs_tol=1e-4)
    assert wilson(10, 10)[1] == 1.0 and wilson(0, 10)[0] == 0.0


def _score(sample_id: str, metric: Any, value: float | None, kind: str | None = None) -> ScoreRow:
    return ScoreRow(sample_id=sample_id, case_id=sample_id, family="qwen", strategy="ebnf", epoch=1,
                    metric=metric, value=value, error_kind=kind)


def _step(latency_ms: float, compile_ms: float, cached: bool, mask_us: tuple[float, ...],
          tool_us: tuple[float, ...] = ()) -> StepRecord:
    return StepRecord(
        output="", tool_calls=(), parse_errors=(),
        tool_results=tuple(ToolResultRecord(name="ls", output="", is_error=False, error_kind=None, duration_us=us)
                           for us in tool_us),
        latency_ms=latency_ms, ttft_ms=None, usage=None,
        stats=StepStats(compile_ms=compile_ms, compile_cached=cached, mask_us=mask_us, accept_us=(),
                        generated_tokens=1, grammar_error=None),
    )


def test_summary_leaves_out_what_was_not_measured() -> None:
    samples = [
        sample("a", _step(2.0, 30.0, False, (10.0, 20.0))),
        sample("b", _step(4.0, 0.01, True, (30.0,), tool_us=(300.0,))),
    ]
    scores = [
        _score("a", "validity", 1.0), _score("b", "validity", 0.0, "parse:no_call"),
        _score("a", "state_match", None), _score("b", "state_match", None),
    ]
    rows = {r.metric: r for r in summarize(samples, scores)}
    assert rows["validity"].value == 0.5 and rows["validity"].n == 2
    assert rows["validity"].ci_low is not None
    assert "state_match" not in rows  # not applicable anywhere: left out, not 0
    assert "ttft_ms_p50" not in rows  # nobody measured it
    assert rows["compile_ms"].value == 30.0  # the cold compile, not the cache hit
    assert rows["mask_us_p50"].value == 20.0 and rows["mask_us_p50"].ci_low is None
    assert rows["latency_ms_p50"].value == 3.0 and rows["tool_us_p50"].value == 300.0


def test_error_counts_count_each_sample_once_per_kind() -> None:
    scores = [
        _score("a", "validity", 0.0, "parse:no_call"), _score("a", "exact_match", 0.0, "parse:no_call"),
        _score("b", "exact_match", 0.0, "exact:wrong_name"), _score("c", "exact_match", 0.0, "parse:no_call"),
    ]
    counts = {r.error_kind: r.count for r in error_counts(scores)}
    assert counts == {"parse:no_call": 2, "exact:wrong_name": 1}


def _timed(latency_ms: float, ttft_ms: float | None, tokens: int, mask_us: tuple[float, ...] = (),
           target: tuple[int, int] | None = None) -> StepRecord:
    from harness.eval.store import UsageRecord

    return StepRecord(
        output="", tool_calls=(), parse_errors=(), tool_results=(), latency_ms=latency_ms, ttft_ms=ttft_ms,
        usage=UsageRecord(prompt_tokens=100, completion_tokens=tokens, total_tokens=100 + tokens),
        stats=StepStats(compile_ms=None, compile_cached=None, mask_us=mask_us, accept_us=(1.0,) * tokens,
                        generated_tokens=tokens, grammar_error=None,
                        target_steps=None if target is None else target[0],
                        target_mask_diff_steps=None if target is None else target[1]),
    )


def test_speed_is_summarized_per_token_next_to_the_latency_of_a_call() -> None:
    # A long answer and a short one: per call the short one is faster; per token they are the same.
    samples = [sample("a", _timed(1100.0, 100.0, 101, mask_us=(50.0,) * 101)), sample("b", _timed(210.0, 10.0, 21))]
    rows = {r.metric: r for r in summarize(samples, [])}
    assert (rows["latency_ms_p50"].value, rows["latency_ms_p50"].n) == (655.0, 2)
    assert math.isclose(rows["ms_per_token_p50"].value or 0, (1100 / 101 + 210 / 21) / 2, rel_tol=1e-6)
    assert rows["tokens_per_s_p50"].value == 100.0  # (tokens - 1) / (latency - ttft), the same for both
    assert rows["tokens_p50"].value == 61.0
    # grammar work per token: (101 masks of 50 us + 101 accepts of 1 us) / 101 = 51, and 21 accepts / 21 = 1
    assert rows["grammar_us_per_token_p50"].value == 26.0


def test_vllm_target_differences_are_a_rate_of_compared_steps() -> None:
    samples = [sample("a", _timed(1.0, None, 5, target=(30, 3))), sample("b", _timed(1.0, None, 5, target=(10, 1)))]
    row = {r.metric: r for r in summarize(samples, [])}["target_mask_diff"]
    assert (row.value, row.n) == (0.1, 40)
    assert row.ci_low is not None and row.ci_low < 0.1 < (row.ci_high or 0)
