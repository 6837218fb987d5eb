"""Defects of xgrammar's JSON-schema converter that only a tool set shows.

``defects.find_defects`` asks xgrammar about one tool's arguments at a time. Some defects need other
tools beside it: with xgrammar 0.2.8, two tools whose arguments differ only by a property named
``title`` compile to one rule, so the second tool loses that property (found on the benchmark corpus:
``library_search_books`` beside ``concert_find_nearby``). The ``json_schema`` strategy's schema holds
every tool, one ``anyOf`` branch each, so the whole call is checked against it here, the same way (the
call's JSON text matched character by character, against the validator's verdict), and, where the
call's own branch alone agrees with the validator, the other branches are dropped while the
disagreement holds (ddmin: halves, then quarters...), then the call's arguments are shrunk. The result
is a defect like any other: a schema of the few branches it needs, the call, and a script.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from harness.fuzz.defects import (
    _LIBRARY_FAILURES,
    Defect,
    Kind,
    _smaller_values,
    rejected_at,
    xgrammar_accepts,
    xgrammar_version,
)

LABEL = "anyOf:tool_set"
"""The label of a defect only a tool set shows."""


def call_text(call: Mapping[str, Any]) -> str:
    """The call as the json_schema strategy writes it (``name`` first, arguments in canonical order,
    compact). Raises ConstraintError for a value JSON cannot hold."""
    from harness.agents import ToolCall
    from harness.grammar.families import json_calls_text

    return json_calls_text([ToolCall.create(call["name"], call["arguments"])], parallel=False)


def _with(base: Mapping[str, Any], branches: Sequence[Any]) -> dict[str, Any]:
    """The tool set's schema with ``branches`` as its ``anyOf`` (its ``$defs`` kept)."""
    return {**base, "anyOf": list(branches)}


def _disagrees(base: Mapping[str, Any], branches: Sequence[Any], call: Mapping[str, Any]) -> Kind | None:
    from harness.fuzz.values import validator

    schema = _with(base, branches)
    try:
        valid = validator(schema).is_valid(dict(call))
    except Exception:
        return None
    accepted = xgrammar_accepts(schema, call_text(call))
    if accepted is None or accepted == valid:
        return None
    return "rejects_valid" if valid else "accepts_invalid"


def _name_of(branch: Any) -> Any:
    try:
        return branch["properties"]["name"]["const"]
    except (KeyError, TypeError):
        return None


def _fewer_branches(base: Mapping[str, Any], indices: list[int], own: set[int], kind: Kind, branches: Sequence[Any],
                    call: Mapping[str, Any], deadline: float) -> list[int]:
    """``indices`` with the branches the disagreement does not need dropped (ddmin; the call's own kept,
    the order kept: the defect may depend on it)."""
    chunk = max(1, (len(indices) - len(own)) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        dropped = False
        others = [i for i in indices if i not in own]
        for start in range(0, len(others), chunk):
            gone = set(others[start:start + chunk])
            trial = [i for i in indices if i not in gone]
            if _disagrees(base, [branches[i] for i in trial], call) == kind:
                indices, dropped = trial, True
                break
            if time.monotonic() > deadline:
                break
        if not dropped:
            if chunk == 1:
                break
            chunk = max(1, chunk // 2)
    return indices


def _smaller_calls(call: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for arguments in _smaller_values(call["arguments"]):
        yield {"name": call["name"], "arguments": arguments}


def toolset_defect(schema: Any, call: Mapping[str, Any], *, tool: str, deadline: float) -> Defect | None:
    """The defect ``call`` shows under the tool set's ``schema`` (an ``anyOf`` with one branch per tool)
    but not under its own tool's branch alone, reduced; None when there is none."""
    from harness.agents import ConstraintError
    from harness.fuzz.values import first_error, validator

    branches = schema.get("anyOf") if isinstance(schema, dict) else None
    if not isinstance(branches, list) or not isinstance(call.get("arguments"), dict):
        return None  # not one call against one branch per tool (parallel calls are a list)
    try:
        call_text(call)
    except ConstraintError:  # NaN and the like: no text the strategy writes
        return None
    base = {k: v for k, v in schema.items() if k != "anyOf"}
    kind = _disagrees(base, branches, call)
    own = {i for i, b in enumerate(branches) if _name_of(b) == call.get("name")}
    if kind is None or not own or _disagrees(base, [branches[i] for i in sorted(own)], call) is not None:
        return None  # none, or the tool alone shows it (defects.find_defects reports that)
    kept = _fewer_branches(base, list(range(len(branches))), own, kind, branches, call, deadline)
    reduced = [branches[i] for i in kept]
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for smaller in _smaller_calls(call):
            if _disagrees(base, reduced, smaller) == kind:
                call, progress = smaller, True
                break
    minimal = _with(base, reduced)
    text = call_text(call)
    error = first_error(validator(minimal), dict(call))
    return Defect(
        label=LABEL, kind=kind, minimal_schema=minimal, instance=text,
        validator_says="valid" if error is None else f"invalid: {error.message}",
        grammar_did="accepted" if kind == "accepts_invalid" else rejected_at(minimal, text),
        xgrammar_version=xgrammar_version(), tool=tool,
        path=f"(the call, among {len(branches)} tools; {len(reduced)} kept)",
    )


def attach_toolset_defects(case: Any, cells: Sequence[Any], artifacts: Sequence[Any], *, deadline: float) -> None:
    """Add to each ``json_schema`` cell of ``case``'s tool that rejected a valid call or accepted an
    invalid one, and whose failures the tool alone does not explain (``defects.attach_defects`` found
    nothing of that kind), the defect its counterexamples show among the other tools. ``artifacts``:
    each cell's constraint, as its grammar was built (None where none was)."""
    for cell, artifact in zip(cells, artifacts, strict=True):
        kinds = {_LIBRARY_FAILURES[k] for k in cell.classes if k in _LIBRARY_FAILURES} - {d.kind for d in cell.defects}
        if not kinds or cell.strategy != "json_schema" or artifact is None:
            continue
        schema = json.loads(artifact.value)
        calls = [call for found in cell.counterexamples for call in found.calls or () if call.get("name") == case.tool.name]
        for call in calls:
            defect = None if time.monotonic() > deadline else toolset_defect(schema, call, tool=case.tool.name, deadline=deadline)
            if defect is not None and defect.kind in kinds:
                cell.defects = [*cell.defects, defect]
                break


__all__ = ["LABEL", "attach_toolset_defects", "call_text", "toolset_defect"]
