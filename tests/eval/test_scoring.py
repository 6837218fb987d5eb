"""Scoring on hand-made samples: every metric and every error kind, computed from saved records."""

from __future__ import annotations

from typing import Any

import pytest

from harness.eval.data import CallSpec, EpisodeCase, NextCallCase, builtin_fs_schemas
from harness.eval.score.scoring import Scorer, call_difference, same_value, unordered_subset
from harness.eval.store import CallRecord, SampleRecord

TREE = {
    "root": {
        "home": {
            "type": "directory",
            "contents": {
                "notes.txt": {"type": "file", "content": "alpha\nbeta\n"},
                "docs": {"type": "directory", "contents": {"a.md": {"type": "file", "content": "# A\n"}}},
            },
        }
    }
}


def next_case(expected: dict[str, Any], *, state_check: bool = True, **extra: Any) -> NextCallCase:
    return NextCallCase.model_validate({
        "id": "p1", "initial_fs": TREE, "messages": [{"role": "user", "content": "do it"}],
        "expected": expected, "state_check": state_check, **extra,
    })


STATS = {"compile_ms": None, "compile_cached": None, "mask_us": [], "accept_us": [], "generated_tokens": 1,
         "grammar_error": None}


def sample(calls: list[dict[str, Any]] | None = None, *, parse_errors: list[dict[str, str]] | None = None,
           status: str = "ok", error_kind: str | None = None, stats: dict[str, Any] | None = None,
           case_id: str = "p1", steps: list[dict[str, Any]] | None = None, strategy: str = "none") -> SampleRecord:
    """A sample record; its one step (or ``steps``) given as the JSON samples.jsonl holds."""
    if steps is None:
        steps = [{"output": "x", "tool_calls": calls or [], "parse_errors": parse_errors or [],
                  "tool_results": [], "latency_ms": 1.0, "ttft_ms": None, "usage": None,
                  "stats": None if stats is None else {**STATS, **stats}}]
    return SampleRecord.model_validate({
        "sample_id": f"{case_id}/qwen/{strategy}/1", "case_id": case_id, "family": "qwen", "strategy": strategy,
        "epoch": 1, "kind": "next_call", "status": status, "error_kind": error_kind, "error": None,
        "steps": steps, "duration_ms": 1.0, "harness_ms": 0.1,
    })


def scorer(*cases: Any, engine: str = "oracle", audited: bool = False) -> Scorer:
    return Scorer(cases, builtin_fs_schemas().values(), engine, None, audited=audited)


async def verdicts(s: Scorer, record: SampleRecord) -> dict[str, tuple[float | None, str | None]]:
    return {r.metric: (r.value, r.error_kind) for r in await s.score(record)}


def test_values_compare_as_json_not_as_python() -> None:
    assert same_value({"a": 1}, {"a": 1.0})
    assert not same_value({"a": True}, {"a": 1})  # True == 1 in Python; not for a tool argument
    assert not same_value({"a": "1"}, {"a": 1})
    assert not same_value({"a": [1, 2]}, {"a": [2, 1]})


def test_call_difference_names_the_first_difference() -> None:
    gold = [CallSpec(name="cat", arguments={"file_name": "a"})]
    assert call_difference([CallRecord(name="cat", arguments={"file_name": "a"})], gold) is None
    assert call_difference([], gold) == "exact:call_count"
    assert call_difference([CallRecord(name="ls", arguments={})], gold) == "exact:wrong_name"
    assert call_difference([CallRecord(name="cat", arguments={"file_name": "b"})], gold) == "exact:wrong_arguments"


def test_unordered_subset_uses_each_result_once() -> None:
    assert unordered_subset([{"a": 1}, "x"], ["x", {"a": 1}, "y"])
    assert not unordered_subset(["x", "x"], ["x", "y"])


async def test_a_correct_call_passes_validity_and_exact_match() -> None:
    s = scorer(next_case({"name": "cat", "arguments": {"file_name": "notes.txt"}}, state_check=False))
    v = await verdicts(s, sample([{"name": "cat", "arguments": {"file_name": "notes.txt"}}]))
    assert v == {"validity": (1.0, None), "exact_match": (1.0, None), "state_match": (None, None),
                 "grammar_rejection": (0.0, None), "truncated": (0.0, None)}  # oracle, none: no not_enforced


CUT_ERROR = [{"kind": "parse:unterminated_call", "message": "cut"}]
GOLD_CAT = {"name": "cat", "arguments": {"file_name": "notes.txt"}}
# (finish_reason, calls, parse errors) -> (validity, exact_match, truncated)
CUTS = [
    ("length", [], CUT_ERROR, (0.0, "length:max_tokens"), (0.0, "length:max_tokens"), (1.0, "length:max_tokens")),
    ("length", [], None, (0.0, "length:max_tokens"), (0.0, "length:max_tokens"), (1.0, "length:max_tokens")),
    # a clean call came out before the cut: scored as it is, and still counted as cut
    ("length", [GOLD_CAT], None, (1.0, None), (1.0, None), (1.0, "length:max_tokens")),
    ("stop", [], CUT_ERROR, (0.0, "parse:unterminated_call"), (0.0, "parse:unterminated_call"), (0.0, None)),
    (None, [GOLD_CAT], None, (1.0, None), (1.0, None), (0.0, None)),
]


@pytest.mark.parametrize(("finish", "calls", "errors", "validity", "exact", "truncated"), CUTS)
async def test_an_answer_cut_by_the_token_bound_has_its_own_kind(
    finish: str | None, calls: list[dict[str, Any]], errors: Any, validity: Any, exact: Any, truncated: Any
) -> None:
    record = sample(calls, parse_errors=errors)
    step = record.steps[0].model_copy(update={"finish_reason": finish})
    v = await verdicts(scorer(next_case(GOLD_CAT, state_check=False)), record.model_copy(update={"steps": (step,)}))
    assert (v["validity"], v["exact_match"], v["truncated"]) == (validity, exact, truncated)


async def test_a_sample_with_no_answer_is_not_counted_as_cut() -> None:
    v = await verdicts(scorer(next_case(GOLD_CAT, state_check=False)),
                       sample(status="error", error_kind="model:timeout", steps=[]))
    assert v["truncated"] == (None, None) and v["validity"] == (0.0, "model:timeout")


@pytest.mark.parametrize(
    ("calls", "parse_errors", "validity", "exact"),
    [
        ([], None, "parse:no_call", "parse:no_call"),
        ([], [{"kind": "parse:bad_arguments", "message": "not JSON"}], "parse:bad_arguments", "parse:bad_arguments"),
        ([{"name": "cat_file", "arguments": {"file_name": "notes.txt"}}], None, "validity:unknown_tool",
         "exact:wrong_name"),
        ([{"name": "cat", "arguments": {"file": "notes.txt"}}], None, "validity:schema", "exact:wrong_arguments"),
        ([{"name": "tail", "arguments": {"file_name": "notes.txt", "lines": "2"}}], None, "validity:schema",
         "exact:wrong_name"),
        ([{"name": "cat", "arguments": {"file_name": "x.txt"}}], None, None, "exact:wrong_arguments"),
        ([{"name": "cat", "arguments": {"file_name": "notes.txt", "force": True}}], None, "validity:schema",
         "exact:wrong_arguments"),  # an argument the tool does not declare (the sandbox refuses it too)
        ([{"name": "ls", "arguments": {}}], None, None, "exact:wrong_name"),
        ([{"name": "cat", "arguments": {"file_name": "notes.txt"}}] * 2, None, None, "exact:call_count"),
    ],
)
async def test_each_failure_has_its_error_kind(
    calls: list[dict[str, Any]], parse_errors: Any, validity: str | None, exact: str
) -> None:
    s = scorer(next_case({"name": "cat", "arguments": {"file_name": "notes.txt"}}, state_check=False))
    v = await verdicts(s, sample(calls, parse_errors=parse_errors))
    assert v["validity"] == ((0.0, validity) if validity else (1.0, None))
    assert v["exact_match"] == (0.0, exact)


BREAKS_SCHEMA = {"name": "tail", "arguments": {"file_name": "notes.txt", "lines": "2"}}


@pytest.mark.parametrize("strategy", ["none", "ebnf", "structural_tag", "json_schema"])
async def test_a_schema_breaking_call_under_a_constraint_is_the_constraints_failure(strategy: str) -> None:
    """The grammar let the call through: a constrained strategy's failure is named grammar:let_through, so a
    strategy comparison does not blame the model for a builder gap; unconstrained it is the model's."""
    s = scorer(next_case({"name": "cat", "arguments": {"file_name": "notes.txt"}}, state_check=False))
    record = sample([BREAKS_SCHEMA], strategy=strategy)
    kind = "validity:schema" if strategy == "none" else "grammar:let_through"
    assert (await verdicts(s, record))["validity"] == (0.0, kind)
    assert s.validity_of(record).error_kind == kind


@pytest.mark.parametrize(
    "arguments",
    [{"file_name": "a", "lines": 2}, {"file_name": "a", "lines": 2.0}, {"file_name": "a", "lines": 2.5},
     {"file_name": "a", "lines": True}, {"file_name": "a", "n": 1}, {"lines": 3}, {}],
)
def test_suite_checks_and_scores_agree_on_arguments(arguments: dict[str, Any]) -> None:
    from harness.eval.data import check_arguments

    tail = builtin_fs_schemas()["tail"]
    flagged = bool(check_arguments(CallSpec(name="tail", arguments=arguments), tail))
    assert flagged == (scorer().call_problem(CallRecord(name="tail", arguments=arguments)) is not None)


async def test_expected_alternatives_are_accepted() -> None:
    case = next_case({"name": "ls", "arguments": {}}, state_check=False,
                     expected_alternatives=[{"name": "ls", "arguments": {"a": False}}])
    v = await verdicts(scorer(case), sample([{"name": "ls", "arguments": {"a": False}}]))
    assert v["exact_match"] == (1.0, None)


@pytest.mark.parametrize("kind", ["model:timeout", "sample:timeout", "grammar:rejected_gold"])
async def test_a_failed_sample_fails_every_metric_with_its_kind(kind: str) -> None:
    s = Scorer([next_case({"name": "ls", "arguments": {}}, state_check=False)], builtin_fs_schemas().values(),
               "oracle", None)
    v = await verdicts(s, sample(status="error", error_kind=kind))
    assert v["validity"] == (0.0, kind) and v["exact_match"] == (0.0, kind)
    assert v["state_match"] == (None, None)  # no file system: still not applicable
    assert v["grammar_rejection"] == ((1.0, kind) if kind == "grammar:rejected_gold" else (0.0, None))


async def test_grammar_rejection_is_only_measured_by_the_oracle() -> None:
    case = next_case({"name": "ls", "arguments": {}}, state_check=False)
    record = sample([{"name": "ls", "arguments": {}}], stats={"grammar_error": None, "mask_us": [1.0]})
    assert (await verdicts(scorer(case, engine="openai"), record))["grammar_rejection"] == (None, None)
    rejected = sample([], stats={"grammar_error": "grammar:rejected_gold"})
    assert (await verdicts(scorer(case), rejected))["grammar_rejection"] == (1.0, "grammar:rejected_gold")


async def test_an_unknown_case_is_counted_not_skipped() -> None:
    v = await verdicts(scorer(next_case({"name": "ls", "arguments": {}})), sample([], case_id="gone"))
    assert v["validity"] == (0.0, "score:unknown_case")


def episode(ground_truth: list[list[dict[str, Any]]], **extra: Any) -> EpisodeCase:
    return EpisodeCase.model_validate({
        "id": "e1", "initial_fs": TREE,
        "turns": [[{"role": "user", "content": f"turn {i}"}] for i in range(len(ground_truth))],
        "ground_truth": ground_truth, **extra,
    })


def steps(*per_turn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One step per call, then a closing step, per user turn (how the runner records an episode)."""
    out: list[dict[str, Any]] = []
    for index, calls in enumerate(per_turn):
        for call in [*([c] for c in calls), []]:
            # the closing text answer carries the parser's parse:no_call, as the real parsers report it
            errors = [] if call else [{"kind": "parse:no_call", "message": "the answer holds no tool call"}]
            out.append({"turn": index, "output": "", "tool_calls": call, "parse_errors": errors,
                        "tool_results": [], "latency_ms": 1.0, "ttft_ms": None, "usage": None, "stats": None})
    return out


async def test_episode_exact_match_goes_turn_by_turn() -> None:
    gt = [[{"name": "cd", "arguments": {"folder": "docs"}}], [{"name": "cat", "arguments": {"file_name": "a.md"}}]]
    case = episode(gt)
    s = scorer(case)
    good = await verdicts(s, sample(steps=steps(*gt), case_id="e1"))
    assert good["validity"] == (1.0, None) and good["exact_match"] == (1.0, None)
    swapped = await verdicts(s, sample(steps=steps(gt[0] + gt[1], []), case_id="e1"))
    assert swapped["exact_match"] == (0.0, "exact:call_count")


async def test_episode_calls_to_an_excluded_tool_are_unknown() -> None:
    gt = [[{"name": "ls", "arguments": {}}]]
    case = episode(gt, excluded_tools=["ls"])
    v = await verdicts(scorer(case), sample(steps=steps(*gt), case_id="e1"))
    assert v["validity"] == (0.0, "validity:unknown_tool")


# -- state_match, with the bundle's real tools in the sandbox -----------------------------------------


@pytest.fixture(scope="module")
def sandbox_scorer_parts() -> tuple[Any, list[Any]]:
    from pathlib import Path

    from harness.bundles import load_agent
    from harness.tools import PymSource

    tools = load_agent(Path(__file__).resolve().parents[2] / "bundles" / "shellper").tools
    return PymSource(tools), [t.schema for t in tools]


def state_scorer(parts: tuple[Any, list[Any]], *cases: Any) -> Scorer:
    backend, schemas = parts
    return Scorer(cases, schemas, "oracle", backend)


@pytest.mark.parametrize(
    ("predicted", "expected"),
    [
        ({"name": "cat", "arguments": {"file_name": "a.md"}}, (1.0, None)),
        # read-only too (same tree, same directory) but not the answer the gold call gives: BFCL's response check
        ({"name": "ls", "arguments": {}}, (0.0, "state:response_missing")),
        ({"name": "cat", "arguments": {"file_name": "cat"}}, (0.0, "state:response_missing")),
        # an invalid answer achieves nothing, whatever the sandbox made of it
        ({"name": "cat", "arguments": {"file_name": "a.md", "lines": 3}}, (0.0, "validity:schema")),
        ({"name": "rm", "arguments": {"file_name": "a.md"}}, (0.0, "state:tree_differs")),
        ({"name": "cd", "arguments": {"folder": ".."}}, (0.0, "state:cwd_differs")),
    ],
)
async def test_next_call_state_replays_the_history_then_compares(
    sandbox_scorer_parts: tuple[Any, list[Any]], predicted: dict[str, Any], expected: tuple[float, str | None]
) -> None:
    case = next_case(
        {"name": "cat", "arguments": {"file_name": "a.md"}},
        messages=[{"role": "user", "content": "go to docs"},
                  {"role": "assistant", "tool_calls": [{"name": "cd", "arguments": {"folder": "docs"}}]},
                  {"role": "user", "content": "show a.md"}],
    )
    v = await verdicts(state_scorer(sandbox_scorer_parts, case), sample([predicted]))
    assert v["state_match"] == expected


CD = {"name": "cd", "arguments": {"folder": "docs"}}
CAT = {"name": "cat", "arguments": {"file_name": "a.md"}}
LS = {"name": "ls", "arguments": {}}
UP = {"name": "cd", "arguments": {"folder": ".."}}
MKDIR = {"name": "mkdir", "arguments": {"dir_name": "x"}}

# BFCL's multi-turn verdict on the episode [[cd docs], [cat a.md]]: (id, the model's calls per turn,
# sample fields, state_match)
EPISODE_STATE_CASES = [
    ("exact", [[CD], [CAT]], {}, (1.0, None)),
    ("response-missing", [[CD], [LS]], {}, (0.0, "state:response_missing")),  # cat's content never shown
    # cat a turn early: its result is among the results so far, but turn 2 holds no call at all
    ("early-then-nothing", [[CD, CAT], []], {}, (0.0, "state:empty_turn")),
    ("early-then-more", [[CD, CAT], [LS]], {}, (1.0, None)),
    ("tree-differs", [[MKDIR], [CAT]], {}, (0.0, "state:tree_differs")),
    # BFCL compares the file system's public attributes: the current directory is not one of them
    ("extra-cd-up", [[CD], [CAT, UP]], {}, (1.0, None)),
    ("force-terminated", [[CD], [CAT]], {"max_steps_turns": (1,)}, (0.0, "state:force_terminated")),
]


@pytest.mark.parametrize(("calls", "fields", "expected"), [c[1:] for c in EPISODE_STATE_CASES],
                         ids=[c[0] for c in EPISODE_STATE_CASES])
async def test_episode_state_is_bfcls_multi_turn_verdict(
    sandbox_scorer_parts: tuple[Any, list[Any]], calls: list[list[dict[str, Any]]], fields: dict[str, Any],
    expected: tuple[float, str | None],
) -> None:
    s = state_scorer(sandbox_scorer_parts, episode([[CD], [CAT]]))
    v = await verdicts(s, sample(steps=steps(*calls), case_id="e1").model_copy(update=fields))
    assert v["state_match"] == expected


async def test_a_turn_without_ground_truth_runs_its_calls_but_is_not_checked(
    sandbox_scorer_parts: tuple[Any, list[Any]],
) -> None:
    """BFCL's miss_func/miss_param turns: nothing to do there; what the model did still counts later."""
    s = state_scorer(sandbox_scorer_parts, episode([[CD], [], [CAT]]))
    idle = await verdicts(s, sample(steps=steps([CD], [LS], [CAT]), case_id="e1"))
    assert idle["state_match"] == (1.0, None)
    moved = await verdicts(s, sample(steps=steps([CD], [LS, UP], [CAT]), case_id="e1"))
    assert moved["state_match"] == (0.0, "state:response_missing")  # out of docs: cat finds no a.md
    harmful = await verdicts(s, sample(steps=steps([CD], [MKDIR], [CAT]), case_id="e1"))
    assert harmful["state_match"] == (0.0, "state:tree_differs")


async def test_held_out_tools_are_offered_from_their_turn_on() -> None:
    gt = [[], [LS]]
    case = episode(gt, held_out_tools={1: ["ls"]})
    on_time = await verdicts(scorer(case), sample(steps=steps(*gt), case_id="e1"))
    assert on_time["validity"] == (1.0, None)
    early = await verdicts(scorer(case), sample(steps=steps([LS], [LS]), case_id="e1"))
    assert early["validity"] == (0.0, "validity:unknown_tool")


NOT_ENFORCED = "constraint:not_enforced"


# (engine, whether the run audited its answers, strategy, error kind) -> (validity, not_enforced; None: no row)
@pytest.mark.parametrize(("engine", "audited", "strategy", "kind", "validity", "not_enforced"), [
    ("openai", True, "ebnf", NOT_ENFORCED, (None, None), (1.0, NOT_ENFORCED)),  # the server's failure, not the model's
    ("openai", True, "json_schema", None, (1.0, None), (0.0, None)),
    ("openai", True, "none", None, (1.0, None), None),  # nothing was constrained
    ("openai", True, "required", None, (1.0, None), None),  # the server builds it: its raw text never comes back
    ("openai", False, "ebnf", None, (1.0, None), None),  # a run from before the audit: no rate it never measured
    ("oracle", False, "ebnf", None, (1.0, None), None),  # the oracle walks gold through the grammar itself
])
async def test_an_answer_its_constraint_rejects_is_the_servers_not_the_models(
    engine: str, audited: bool, strategy: str, kind: str | None, validity: Any, not_enforced: Any
) -> None:
    s = scorer(next_case(GOLD_CAT, state_check=False), engine=engine, audited=audited)
    record = sample([GOLD_CAT], strategy=strategy, status="error" if kind else "ok", error_kind=kind)
    v = await verdicts(s, record)
    assert (v["validity"], v.get("not_enforced")) == (validity, not_enforced)
