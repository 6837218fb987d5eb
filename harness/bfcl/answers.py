"""BFCL's possible answers made concrete: the answer the oracle replays.

BFCL lists acceptable values per argument (``""``: the argument may be left out); a ``dict``
argument's value, and each dict of a list of dicts, is itself ``{key: [acceptable values]}``, as its
dict checkers read it. ``answer_arguments`` takes the first listed value of each argument (left out
where that is ``""``, unless the function requires the argument: BFCL's checker requires it whatever
the list says; an argument the function lacks is left out where the list allows it), or, ``strict``,
the first listed value that fits the argument's converted schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.agents import ToolSchema
from harness.bfcl.data import openai_name


class NoValidAnswer(Exception):
    """No listed value fits the schema."""


_OMIT = object()


def fits(value: Any, schema: Mapping[str, Any]) -> bool:
    from jsonschema import Draft202012Validator

    return bool(Draft202012Validator(dict(schema)).is_valid(value))


def _is_answer_dict(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, list) for v in value.values())


def resolve(value: Any, schema: Mapping[str, Any], strict: bool) -> Any:
    """A listed value made concrete: a ``dict`` parameter's value (and each dict of a list of dicts)
    is itself ``{key: [acceptable values]}``, as BFCL's dict checkers read it."""
    if schema.get("type") == "object" and _is_answer_dict(value):
        return _pick_all(value, schema, strict)
    items = schema.get("items")
    if (schema.get("type") == "array" and isinstance(items, Mapping) and items.get("type") == "object"
            and isinstance(value, list) and value and all(_is_answer_dict(v) for v in value)):
        return [_pick_all(v, items, strict) for v in value]
    return value


def _pick(values: Sequence[Any], schema: Mapping[str, Any], required: bool, strict: bool) -> Any:
    """The first listed value (``_OMIT`` for ``""``, but never for a parameter the schema requires:
    BFCL's checker requires it whatever the list says); ``strict``: the first that fits ``schema``."""
    for value in values:
        if value == "":
            if required:
                continue
            return _OMIT
        try:
            resolved = resolve(value, schema, strict)
        except NoValidAnswer:
            continue
        if not strict or fits(resolved, schema):
            return resolved
    if strict:
        raise NoValidAnswer
    return _OMIT


def _pick_all(answer: Mapping[str, Sequence[Any]], schema: Mapping[str, Any], strict: bool) -> dict[str, Any]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    picked = {
        # a parameter the function does not have is left out where the answer allows it
        k: _OMIT if props and k not in props and "" in v else _pick(v, props.get(k, {}), k in required, strict)
        for k, v in answer.items()
    }
    return {k: v for k, v in picked.items() if v is not _OMIT}


def answer_arguments(
    ground_truth: Sequence[Mapping[str, Any]], tools: Mapping[str, ToolSchema], strict: bool
) -> list[tuple[str, dict[str, Any]]]:
    """BFCL's possible answer as (name as sent to the model, arguments) per call: the first listed
    values, or with ``strict`` the first that fit each tool's converted schema (``NoValidAnswer``
    when some cannot)."""
    calls = []
    for item in ground_truth:
        (name, params), = item.items()
        tool = tools.get(openai_name(name))
        schema = tool.parameters if tool is not None else {}
        calls.append((openai_name(name), _pick_all(params, schema, strict)))
    return calls


__all__ = ["NoValidAnswer", "answer_arguments", "fits", "resolve"]
