"""Hypothesis strategies for the values a tool's JSON schema allows, and the validator that judges them.

Scalars (numbers with bounds and ``multipleOf``, enums, consts, strings of other formats) come from
hypothesis-jsonschema's ``from_schema``. Objects, and the arrays and combinators that hold them, are
drawn here: hypothesis-jsonschema 0.23.1 (its latest release) draws objects with a Hypothesis
internal (``many.more``) that current Hypothesis no longer has, so every schema with an object fails
there with an AttributeError. What is drawn here is checked by the schema's own validator
(``jsonschema``, with format checking) before it is used, so a value this module gets wrong is
filtered out, never counted as valid.

Formats a validator does not know are annotations (JSON Schema says so): they are dropped before
drawing, as a validator ignores them. Strings with a ``pattern``, and of the formats tools use most
(date-time, date, time, uuid, email, uri, uri-reference, ipv4, ipv6, hostname), are drawn by
``strings`` with their ``minLength``/``maxLength`` counted in the draw: hypothesis-jsonschema draws
the format or pattern and then filters by length (an email of at most 8 characters: no value found),
and draws some formats as any text (``uuid``). ``$ref`` is resolved (hypothesis-jsonschema's resolver)
before drawing; a recursive one is inlined to ``MAX_REF_DEPTH`` levels, where a deeper reference
becomes ``false`` (no value), so the values drawn are the schema's values of bounded depth.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
from hypothesis import strategies as st

from harness.fuzz.values.strings import format_strings, regex_strings

SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})
KEY_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789_-.$é"
"""Keys of objects whose keys the schema does not list: names any family can write bare."""
MAX_EXTRA_KEYS = 3
MAX_ITEMS = 4


def validator(schema: Any) -> jsonschema.protocols.Validator:
    """The validator of ``schema``'s draft (``$schema``; 2020-12 by default), formats checked."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def schema_problem(schema: Any) -> str | None:
    """None when ``schema`` is a valid JSON schema of its draft; else what is wrong and where."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"not a valid JSON schema at {where}: {exc.message}"
    return None


def first_error(check: jsonschema.protocols.Validator, value: Any) -> jsonschema.ValidationError | None:
    """The error that best says why ``value`` is invalid (jsonschema's ``best_match``); None if valid."""
    return jsonschema.exceptions.best_match(check.iter_errors(value))


def broken_keyword(error: jsonschema.ValidationError) -> str:
    """The schema keyword a validation error breaks (``enum``, ``format``, ``maximum``...). For a
    combinator (``anyOf``/``oneOf``) whose branches all failed on the same keyword, that keyword."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        inner = {str(e.validator) for e in error.context if e.validator not in ("type",)}
        if len(inner) == 1 and error.validator == "anyOf":
            return inner.pop()
    return str(error.validator)


def known_formats(schema: Any) -> Any:
    """A copy of ``schema`` without the ``format`` annotations its validator does not check."""
    known = validator(schema).FORMAT_CHECKER.checkers
    return _drop_formats(schema, known)


def _drop_formats(schema: Any, known: Mapping[str, Any]) -> Any:
    if isinstance(schema, list):
        return [_drop_formats(s, known) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, val in schema.items():
        if key == "format" and isinstance(val, str) and val not in known:
            continue
        if key in ("enum", "const", "default", "examples"):
            out[key] = val
        elif key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
            out[key] = {k: _drop_formats(v, known) for k, v in val.items()} if isinstance(val, dict) else val
        else:
            out[key] = _drop_formats(val, known)
    return out


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
any_json: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(KEY_ALPHABET, min_size=1, max_size=6), inner, max_size=3),
    max_leaves=6,
)
"""Any JSON value (the schema ``{}`` or ``true``)."""


def _types(schema: Mapping[str, Any]) -> list[str] | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return list(kind)
    return None


def _is_scalar(schema: Mapping[str, Any]) -> bool:
    if "enum" in schema or "const" in schema:
        return True
    kinds = _types(schema)
    return kinds is not None and bool(kinds) and set(kinds) <= SCALAR_TYPES and not any(k in schema for k in ("anyOf", "oneOf", "allOf", "not"))


MAX_REF_DEPTH = 3
"""How often one ``$ref`` may be followed inside itself when a recursive schema is inlined."""


def values_for(schema: Any) -> st.SearchStrategy[Any]:
    """Values valid under ``schema`` (a tool's parameters, or any subschema), each checked by the
    schema's validator. Raises nothing: a schema hypothesis-jsonschema refuses gives a strategy that
    raises its error when drawn."""
    from hypothesis_jsonschema._resolve import resolve_all_refs

    check = validator(schema).is_valid
    known = known_formats(schema)
    try:
        resolved = resolve_all_refs(known)
    except RecursionError:  # a recursive $ref: its resolver inlines it forever; bounded here instead
        resolved = inline_refs(known)
    return _values(resolved).filter(check)


def _pointer(root: Any, ref: str) -> Any:
    node = root
    for raw in ref[2:].split("/") if ref.startswith("#/") else []:
        key = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def inline_refs(schema: Any, depth: int = MAX_REF_DEPTH) -> Any:
    """``schema`` with every local ``$ref`` replaced by its target, a reference met ``depth`` times on
    the way down (a recursive one) replaced by ``false``: the values of depth up to ``depth``."""

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(n, seen) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            if seen.count(ref) >= depth:
                return False
            rest = {k: v for k, v in node.items() if k not in ("$ref", "$defs", "definitions")}
            target = walk(_pointer(schema, ref), (*seen, ref))
            if not rest:
                return target
            return {"allOf": [target, walk(rest, seen)]} if target is not True else walk(rest, seen)
        return {k: (v if k in ("enum", "const", "default", "examples") else walk(v, seen))
                for k, v in node.items() if k not in ("$defs", "definitions")}

    return walk(schema, ())


def _values(schema: Any) -> st.SearchStrategy[Any]:
    if schema is True or schema == {}:
        return any_json
    if schema is False or not isinstance(schema, Mapping):
        return st.nothing()
    if (drawn := _formatted(schema)) is not None:
        return drawn
    if _is_scalar(schema):
        from hypothesis_jsonschema import from_schema

        return from_schema(dict(schema))
    check: Callable[[Any], bool] = validator(schema).is_valid
    rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf", "allOf", "not")}
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return st.one_of([_values({**rest, **branch}) if isinstance(branch, Mapping) else _values(branch)
                              for branch in schema[key]]).filter(check)
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        merged: dict[str, Any] = dict(rest)
        for part in schema["allOf"]:
            if isinstance(part, Mapping):
                merged.update(part)
        return _values(merged).filter(check)
    if "not" in schema:
        return _values(rest).filter(check)
    kinds = _types(schema)
    if kinds is None:
        if "properties" in schema or "required" in schema or "additionalProperties" in schema:
            kinds = ["object"]
        elif "items" in schema or "prefixItems" in schema:
            kinds = ["array"]
        else:
            return any_json.filter(check)
    if len(kinds) > 1:
        return st.one_of([_values({**schema, "type": k}) for k in kinds])
    if kinds[0] == "object":
        return _objects(schema).filter(check)
    if kinds[0] == "array":
        return _arrays(schema).filter(check)
    from hypothesis_jsonschema import from_schema

    return from_schema(dict(schema))


def _lengths(schema: Mapping[str, Any]) -> tuple[int, int | None]:
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    return (low if isinstance(low, int) else 0), (high if isinstance(high, int) else None)


def _formatted(schema: Mapping[str, Any]) -> st.SearchStrategy[Any] | None:
    """A string of a ``format`` drawn here and/or a ``pattern``, with its lengths counted in the draw
    (``strings``; with both, as zod writes them, drawn from either and checked against both); None
    for anything else, and for an expression ``strings`` does not model."""
    if _types(schema) not in (["string"], None) or any(k in schema for k in ("enum", "const", "anyOf", "oneOf", "allOf", "not")):
        return None
    fmt, pattern = schema.get("format"), schema.get("pattern")
    by_pattern = regex_strings(pattern, *_lengths(schema)) if isinstance(pattern, str) else None
    by_format = format_strings(fmt, *_lengths(schema)) if isinstance(fmt, str) else None
    if (pattern, fmt) == (None, None) or (pattern is not None and by_pattern is None) or (
            fmt is not None and by_format is None):
        return None
    return st.one_of([w for w in (by_pattern, by_format) if w is not None]).filter(validator(dict(schema)).is_valid)


def _objects(schema: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    declared = schema.get("properties")
    props: Mapping[str, Any] = declared if isinstance(declared, Mapping) else {}
    required = [r for r in schema.get("required") or () if isinstance(r, str)]
    fixed = {k: _values(props.get(k, True)) for k in required}
    optional = {k: _values(v) for k, v in props.items() if k not in fixed}
    base = st.fixed_dictionaries(fixed, optional=optional)
    extra = schema.get("additionalProperties", True)
    if extra is False or (props and "additionalProperties" not in schema):
        return base
    keys: st.SearchStrategy[str] = st.text(KEY_ALPHABET, min_size=1, max_size=8).filter(lambda k: k not in props)
    more = st.dictionaries(keys, _values(extra), max_size=MAX_EXTRA_KEYS)
    return st.tuples(base, more).map(lambda pair: {**pair[1], **pair[0]})


def _arrays(schema: Mapping[str, Any]) -> st.SearchStrategy[list[Any]]:
    low = int(schema.get("minItems", 0) or 0)
    high = schema.get("maxItems")
    high = max(low, min(int(high), low + MAX_ITEMS)) if isinstance(high, int) else low + MAX_ITEMS
    prefix = schema.get("prefixItems")
    items = schema.get("items", True)
    if isinstance(items, list):  # draft 4-7 tuple form
        prefix, items = items, schema.get("additionalItems", True)
    if items is False and not prefix:  # a recursive reference past its depth (inline_refs): no item
        return st.just([]) if low == 0 else st.nothing()
    unique = bool(schema.get("uniqueItems"))
    if isinstance(prefix, list) and prefix:
        head = st.tuples(*(_values(p) for p in prefix)).map(list)
        tail = st.lists(_values(items), max_size=max(0, high - len(prefix))) if items is not False else st.just([])
        return st.tuples(head, tail).map(lambda pair: pair[0] + pair[1])
    return st.lists(_values(items), min_size=low, max_size=high,
                    unique_by=(lambda v: json.dumps(v, sort_keys=True)) if unique else None)


__all__ = [
    "MAX_REF_DEPTH",
    "broken_keyword",
    "first_error",
    "inline_refs",
    "schema_problem",
    "validator",
    "values_for",
]
