"""``validate_suite``: a suite's structure, its bundle, and its calls checked against the bundle's tools.

The bundle is checked as ``harness run`` loads it, strictly: ``bundle.yaml`` against its schema and
the sandbox's limits (``harness.bundles.load_bundle``), ``tools_dir`` holding ``.pym`` tools, and every
``.pym`` parsed and type-checked by the sandbox (``harness.sandbox.load_script``), each broken script
reported, not just the first. The calls are then checked against the tools' schemas; when the bundle
is missing or broken they are checked against the built-in 18 file-system tools, so the other
problems still show (with the names of the bundle's own ``.pym`` tools, and their schemas where they
load: one mistake, one problem).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field as default_field
from pathlib import Path
from typing import Any

from harness.agents import ToolSchema
from harness.eval.data.cases import BAD_ENTRY, NO_VALID_ANSWER, CallSpec, Case, EpisodeCase, SingleTurnCase
from harness.eval.data.fs_tools import builtin_fs_schemas
from harness.eval.data.suite import Suite, SuiteError, case_line_numbers, load_spec, read_cases

BUILTIN_ORIGIN = "built-in Gorilla file-system tools"


@dataclass(frozen=True)
class ToolSet:
    """Tool schemas by name (None: the name is known but its parameters are not) and their origin."""

    schemas: dict[str, ToolSchema | None]
    origin: str
    problems: list[str] = default_field(default_factory=list)
    """What is wrong with the bundle they come from (empty: it loads as ``harness run`` loads it)."""
    classes: frozenset[str] | None = None
    """The classes of a bundle of Python classes (``python:``); None for ``.pym`` tools."""
    loaded: bool = True
    """False: the bundle's source did not load (its problem is the one said), so its tools and classes
    are unknown and the cases' calls are not checked against them (no "unknown tool" line per call)."""


def _builtin(problems: list[str], folder: Path | None = None) -> ToolSet:
    """The built-in tools, and the ``.pym`` tools of ``folder`` by name (their schemas where the script
    loads): a broken bundle is one problem, not one more per call of its own tools."""
    from harness.sandbox import SandboxError, load_script

    schemas: dict[str, ToolSchema | None] = dict(builtin_fs_schemas())
    for script in sorted(folder.glob("*.pym")) if folder is not None and folder.is_dir() else []:
        try:
            schemas[script.stem] = load_script(script).tool_schema()
        except SandboxError:
            schemas[script.stem] = None  # reported already; its calls' arguments cannot be checked
    return ToolSet(schemas, BUILTIN_ORIGIN, problems)


def bundle_tools(bundle_dir: Path) -> ToolSet:
    """The tools of the bundle in ``bundle_dir``, loaded as ``harness run`` loads them (from the source
    it names), with every problem of the bundle (see the module doc); the built-in tools when it does not
    load. A broken ``.pym`` script is named with every other one, not only the first the source met."""
    from harness.agents import BundleError, bundle_file
    from harness.bundles import load_bundle
    from harness.tools import load_source, owners, source_name

    file = bundle_file(bundle_dir)
    try:
        config = load_bundle(file)
    except BundleError as exc:
        return _builtin([f"{exc.path}: {p}" for p in exc.problems], file.parent / "tools")
    name, folder = source_name(config), file.parent / config.tools_dir
    try:
        source = load_source(file, config)
    except BundleError as exc:
        said = [f"{exc.path}: {p}" for p in exc.problems]
        if name != "pym":
            return ToolSet({}, f"{file}: {name}", said, loaded=False)
        return _builtin(_broken_scripts(folder) or said, folder)
    schemas: dict[str, ToolSchema | None] = {t.schema.name: t.schema for t in source.tools}
    if classes := frozenset(owners(source).values()):
        return ToolSet(schemas, f"{file}: {name}", classes=classes)
    return ToolSet(schemas, f"{folder}/*.pym" if name == "pym" else f"{file}: {name}")


def _broken_scripts(folder: Path) -> list[str]:
    from harness.sandbox import SandboxError, load_script

    broken = []
    for script in sorted(folder.glob("*.pym")) if folder.is_dir() else []:
        try:
            load_script(script)
        except SandboxError as exc:
            message = str(exc)
            broken.append(message if str(script) in message else f"{script}: {message}")
    return broken


def _quoted(message: str) -> str:
    """The first quoted name in a jsonschema message (``'folder' is a required property``)."""
    return message.split("'")[1] if "'" in message else message


def _unknown_tool(name: str, tools: dict[str, ToolSchema | None]) -> str:
    from harness.schema_errors import did_you_mean

    guess = did_you_mean(name, list(tools))
    return f"unknown tool {name!r}" + (f": did you mean {guess!r}?" if guess else "")


def check_arguments(call: CallSpec, schema: ToolSchema) -> list[tuple[str, str]]:
    """(field suffix, message) for each argument problem: unknown, missing, wrong type or value. The
    check is the sandbox's (``harness.sandbox.validation.argument_check``), as scoring's validity."""
    from harness.sandbox import argument_check, argument_errors
    from harness.schema_errors import did_you_mean

    props: dict[str, Any] = schema.parameters.get("properties", {}) or {}
    errors = list(argument_errors(argument_check(schema.parameters), call.arguments))
    missing = [_quoted(e.message) for e in errors if e.validator == "required" and not e.path]
    # A misspelt required argument is one mistake: named once (as the unknown key), with the one meant.
    meant = {key: guess for key in call.arguments if key not in props
             for guess in [did_you_mean(key, missing)] if guess is not None}
    known = ", ".join(props) or "none"
    out: list[tuple[str, str]] = []
    for error in errors:
        if error.validator == "additionalProperties" and not error.path:
            out += [(f"arguments.{key}", f"not a parameter of {call.name!r}: did you mean {meant[key]!r}?"
                     if key in meant else f"not a parameter of {call.name!r} (parameters: {known})")
                    for key in call.arguments if key not in props]
        elif error.validator == "required" and not error.path:
            if _quoted(error.message) not in meant.values():
                out.append(("arguments", f"missing required {_quoted(error.message)!r} of {call.name!r}"))
        else:
            out.append((".".join(["arguments", *(str(p) for p in error.path)]), error.message))
    return out


def _calls(case: Case) -> Iterator[tuple[str, CallSpec]]:
    if isinstance(case, SingleTurnCase):
        for k, c in enumerate(case.expected):
            yield f"expected[{k}]", c
        return
    if isinstance(case, EpisodeCase):
        for t, turn in enumerate(case.ground_truth):
            for k, c in enumerate(turn):
                yield f"ground_truth[{t}][{k}]", c
        return
    for i, m in enumerate(case.messages):
        for k, c in enumerate(m.tool_calls):
            yield f"messages[{i}].tool_calls[{k}]", c
    yield "expected", case.expected
    for k, c in enumerate(case.expected_alternatives):
        yield f"expected_alternatives[{k}]", c


def check_calls(case: Case, tools: dict[str, ToolSchema | None]) -> list[tuple[str, str]]:
    """(field path, message) for each unknown tool or bad argument in a case's calls."""
    out: list[tuple[str, str]] = []
    for field, call in _calls(case):
        if call.name not in tools:
            out.append((f"{field}.name", _unknown_tool(call.name, tools)))
            continue
        schema = tools[call.name]
        if schema is not None:
            out.extend((f"{field}.{suffix}", msg) for suffix, msg in check_arguments(call, schema))
    if isinstance(case, EpisodeCase):
        if case.checker is not None:  # the benchmark's own ground truth: its calls checked its way
            from harness.benchmarks import TRUTH_PROBLEMS, seam

            out.extend(seam(case.checker[0], TRUTH_PROBLEMS)(case, tools, lambda name: _unknown_tool(name, tools)))
        named = [(f"excluded_tools[{k}]", name) for k, name in enumerate(case.excluded_tools)]
        named += [(f"held_out_tools.{t}[{k}]", name) for t, held in case.held_out_tools.items()
                  for k, name in enumerate(held)]
        out.extend((where, _unknown_tool(name, tools)) for where, name in named if name not in tools)
    return out


def validate_loaded(suite: Suite, tools: ToolSet | None = None) -> list[str]:
    """Problems of an already loaded suite's calls against ``tools`` (default: the bundle's)."""
    problems: list[str] = []
    if tools is None:
        bundle = suite.bundle_dir
        if not bundle.is_dir():
            problems.append(f"{suite.path / 'suite.yaml'}: bundle: {suite.spec.bundle!r} not found (looked at {bundle})")
            tools = _builtin([])
        else:
            tools = bundle_tools(bundle)
            problems.extend(tools.problems)
    lines = case_line_numbers(suite.cases_path)
    where = str(suite.cases_path)
    for case in suite.cases:
        schemas = tools.schemas
        if not tools.loaded and not isinstance(case, SingleTurnCase):
            continue  # the bundle's problem is said once; its tools are unknown
        if isinstance(case, SingleTurnCase):  # its own tools; an answer known not to fit is tagged, not a problem
            if NO_VALID_ANSWER in case.tags:
                continue
            schemas = {t.name: t for t in case.tool_schemas()}
        for field, msg in check_calls(case, schemas):
            if BAD_ENTRY in getattr(case, "tags", ()) and ".arguments" in field:
                continue  # an episode tagged bad_entry: its ground truth breaks a schema, and says so
            problems.append(f"{where}:{lines.get(case.id, 0)}: {field}: {msg}")
        if isinstance(case, EpisodeCase) and tools.classes is not None and not case.involved_classes:
            problems.append(f"{where}:{lines.get(case.id, 0)}: involved_classes: the bundle's tools are Python "
                            f"classes: name the ones this episode uses ({', '.join(sorted(tools.classes))})")
        if isinstance(case, EpisodeCase) and case.involved_classes:
            missing = [c for c in case.involved_classes if tools.classes is None or c not in tools.classes]
            if missing:
                has = "its tools are .pym scripts" if tools.classes is None else f"it has {', '.join(sorted(tools.classes))}"
                problems.append(f"{where}:{lines.get(case.id, 0)}: involved_classes: no class "
                                f"{', '.join(map(repr, missing))} in the bundle ({has})")
    return problems


def validate_suite(path: str | Path, tools: dict[str, ToolSchema] | None = None) -> list[str]:
    """Every problem of a suite directory, as ``file:line: field: message`` strings; [] when clean.

    Lines that fail to parse are reported and the calls of the others are still checked. ``tools``
    overrides the bundle's tool schemas (by name)."""
    suite_dir = Path(path)
    if not suite_dir.is_dir():
        return [f"{suite_dir}: not a directory"]
    try:
        spec = load_spec(suite_dir)
    except SuiteError as exc:
        return exc.problems
    cases, problems = read_cases(suite_dir / spec.cases, spec.kind, str(suite_dir / spec.cases))
    if not problems and not cases:
        problems.append(f"{suite_dir / spec.cases}: no cases")
    if not cases:
        return problems
    suite = Suite(path=suite_dir, spec=spec, cases=cases)
    toolset = None if tools is None else ToolSet(dict(tools), "given")
    return problems + validate_loaded(suite, toolset)


def describe_suite(suite: Suite) -> str:
    """One line: what the suite holds (points or episodes, conversations, tools used)."""
    tools = suite.tools_used()
    head = f"{suite.path}: ok: {suite.kind} suite {suite.name!r} v{suite.spec.version}"
    if suite.kind == "next_call":
        points = suite.next_call_cases()
        convs = len({c.conversation or c.id for c in points})
        no_state = sum(1 for c in points if not c.state_check)
        extra = f", state check n/a on {no_state}" if no_state else ""
        body = f"{len(points)} cases = {len(points)} scoring points from {convs} conversations{extra}"
    elif suite.kind == "single_turn":
        cases = suite.single_turn_cases()
        tags = Counter(t for c in cases for t in c.tags)
        kinds = ", ".join(sorted({c.category for c in cases}))
        body = (f"{len(cases)} cases ({kinds}), each with its own tools; {tags[BAD_ENTRY]} tagged {BAD_ENTRY}, "
                f"{tags[NO_VALID_ANSWER]} of them {NO_VALID_ANSWER}")
        return f"{head}: {body}; {len({c.name for case in cases for c in case.tool_schemas()})} distinct tool names"
    else:
        eps = suite.episode_cases()
        turns = sum(len(c.turns) for c in eps)
        calls = sum(len(c.gold_calls()) for c in eps)
        body = f"{len(eps)} cases = {len(eps)} episodes, {turns} turns, {calls} ground-truth calls"
    return f"{head}: {body}; {len(tools)} tools used: {', '.join(tools)}"


__all__ = [
    "BUILTIN_ORIGIN",
    "ToolSet",
    "bundle_tools",
    "check_arguments",
    "check_calls",
    "describe_suite",
    "validate_loaded",
    "validate_suite",
]
