"""Compile time where users see it: a second run of a suite on the oracle compiles nothing (every
grammar is read back from the on-disk store), each call says where its grammar came from, and the
report splits time to first token into compile and the rest; ``--grammar-backend guidance`` runs the
same suite through llguidance and the report puts both backends side by side."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from harness.eval.run import RunPlace, run_suite
from harness.eval.store import load_run_dir
from harness.run_options import RunOptions

ROOT = Path(__file__).resolve().parents[2]
SHELLPER = ROOT / "suites" / "shellper"
LIMIT = 4


def found_counts(run_dir: Path) -> Counter[str | None]:
    samples = load_run_dir(run_dir).samples
    assert samples is not None
    return Counter(step.stats.compile_found for s in samples.samples.values() for step in s.steps
                   if step.stats is not None and step.stats.compile_ms is not None)


def fresh_process() -> None:
    from harness.grammar.compile import clear_compile_cache

    for family in ("function_gemma", "qwen"):
        clear_compile_cache(family)


def run(out: Path, **options: object) -> Path:
    chosen = RunOptions(engine="oracle", limit=LIMIT, **options)  # type: ignore[arg-type]
    return asyncio.run(run_suite(SHELLPER, chosen, RunPlace(out=out))).run_dir


def test_a_second_run_on_the_oracle_compiles_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_GRAMMAR_CACHE", str(tmp_path / "grammars"))
    fresh_process()
    first = found_counts(run(tmp_path / "first"))
    assert first["compiled"] > 0
    fresh_process()  # a new process: nothing in memory
    second = found_counts(run(tmp_path / "second"))
    assert second["compiled"] == 0
    assert second["disk"] == first["compiled"]  # each grammar read once, then from memory
    assert sum(second.values()) == sum(first.values())


def test_the_guidance_backend_runs_the_suite_and_the_report_shows_both(tmp_path: Path) -> None:
    from harness.eval.report import write_report

    xgr = run(tmp_path / "xgrammar", strategies=["ebnf", "json_schema"])
    llg = run(tmp_path / "guidance", strategies=["ebnf", "json_schema"], grammar_backend="guidance")
    loaded = load_run_dir(llg)
    assert loaded.run.options.grammar_backend == "guidance"
    samples = loaded.samples
    assert samples is not None
    backends = {step.stats.grammar_backend for s in samples.samples.values() for step in s.steps
                if step.stats is not None and step.stats.compile_ms is not None}
    assert backends == {"guidance"}
    errors = [(s.sample_id, s.error_kind) for s in samples.samples.values() if s.status == "error"]
    assert errors == []
    out = write_report([xgr, llg], tmp_path / "report")
    md = out.read_text(encoding="utf-8")
    assert "oracle [guidance]" in md
    assert "Time to first token: compile and the rest" in md
