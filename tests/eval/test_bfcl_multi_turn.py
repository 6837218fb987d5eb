"""BFCL's whole multi-turn track (800 entries, 8 API classes) on BFCL's own classes in the tool worker,
checked against BFCL's own code: the import (every entry, counts per category), the verdicts (BFCL's
``multi_turn_checker`` called here on the same calls, for the ground truth and perturbed answers), and
the file-system entries judged alike by the ``.pym`` tools and by BFCL's class."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker",
    reason="BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23",
)

from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

from harness.bfcl import import_bfcl
from harness.bfcl.data import category_files
from harness.bfcl.multi_import import import_bfcl_multi_turn
from harness.eval.data import CallSpec, EpisodeCase, load_suite
from harness.eval.store import SampleRecord

ROOT = Path(__file__).resolve().parents[2]
PYM_BUNDLE = ROOT / "bundles" / "bfcl"
CATEGORIES = ("base", "miss_param", "long_context", "miss_func")
Turns = list[list[CallSpec]]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bfcl-mt")
    reports = import_bfcl_multi_turn(out)
    assert [r.cases for r in reports] == [200, 200, 200, 200]
    return out


@pytest.fixture(scope="module")
def cases(imported: Path) -> dict[str, EpisodeCase]:
    return {c.id: c for category in CATEGORIES for c in load_suite(imported / category).episode_cases()}


@pytest.fixture(scope="module")
def entries() -> dict[str, dict[str, Any]]:
    """The entries as BFCL's package holds them, with their ground truth."""
    out: dict[str, dict[str, Any]] = {}
    for category in CATEGORIES:
        questions, answers = category_files(category)
        truth = {json.loads(line)["id"]: json.loads(line)["ground_truth"] for line in answers.read_text().splitlines()}
        for line in questions.read_text().splitlines():
            entry = json.loads(line)
            out[entry["id"]] = {**entry, "ground_truth": truth[entry["id"]]}
    return out


@pytest.fixture(scope="module")
def python_scorer(imported: Path, cases: dict[str, EpisodeCase]) -> Any:
    from harness.bundles import bundle_source
    from harness.eval.score import Scorer

    _, source = bundle_source(imported / "bundle")
    return Scorer(cases.values(), [t.schema for t in source.tools], "oracle", source)


def test_every_entry_is_imported_with_its_classes(cases: dict[str, EpisodeCase], entries: dict[str, Any]) -> None:
    assert len(cases) == len(entries) == 800
    for cid, entry in entries.items():
        case = cases[cid]
        assert case.involved_classes == entry["involved_classes"] and case.initial_config == entry["initial_config"]
        assert case.bfcl_ground_truth == entry["ground_truth"]
        assert case.long_context == ("long_context" in cid)


def test_the_bundle_offers_bfcls_128_functions(imported: Path) -> None:
    tools = json.loads((imported / "bundle" / "tools.json").read_text())
    assert len(tools) == 8 and sum(len(v) for v in tools.values()) == 128


# -- perturbed answers -----------------------------------------------------------------------------------

EXTRA = {
    "GorillaFileSystem": CallSpec(name="mkdir", arguments={"dir_name": "extra_dir"}),
    "MessageAPI": CallSpec(name="add_contact", arguments={"user_name": "Extra Person"}),
    "TicketAPI": CallSpec(name="create_ticket", arguments={"title": "extra", "description": "extra"}),
    "TradingBot": CallSpec(name="fund_account", arguments={"amount": 1.0}),
    "TravelAPI": CallSpec(name="set_budget_limit", arguments={"access_token": "abc", "budget_limit": 1.0}),
    "TwitterAPI": CallSpec(name="post_tweet", arguments={"content": "extra"}),
    "VehicleControlAPI": CallSpec(name="setHeadlights", arguments={"mode": "on"}),
    "MathAPI": CallSpec(name="add", arguments={"a": 1, "b": 2}),
}
"""A call that changes each class's state (MathAPI has none: a call whose result no one asked for)."""


def _busy(gold: Turns) -> int:
    return max(t for t, calls in enumerate(gold) if calls)


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    return [] if value else ["x"]


def _argument_changed(gold: Turns, case: EpisodeCase, tools: list[str]) -> Turns:
    out = [list(t) for t in gold]
    for t, turn in enumerate(out):
        for k, call in enumerate(turn):
            if call.arguments:
                key = next(iter(call.arguments))
                out[t][k] = CallSpec(name=call.name, arguments={**call.arguments, key: _changed(call.arguments[key])})
                return out
    return out


def _swapped(gold: Turns, case: EpisodeCase, tools: list[str]) -> Turns:
    out = [list(t) for t in gold]
    for turn in out:
        if len(turn) >= 2:
            turn[0], turn[1] = turn[1], turn[0]
            break
    return out


def _wrong_tool(gold: Turns, case: EpisodeCase, tools: list[str]) -> Turns:
    out = [list(t) for t in gold]
    call = out[_busy(gold)][0]
    other = tools[(tools.index(call.name) + 1) % len(tools)] if call.name in tools else tools[0]
    out[_busy(gold)][0] = CallSpec(name=other, arguments=call.arguments)
    return out


def _extra(gold: Turns, case: EpisodeCase, tools: list[str]) -> Turns:
    out = [list(t) for t in gold]
    out[_busy(gold)].insert(0, EXTRA[case.involved_classes[0]])
    return out


VARIANTS: dict[str, Callable[[Turns, EpisodeCase, list[str]], Turns]] = {
    "gold": lambda gold, case, tools: gold,
    "call-dropped": lambda gold, case, tools: [c[:-1] if t == _busy(gold) else c for t, c in enumerate(gold)],
    "two-swapped": _swapped,
    "argument-changed": _argument_changed,
    "wrong-tool": _wrong_tool,
    "extra-state-change": _extra,
}


def python_call(call: CallSpec) -> str:
    return f"{call.name}({','.join(f'{k}={v!r}' for k, v in call.arguments.items())})"


def bfcl_verdict(entry: dict[str, Any], calls: Turns, n: int) -> tuple[bool, str | None]:
    """BFCL's checker, here, on these calls (each turn's calls as one response), as its runner calls it."""
    decoded = [[[python_call(c) for c in turn]] if turn else [] for turn in calls]
    name = f"reference_{n}"
    try:
        result = multi_turn_checker(decoded, entry["ground_truth"], entry, entry["id"].rsplit("_", 1)[0], name)
    finally:  # BFCL keeps instances in module globals by model name: forget this check's
        for key in [k for k in vars(multi_turn_utils) if k.startswith(f"{name}_")]:
            del vars(multi_turn_utils)[key]
    return bool(result["valid"]), result.get("error_type")


def episode_sample(case: EpisodeCase, calls: Turns, n: int) -> SampleRecord:
    steps = [
        {"turn": t, "output": "", "tool_calls": [c.model_dump() for c in turn], "parse_errors": [],
         "tool_results": [], "latency_ms": 1.0, "ttft_ms": None, "usage": None, "stats": None}
        for t, turn in enumerate(calls)
    ]
    return SampleRecord.model_validate({
        "sample_id": f"{case.id}/{n}", "case_id": case.id, "family": "qwen", "strategy": "none", "epoch": 1,
        "kind": "episode", "status": "ok", "error_kind": None, "error": None, "steps": steps,
        "duration_ms": 1.0, "harness_ms": 0.1,
    })


async def state_verdict(scorer: Any, case: EpisodeCase, calls: Turns, n: int) -> tuple[float | None, str | None]:
    rows = await scorer.score(episode_sample(case, calls, n))
    row = next(r for r in rows if r.metric == "state_match")
    return row.value, row.error_kind


def class_tools(imported: Path) -> dict[str, list[str]]:
    return {c: [t["function"]["name"] for t in v] for c, v in json.loads((imported / "bundle" / "tools.json").read_text()).items()}


async def differences(ids: list[str], cases: dict[str, EpisodeCase], entries: dict[str, Any], scorer: Any,
                      imported: Path) -> tuple[list[str], dict[bool, int]]:
    tools = class_tools(imported)
    disagree: list[str] = []
    verdicts = {True: 0, False: 0}
    for n, (cid, (name, make)) in enumerate((cid, v) for cid in ids for v in VARIANTS.items()):
        case = cases[cid]
        calls = make([list(t) for t in case.ground_truth], case, tools[case.involved_classes[0]])
        ours = await state_verdict(scorer, case, calls, n)
        valid, error_type = bfcl_verdict(entries[cid], calls, n)
        verdicts[valid] += 1
        if ours != ((1.0, None) if valid else (0.0, f"bfcl:{error_type}")):
            disagree.append(f"{cid} {name}: here {ours}, BFCL valid={valid} ({error_type})")
    return disagree, verdicts


async def test_verdicts_are_bfcls_on_a_sample(cases: dict[str, EpisodeCase], entries: dict[str, Any],
                                               python_scorer: Any, imported: Path) -> None:
    ids = sorted(entries)[::20]  # 40 entries of every category and class set
    disagree, verdicts = await differences(ids, cases, entries, python_scorer, imported)
    assert not disagree, "\n".join(disagree[:10])
    assert verdicts[True] >= len(ids) and verdicts[False] >= len(ids)


@pytest.mark.slow
async def test_verdicts_are_bfcls_on_every_entry(cases: dict[str, EpisodeCase], entries: dict[str, Any],
                                                  python_scorer: Any, imported: Path) -> None:
    """The issue's differential test: 800 entries x 6 answers, 0 verdicts differ from BFCL's."""
    disagree, verdicts = await differences(sorted(entries), cases, entries, python_scorer, imported)
    assert not disagree, f"{len(disagree)} differ:\n" + "\n".join(disagree[:10])
    assert verdicts[True] >= 800 and verdicts[False] >= 2000


async def test_file_system_entries_get_one_verdict_from_both_sources(
    tmp_path: Path, cases: dict[str, EpisodeCase], python_scorer: Any, imported: Path
) -> None:
    """The 52 GorillaFileSystem-only entries: the .pym tools (bundles/bfcl) and BFCL's class agree."""
    from harness.agents.bundle import bundle_file
    from harness.bundles import load_bundle
    from harness.eval.score import Scorer
    from harness.sandbox import load_bundle_tools
    from harness.tools import PymSource

    for category in CATEGORIES:
        import_bfcl(category, None, tmp_path / category, bundle=str(PYM_BUNDLE), file_system_only=True)
    fs_cases = {c.id: c for category in CATEGORIES for c in load_suite(tmp_path / category).episode_cases()}
    assert len(fs_cases) == 52
    file = bundle_file(PYM_BUNDLE)
    pym_tools = load_bundle_tools(file, load_bundle(file))
    pym_scorer = Scorer(fs_cases.values(), [t.schema for t in pym_tools], "oracle", PymSource(pym_tools))
    tools = class_tools(imported)["GorillaFileSystem"]
    disagree, seen = [], set()
    for n, (cid, (name, make)) in enumerate((cid, v) for cid in sorted(fs_cases) for v in VARIANTS.items()):
        calls = make([list(t) for t in cases[cid].ground_truth], cases[cid], tools)
        pym = (await state_verdict(pym_scorer, fs_cases[cid], calls, n))[0]
        python = (await state_verdict(python_scorer, cases[cid], calls, n))[0]
        seen.add(python)
        if pym != python:
            disagree.append(f"{cid} {name}: .pym {pym}, BFCL's class {python}")
    assert not disagree, "\n".join(disagree[:10])
    assert seen == {0.0, 1.0}


def test_a_bfcl_file_with_an_unknown_class_names_file_line_and_field(tmp_path: Path,
                                                                     entries: dict[str, Any]) -> None:
    from harness.eval.data import ImportFailure

    entry = dict(entries["multi_turn_base_0"])
    truth = {"id": entry["id"], "ground_truth": entry.pop("ground_truth")}
    entry["involved_classes"] = ["GorillaFileSystem", "TeleportAPI"]
    questions, answers = tmp_path / "q.json", tmp_path / "a.json"
    questions.write_text(json.dumps(entry) + "\n")
    answers.write_text(json.dumps(truth) + "\n")
    with pytest.raises(ImportFailure) as info:
        import_bfcl(questions, answers, tmp_path / "out")
    (problem,) = info.value.problems
    assert problem.startswith(f"{questions}:1: multi_turn_base_0: involved_classes: unknown class 'TeleportAPI'")


def test_bad_entries_are_tagged_with_the_reason(cases: dict[str, EpisodeCase]) -> None:
    tagged = {cid: c.note for cid, c in cases.items() if "bad_entry" in c.tags}
    assert set(tagged) == BFCL_BAD
    assert all(note.startswith("bad entry: ") for note in tagged.values())


BFCL_BAD = {"multi_turn_base_173", "multi_turn_miss_param_173", "multi_turn_long_context_173",
            "multi_turn_miss_func_173", "multi_turn_miss_func_49"}
"""Entries whose ground truth the model cannot give as BFCL offers the tools (docs/bfcl-multi-turn.md)."""


random.seed(0)


# -- grammars of BFCL's 128 functions ----------------------------------------------------------------------


def gold_answers_accepted(cases: list[EpisodeCase], imported: Path) -> tuple[int, list[str]]:
    """Each turn's ground truth, as one answer of parallel calls (the bundle allows them), through every
    constrained lane built from the tools the turn offers (the case's classes' tools); (answers checked,
    rejections of entries not tagged bad_entry)."""
    from harness.agents import DecodingConstraint, ToolCall, ToolSchema
    from harness.eval.run.sample import episode_tools
    from harness.fuzz.walker import GrammarWalker
    from harness.grammar import compile_artifact, get_tokenizer
    from harness.grammar.families import get_adapter
    from harness.vocabulary import FAMILIES, HARNESS_STRATEGIES

    owned = json.loads((imported / "bundle" / "tools.json").read_text())
    tools = [_Owned(ToolSchema.from_openai(t), owner) for owner, ts in owned.items() for t in ts]
    walkers: dict[tuple[str, ...], GrammarWalker] = {}
    checked, rejected = 0, []
    for case in cases:
        for t, turn in enumerate(case.ground_truth):
            offered = [tool.schema for tool in episode_tools(case, tools, t, lambda tool: tool.owner)]  # type: ignore[arg-type, attr-defined]
            calls = [ToolCall.create(c.name, c.arguments) for c in turn]
            if not calls:
                continue
            for family in FAMILIES:
                adapter = get_adapter(family)
                for strategy in HARNESS_STRATEGIES:
                    constraint = DecodingConstraint(strategy=strategy, allow_parallel_calls=True, allow_text_answer=True)
                    key = (*sorted(s.name for s in offered), family, strategy)
                    if key not in walkers:
                        artifact = adapter.build_payload(offered, constraint).artifact
                        walkers[key] = GrammarWalker(compile_artifact(artifact, family).compiled, get_tokenizer(family))
                    checked += 1
                    if not walkers[key].accepts_text(adapter.render_output(calls, constraint)).accepted:
                        rejected.append(f"{case.id} turn {t} {family}/{strategy}")
    return checked, [r for r in rejected if r.split()[0] not in BFCL_BAD]


class _Owned:
    def __init__(self, schema: Any, owner: str) -> None:
        self.schema, self.owner = schema, owner


def test_grammars_accept_the_gold_answers_of_a_sample(cases: dict[str, EpisodeCase], imported: Path) -> None:
    checked, rejected = gold_answers_accepted([cases[cid] for cid in sorted(cases)[::50]], imported)
    assert checked > 200 and not rejected, rejected[:10]


@pytest.mark.slow
def test_grammars_of_128_functions_accept_every_gold_answer(cases: dict[str, EpisodeCase], imported: Path) -> None:
    """All 8 classes' tools, in all 6 constrained lanes: every turn of every entry but BFCL's bad ones."""
    checked, rejected = gold_answers_accepted(list(cases.values()), imported)
    assert checked > 10_000 and not rejected, f"{len(rejected)}: {rejected[:10]}"
