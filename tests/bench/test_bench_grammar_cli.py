"""``harness bench grammar`` as a new user runs it: the documented command from an empty folder exits 0
and writes its results, a cell vLLM builds no constraint for named in its row; and a step that fails
after the main table leaves what was measured on disk."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.bench.grammar import GrammarBenchConfig, run_grammar_bench
from harness.bench.grammar.cells import NO_CONSTRAINT

HARNESS = str(Path(sys.executable).parent / "harness")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # every family x strategy x engine: ~45 s alone on 2 cores, ~85 s beside other jobs
def test_quick_as_documented_exits_0_and_names_the_unmeasured_cell(tmp_path: Path) -> None:
    assert ROOT not in tmp_path.parents
    done = subprocess.run([HARNESS, "bench", "grammar", "--quick"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (out,) = (tmp_path / "results" / "bench").glob("grammar-*")
    for name in ("bench.json", "bench.md", "strategies.png", "growth_tools.png", "growth_length.png"):
        assert (out / name).stat().st_size > 0, name
    bench = json.loads((out / "bench.json").read_text())
    unmeasured = [(r["family"], r["strategy"], r["engine"]) for r in bench["main"] if r.get("unmeasured")]
    assert unmeasured == [("function_gemma", "strict", "xgrammar"), ("function_gemma", "strict", "llguidance")]
    assert all(r["unmeasured"] == NO_CONSTRAINT for r in bench["main"] if r.get("unmeasured"))
    strict = [r for r in bench["growth_length"] if (r["family"], r["strategy"]) == ("function_gemma", "strict")]
    assert strict and {r["note"] for r in strict} == {NO_CONSTRAINT}
    assert "stopped" not in bench
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["unmeasured"] == {"function_gemma/strict": NO_CONSTRAINT}
    assert summary["gold_rejected"] == 0
    assert f"| function_gemma | strict | {NO_CONSTRAINT} |" in (out / "bench.md").read_text()


@pytest.mark.slow  # one cell and the tool-count curve, measured: ~11 s
def test_a_step_that_fails_later_leaves_what_was_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.bench.grammar import growth

    def broken(*_: object) -> None:
        raise RuntimeError("the length curve broke")

    monkeypatch.setattr(growth, "growth_length", broken)
    cfg = GrammarBenchConfig(families=("qwen",), strategies=("ebnf",), engines=("xgrammar",), quick=True,
                             out_dir=str(tmp_path))
    with pytest.raises(RuntimeError, match="the length curve broke"):
        run_grammar_bench(cfg, log=lambda _: None)
    bench = json.loads((tmp_path / "bench.json").read_text())
    assert [(r["family"], r["strategy"], r["engine"]) for r in bench["main"]] == [("qwen", "ebnf", "xgrammar")]
    assert bench["main"][0]["gold_accepted"] == bench["main"][0]["gold_total"] > 0
    assert {r["tools"] for r in bench["growth_tools"]} == {1, 18}
    assert "growth_length" not in bench
    assert bench["stopped"] == "RuntimeError: the length curve broke"
    assert "stopped early: RuntimeError: the length curve broke" in (tmp_path / "bench.md").read_text()
