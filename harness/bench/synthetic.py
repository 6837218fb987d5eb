"""Deterministic synthetic tool sets and calls for ``harness bench grammar``'s growth curves.

``synthetic_tools(n, seed)`` gives ``n`` tools of realistic shape: 0-6 parameters each, strings
(some with enums), integers, numbers, booleans, arrays of strings, arrays of objects, nested
objects with their own required keys, optional parameters with defaults. Tool ``i`` depends only on
``(seed, i)``, so the set of 5 is the start of the set of 18, which is the start of the set of 100.

``synthetic_calls(tools, k, seed)`` gives ``k`` valid calls spread over the tools (required
arguments always, optional ones half of the time). ``long_text(n, seed)`` is prose of exactly ``n``
characters with punctuation, quotes and newlines (JSON escapes them; FunctionGemma keeps them raw).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from harness.agents import ToolCall, ToolSchema

VERBS = ("get", "list", "create", "update", "delete", "search", "send", "fetch", "archive", "schedule",
         "convert", "resize", "translate", "summarize", "book", "cancel", "export", "import", "tag", "rate")
NOUNS = ("invoice", "customer", "ticket", "calendar_event", "file", "photo", "playlist", "order", "report",
         "message", "flight", "hotel", "reminder", "contact", "repository", "issue", "recipe", "payment",
         "shipment", "sensor_reading", "note", "document", "meeting", "task", "dataset")
WORDS = ("the", "quarterly", "report", "for", "north", "region", "shows", "steady", "growth", "in", "sales",
         "while", "costs", "fell", "slightly", "after", "we", "moved", "suppliers", "please", "review",
         "attached", "figures", "before", "Friday", "and", "send", "comments", "to", "Dana", "or", "Lee")
PARAM_WORDS = ("name", "title", "query", "city", "email", "path", "folder", "label", "status", "priority",
               "limit", "offset", "count", "amount", "currency", "language", "format", "notes", "owner",
               "due_date", "start_time", "end_time", "tags", "recipients", "items", "address", "options",
               "include_archived", "dry_run", "verbose", "timezone", "color", "width", "height", "quality")
ENUMS = (("low", "medium", "high"), ("json", "csv", "xml", "yaml"), ("asc", "desc"),
         ("draft", "open", "closed", "archived"), ("USD", "EUR", "GBP", "JPY"), ("en", "de", "fr", "es", "ja"))
SEED = 20240607


def _string_param(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.25:
        return {"type": "string", "enum": list(rng.choice(ENUMS)), "description": "One of the listed values."}
    return {"type": "string", "description": rng.choice(("Free text.", "A name or path.", "An identifier."))}


def _leaf(rng: random.Random) -> dict[str, Any]:
    kind = rng.choices(("string", "integer", "number", "boolean"), weights=(6, 2, 1, 2))[0]
    if kind == "string":
        return _string_param(rng)
    desc = {"integer": "A whole number.", "number": "A number.", "boolean": "A flag."}[kind]
    return {"type": kind, "description": desc}


def _param(rng: random.Random, depth: int) -> dict[str, Any]:
    roll = rng.random()
    if depth == 0 and roll < 0.12:  # a nested object
        props = {f"{w}": _leaf(rng) for w in rng.sample(PARAM_WORDS, rng.randint(2, 3))}
        required = sorted(rng.sample(list(props), 1))
        return {"type": "object", "description": "Nested settings.", "properties": props, "required": required}
    if depth == 0 and roll < 0.22:  # an array of strings
        return {"type": "array", "items": {"type": "string"}, "description": "A list of values."}
    if depth == 0 and roll < 0.27:  # an array of objects
        props = {w: _leaf(rng) for w in rng.sample(PARAM_WORDS, 2)}
        return {"type": "array", "description": "A list of entries.",
                "items": {"type": "object", "properties": props, "required": [next(iter(props))]}}
    return _leaf(rng)


def synthetic_tool(i: int, seed: int = SEED) -> ToolSchema:
    """Tool number ``i`` of the synthetic family ``seed``."""
    rng = random.Random(f"{seed}:{i}")
    name = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{i}"
    n_params = rng.choices(range(7), weights=(1, 3, 4, 4, 3, 2, 1))[0]
    props = {w: _param(rng, 0) for w in rng.sample(PARAM_WORDS, n_params)}
    required = sorted(k for k in props if rng.random() < 0.55)
    for key, schema in props.items():
        if key not in required and schema.get("type") in ("integer", "boolean") and rng.random() < 0.5:
            schema["default"] = 10 if schema["type"] == "integer" else False
    return ToolSchema(
        name=name,
        description=f"{name.replace('_', ' ').capitalize()}: a synthetic tool of realistic shape.",
        parameters={"type": "object", "properties": props, "required": required},
    )


def synthetic_tools(n: int, seed: int = SEED) -> list[ToolSchema]:
    """The first ``n`` synthetic tools."""
    return [synthetic_tool(i, seed) for i in range(n)]


def long_text(n: int, seed: int = SEED) -> str:
    """Prose of exactly ``n`` characters (words, commas, quotes, a newline now and then)."""
    rng = random.Random(f"{seed}:text")
    parts: list[str] = []
    size = 0
    while size < n:
        word = rng.choice(WORDS)
        roll = rng.random()
        if roll < 0.06:
            word += ",\n"
        elif roll < 0.1:
            word = f'"{word}"'
        elif roll < 0.16:
            word += "."
        parts.append(word)
        size += len(word) + 1
    return " ".join(parts)[:n]


def sample_value(schema: dict[str, Any], rng: random.Random) -> Any:
    """A valid value for ``schema`` (the shapes ``synthetic_tool`` writes, and simple others)."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type", "string")
    if kind == "string":
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
    if kind == "integer":
        return rng.randint(0, 500)
    if kind == "number":
        return round(rng.uniform(0, 100), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [sample_value(schema.get("items", {}), rng) for _ in range(rng.randint(1, 3))]
    if kind == "object":
        return sample_arguments(schema, rng)
    return None


def sample_arguments(schema: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    return {k: sample_value(v, rng) for k, v in props.items() if k in required or rng.random() < 0.5}


def synthetic_calls(tools: Sequence[ToolSchema], k: int, seed: int = SEED) -> list[ToolCall]:
    """``k`` valid calls spread evenly over ``tools``."""
    rng = random.Random(f"{seed}:calls:{len(tools)}")
    step = max(1, len(tools) / max(1, k))
    picks = [tools[int(j * step) % len(tools)] for j in range(k)]
    return [ToolCall.create(t.name, sample_arguments(t.parameters, rng)) for t in picks]


def string_parameter(tools: Sequence[ToolSchema]) -> tuple[ToolSchema, str] | None:
    """A tool and one of its free-text string parameters (no enum), preferring content-like names."""
    best: tuple[int, ToolSchema, str] | None = None
    for tool in tools:
        for key, schema in (tool.parameters.get("properties") or {}).items():
            if isinstance(schema, dict) and schema.get("type") == "string" and "enum" not in schema:
                rank = 0 if key in ("content", "text", "body", "notes", "query") else 1
                if best is None or rank < best[0]:
                    best = (rank, tool, key)
    return None if best is None else (best[1], best[2])


def call_with_text(tool: ToolSchema, key: str, text: str, seed: int = SEED) -> ToolCall:
    """A call of ``tool`` whose ``key`` argument is ``text`` (required arguments filled in)."""
    args = sample_arguments({**tool.parameters, "properties": {
        k: v for k, v in (tool.parameters.get("properties") or {}).items()
        if k in set(tool.parameters.get("required") or ())
    }}, random.Random(seed))
    args[key] = text
    return ToolCall.create(tool.name, args)


__all__ = [
    "SEED",
    "call_with_text",
    "long_text",
    "sample_arguments",
    "string_parameter",
    "synthetic_calls",
    "synthetic_tool",
    "synthetic_tools",
]
