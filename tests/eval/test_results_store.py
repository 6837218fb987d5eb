"""The results store: samples.jsonl writing and tolerant reading, summary statistics."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from harness.eval.results import SampleWriter, load_samples, make_sample_id, repair_samples
from harness.eval.summary import error_counts, summarize, wilson


def _record(i: int) -> dict[str, object]:
    return {"sample_id": make_sample_id(f"c{i}", "qwen", "ebnf", 1), "status": "ok", "turns": []}


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


def test_torn_last_line_is_ignored_and_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    good = "".join(json.dumps(_record(i)) + "\n" for i in range(3))
    path.write_text(good + json.dumps(_record(3))[:17])
    log = load_samples(path)
    assert list(log.samples) == [f"c{i}/qwen/ebnf/1" for i in range(3)]
    assert log.torn_tail_at == len(good.encode())
    repair_samples(path)
    assert path.read_text() == good


def test_bad_line_in_the_middle_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(_record(0)) + "\n{oops\n" + json.dumps(_record(1)) + "\n")
    with pytest.raises(ValueError, match=r"samples.jsonl:2"):
        load_samples(path)


def test_wilson_interval_matches_the_formula() -> None:
    low, high = wilson(8, 10)
    assert math.isclose(low, 0.4902, abs_tol=1e-4) and math.isclose(high, 0.9433, abs_tol=1e-4)
    assert wilson(10, 10)[1] == 1.0 and wilson(0, 10)[0] == 0.0


def _score(sample: str, metric: str, value: float | None, kind: str | None = None) -> dict[str, object]:
    return {"sample_id": sample, "case_id": sample, "family": "qwen", "strategy": "ebnf", "epoch": 1,
            "metric": metric, "value": value, "error_kind": kind}


def test_summary_leaves_out_what_was_not_measured() -> None:
    samples = [
        {"sample_id": "a", "family": "qwen", "strategy": "ebnf",
         "turns": [{"latency_ms": 2.0, "ttft_ms": None, "tool_results": [],
                    "stats": {"compile_ms": 30.0, "compile_cached": False, "mask_us": [10.0, 20.0]}}]},
        {"sample_id": "b", "family": "qwen", "strategy": "ebnf",
         "turns": [{"latency_ms": 4.0, "ttft_ms": None, "tool_results": [{"duration_us": 300.0}],
                    "stats": {"compile_ms": 0.01, "compile_cached": True, "mask_us": [30.0]}}]},
    ]
    scores = [
        _score("a", "validity", 1.0), _score("b", "validity", 0.0, "parse:no_call"),
        _score("a", "state_match", None), _score("b", "state_match", None),
    ]
    rows = {r["metric"]: r for r in summarize(samples, scores)}
    assert rows["validity"]["value"] == 0.5 and rows["validity"]["n"] == 2
    assert rows["validity"]["ci_low"] is not None
    assert "state_match" not in rows  # not applicable anywhere: left out, not 0
    assert "ttft_ms_p50" not in rows  # nobody measured it
    assert rows["compile_ms"]["value"] == 30.0  # the cold compile, not the cache hit
    assert rows["mask_us_p50"]["value"] == 20.0 and rows["mask_us_p50"]["ci_low"] is None
    assert rows["latency_ms_p50"]["value"] == 3.0 and rows["tool_us_p50"]["value"] == 300.0


def test_error_counts_count_each_sample_once_per_kind() -> None:
    scores = [
        _score("a", "validity", 0.0, "parse:no_call"), _score("a", "exact_match", 0.0, "parse:no_call"),
        _score("b", "exact_match", 0.0, "exact:wrong_name"), _score("c", "exact_match", 0.0, "parse:no_call"),
    ]
    counts = {r["error_kind"]: r["count"] for r in error_counts(scores)}
    assert counts == {"parse:no_call": 2, "exact:wrong_name": 1}
