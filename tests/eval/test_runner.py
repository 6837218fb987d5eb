"""The runner end to end with the oracle engine: the smoke suite, the matrix options, errors, resume
after a kill, and re-scoring from saved samples."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.agents.client import CompletionRequest, CompletionResponse, LLMClient, ModelCallError
from harness.bundles import load_agent
from harness.cli.main import app
from harness.engines.registry import open_engine
from harness.engines.shapes import EngineContext, RunEngine, SampleContext
from harness.eval.data import load_suite
from harness.eval.run import RunError, RunOptions, RunPlace, run_suite
from harness.eval.store import (
    CallRecord,
    SummaryRow,
    load_samples,
    read_errors,
    read_run,
    read_scores,
    read_summary,
    sample_line,
)

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "suites" / "smoke"
HARNESS = [sys.executable, "-c", "from harness.cli.main import main; main()"]


def scores_by_key(run_dir: Path) -> dict[tuple[str, str], tuple[Any, Any]]:
    return {(r.sample_id, r.metric): (r.value, r.error_kind) for r in read_scores(run_dir) or ()}


def summary(run_dir: Path) -> dict[tuple[str, str, str], SummaryRow]:
    return {(r.family, r.strategy, r.metric): r for r in read_summary(run_dir)}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke suite, both families, all four strategies, oracle engine (one run for several tests)."""
    import asyncio

    out = tmp_path_factory.mktemp("runs") / "smoke"
    asyncio.run(run_suite(SMOKE, RunOptions(engine="oracle"), RunPlace(out=out)))
    return out


def test_the_oracle_passes_every_gold_answer_of_the_smoke_suite(smoke_run: Path) -> None:
    rows = summary(smoke_run)
    cases = len(load_suite(SMOKE).cases)
    for family in ("function_gemma", "qwen"):
        for strategy in ("none", "ebnf", "structural_tag", "json_schema"):
            for metric in ("validity", "exact_match", "state_match"):
                row = rows[(family, strategy, metric)]
                assert (row.value, row.n) == (1.0, cases), (family, strategy, metric)
            assert rows[(family, strategy, "grammar_rejection")].value == 0.0
            # the oracle measures masks (constrained strategies) but has no time to first token
            assert ((family, strategy, "mask_us_p50") in rows) == (strategy != "none")
            assert (family, strategy, "ttft_ms_p50") not in rows


def test_the_token_bound_is_derived_from_the_suite_and_recorded(smoke_run: Path) -> None:
    from harness.eval.run.token_bound import derive, longest_gold

    run = read_run(smoke_run)
    longest = longest_gold(load_suite(SMOKE), load_agent(ROOT / "bundles" / "shellper"))
    assert longest is not None and not longest.estimated
    assert run.options.max_tokens == derive(longest) >= longest.tokens + 1
    assert run.max_tokens_source is not None and run.max_tokens_source.startswith("derived: 1.5 x the longest gold")
    assert rows_of(summary(smoke_run), "truncated") == {0.0}


def rows_of(rows: dict[tuple[str, str, str], SummaryRow], metric: str) -> set[float | None]:
    return {row.value for (_, _, m), row in rows.items() if m == metric}


@dataclass
class Seen:
    """A progress that records what the runner told it."""

    starts: list[str] = field(default_factory=list)
    ends: list[tuple[str, str | None]] = field(default_factory=list)

    def started(self, key: Any) -> None:
        self.starts.append(key.sample_id)

    def finished(self, record: Any, failure: str | None) -> None:
        self.ends.append((record.sample_id, failure))

    def tick(self) -> None:
        """Nothing to draw."""


# (bound source, suite.yaml max_tokens, --max-tokens) -> the bound recorded
BOUNDS = [("--max-tokens", 99, 6), ("suite.yaml max_tokens", 7, None)]


@pytest.mark.parametrize(("source", "in_suite", "given"), BOUNDS)
async def test_a_run_cut_by_the_token_bound_says_so(tmp_path: Path, source: str, in_suite: int, given: int | None) -> None:
    from harness.eval.data import write_suite

    suite = load_suite(SMOKE)
    write_suite(tmp_path / "suite", suite.spec.model_copy(update={"max_tokens": in_suite,
                                                                   "bundle": str(ROOT / "bundles" / "shellper")}),
                suite.cases[:2])
    out = tmp_path / "run"
    seen = Seen()
    await run_suite(tmp_path / "suite", RunOptions(engine="oracle", families=["qwen"], strategies=["json_schema"], max_tokens=given), RunPlace(out=out), lambda total, done: seen)
    # The progress heard of every sample, and of why each failed, as it finished.
    assert seen.starts == [f"{c.id}/qwen/json_schema/1" for c in suite.cases[:2]] == [r for r, _ in seen.ends]
    assert {failure for _, failure in seen.ends} == {"length:max_tokens"}
    log = (out / "run.log").read_text()
    assert f"token bound: {given or in_suite} per model response ({source})" in log and "oracle: ready in" in log
    run = read_run(out)
    assert (run.options.max_tokens, run.max_tokens_source) == (given or in_suite, source)
    for sample in load_samples(out / "samples.jsonl").samples.values():
        assert [step.finish_reason for step in sample.steps] == ["length"]
        assert len(sample.steps[0].stats.mask_us) == run.options.max_tokens  # type: ignore[union-attr]
    rows = summary(out)
    assert rows[("qwen", "json_schema", "truncated")].value == 1.0
    assert rows[("qwen", "json_schema", "validity")].value == 0.0
    assert {(e.error_kind, e.count) for e in read_errors(out)} == {
        ("length:max_tokens", 2)}


def test_every_sample_is_saved_once_with_its_transcript(smoke_run: Path) -> None:
    samples = load_samples(smoke_run / "samples.jsonl").samples
    assert len(samples) == len(load_suite(SMOKE).cases) * 2 * 4
    one = next(iter(samples.values()))
    step = one.steps[0]
    assert one.status == "ok" and step.tool_calls and step.tool_results
    assert (step.tool_results[0].duration_us or 0) > 0
    run = read_run(smoke_run)
    assert run.options.engine == "oracle" and "measures grammars, not a model" in run.engine_note
    assert run.versions.xgrammar and run.finished_at and run.bundle == "bundles/shellper"


def test_rescoring_gives_the_same_scores(smoke_run: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(smoke_run, copy)
    (copy / "scores.parquet").unlink()
    (copy / "summary.json").unlink()
    result = CliRunner().invoke(app, ["score", str(copy), "--suite", str(SMOKE)])
    assert result.exit_code == 0, result.output
    assert scores_by_key(copy) == scores_by_key(smoke_run)
    assert read_summary(copy) == read_summary(smoke_run)


def test_matrix_options_select_families_strategies_cases_and_epochs(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "run", str(SMOKE), "--engine", "oracle", "--family", "qwen", "--strategy", "none,json_schema",
        "--limit", "2", "--epochs", "2", "--out", str(out),
    ])
    assert result.exit_code == 0, result.output
    first_two = [c.id for c in load_suite(SMOKE).cases[:2]]
    expected = {f"{c}/qwen/{s}/{e}" for c in first_two for s in ("none", "json_schema") for e in (1, 2)}
    assert set(load_samples(out / "samples.jsonl").samples) == expected
    run = read_run(out)
    assert (run.options.families, run.options.strategies, run.options.epochs, run.options.limit) == (("qwen",), ("none", "json_schema"), 2, 2)


def test_bad_options_are_clear_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", str(SMOKE), "--engine", "oracle", "--family", "llama",
                                      "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "harness run: error: Invalid value for '--family': unknown 'llama'" in result.output
    assert not (tmp_path / "x").exists()


async def test_a_run_directory_with_samples_is_not_overwritten(smoke_run: Path) -> None:
    with pytest.raises(RunError, match="--resume"):
        await run_suite(SMOKE, RunOptions(engine="oracle"), RunPlace(out=smoke_run))


async def test_a_sample_over_its_time_bound_is_counted_as_sample_timeout(tmp_path: Path) -> None:
    spec = SMOKE, RunOptions(engine="oracle", families=["qwen"], strategies=["none"], limit=2, sample_timeout_s=1e-6), RunPlace(out=tmp_path / "t")
    await run_suite(*spec)
    samples = load_samples(tmp_path / "t" / "samples.jsonl").samples.values()
    assert {(s.status, s.error_kind) for s in samples} == {("error", "sample:timeout")}
    assert {v for (_, metric), v in scores_by_key(tmp_path / "t").items() if metric == "exact_match"} == {
        (0.0, "sample:timeout")
    }


@dataclass
class FlakyOracle:
    """TEST DOUBLE around the real oracle: each sample's first request fails with model:timeout."""

    inner: RunEngine
    failed: set[str] = field(default_factory=set)

    def __getattr__(self, name: str) -> Any:  # name, note, base_url, model_id, prepare, aclose
        return getattr(self.inner, name)

    def client_for(self, context: SampleContext) -> LLMClient:
        inner = self.inner.client_for(context)
        failed = self.failed
        sample = context.gold[0][0].id  # the case's gold call id: one per next-call case

        class Client:
            async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
                if sample not in failed:
                    failed.add(sample)
                    raise ModelCallError("model:timeout", "test double: first request times out")
                return await inner.chat_completion(request)

            async def aclose(self) -> None:
                await inner.aclose()

        return Client()


def flaky_oracle(options: RunOptions, context: EngineContext) -> tuple[Any, list[str] | None]:
    engine, families = open_engine(options, context)
    return FlakyOracle(engine), families


async def test_a_model_timeout_is_retried_once(tmp_path: Path) -> None:
    spec = SMOKE, RunOptions(engine="oracle", families=["qwen"], strategies=["ebnf"], limit=2), RunPlace(out=tmp_path / "f")
    await run_suite(*spec, open_engine=flaky_oracle)
    samples = list(load_samples(tmp_path / "f" / "samples.jsonl").samples.values())
    assert [(s.status, s.attempts) for s in samples] == [("ok", 2), ("ok", 2)]



@dataclass
class SlowStartingOracle:
    """TEST DOUBLE around the real oracle, standing for a server that takes a while to start and whose
    answers the harness audits: its ``prepare`` returns only once the harness has compiled each
    constrained lane's grammar, which a run does while it waits (a warm-up after the start deadlocks)."""

    inner: RunEngine
    compiled: threading.Event
    audits_answers: bool = True

    def __getattr__(self, name: str) -> Any:  # name, note, base_url, model_id, client_for, aclose
        return getattr(self.inner, name)

    def prepare(self, families: list[str]) -> None:
        assert self.compiled.wait(30), "the lanes' grammars were not compiled while the engine started"
        self.inner.prepare(families)


async def test_the_harness_warms_its_grammars_while_the_engine_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.grammar

    real, seen, compiled = harness.grammar.compile_artifact, [], threading.Event()

    def compile_artifact(artifact: Any, family: str, **kw: Any) -> Any:
        seen.append((family, artifact.kind))
        if len(seen) == 3:  # ebnf, structural_tag, json_schema
            compiled.set()
        return real(artifact, family, **kw)

    monkeypatch.setattr(harness.grammar, "compile_artifact", compile_artifact)

    def opener(options: RunOptions, context: EngineContext) -> tuple[Any, list[str] | None]:
        engine, families = open_engine(options, context)
        return SlowStartingOracle(engine, compiled), families

    options = RunOptions(engine="oracle", families=["qwen"], strategies=["ebnf", "structural_tag", "json_schema"], limit=1)
    await run_suite(SMOKE, options, RunPlace(out=tmp_path / "w"), open_engine=opener)
    assert len(set(seen[:3])) == 3, seen  # one grammar per lane, all before the engine was ready
    samples = load_samples(tmp_path / "w" / "samples.jsonl").samples.values()
    assert [s.status for s in samples] == ["ok"] * 3

def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HARNESS, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def _assert_same_as_reference(run_dir: Path, reference: Path) -> None:
    ids = [json.loads(x)["sample_id"] for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)), "a sample was saved twice"
    assert set(ids) == set(load_samples(reference / "samples.jsonl").samples), "a sample was lost"
    assert scores_by_key(run_dir) == scores_by_key(reference)


@pytest.mark.slow
def test_a_run_killed_mid_way_resumes_without_losing_or_repeating_samples(tmp_path: Path) -> None:
    args = ["run", str(SMOKE), "--engine", "oracle", "--strategy", "none,ebnf", "--epochs", "10", "--concurrency", "1"]
    reference = tmp_path / "reference"
    assert _cli(*args, "--out", str(reference)).returncode == 0
    out = tmp_path / "killed"
    proc = subprocess.Popen([*HARNESS, *args, "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = out / "samples.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if samples.exists() and samples.read_bytes().count(b"\n") >= 5:
            break
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = samples.read_bytes().count(b"\n")
    total = len(load_samples(reference / "samples.jsonl").samples)
    assert 5 <= saved < total, f"the kill came too late to test anything ({saved}/{total} saved)"
    resumed = _cli(*args, "--out", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    _assert_same_as_reference(out, reference)


def test_a_torn_last_line_is_cut_off_and_its_sample_run_again(smoke_run: Path, tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "torn"
    shutil.copytree(smoke_run, out)
    lines = (out / "samples.jsonl").read_text().splitlines(keepends=True)
    # as a kill leaves it: the last 3 samples never written, the one before written half
    (out / "samples.jsonl").write_text("".join(lines[:-4]) + lines[-4][: len(lines[-4]) // 2])
    result = CliRunner().invoke(app, ["run", str(SMOKE), "--engine", "oracle", "--out", str(out), "--resume"])
    assert result.exit_code == 0, result.output
    assert f"4 samples run ({len(lines) - 4} resumed" in result.output
    _assert_same_as_reference(out, smoke_run)


@pytest.fixture
def oracle_server() -> Any:
    """``harness serve --engine oracle`` on a free port of 127.0.0.1 (a real HTTP server)."""
    import re

    proc = subprocess.Popen([*HARNESS, "serve", "--engine", "oracle", "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    url = None
    deadline = time.monotonic() + 120
    while url is None and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        found = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
        url = found.group(1) if found else None
    try:
        assert url, "the server did not start"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow  # starts harness serve (~7 s)
async def test_the_openai_engine_runs_through_a_real_server(oracle_server: str, tmp_path: Path) -> None:
    # The served model is an oracle: each request carries its gold answer, so every point must pass
    # through HTTP, the server's tool-call parsing and the client's, with nothing measured twice.
    spec = SMOKE, RunOptions(engine="openai", base_urls=[oracle_server], model="oracle-function_gemma", strategies=["none", "ebnf"], limit=3), RunPlace(out=tmp_path / "http")
    outcome = await run_suite(*spec)
    assert outcome.errors == 0
    rows = summary(tmp_path / "http")
    for strategy in ("none", "ebnf"):
        assert rows[("function_gemma", strategy, "exact_match")].value == 1.0
        assert ("function_gemma", strategy, "latency_ms_p50") in rows
        # a client cannot see the server's masks or grammar rejections: left out, not zero
        assert ("function_gemma", strategy, "mask_us_p50") not in rows
        assert ("function_gemma", strategy, "grammar_rejection") not in rows
    run = read_run(tmp_path / "http")
    assert (run.options.engine, run.model, run.base_url) == ("openai", "oracle-function_gemma", oracle_server)
    assert run.options.families == ("function_gemma",)  # read from the model id
    assert ("function_gemma", "ebnf", "ttft_ms_p50") in rows and ("function_gemma", "ebnf", "ms_per_token_p50") in rows
    # The report of a server run: what a client measured, named as the openai engine's.
    from harness.eval.report import write_report

    md = write_report([tmp_path / "http"], tmp_path / "report").read_text()
    assert "## Run http (openai)" in md and "ttft p50 (ms)" in md and "ms/token p50" in md
    assert "### Mask time per fill\n\nNot drawn: no engine of these runs measures its own masks" in md
    assert (tmp_path / "report" / "report.html").is_file()


@pytest.mark.parametrize("strategy", ["none", "ebnf", "structural_tag", "json_schema"])
async def test_episodes_run_turn_by_turn_with_the_tools_executed(tmp_path: Path, strategy: str) -> None:
    # Under every constrained strategy the grammar must let a turn end with a plain answer.
    episodes = ROOT / "suites" / "fs-episodes"
    spec = episodes, RunOptions(engine="oracle", strategies=[strategy], limit=3), RunPlace(out=tmp_path / "ep")
    await run_suite(*spec)
    rows = summary(tmp_path / "ep")
    for family in ("function_gemma", "qwen"):
        for metric in ("validity", "exact_match", "state_match"):
            got = rows[(family, strategy, metric)]
            assert (got.value, got.n) == (1.0, 3), (family, metric)
    cases = {c.id: c for c in load_suite(episodes).cases}
    for sample in load_samples(tmp_path / "ep" / "samples.jsonl").samples.values():
        case = cases[sample.case_id]
        # one step per gold call, then a text answer, per user turn; every call really executed
        assert [step.turn for step in sample.steps] == [
            i for i, gold in enumerate(case.ground_truth) for _ in range(len(gold) + 1)  # type: ignore[union-attr]
        ]
        assert all(len(step.tool_results) == len(step.tool_calls) for step in sample.steps)
        assert sample.max_steps_turns == ()


async def test_the_run_takes_the_bundles_road(tmp_path: Path) -> None:
    # The bundle's kernel.max_steps bounds each user turn of an episode (the run used to use 20), and a
    # turn whose last allowed step still calls a tool ends the episode (BFCL's force quit).
    import yaml

    bundle = yaml.safe_load((ROOT / "bundles" / "shellper" / "bundle.yaml").read_text())
    bundle["tools_dir"] = str(ROOT / "bundles" / "shellper" / "tools")
    bundle["kernel"]["max_steps"] = 1
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "bundle.yaml").write_text(yaml.safe_dump(bundle))
    episodes = ROOT / "suites" / "fs-episodes"
    suite = yaml.safe_load((episodes / "suite.yaml").read_text())
    suite["bundle"] = str(tmp_path / "b")
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "suite.yaml").write_text(yaml.safe_dump(suite))
    (tmp_path / "s" / "cases.jsonl").write_text((episodes / "cases.jsonl").read_text().splitlines()[0] + "\n")
    spec = tmp_path / "s", RunOptions(engine="oracle", families=["qwen"], strategies=["none"]), RunPlace(out=tmp_path / "r")
    await run_suite(*spec)
    assert read_run(tmp_path / "r").options.max_steps_per_turn == 1
    (sample,) = load_samples(tmp_path / "r" / "samples.jsonl").samples.values()
    assert [step.turn for step in sample.steps] == [0]  # one model call, and no later turn
    assert sample.max_steps_turns == (0,)  # turn 0 has gold calls: the model was cut off after one


STRATEGIES = ["none", "ebnf", "structural_tag", "json_schema"]


async def test_imported_upstream_files_replay_perfectly_under_every_strategy(tmp_path: Path) -> None:
    # The bar: imported data run with the oracle scores 1.0; a grammar that rejects a gold
    # answer is a bug, not a score.
    from harness.bfcl import import_bfcl
    from harness.eval.data import import_shellper

    data = ROOT / "tests" / "data"
    import_bfcl(data / "bfcl_fs_sample.json", data / "bfcl_fs_sample_answers.json", tmp_path / "bfcl")
    import_shellper(data / "shellper_sample.jsonl", tmp_path / "shellper")
    checks = {"bfcl": ("validity", "exact_match", "state_match"), "shellper": ("validity", "exact_match")}
    for name, metrics in checks.items():
        out = tmp_path / f"{name}-run"
        await run_suite(tmp_path / name, RunOptions(engine="oracle", strategies=STRATEGIES), RunPlace(out=out))
        rows = summary(out)
        for family in ("function_gemma", "qwen"):
            for strategy in STRATEGIES:
                for metric in metrics:
                    assert rows[(family, strategy, metric)].value == 1.0, (name, family, strategy, metric)
        if name == "shellper":  # no file system in SHELLper's data: not applicable, so left out
            assert ("function_gemma", "none", "state_match") not in rows


# echo_mode -> (the gold echo's tool output in the run, why a sample that only runs pwd fails state_match)
ECHO_MODES = {
    # gold fails: the tree is unchanged, but pwd does not answer what the gold call answered
    "overwrite": ({"error": "echo: cannot write to 'log.txt': No such file"}, "state:response_missing"),
    "append": (None, "state:tree_differs"),  # gold creates log.txt; pwd does not
}


@pytest.mark.parametrize("mode", sorted(ECHO_MODES))
async def test_the_suites_echo_mode_reaches_the_run_and_the_scoring(tmp_path: Path, mode: str) -> None:
    from harness.eval.data import NextCallCase, SuiteSpec, write_suite
    from harness.eval.score import score_run

    case = NextCallCase.model_validate({
        "id": "p1", "messages": [{"role": "user", "content": "log 'b'"}],
        "expected": {"name": "echo", "arguments": {"content": "b", "file_name": "log.txt"}},
        "initial_fs": {"root": {"home": {"type": "directory", "contents": {}}}},
    })
    spec = SuiteSpec(name="echo", version="1", kind="next_call", bundle=str(ROOT / "bundles" / "shellper"),
                     families=["qwen"], strategies=["none"], echo_mode=mode)  # type: ignore[arg-type]
    write_suite(tmp_path / "suite", spec, [case])
    out = tmp_path / "run"
    await run_suite(tmp_path / "suite", RunOptions(engine="oracle"), RunPlace(out=out))
    tool_output, pwd_failure = ECHO_MODES[mode]
    (sample,) = load_samples(out / "samples.jsonl").samples.values()
    (step,) = sample.steps
    assert step.tool_results[0].output == tool_output
    pwd_only = step.model_copy(update={"tool_calls": (CallRecord(name="pwd", arguments={}),)})
    (out / "samples.jsonl").write_text(sample_line(sample.model_copy(update={"steps": (pwd_only,)})))
    await score_run(out)
    (state,) = [row for row in read_scores(out) if row.metric == "state_match"]
    assert (state.value, state.error_kind) == (0.0, pwd_failure)


# (bundle, max_steps_per_turn, force-quit user turns recorded, state_match) for an episode whose first
# turn has 3 gold calls: the oracle answers one call a response under shellper, all three in one
# response under bfcl (several calls a response), then a plain answer. A step is one model call, the
# closing answer included; None takes the bundle's kernel.max_steps (bfcl: BFCL's 20 + 1).
STEP_LIMITS = [
    ("shellper", 4, (), (1.0, None)),  # 3 calling responses and the answer: at the bound, the turn ends
    ("shellper", 3, (0,), (0.0, "state:force_terminated")),  # the last allowed response calls: BFCL's force quit
    ("bfcl", 2, (), (1.0, None)),  # BFCL counts responses, not calls
    ("bfcl", None, (), (1.0, None)),
]


@pytest.mark.parametrize(("bundle", "max_steps", "forced", "state"), STEP_LIMITS)
async def test_the_step_bound_counts_responses_and_ends_the_episode_like_bfcl(
    tmp_path: Path, bundle: str, max_steps: int | None, forced: tuple[int, ...], state: tuple[float, str | None]
) -> None:
    from harness.eval.data import EpisodeCase, SuiteSpec, write_suite

    mk = [{"name": "mkdir", "arguments": {"dir_name": n}} for n in ("a", "b", "c")]
    case = EpisodeCase.model_validate({
        "id": "e1", "turns": [[{"role": "user", "content": "make a, b, c"}], [{"role": "user", "content": "list"}]],
        "ground_truth": [mk, [{"name": "ls", "arguments": {}}]],
        "initial_fs": {"root": {"home": {"type": "directory", "contents": {}}}},
    })
    spec = SuiteSpec(name="steps", version="1", kind="episode", bundle=str(ROOT / "bundles" / bundle),
                     families=["qwen"], strategies=["ebnf"])
    write_suite(tmp_path / "suite", spec, [case])
    out = tmp_path / "run"
    await run_suite(tmp_path / "suite", RunOptions(engine="oracle", max_steps_per_turn=max_steps), RunPlace(out=out))
    assert read_run(out).options.max_steps_per_turn == (max_steps or 21)
    (sample,) = load_samples(out / "samples.jsonl").samples.values()
    assert sample.max_steps_turns == forced
    if forced:  # the episode ended in the turn that ran over: turn 1 never started
        assert {step.turn for step in sample.steps} == {0}
    (scores,) = [v for (sid, metric), v in scores_by_key(out).items() if metric == "state_match"]
    assert scores == state
