"""No string from a BFCL suite or a model's answer runs as code (docs/bfcl-multi-turn.md, "Calls are
data"): BFCL's executor ``eval``s call strings, the worker's reads them with ``ast``. Each hostile
string here would create a marker file if it ran; each test asserts the file is not there and that
the string ended as a named error. BFCL's verdicts on ordinary answers are unchanged: that is
``test_bfcl_multi_turn.py``'s and ``test_bfcl_fidelity.py``'s differential tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker",
    reason="BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23",
)

from typer.testing import CliRunner

from harness.bfcl import import_bfcl
from harness.bfcl.data import category_files
from harness.cli.main import app
from harness.eval.data import CallSpec, EpisodeCase, load_suite
from harness.eval.store import read_scores
from tests.engines.faulty_server import GOOD_STREAM, chunk, faulty_server, sse
from tests.eval.test_bfcl_multi_turn import state_verdict

ENTRY = "multi_turn_base_0"
"""TwitterAPI and GorillaFileSystem, four turns."""


def code(marker: Path) -> str:
    """Python that creates ``marker`` where it runs."""
    return f"__import__('os').system('touch {marker}')"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One BFCL entry imported from a file (with its bundle of BFCL's classes)."""
    folder = tmp_path_factory.mktemp("bfcl-one")
    questions, answers = category_files("base")
    for source, name in ((questions, "q.json"), (answers, "a.json")):
        line = next(line for line in source.read_text().splitlines() if json.loads(line)["id"] == ENTRY)
        (folder / name).write_text(line + "\n")
    import_bfcl(folder / "q.json", folder / "a.json", folder / "suite")
    return folder / "suite"


@pytest.fixture(scope="module")
def source(suite: Path) -> Any:
    from harness.bundles import bundle_source

    return bundle_source(suite / "bundle")[1]


def scorer(source: Any, case: EpisodeCase) -> Any:
    from harness.eval.score import Scorer

    return Scorer([case], [t.schema for t in source.tools], "oracle", source)


def the_case(suite: Path) -> EpisodeCase:
    (case,) = load_suite(suite).episode_cases()
    return case


def with_gold_string(suite: Path, out: Path, text: str) -> Path:
    """A copy of the suite whose case has ``text`` appended to turn 0 of its BFCL ground truth."""
    import shutil

    shutil.copytree(suite, out)
    case = json.loads((out / "cases.jsonl").read_text())
    case["bfcl_ground_truth"][0].append(text)
    (out / "cases.jsonl").write_text(json.dumps(case) + "\n")
    return out


# -- a suite's ground truth --------------------------------------------------------------------------


async def test_a_gold_string_that_is_code_is_an_error_result(suite: Path, source: Any, tmp_path: Path) -> None:
    """Past validate (a scorer given the case): BFCL's checker in the worker runs the gold strings
    through the ast executor; the string is an error result, so the model's right answer misses it."""
    marker = tmp_path / "X"
    case = the_case(suite)
    truth = [list(t) for t in case.bfcl_ground_truth or []]
    truth[0].append(code(marker))
    hostile = case.model_copy(update={"bfcl_ground_truth": truth})
    verdict = await state_verdict(scorer(source, hostile), hostile, case.ground_truth, 1)
    assert not marker.exists()
    assert verdict == (0.0, "bfcl:multi_turn:execution_response_mismatch")
    assert await state_verdict(scorer(source, case), case, case.ground_truth, 2) == (1.0, None)


@pytest.mark.parametrize(("text", "said"), [
    ("__import__('os').system('touch {marker}')", "expected a call of a plain name"),
    ("mkdir(dir_name=__import__('os').system('touch {marker}'))", "not a literal"),
    ("no_such_function(a=1)", "unknown tool 'no_such_function'"),
    ("cd", "expected a call of a plain name"),
])
def test_validate_and_run_refuse_a_gold_string_that_is_not_a_call(suite: Path, tmp_path: Path, text: str,
                                                                   said: str) -> None:
    """validate lists it (exit 1, its code for a suite with problems) naming the case, the turn and the
    string; run refuses the suite (exit 2) before any sample runs."""
    marker = tmp_path / "X"
    text = text.format(marker=marker)
    hostile = with_gold_string(suite, tmp_path / "hostile", text)
    result = CliRunner().invoke(app, ["validate", str(hostile)])
    assert result.exit_code == 1, result.output
    assert f"bfcl_ground_truth[0][3]: case {ENTRY!r}, turn 0: {text!r} is not a call of a known function" in result.output
    assert said in result.output
    result = CliRunner().invoke(app, ["run", str(hostile), "--engine", "oracle", "--family", "qwen", "--strategy",
                                      "ebnf", "--max-tokens", "256", "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "bfcl_ground_truth[0][3]" in result.output, result.output
    assert not marker.exists()


@pytest.mark.parametrize(("field", "value", "said"), [
    ("expected_state", {"GorillaFileSystem": {"root": {}}}, "expected_state: a case with bfcl_ground_truth is judged "
                                                          "by BFCL's checker"),
    ("initial_config", {"GorillaFileSystem": "x"}, "initial_config.GorillaFileSystem: Input should be a valid "
                                                   "dictionary"),
])
def test_validate_and_run_refuse_a_field_the_checker_would_ignore_or_misread(
    suite: Path, tmp_path: Path, field: str, value: Any, said: str,
) -> None:
    """A field BFCL's checker would not read (an expected state) or an initial state that is not one is
    named in validate (exit 1) and run (exit 2), never run past in silence."""
    import shutil

    hostile = tmp_path / "hostile"
    shutil.copytree(suite, hostile)
    case = json.loads((hostile / "cases.jsonl").read_text())
    case[field] = value
    (hostile / "cases.jsonl").write_text(json.dumps(case) + "\n")
    result = CliRunner().invoke(app, ["validate", str(hostile)])
    assert result.exit_code == 1 and said in result.output, result.output
    result = CliRunner().invoke(app, ["run", str(hostile), "--engine", "oracle", "--family", "qwen", "--strategy",
                                      "ebnf", "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and said in result.output, result.output
    assert not (tmp_path / "run").exists()


def test_validate_passes_the_imported_suite(suite: Path) -> None:
    result = CliRunner().invoke(app, ["validate", str(suite)])
    assert result.exit_code == 0, result.output


# -- a model's answer ----------------------------------------------------------------------------------


def hostile_key(marker: Path) -> str:
    """An argument key that makes ``ls(KEY=True)`` run ``code(marker)`` where it is ``eval``'d."""
    return f"a={code(marker)},b"


async def test_a_models_key_that_is_code_is_a_named_error(suite: Path, source: Any, tmp_path: Path) -> None:
    """In the run, the call is ``tool:bad_arguments``; in scoring, the verdict is ``state:bad_call``."""
    from harness.eval.data import session_setup

    marker = tmp_path / "X"
    case = the_case(suite)
    session = await source.open(session_setup(case))
    try:
        output, kind, message = await session.run("ls", {hostile_key(marker): True})
    finally:
        await session.close()
    assert (output, kind) == (None, "tool:bad_arguments") and "not a Python call" in str(message)
    calls = [[CallSpec(name="ls", arguments={hostile_key(marker): True}), *case.ground_truth[0]], *case.ground_truth[1:]]
    assert await state_verdict(scorer(source, case), case, calls, 3) == (0.0, "state:bad_call")
    assert not marker.exists()


async def test_the_worker_reads_a_spliced_call_as_data(suite: Path, source: Any, tmp_path: Path) -> None:
    """Were a key spliced into a call string (as BFCL's own decoding does), BFCL's checker in the worker
    still runs nothing: the call is that step's error result, and the verdict BFCL's."""
    from harness.bfcl.multi_verdict import bfcl_entry

    marker = tmp_path / "X"
    case = the_case(suite)
    model = [[[f"ls({hostile_key(marker)}=True)"]], *[[list(turn)] for turn in case.bfcl_ground_truth or []][1:]]
    valid, error = await source.check("bfcl", bfcl_entry(case), model, case.bfcl_ground_truth or [])
    assert not marker.exists()
    assert (valid, error) == (False, "multi_turn:instance_state_mismatch")


def test_a_server_answering_a_key_that_is_code_runs_nothing(suite: Path, tmp_path: Path) -> None:
    """The red team's run: an OpenAI-compatible server answers one call ``ls`` with the key."""
    marker, out = tmp_path / "X", tmp_path / "run"
    arguments = json.dumps({hostile_key(marker): True})
    call = {"index": 0, "id": "t1", "type": "function", "function": {"name": "ls", "arguments": arguments}}
    answer = sse(chunk({"role": "assistant", "tool_calls": [call]}), chunk(finish="tool_calls"))
    with faulty_server(answer, times=1, after=GOOD_STREAM, healthy_first=1) as server:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli.main", "run", str(suite), "--engine", "openai", "--base-url",
             server.base_url, "--model", "m", "--family", "qwen", "--strategy", "none", "--limit", "1",
             "--max-tokens", "256", "--out", str(out)],
            capture_output=True, text=True, timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    (sample,) = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    results = [r for step in sample["steps"] for r in step["tool_results"]]
    assert results and results[0]["error_kind"] == "tool:bad_arguments"
    (state,) = [row for row in read_scores(out) or () if row.metric == "state_match"]
    assert (state.value, state.error_kind) == (0.0, "state:bad_call")
