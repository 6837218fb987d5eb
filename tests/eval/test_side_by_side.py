"""``harness compare --side-by-side``: runs of setups that differ (servers, engines) in columns, each
difference named, each answer an engine let through that the harness's grammar rejects listed; the
gate keeps refusing such runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runs import run_record, write_run_dir
from typer.testing import CliRunner

from harness.cli.main import app
from harness.eval.store import SampleRecord, StepRecord, SummaryRow, UsageRecord

REASON = "the answer breaks the request's grammar constraint: token 3/9 '{' (id 236782) not allowed after ...'ls'"


def _sample(case: str, strategy: str, output: str, *, unenforced: bool = False, counted: bool = False) -> SampleRecord:
    usage = UsageRecord(prompt_tokens=0, completion_tokens=9, total_tokens=9, counted_by="harness") if counted else None
    step = StepRecord(output=output, tool_calls=(), parse_errors=(), tool_results=(), latency_ms=900.0, ttft_ms=100.0,
                      usage=usage, stats=None)
    return SampleRecord(sample_id=f"{case}/function_gemma/{strategy}/1", case_id=case, family="function_gemma",
                        strategy=strategy, epoch=1, kind="next_call", status="error" if unenforced else "ok",
                        error_kind="constraint:not_enforced" if unenforced else None,
                        error=REASON if unenforced else None, steps=(step,), duration_ms=1000.0, harness_ms=1.0)


def _run(path: Path, engine: str, validity: float, samples: list[SampleRecord], **fields: Any) -> Path:
    summary = [SummaryRow(family="function_gemma", strategy="ebnf", metric="validity", value=validity, n=3),
               SummaryRow(family="function_gemma", strategy="ebnf", metric="tokens_per_s_p50", value=12.5, n=3)]
    record = run_record(path.name, engine=engine, model="gemma", families=["function_gemma"], strategies=["ebnf"],
                        answers_audited=True, **fields)
    return write_run_dir(path, record, summary, samples=samples)


def _three(tmp_path: Path) -> list[Path]:
    return [
        _run(tmp_path / "llama", "openai", 0.5, [_sample("c1", "ebnf", "<start_function_call>call:ls{}", unenforced=True,
                                                         counted=True)],
             engine_details={"dialect": {"name": "llama_cpp"}}),
        _run(tmp_path / "vllm", "vllm", 1.0, [_sample("c1", "ebnf", "<start_function_call>call:ls{}")]),
        _run(tmp_path / "local", "local", 0.75, [_sample("c1", "ebnf", "<start_function_call>call:ls{}")]),
    ]


def _compare(*args: str | Path) -> tuple[int, str, dict[str, Any]]:
    result = CliRunner().invoke(app, ["compare", *map(str, args)])
    return result.exit_code, result.output, json.loads(result.stdout.strip().splitlines()[-1])


def test_runs_of_other_servers_stand_side_by_side_with_their_differences_named(tmp_path: Path) -> None:
    llama, vllm, local = _three(tmp_path)
    code, out, verdict = _compare("--side-by-side", llama, vllm, local)
    assert code == 0 and verdict["verdict"] == "side_by_side", out
    assert "llama (openai, dialect llama_cpp)" in out and "vllm (vllm)" in out and "local (local)" in out
    assert "0.50 (n 3)" in out and "1.00 (n 3)" in out and "0.75 (n 3)" in out
    assert "the setups differ" in out
    assert "engine: llama (openai, dialect llama_cpp) 'openai'; vllm (vllm) 'vllm'; local (local) 'local'" in out
    # the answer llama.cpp's grammar engine let through, with where xgrammar rejects it; none elsewhere
    assert "1 answer(s) its engine let through that the harness's grammar (xgrammar) rejects" in out
    assert f"c1/function_gemma/ebnf/1: {REASON}" in out
    assert "vllm (vllm): 0 answer(s)" in out
    assert verdict["not_enforced"] == {str(llama): ["c1/function_gemma/ebnf/1"], str(vllm): [], str(local): []}
    assert "tokens counted by the harness" in out and verdict["tokens_counted_by"][str(llama)] == "harness"
    assert verdict["tokens_counted_by"][str(vllm)] is None


def test_the_gate_still_refuses_them(tmp_path: Path) -> None:
    llama, vllm, local = _three(tmp_path)
    code, _, verdict = _compare(llama, vllm)
    assert code == 2 and "the setups differ" in verdict["error"] and "--allow-setup-change" in verdict["error"]
    code, _, verdict = _compare(llama, vllm, local)
    assert code == 2 and "pass --side-by-side" in verdict["error"]
    code, _, verdict = _compare("--side-by-side", "--junit", tmp_path / "j.xml", llama, vllm)
    assert code == 2 and "--junit" in verdict["error"]


def test_runs_of_other_suites_or_unfinished_do_not_stand_side_by_side(tmp_path: Path) -> None:
    llama, _vllm, _ = _three(tmp_path)
    other = write_run_dir(tmp_path / "other", run_record("other", engine="local", finished_at=None), [])
    code, _, verdict = _compare("--side-by-side", llama, other)
    assert code == 2 and "finished_at" in verdict["error"]
    from harness.eval.store import SuiteRef

    elsewhere = write_run_dir(tmp_path / "bfcl", run_record(
        "bfcl", suite=SuiteRef(name="bfcl", version="1", kind="next_call", path="suites/bfcl")), [])
    code, _, verdict = _compare("--side-by-side", llama, elsewhere)
    assert code == 2 and "runs of different suites do not compare" in verdict["error"]


def test_the_report_lists_them_per_run_and_says_who_counted_the_tokens(tmp_path: Path) -> None:
    from harness.eval.report import write_report

    llama, vllm, _ = _three(tmp_path)
    page = write_report([llama, vllm], tmp_path / "report").read_text(encoding="utf-8")
    llama_part, vllm_part = page.split("## Run vllm", 1)
    assert "not enforced: 1 answer(s) the engine let through that the harness's grammar (xgrammar) rejects" in llama_part
    assert "c1/function_gemma/ebnf/1: the answer breaks the request's grammar constraint" in llama_part
    assert "tokens: counted by the harness with the family's tokenizer" in llama_part
    assert "not enforced" not in vllm_part.split("### Results", 1)[0] and "counted by the harness" not in vllm_part
