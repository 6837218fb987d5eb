"""BFCL's single-turn categories as suites, from the installed ``bfcl-eval`` package.

Each entry becomes a ``SingleTurnCase`` (``harness.eval.data.cases``): its messages, BFCL's function
docs (the model is sent them converted as BFCL converts them: ``bfcl_data.tool_schemas``), BFCL's
possible answers, and the answer the oracle replays (``expected``, ``bfcl_answers``):

- BFCL's first acceptable answer: the first listed value of every parameter (left out where that is
  ``""``, unless the function requires the parameter); a ``dict`` parameter's value and each dict of
  a list of dicts are themselves possible answers (``{key: [values]}``), resolved the same way.
  Parallel answers keep BFCL's order.
- a **bad entry** (~8% of the entries): BFCL lists a value the tool's converted schema refuses (None
  for a string, a list for a string, a word outside an enum...). The entry is kept and tagged
  ``bad_entry`` (``note`` names the value), scored by BFCL's checker as BFCL scores it. Where BFCL's
  first answer does not fit the schema, the oracle replays the first listed values that do; where none
  does, the entry is also tagged ``no_valid_answer`` and the oracle replays the first answer (a grammar
  that enforces the schema refuses it, rightly); ``unpassable``: BFCL's own checker passes none of
  its listed answers either.
- the irrelevance categories have no possible answers: the right answer is no call (``expected`` is
  empty).

One suite per category (``category`` also names the checker's mode); ``harness import bfcl
single_turn --out DIR`` writes all ten into ``DIR/<category>``. The parallel categories use the
``bfcl`` bundle (any number of calls per answer), the others ``bfcl-one-call`` (one call: a
constrained grammar ends after it, as their right answer holds one). The suites say whether constrained
grammars offer a plain-text answer (``allow_text_answer``; the README says why it is on by default).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.agents import ToolSchema
from harness.bfcl.answers import NoValidAnswer, answer_arguments, fits, resolve
from harness.bfcl.data import FILE_PREFIX, SINGLE_TURN, BfclDataError, data_dir, openai_name
from harness.eval.data import (
    BAD_ENTRY,
    NO_VALID_ANSWER,
    UNPASSABLE,
    CallSpec,
    ImportFailure,
    ImportReport,
    SingleTurnCase,
    SuiteSpec,
    check_new_suite,
    format_loc,
    read_answers,
    read_entries,
    read_lines,
    suite_name,
    write_suite,
)

AST_CATEGORIES: tuple[str, ...] = (
    "simple_python", "multiple", "parallel", "parallel_multiple",
    "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
)
"""BFCL's single-turn categories judged by its AST checker (Python; the ``live_`` ones user-contributed)."""
IRRELEVANCE_CATEGORIES: tuple[str, ...] = ("irrelevance", "live_irrelevance")
"""Where no call is right."""
ALL = "single_turn"
"""The name that imports every category of ``SINGLE_TURN``, one suite each."""
LICENCE = "Apache-2.0 (BFCL, ShishirPatil/gorilla)"
PARALLEL_BUNDLE = "bfcl"
"""The parallel categories' bundle: any number of calls per answer (BFCL's multi-turn bundle)."""
ONE_CALL_BUNDLE = "bfcl-one-call"
"""The other categories' bundle: one call per answer, so a constrained grammar ends after it."""


def default_bundle(categories: Sequence[str]) -> str:
    """One call per answer unless a category's answers hold several (``parallel`` in its name)."""
    return PARALLEL_BUNDLE if any("parallel" in c for c in categories) else ONE_CALL_BUNDLE


def entry_category(entry_id: str) -> str:
    """BFCL's rule: the category is the id without its number (``live_multiple_3-1-0`` -> ``live_multiple``)."""
    return entry_id.rsplit("_", 1)[0]


def is_single_turn(source: str | Path) -> bool:
    """A single-turn category name, or a file whose first entry's id names one."""
    if str(source) in (*SINGLE_TURN, ALL):
        return True
    path = Path(source)
    if not path.is_file():
        return False
    try:
        for _, raw in read_lines(path):
            return isinstance(raw, dict) and entry_category(str(raw.get("id", ""))) in SINGLE_TURN
    except ImportFailure:  # unreadable: the importer reports it
        return False
    return False


def category_sources(category: str) -> tuple[Path, Path | None]:
    """(entries, possible answers or None for irrelevance) of a category of the installed package."""
    data = data_dir()
    entries = data / f"{FILE_PREFIX}{category}.json"
    answers = data / "possible_answer" / f"{FILE_PREFIX}{category}.json"
    if not entries.is_file() or (category in AST_CATEGORIES and not answers.is_file()):
        raise BfclDataError(f"BFCL's package lacks the files of {category} under {data}")
    return entries, answers if category in AST_CATEGORIES else None


# -- the answer the oracle replays ----------------------------------------------------------------------


def answer_calls(ground_truth: Sequence[Mapping[str, Any]], tools: Mapping[str, ToolSchema], strict: bool) -> list[CallSpec]:
    """BFCL's possible answer as calls (``bfcl_answers.answer_arguments``)."""
    return [CallSpec(name=n, arguments=a) for n, a in answer_arguments(ground_truth, tools, strict)]


def _first_problem(calls: Sequence[CallSpec], tools: Mapping[str, ToolSchema]) -> str | None:
    from harness.eval.data import check_arguments

    for k, call in enumerate(calls):
        tool = tools.get(call.name)
        if tool is None:
            return f"call {k} ({call.name}): not one of the entry's functions"
        problems = check_arguments(call, tool)
        if problems:
            where, message = problems[0]
            return f"call {k} ({call.name}): {where}: {message}"
    return None


def _listed_problem(ground_truth: Any, tools: Mapping[str, ToolSchema]) -> str | None:
    """The first listed acceptable value (``""`` aside) that the converted schema refuses, described."""
    for k, item in enumerate(ground_truth):
        (name, params), = item.items()
        tool = tools.get(openai_name(name))
        props = (tool.parameters.get("properties") or {}) if tool is not None else {}
        for param, values in params.items():
            schema = props.get(param)
            for value in values:
                if value == "":
                    continue
                if schema is None:
                    return f"call {k} ({openai_name(name)}): lists {param!r}, not a parameter"
                if not fits(resolve(value, schema, strict=False), schema):
                    return f"call {k} ({openai_name(name)}): lists {param}={value!r}, which the schema refuses"
    return None


def _unpassable(ground_truth: Any, docs: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Why BFCL's checker rejects every listed answer (see ``UNPASSABLE``), or None."""
    for k, item in enumerate(ground_truth):
        (name, params), = item.items()
        doc = docs.get(name, {}).get("parameters") or {}
        for param in doc.get("required") or ():
            if not any(v != "" for v in params.get(param, [])):
                return f"call {k} ({name}): the function requires {param!r}, the answer lists no value for it"
        for param, values in params.items():
            if param not in (doc.get("properties") or {}) and "" not in values:
                return f"call {k} ({name}): the answer requires {param!r}, which the function does not have"
    return None


def _oracle_answer(ground_truth: Any, tools: Mapping[str, ToolSchema]) -> tuple[list[CallSpec], list[str], str]:
    """(calls the oracle replays, tags, note) for an AST entry (see the module doc)."""
    first = answer_calls(ground_truth, tools, strict=False)
    problem = _first_problem(first, tools)
    listed = _listed_problem(ground_truth, tools)
    if problem is None:
        return first, [BAD_ENTRY] if listed else [], f"bad entry: {listed}" if listed else ""
    try:
        strict = answer_calls(ground_truth, tools, strict=True)
    except NoValidAnswer:
        strict = []
    if strict and _first_problem(strict, tools) is None:
        return strict, [BAD_ENTRY], (f"bad entry: the first listed answer fails the converted schema ({problem}); "
                                     "the oracle replays the first listed values that fit")
    return first, [BAD_ENTRY, NO_VALID_ANSWER], f"bad entry: no listed answer fits the converted schema: {problem}"


# -- entries -> cases -----------------------------------------------------------------------------------


def single_turn_case(entry: Mapping[str, Any], ground_truth: Any | None) -> SingleTurnCase:
    """One BFCL entry (and its ``ground_truth``; None in the irrelevance categories) as a case.
    ValueError naming the entry and the field when it is not BFCL's shape."""
    cid = str(entry.get("id"))
    category = entry_category(cid)
    if category not in SINGLE_TURN:
        raise ValueError(f"{cid}: not a single-turn category ({category!r})")
    turns = entry.get("question")
    if not isinstance(turns, list) or len(turns) != 1 or not isinstance(turns[0], list):
        raise ValueError(f"{cid}: question: expected one turn (a list of messages)")
    raw = {"id": cid, "category": category, "messages": turns[0], "functions": entry.get("function")}
    try:
        case = SingleTurnCase.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"{cid}: {format_loc(err['loc'])}: {str(err['msg']).removeprefix('Value error, ')}") from None
    if category in IRRELEVANCE_CATEGORIES:
        return case
    if not isinstance(ground_truth, list) or not ground_truth or not all(
            isinstance(c, dict) and len(c) == 1 and isinstance(next(iter(c.values())), dict) for c in ground_truth):
        raise ValueError(f"{cid}: ground_truth: expected a list of {{function: {{param: [values]}}}}")
    for k, call in enumerate(ground_truth):
        (function, params), = call.items()
        for param, values in params.items():
            if not isinstance(values, list):
                raise ValueError(f"{cid}: ground_truth[{k}].{function}.{param}: expected a list of acceptable values, "
                                 f"got {type(values).__name__}")
    tools = {t.name: t for t in case.tool_schemas()}
    expected, tags, note = _oracle_answer(ground_truth, tools)
    unpassable = _unpassable(ground_truth, {str(d.get("name")): d for d in case.functions})
    if unpassable:
        tags, note = [*tags, UNPASSABLE], f"{note}; BFCL's own checker passes no listed answer: {unpassable}"
    return case.model_copy(update={"possible_answer": ground_truth, "expected": expected, "tags": tags, "note": note})


def _cases(entries: Path, answers: Path | None, report: ImportReport, problems: list[str]) -> Iterator[SingleTurnCase]:
    truth = read_answers(answers, problems)
    seen: set[str] = set()
    for where, raw in read_entries(entries, report, problems):
        cid = raw["id"]
        if cid in seen:
            problems.append(f"{where}: {cid}: duplicate id")
            continue
        if entry_category(cid) in AST_CATEGORIES and cid not in truth:
            problems.append(f"{where}: {cid}: no ground truth in {answers}")
            continue
        try:
            case = single_turn_case(raw, truth.get(cid))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            continue
        seen.add(cid)
        for tag in case.tags:
            report.notes[_TAG_NOTES[tag]] += 1
        yield case


_TAG_NOTES = {
    BAD_ENTRY: "bad entries tagged bad_entry (a listed answer fails the converted schema)",
    NO_VALID_ANSWER: "of them tagged no_valid_answer (no listed answer fits: the oracle replays the first)",
    UNPASSABLE: "of them tagged unpassable (BFCL's own checker passes none of its listed answers)",
}


def import_bfcl_single_turn(
    source: str | Path, answers: str | Path | None, out: str | Path, *, name: str | None = None,
    bundle: str | None = None, skip_invalid: bool = False, text_answer: bool = True,
) -> ImportReport:
    """One BFCL single-turn category (a name of ``SINGLE_TURN``, or an entries file whose ids name
    one; its answers from ``answers``, else ``possible_answer/`` beside it) as a suite in ``out``;
    ``bundle`` None: ``default_bundle`` of its categories."""
    out = Path(out)
    check_new_suite(out)
    if str(source) in SINGLE_TURN:
        try:
            entries, package_answers = category_sources(str(source))
        except BfclDataError as exc:
            raise ImportFailure([str(exc)]) from None
        answer_file = Path(answers) if answers is not None else package_answers
    else:
        entries = Path(source)
        beside = entries.parent / "possible_answer" / entries.name
        answer_file = Path(answers) if answers is not None else (beside if beside.is_file() else None)
    report = ImportReport(out_dir=out, source=str(entries))
    problems: list[str] = []
    cases = list(_cases(entries, answer_file, report, problems))
    if problems and not skip_invalid:
        raise ImportFailure(problems)
    report.errors = problems
    if not cases:
        raise ImportFailure([*problems, f"{entries}: no single-turn entries to import"])
    categories = sorted({c.category for c in cases})
    report.cases = len(cases)
    spec = SuiteSpec(
        name=suite_name(out, name), version="1", kind="single_turn", bundle=bundle or default_bundle(categories),
        description=(f"Imported from {entries.name}: {len(cases)} BFCL single-turn entries ({', '.join(categories)}), "
                     "each with its own tools, judged by BFCL's own checker."),
        source=f"BFCL single-turn file {entries.name}" + (f" with answers {answer_file.name}" if answer_file else ""),
        licence=LICENCE, allow_text_answer=text_answer,
    )
    write_suite(out, spec, cases)
    return report


__all__ = [
    "ALL",
    "AST_CATEGORIES",
    "BAD_ENTRY",
    "IRRELEVANCE_CATEGORIES",
    "NO_VALID_ANSWER",
    "ONE_CALL_BUNDLE",
    "PARALLEL_BUNDLE",
    "SINGLE_TURN",
    "UNPASSABLE",
    "answer_calls",
    "category_sources",
    "default_bundle",
    "entry_category",
    "import_bfcl_single_turn",
    "is_single_turn",
    "single_turn_case",
]
