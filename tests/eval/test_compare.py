"""``harness compare`` exit codes on made-up baseline/candidate dirs (run.json + summary.json only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from runs import run_record, write_run_dir
from typer.testing import CliRunner

from harness.cli.commands import reporting
from harness.cli.main import app
from harness.eval import compare as compare_mod

BASE_ROWS: list[dict[str, Any]] = [
    {"family": "qwen", "strategy": "ebnf", "metric": "validity", "value": 1.0, "n": 40, "ci_low": 0.91, "ci_high": 1.0},
    {"family": "qwen", "strategy": "ebnf", "metric": "exact_match", "value": 0.95, "n": 40, "ci_low": 0.83, "ci_high": 0.99},
    {"family": "qwen", "strategy": "ebnf", "metric": "grammar_rejection", "value": 0.0, "n": 40, "ci_low": 0.0, "ci_high": 0.09},
    {"family": "qwen", "strategy": "ebnf", "metric": "mask_us_p50", "value": 10.0, "n": 900, "ci_low": None, "ci_high": None},
    {"family": "qwen", "strategy": "ebnf", "metric": "latency_ms_p50", "value": 4.0, "n": 40, "ci_low": None, "ci_high": None},
    {"family": "qwen", "strategy": "ebnf", "metric": "tool_us_p50", "value": 200.0, "n": 6, "ci_low": None, "ci_high": None},
    {"family": "qwen", "strategy": "ebnf", "metric": "mask_us_p99", "value": 50.0, "n": 130, "ci_low": None, "ci_high": None},
    {"family": "qwen", "strategy": "ebnf", "metric": "tool_us_p99", "value": 900.0, "n": 2000, "ci_low": None, "ci_high": None},
]


def write_run(root: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    return write_run_dir(root / name, run_record(name), rows)


def changed(metric: str, value: float | None) -> list[dict[str, Any]]:
    """BASE_ROWS with one metric's value replaced (None = the row removed)."""
    rows = [dict(r) for r in BASE_ROWS if not (r["metric"] == metric and value is None)]
    for r in rows:
        if r["metric"] == metric:
            r["value"] = value
    return rows


def run_compare(tmp_path: Path, candidate_rows: list[dict[str, Any]], *args: str) -> tuple[int, str]:
    base = write_run(tmp_path, "base", BASE_ROWS)
    cand = write_run(tmp_path, "cand", candidate_rows)
    result = CliRunner().invoke(app, ["compare", str(base), str(cand), *args])
    return result.exit_code, result.output


def test_equal_runs_pass(tmp_path: Path) -> None:
    code, out = run_compare(tmp_path, BASE_ROWS)
    assert code == 0, out
    assert "no regression" in out


@pytest.mark.parametrize(
    ("metric", "value", "args", "expected"),
    [
        ("exact_match", 0.90, [], 1),  # dropped 0.05 > default 0.02
        ("exact_match", 0.94, [], 0),  # dropped 0.01, within the default
        ("exact_match", 0.90, ["--max-drop", "0.1"], 0),
        ("validity", 0.0, ["--max-drop", "0"], 1),
        ("grammar_rejection", 0.05, [], 1),  # rejections rising is a regression
        ("mask_us_p50", 40.0, [], 1),  # 4x slower > default 3x
        ("mask_us_p50", 25.0, [], 0),  # 2.5x: noise on a shared machine
        ("mask_us_p50", 40.0, ["--max-slowdown", "5"], 0),
        ("latency_ms_p50", 13.0, [], 1),
        ("tool_us_p50", 2000.0, [], 0),  # 10x slower, but a median of 6 values: shown, not gated
        ("tool_us_p50", 2000.0, ["--min-timing-n", "5"], 1),
        ("mask_us_p99", 2500.0, [], 0),  # 50x, but a p99 of 130 values is one spike: shown, not gated
        ("tool_us_p99", 9000.0, [], 1),  # a p99 of 2,000 values has 20 beyond it: gated
    ],
)
def test_thresholds(tmp_path: Path, metric: str, value: float, args: list[str], expected: int) -> None:
    code, out = run_compare(tmp_path, changed(metric, value), *args)
    assert code == expected, out
    if expected == 1:
        assert f"qwen/ebnf/{metric}" in out


def test_improvement_passes(tmp_path: Path) -> None:
    rows = changed("exact_match", 1.0)
    for r in rows:
        if r["metric"] == "mask_us_p50":
            r["value"] = 2.0
    code, out = run_compare(tmp_path, rows)
    assert code == 0, out
    assert "improved" in out


def test_missing_metric_fails(tmp_path: Path) -> None:
    code, out = run_compare(tmp_path, changed("mask_us_p50", None))
    assert code == 1
    assert "qwen/ebnf/mask_us_p50" in out and "missing" in out


def test_null_value_counts_as_missing(tmp_path: Path) -> None:
    rows = [dict(r) for r in BASE_ROWS]
    rows[0]["value"] = None
    code, out = run_compare(tmp_path, rows)
    assert code == 1
    assert "qwen/ebnf/validity" in out


def test_new_metric_is_reported_not_failed(tmp_path: Path) -> None:
    extra = {"family": "qwen", "strategy": "json_schema", "metric": "validity", "value": 0.5, "n": 4,
             "ci_low": 0.1, "ci_high": 0.9}
    code, out = run_compare(tmp_path, [*BASE_ROWS, extra])
    assert code == 0, out
    assert "new" in out and "json_schema" in out


@pytest.mark.parametrize(
    ("breakage", "named"),
    [
        ("bad_json", "summary.json"),
        ("not_a_list", "summary.json"),
        ("row_without_metric", "summary.json"),
        ("no_run_json", "run.json"),
        ("no_dir", "cand"),
    ],
)
def test_unreadable_input_exits_2(tmp_path: Path, breakage: str, named: str) -> None:
    base = write_run(tmp_path, "base", BASE_ROWS)
    cand = write_run(tmp_path, "cand", BASE_ROWS)
    if breakage == "bad_json":
        (cand / "summary.json").write_text('[{"family": ')
    elif breakage == "not_a_list":
        (cand / "summary.json").write_text('{"family": "qwen"}')
    elif breakage == "row_without_metric":
        (cand / "summary.json").write_text(json.dumps([{"family": "qwen", "strategy": "ebnf", "value": 1.0}]))
    elif breakage == "no_run_json":
        (cand / "run.json").unlink()
    else:
        for f in cand.iterdir():
            f.unlink()
        cand.rmdir()
    result = CliRunner().invoke(app, ["compare", str(base), str(cand)])
    assert result.exit_code == 2, result.output
    assert named in result.output
    assert str(cand) in result.output


def test_library_result_lists_each_difference(tmp_path: Path) -> None:
    base = write_run(tmp_path, "base", BASE_ROWS)
    cand = write_run(tmp_path, "cand", changed("exact_match", 0.5))
    cmp = compare_mod.compare_runs(base, cand)
    by_metric = {d.metric: d for d in cmp.diffs}
    assert by_metric["exact_match"].status == "regression"
    assert by_metric["exact_match"].change == "-0.450"
    assert by_metric["validity"].status == "ok"
    assert [d.metric for d in cmp.regressions] == ["exact_match"]


def test_a_baseline_written_before_the_records_still_compares(tmp_path: Path) -> None:
    # results/baselines/smoke names the rejection rate grammar_rejections (the name before November 2026)
    old = [{**r, "metric": "grammar_rejections"} if r["metric"] == "grammar_rejection" else r for r in BASE_ROWS]
    base = write_run(tmp_path, "base", BASE_ROWS)
    (base / "summary.json").write_text(json.dumps(old))
    cand = write_run(tmp_path, "cand", changed("grammar_rejection", 0.5))
    cmp = compare_mod.compare_runs(base, cand)
    assert [d.metric for d in cmp.regressions] == ["grammar_rejection"]


def test_cli_defaults_match_library() -> None:
    assert reporting.DEFAULT_MAX_DROP == compare_mod.DEFAULT_MAX_DROP
    assert reporting.DEFAULT_MAX_SLOWDOWN == compare_mod.DEFAULT_MAX_SLOWDOWN
    assert reporting.DEFAULT_MIN_TIMING_N == compare_mod.DEFAULT_MIN_TIMING_N


OTHER_MACHINE = {"cpu": "Other CPU", "cores": 2, "system": "Linux 6.1", "machine_id": "ba9876543210"}
SLOWER = changed("mask_us_p50", 100.0)  # 10x the baseline over 900 values: gated when gated at all


@pytest.mark.parametrize(
    ("candidate_machine", "args", "expected"),
    [
        (None, [], 1),  # the same machine (tests/runs.py): auto gates
        (OTHER_MACHINE, [], 0),  # another machine: auto shows, does not gate
        ("unrecorded", [], 0),  # a run from before run.json recorded its machine
        (OTHER_MACHINE, ["--timings", "gate"], 1),
        (None, ["--timings", "info"], 0),
    ],
)
def test_timings_gate_only_on_the_same_machine(
    tmp_path: Path, candidate_machine: dict[str, Any] | str | None, args: list[str], expected: int
) -> None:
    base = write_run(tmp_path, "base", BASE_ROWS)
    fields: dict[str, Any] = {}
    if candidate_machine == "unrecorded":
        fields["machine"] = None
    elif candidate_machine is not None:
        fields["machine"] = candidate_machine
    cand = write_run_dir(tmp_path / "cand", run_record("cand", **fields), SLOWER)
    result = CliRunner().invoke(app, ["compare", str(base), str(cand), *args])
    assert result.exit_code == expected, result.output
    if expected == 0:
        assert "timings not gated" in result.output


def test_cli_timing_choices_match_library() -> None:
    assert tuple(c.value for c in reporting.TimingGateChoice) == compare_mod.TIMING_GATES


def test_run_json_records_this_machine() -> None:
    from harness.eval.store.provenance import machine

    here = machine()
    assert here.cores is not None and here.cores >= 1
    assert here == machine()  # stable: two runs on one machine compare equal
