"""BFCL's categories imported from its package and scored as BFCL scores them, checked against BFCL's
own code: its loader (long-context file systems), its miss_func protocol, its multi-turn checker, and
gold replay of every GorillaFileSystem-only entry under every family and strategy."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker",
    reason="BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23",
)

from bfcl_eval.constants.default_prompts import (
    DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
    MAXIMUM_STEP_LIMIT,
)
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_side import CATEGORIES, FsEntry, fs_only_entries

from harness.bfcl import BFCL_ADDED_TOOLS_PROMPT, import_bfcl
from harness.eval.data import CallSpec, EpisodeCase, load_suite
from harness.eval.run import RunOptions, RunPlace, run_suite
from harness.eval.store import SampleRecord, read_summary
from harness.sandbox import FileSystemState

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "bundles" / "bfcl"
STRATEGIES = ["none", "ebnf", "structural_tag", "json_schema"]


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each category imported by name from the installed package, with the bfcl bundle."""
    out = tmp_path_factory.mktemp("bfcl")
    for category in CATEGORIES:
        import_bfcl(category, None, out / category, bundle=str(BUNDLE), file_system_only=True)
    return {c: out / c for c in CATEGORIES}


@pytest.fixture(scope="module")
def cases(suites: dict[str, Path]) -> dict[str, EpisodeCase]:
    return {c.id: c for path in suites.values() for c in load_suite(path).episode_cases()}


@pytest.fixture(scope="module")
def entries() -> list[FsEntry]:
    return fs_only_entries()


def test_bfcls_modules_load_without_its_declared_dependencies() -> None:
    """Installed with ``--no-deps``: the modules the harness and these tests use import the stdlib
    only, not the numpy, SDKs and pins bfcl-eval declares."""
    code = (
        "import sys; before = set(sys.modules); "
        "import bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker, "
        "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.gorilla_file_system, "
        "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.long_context, "
        "bfcl_eval.constants.type_mappings, bfcl_eval.constants.default_prompts; "
        "print(sorted({m.split('.')[0] for m in set(sys.modules) - before} - set(sys.stdlib_module_names) - {'bfcl_eval'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_file_system_entry_is_imported(entries: list[FsEntry], cases: dict[str, EpisodeCase]) -> None:
    assert sorted(cases) == sorted(e.id for e in entries)
    assert len(cases) == 52  # 13 in each of the four categories


def test_initial_states_are_what_bfcls_loader_builds(entries: list[FsEntry], cases: dict[str, EpisodeCase]) -> None:
    """Long-context entries expanded as BFCL's own loader expands them (30 image files in each
    directory without subdirectories, a block of text after most files), the others as they are."""
    for entry in entries:
        imported = FileSystemState.from_nodes(cases[entry.id].initial_fs.to_nodes())
        assert imported.root_name == entry.state.root_name
        assert json.dumps(imported.tree) == json.dumps(entry.state.tree), entry.id  # insertion order too


def test_miss_func_adds_the_held_out_tools_at_bfcls_turn(entries: list[FsEntry], cases: dict[str, EpisodeCase]) -> None:
    assert BFCL_ADDED_TOOLS_PROMPT == DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
    missed = [e for e in entries if e.entry.get("missed_function")]
    assert len(missed) == 13
    for entry in missed:
        case = cases[entry.id]
        assert case.held_out_tools == {int(t): names for t, names in entry.entry["missed_function"].items()}
        for turn in case.held_out_tools:
            assert [m.content for m in case.turns[turn]] == [BFCL_ADDED_TOOLS_PROMPT]


def test_the_bfcl_bundle_bounds_a_turn_as_bfcl_does() -> None:
    """BFCL executes up to MAXIMUM_STEP_LIMIT responses with calls a user turn and takes one more: a
    plain answer ends the turn, calls force the episode to quit. A step is one model call, so that is
    one more step than BFCL's figure (the force quit is ``test_runner``'s step-bound test)."""
    from harness.bundles import load_bundle

    config = load_bundle(BUNDLE)
    assert config.kernel.max_steps == MAXIMUM_STEP_LIMIT + 1
    assert config.constraint.allow_parallel_calls  # BFCL counts responses, each may hold many calls


def test_cli_imports_a_category_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from harness.cli.main import app

    monkeypatch.chdir(ROOT)  # the bare bundle name resolves to ./bundles/bfcl
    result = CliRunner().invoke(app, ["import", "bfcl", "long_context", "--out", str(tmp_path / "lc"),
                                      "--file-system-only", "--bundle", "bfcl"])
    assert result.exit_code == 0, result.output
    assert "wrote 13 cases" in result.output and "13 long-context (states loaded as BFCL loads them)" in result.output
    result = CliRunner().invoke(app, ["import", "bfcl", "long_context", "--out", str(tmp_path / "all")])
    assert result.exit_code == 0, result.output
    assert "wrote 200 cases" in result.output and "200 long-context" in result.output


# -- state_match against BFCL's multi-turn checker --------------------------------------------------------

Turns = list[list[CallSpec]]
UP = CallSpec(name="cd", arguments={"folder": ".."})
LS = CallSpec(name="ls", arguments={})
MKDIR = CallSpec(name="mkdir", arguments={"dir_name": "extra_dir"})


def _last_busy(gold: Turns) -> int:
    return max(t for t, calls in enumerate(gold) if calls)


def _early(gold: Turns) -> Turns:
    """The calls of the last turn with calls made one turn early (that turn is left empty)."""
    t = _last_busy(gold)
    out = [list(c) for c in gold]
    if t > 0:
        out[t - 1] += out[t]
        out[t] = []
    return out


def _idle(gold: Turns) -> Turns:
    """``ls`` in every turn without ground truth (miss_param, miss_func), else in the first turn."""
    idle = [t for t, calls in enumerate(gold) if not calls] or [0]
    return [[*calls, LS] if t in idle else list(calls) for t, calls in enumerate(gold)]


VARIANTS = {
    "gold": lambda gold, rng: gold,
    "drop-last": lambda gold, rng: [c[:-1] if t == _last_busy(gold) else c for t, c in enumerate(gold)],
    "extra-cd-up": lambda gold, rng: [[*c, UP] if t == _last_busy(gold) else c for t, c in enumerate(gold)],
    "extra-mkdir": lambda gold, rng: [[MKDIR, *c] if t == 0 else c for t, c in enumerate(gold)],
    "early": lambda gold, rng: _early(gold),
    "idle-ls": lambda gold, rng: _idle(gold),
    "shuffled": lambda gold, rng: [rng.sample(c, len(c)) for c in gold],
}
"""The model's calls per turn, made from the ground truth: right, wrong, and right in BFCL's eyes."""


def python_call(call: CallSpec) -> str:
    return f"{call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())})"


def bfcl_verdict(entry: FsEntry, calls: Turns, run: int) -> bool:
    """BFCL's multi-turn checker on these calls (each turn's calls as one response)."""
    decoded = [[[python_call(c) for c in turn]] if turn else [] for turn in calls]
    category = entry.id.rsplit("_", 1)[0]
    # BFCL keeps its instances in module globals by model name and entry: a fresh name per check
    return bool(multi_turn_checker(decoded, entry.ground_truth, entry.entry, category, f"harness_{run}")["valid"])


def episode_sample(case: EpisodeCase, calls: Turns, n: int) -> SampleRecord:
    steps = [
        {"turn": t, "output": "", "tool_calls": [c.model_dump() for c in turn], "parse_errors": [],
         "tool_results": [], "latency_ms": 1.0, "ttft_ms": None, "usage": None, "stats": None}
        for t, turn in enumerate(calls)
    ]
    return SampleRecord.model_validate({
        "sample_id": f"{case.id}/{n}", "case_id": case.id, "family": "qwen", "strategy": "none", "epoch": n,
        "kind": "episode", "status": "ok", "error_kind": None, "error": None, "steps": steps,
        "duration_ms": 1.0, "harness_ms": 0.1,
    })


async def test_state_match_is_bfcls_multi_turn_verdict(entries: list[FsEntry], cases: dict[str, EpisodeCase]) -> None:
    from harness.agents.bundle import bundle_file
    from harness.bundles import load_bundle
    from harness.eval.score import Scorer
    from harness.sandbox import load_bundle_tools
    from harness.tools import PymSource

    file = bundle_file(BUNDLE)
    tools = load_bundle_tools(file, load_bundle(file))
    scorer = Scorer(cases.values(), [t.schema for t in tools], "oracle", PymSource(tools))
    rng = random.Random(5)
    disagree, verdicts = [], {True: 0, False: 0}
    for entry in entries:
        case = cases[entry.id]
        for name, make in VARIANTS.items():
            calls = make([list(t) for t in case.ground_truth], rng)
            n = len(disagree) + sum(verdicts.values())
            rows = await scorer.score(episode_sample(case, calls, n))
            ours = next(r for r in rows if r.metric == "state_match")
            theirs = bfcl_verdict(entry, calls, n)
            verdicts[theirs] += 1
            if (ours.value == 1.0) != theirs:
                disagree.append(f"{entry.id} {name}: here {ours.value} ({ours.error_kind}), BFCL valid={theirs}")
    assert not disagree, f"{len(disagree)} verdicts differ from BFCL's:\n" + "\n".join(disagree[:10])
    assert verdicts[True] >= 52 and verdicts[False] >= 52  # both verdicts are exercised


# -- gold replay ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("category", CATEGORIES)
async def test_gold_replay_scores_one_under_every_family_and_strategy(
    suites: dict[str, Path], tmp_path: Path, category: str
) -> None:
    """The issue's bar: BFCL's ground truth, replayed by the oracle through each grammar, passes every
    entry as it passes in BFCL (a 34-call turn too: the bfcl bundle allows several calls a response)."""
    out = tmp_path / "run"
    spec = suites[category], RunOptions(engine="oracle", families=["function_gemma", "qwen"], strategies=STRATEGIES), RunPlace(out=out)
    await run_suite(*spec)
    got = {(r.family, r.strategy, r.metric): (r.value, r.n) for r in read_summary(out)}
    for family in ("function_gemma", "qwen"):
        for strategy in STRATEGIES:
            for metric in ("validity", "exact_match", "state_match"):
                assert got[(family, strategy, metric)] == (1.0, 13), (category, family, strategy, metric)
            assert got[(family, strategy, "grammar_rejection")] == (0.0, 13)
