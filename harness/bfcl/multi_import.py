"""BFCL multi-turn -> episode suites, as BFCL runs them, with BFCL's own classes as the tools.

A category of the installed ``bfcl-eval`` package (``base``, ``miss_param``, ``miss_func``,
``long_context``; ``multi_turn``: all four, one suite each) or an entries file with its possible-answer
file. Every entry is imported: its ``involved_classes`` (BFCL's eight multi-turn API classes) and
``initial_config`` go into the case as they are, and the suite's bundle (written beside the suites:
``bundle/``) names BFCL's classes as a ``python:`` tool source, run in the tool worker through BFCL's
``execute_multi_turn_func_call``, with BFCL's function docs converted as BFCL converts them
(``bundle/tools.json``). Verdicts come from BFCL's ``multi_turn_checker`` on BFCL's own ground-truth
strings (``EpisodeCase.bfcl_ground_truth``). Ground truth is also parsed (Python call syntax read with
``ast``, never eval: literal arguments only; positional arguments named by the function doc's parameter
order) for what the oracle replays and for ``exact_match``.

- Long-context entries (BFCL's rule: the id's category names ``long_context``) load their instances with
  ``long_context=True``, as BFCL's loader does. GorillaFileSystem-only entries also keep their file
  system (``initial_fs``, expanded as BFCL expands it: ``harness.bfcl.data``), so the ``.pym``
  file-system tools can run them too.
- ``missed_function`` (miss_func): those tools are held out until the turn that adds them
  (``EpisodeCase.held_out_tools``); that turn has no user message in the data, and BFCL says, as the
  user, ``BFCL_ADDED_TOOLS_PROMPT`` there: so does the imported turn.
- ``excluded_function`` is not applied: BFCL offers every tool of the classes whatever it says.
"""

from __future__ import annotations

import ast
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.bfcl.data import (
    CATEGORIES,
    BfclDataError,
    LongContextData,
    MultiTurnClass,
    category_files,
    category_name,
    expand_long_context,
    is_long_context,
    long_context_data,
    multi_turn_classes,
    tool_schemas,
)
from harness.eval.data import (
    BAD_ENTRY,
    PARAM_ORDER,
    CallSpec,
    Case,
    EpisodeCase,
    ImportFailure,
    ImportReport,
    SuiteSpec,
    check_new_suite,
    format_loc,
    read_answers,
    read_entries,
    suite_name,
    write_suite,
)

GORILLA_CLASS = "GorillaFileSystem"
BFCL_ADDED_TOOLS_PROMPT = "I have updated some more functions you can choose from. What about now?"
"""The user message of the turn that adds a miss_func entry's held-out tools (BFCL's, for models
that take tools in the request)."""


class CallSyntaxError(ValueError):
    """A ground-truth call that is not ``name(literal, key=literal, ...)``."""


def _literal(node: ast.expr) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise CallSyntaxError(f"not a literal: {ast.unparse(node)!r}") from None
    try:
        return json.loads(json.dumps(value))  # tuples -> lists; rejects sets, bytes, complex
    except (TypeError, ValueError):
        raise CallSyntaxError(f"not a JSON value: {ast.unparse(node)!r}") from None


def parse_python_call(text: str, param_order: Mapping[str, Sequence[str]] = PARAM_ORDER) -> CallSpec:
    """``"cd(folder='document')"`` -> CallSpec(name="cd", arguments={"folder": "document"}).

    Read with ``ast``, never evaluated: only literal arguments; positional ones are named by
    ``param_order``. Raises ``CallSyntaxError`` for anything else."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise CallSyntaxError(f"not Python syntax: {exc.msg}") from None
    node = tree.body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise CallSyntaxError("expected a call of a plain name, like cd(folder='x')")
    name = node.func.id
    args: dict[str, Any] = {}
    order = param_order.get(name)
    for i, a in enumerate(node.args):
        if isinstance(a, ast.Starred):
            raise CallSyntaxError("*args are not allowed")
        if order is None or i >= len(order):
            raise CallSyntaxError(f"positional argument {i + 1} of {name!r} has no known parameter name")
        args[order[i]] = _literal(a)
    for kw in node.keywords:
        if kw.arg is None:
            raise CallSyntaxError("**kwargs are not allowed")
        if kw.arg in args:
            raise CallSyntaxError(f"argument {kw.arg!r} given twice")
        args[kw.arg] = _literal(kw.value)
    return CallSpec(name=name, arguments=args)


def _bfcl_turns(entry: dict[str, Any]) -> tuple[list[Any], dict[int, list[str]]]:
    """The entry's turns, with BFCL's message in each turn that adds held-out tools, and those tools."""
    cid = entry["id"]
    turns = entry.get("question")
    if not isinstance(turns, list):
        raise ValueError(f"{cid}: question: expected a list of turns")
    missed = entry.get("missed_function") or {}
    if not isinstance(missed, dict):
        raise ValueError(f"{cid}: missed_function: expected {{turn: [tool names]}}")
    turns, held = list(turns), {}
    for key, names in missed.items():
        if not str(key).isdigit() or not 0 <= int(key) < len(turns):
            raise ValueError(f"{cid}: missed_function: no turn {key!r}")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"{cid}: missed_function.{key}: expected a list of tool names")
        if turns[int(key)]:
            raise ValueError(f"{cid}: turn {key} adds {names} but holds a user message (BFCL requires none)")
        turns[int(key)] = [{"role": "user", "content": BFCL_ADDED_TOOLS_PROMPT}]
        held[int(key)] = list(names)
    return turns, held


def _bfcl_ground_truth(
    cid: str, gt: Any, turns: int, order: Mapping[str, Sequence[str]] = PARAM_ORDER
) -> list[list[dict[str, Any]]]:
    if not isinstance(gt, list) or len(gt) != turns:
        n = len(gt) if isinstance(gt, list) else type(gt).__name__
        raise ValueError(f"{cid}: ground_truth: {n} entries for {turns} turns")
    ground: list[list[dict[str, Any]]] = []
    for t, calls in enumerate(gt):
        if not isinstance(calls, list):
            raise ValueError(f"{cid}: turn {t}: ground truth is not a list")
        turn: list[dict[str, Any]] = []
        for k, text in enumerate(calls):
            if not isinstance(text, str):
                raise ValueError(f"{cid}: turn {t}: call {k}: not a string")
            try:
                turn.append(parse_python_call(text, order).model_dump(mode="json"))
            except CallSyntaxError as exc:
                raise ValueError(f"{cid}: turn {t}: call {k} {text!r}: {exc}") from None
        ground.append(turn)
    return ground


def _classes_of(entry: dict[str, Any], known: Mapping[str, MultiTurnClass]) -> list[str]:
    cid, classes = entry["id"], entry.get("involved_classes")
    if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
        raise ValueError(f"{cid}: involved_classes: expected a list of class names")
    unknown = [c for c in classes if c not in known]
    if unknown:
        raise ValueError(f"{cid}: involved_classes: unknown class {', '.join(map(repr, unknown))} "
                         f"(BFCL's multi-turn classes: {', '.join(known)})")
    return classes


def _bfcl_case(entry: dict[str, Any], gt: Any, known: Mapping[str, MultiTurnClass],
               long_context: Callable[[], LongContextData], file_system_only: bool = False) -> EpisodeCase:
    cid = entry["id"]
    classes = _classes_of(entry, known)
    config = entry.get("initial_config") or {}
    if not isinstance(config, dict) or not all(isinstance(v, dict) for v in config.values()):
        raise ValueError(f"{cid}: initial_config: expected {{class name: its state}}")
    turns, held = _bfcl_turns(entry)
    order = {doc["name"]: list((doc.get("parameters") or {}).get("properties") or {})
             for name in classes for doc in known[name].docs}
    ground = _bfcl_ground_truth(cid, gt, len(turns), order)
    fields: dict[str, Any] = {
        "id": cid, "turns": turns, "ground_truth": ground, "held_out_tools": held, "involved_classes": classes,
        "initial_config": config, "long_context": is_long_context(cid), "bfcl_ground_truth": gt,
    }
    problem = _schema_problem(ground, classes, known) or _early_problem(ground, held)
    if problem:  # kept and run: BFCL's checker passes it, but a grammar of the schema cannot emit it
        fields["tags"], fields["note"] = [BAD_ENTRY], f"bad entry: {problem}"
    if classes == [GORILLA_CLASS]:
        fields["initial_fs"] = _file_system(cid, config.get(GORILLA_CLASS), long_context)
    if file_system_only:  # the .pym file-system tools run it, on initial_fs: BFCL's checker is not asked
        for key in ("involved_classes", "initial_config", "long_context", "bfcl_ground_truth"):
            del fields[key]
    try:
        return EpisodeCase.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"{cid}: {format_loc(err['loc'])}: {err['msg']}") from None


@functools.cache
def _checks(target: str, docs: str) -> dict[str, Any]:
    """Argument checks of one class's tools, converted as BFCL converts them (by the class's docs)."""
    from harness.sandbox import argument_check

    return {t.name: argument_check(t.parameters) for t in tool_schemas(json.loads(docs))}


def _schema_problem(ground: list[list[dict[str, Any]]], classes: list[str], known: Mapping[str, MultiTurnClass]) -> str:
    """The first ground-truth call whose arguments its converted schema refuses, said; "" when none."""
    checks: dict[str, Any] = {}
    for name in classes:
        checks.update(_checks(known[name].target, json.dumps(known[name].docs)))
    for t, turn in enumerate(ground):
        for k, call in enumerate(turn):
            check = checks.get(call["name"])
            if check is not None and not check.is_valid(call["arguments"]):
                return f"ground_truth[{t}][{k}] {call['name']}({call['arguments']}) does not fit its converted schema"
    return ""


def _early_problem(ground: list[list[dict[str, Any]]], held: Mapping[int, list[str]]) -> str:
    """A ground-truth call of a tool before the turn BFCL reveals it, said; "" when none (BFCL's
    executor runs any method of the instances, offered or not; the harness offers only what BFCL offers)."""
    for start, names in held.items():
        for t, turn in enumerate(ground[:start]):
            for call in turn:
                if call["name"] in names:
                    return f"ground_truth[{t}] calls {call['name']!r} before BFCL offers it (turn {start})"
    return ""


def _file_system(cid: str, config: Any, long_context: Callable[[], LongContextData]) -> dict[str, Any]:
    """A GorillaFileSystem-only entry's file system, for the ``.pym`` tools (expanded as BFCL does)."""
    if not isinstance(config, dict) or not isinstance(config.get("root"), dict) or len(config["root"]) != 1:
        raise ValueError(f"{cid}: initial_config.{GORILLA_CLASS}: expected {{'root': {{NAME: directory}}}}")
    if is_long_context(cid):
        try:
            config = expand_long_context(config, long_context())
        except BfclDataError as exc:
            raise ValueError(f"{cid}: {exc}") from None
    return config


def bfcl_sources(source: str | Path, answers: str | Path | None = None) -> tuple[Path, Path]:
    """(entries file, possible-answer file): ``source`` is a file or a category of the installed
    package; without ``answers``, a file's are looked for in ``possible_answer/`` beside it (BFCL's
    layout) and a category's come from the package."""
    path = Path(source)
    if path.is_file():
        if answers is not None:
            return path, Path(answers)
        beside = path.parent / "possible_answer" / path.name
        if not beside.is_file():
            raise ImportFailure([f"{path}: no --answers given, and no {beside}"])
        return path, beside
    if category_name(str(source)) is None:
        short = ", ".join(c.removeprefix("multi_turn_") for c in CATEGORIES)
        raise ImportFailure([f"{source}: no such file, and not a BFCL category ({short})"])
    try:
        entries, package_answers = category_files(str(source))
    except BfclDataError as exc:
        raise ImportFailure([str(exc)]) from None
    return entries, Path(answers) if answers is not None else package_answers


def import_bfcl(
    source: str | Path, answers: str | Path | None, out: str | Path, *, name: str | None = None,
    bundle: str = "./bundle", skip_invalid: bool = False, file_system_only: bool = False,
) -> ImportReport:
    """Convert BFCL multi-turn entries + their possible answers into an episode suite in ``out``
    (``source``: a file, or a category of the installed package; see ``bfcl_sources``). With the
    default ``bundle``, the bundle of BFCL's classes is written to ``out/bundle``. ``file_system_only``:
    the GorillaFileSystem-only entries alone (others skipped and counted), as cases of ``.pym``
    file-system tools (a bundle like ``bundles/bfcl``)."""
    questions, answers = bfcl_sources(source, answers)
    out = Path(out)
    check_new_suite(out)
    if file_system_only and bundle == "./bundle":
        bundle = "bfcl"  # the .pym file-system tools
    try:
        known = multi_turn_classes()
    except BfclDataError as exc:
        raise ImportFailure([str(exc)]) from None
    report = ImportReport(out_dir=out, source=str(questions))
    problems: list[str] = []
    truth = read_answers(answers, problems)
    long_context = functools.cache(long_context_data)
    cases: list[Case] = []
    seen: set[str] = set()
    for where, raw in read_entries(questions, report, problems):
        if file_system_only and raw.get("involved_classes") != [GORILLA_CLASS]:
            report.skipped["involve classes other than GorillaFileSystem"] += 1
            continue
        if raw["id"] in seen:
            problems.append(f"{where}: {raw['id']}: duplicate id")
            continue
        if raw["id"] not in truth:
            problems.append(f"{where}: {raw['id']}: no ground truth in {answers}")
            continue
        try:
            case = _bfcl_case(raw, truth[raw["id"]], known, long_context, file_system_only)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            continue
        cases.append(case)
        seen.add(raw["id"])
        report.notes[f"with classes {'+'.join(raw['involved_classes'])}"] += 1
        if is_long_context(case.id):
            report.notes["long-context (states loaded as BFCL loads them)"] += 1
        if case.held_out_tools:
            report.notes["with tools held out until a later turn (missed_function)"] += 1
        if BAD_ENTRY in case.tags:
            report.notes["tagged bad_entry (ground truth no model can give as BFCL offers the tools; the note says why)"] += 1
    if problems and not skip_invalid:
        raise ImportFailure(problems)
    report.errors = problems
    if not cases:
        raise ImportFailure([*problems, f"{questions}: no entries to import"])
    report.cases = len(cases)
    spec = SuiteSpec(
        name=suite_name(out, name), version="1", kind="episode", bundle=bundle,
        description=(f"Imported from {questions.name}: {len(cases)} multi-turn episodes on BFCL's own API "
                     "classes, with ground truth per turn, judged by BFCL's multi_turn_checker."),
        source=f"BFCL multi-turn file {questions.name} with answers {answers.name}",
        licence="Apache-2.0 (BFCL, ShishirPatil/gorilla)",
    )
    write_suite(out, spec, cases)
    if bundle == "./bundle" and not file_system_only:
        write_bfcl_bundle(out / "bundle", known)
    return report


MULTI_TURN = "multi_turn"
"""``harness import bfcl multi_turn``: the four multi-turn categories, one suite each, one bundle."""


def import_bfcl_multi_turn(out: str | Path, *, skip_invalid: bool = False) -> list[ImportReport]:
    """Every multi-turn category into ``out/<category>`` (``base``, ``miss_func``, ...), all naming the
    bundle of BFCL's classes written once to ``out/bundle``."""
    out = Path(out)
    reports = [
        import_bfcl(category, None, out / category.removeprefix("multi_turn_"), bundle="../bundle",
                    skip_invalid=skip_invalid)
        for category in CATEGORIES
    ]
    write_bfcl_bundle(out / "bundle", multi_turn_classes())
    return reports


BUNDLE_YAML = """\
# BFCL's multi-turn protocol over BFCL's own API classes (written by harness import bfcl): the tools are
# the installed bfcl-eval package's classes, run in the harness's tool worker through BFCL's own
# execute_multi_turn_func_call; their schemas (tools.json) are BFCL's function docs converted as BFCL
# converts them. Python tools run with the user's privileges (.pym tools are the sandboxed option).
name: bfcl-multi-turn
description: >-
  Answers BFCL's multi-turn episodes with the tools of BFCL's API classes (file system, trading,
  travel, vehicle, messages, posts, tickets, maths): any number of calls per response.
model:
  family: function_gemma
  id: google/functiongemma-270m-it   # the served model id, sent in every request
  base_url: http://127.0.0.1:8000/v1
  api_key_env: OPENAI_API_KEY
constraint:
  strategy: ebnf
  allow_parallel_calls: true
  send_tools_to_api: true
limits: default
python:
  execution: bfcl
  tools_json: tools.json
  memory: 4gb
  classes:
{classes}
kernel:
  # A step is one model call. BFCL allows 20 responses with calls a user turn and one more to answer
  # in plain text: 21. When the 21st calls tools too, the episode ends there (BFCL's force quit).
  max_steps: 21
  max_concurrency: 1
  max_history_messages: null
"""


def write_bfcl_bundle(folder: Path, classes: Mapping[str, MultiTurnClass]) -> None:
    """The bundle of BFCL's classes: bundle.yaml and tools.json (each class's function docs converted)."""
    folder.mkdir(parents=True, exist_ok=True)
    tools = {name: [t.to_openai() for t in tool_schemas(cls.docs)] for name, cls in classes.items()}
    (folder / "tools.json").write_text(json.dumps(tools, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    lines = "\n".join(f"    {name}: {cls.target}" for name, cls in classes.items())
    (folder / "bundle.yaml").write_text(BUNDLE_YAML.format(classes=lines), encoding="utf-8")


__all__ = [
    "BFCL_ADDED_TOOLS_PROMPT",
    "GORILLA_CLASS",
    "MULTI_TURN",
    "CallSyntaxError",
    "bfcl_sources",
    "import_bfcl",
    "import_bfcl_multi_turn",
    "parse_python_call",
    "write_bfcl_bundle",
]
