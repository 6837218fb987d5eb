"""Qwen's structural tag holds every tool in one grammar built from the ebnf strategy's rules: its
language must be the ebnf strategy's, whatever the tool set (one tag, never one per tool). Both read
the same texts, text by text: valid calls written with every spacing, escape and number spelling JSON
allows, and near misses of them."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from familycases import shellper_tools

from harness.agents.constraint import ConstraintError
from harness.grammar.families import get_adapter
from harness.grammar.formats import strict_schema

SEEDS = range(3)
TEXTS_PER_TOOL = 8
WS = " \n\t"
"""The whitespace JSON_SYNTAX allows (a carriage return is one of the slips)."""


def tool_sets() -> dict[str, list[Any]]:
    from harness.bench.synthetic import synthetic_tools

    return {"shellper": list(shellper_tools()), "synthetic": synthetic_tools(100)}


def matcher_factory(structural_tag: str):
    """A function giving a fresh string matcher of the tag's grammar (compiled once, no tokenizer)."""
    import xgrammar as xgr

    grammar = xgr.Grammar.from_structural_tag(structural_tag)
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False).compile_grammar(grammar)

    def accepts(text: str) -> bool:
        m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        return bool(m.accept_string(text)) and m.is_terminated()

    return accepts


def ebnf_matcher(tools: list[Any], parallel: bool):
    """A string matcher of the ebnf strategy's grammar for ``tools``."""
    import xgrammar as xgr

    from harness.agents.constraint import DecodingConstraint

    ebnf = get_adapter("qwen").build_payload(tools, DecodingConstraint(strategy="ebnf", allow_parallel_calls=parallel))
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False).compile_grammar(ebnf.artifact.value)

    def accepts(text: str) -> bool:
        m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        return bool(m.accept_string(text)) and m.is_terminated()

    return accepts


def value_for(schema: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A value ``schema`` allows (all required members, optional ones half of the time)."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    if "anyOf" in schema:
        return value_for(rng.choice(schema["anyOf"]), rng, depth)
    types = schema.get("type")
    kind = rng.choice(types) if isinstance(types, list) else types
    if kind == "object":
        props = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        return {k: value_for(v, rng, depth + 1) for k, v in props.items() if k in required or rng.random() < 0.5}
    if kind == "array":
        n = rng.randint(schema.get("minItems", 0), 3)
        return [value_for(schema["items"], rng, depth + 1) for _ in range(n)]
    if kind == "string":
        return rng.choice(["", "a", "notes.txt", 'say "hi"', "back\\slash", "tab\there", "new\nline", "café ☕", "a/b", "}", "</tool_call>"])
    if kind == "integer":
        return rng.choice([0, 7, -3, 12345])
    if kind == "number":
        return rng.choice([0, 1.5, -2.25, 1e21, 3])
    if kind == "boolean":
        return rng.random() < 0.5
    return None


def ws(rng: random.Random, most: int = 2) -> str:
    return "".join(rng.choice(WS) for _ in range(rng.randint(0, most)))


def string_text(s: str, rng: random.Random) -> str:
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20:
            out.append(rng.choice([json.dumps(ch)[1:-1], f"\\u{ord(ch):04x}"]))
        elif ch == "/" and rng.random() < 0.5:
            out.append("\\/")
        elif ord(ch) > 0x7F and rng.random() < 0.5:
            out.append(json.dumps(ch)[1:-1])  # \\uXXXX
        else:
            out.append(ch)
    return "".join(out) + '"'


def json_written(value: Any, rng: random.Random, most_ws: int = 2) -> str:
    """``value`` as JSON with random whitespace (at most ``most_ws`` characters at each place) and
    random escapes."""
    if isinstance(value, dict):
        if not value:
            return "{" + ws(rng, most_ws) + "}"
        items = [string_text(k, rng) + ws(rng, most_ws) + ":" + ws(rng, most_ws) + json_written(v, rng, most_ws) for k, v in value.items()]
        sep = ""
        body = ""
        for item in items:
            body += sep + item
            sep = ws(rng, most_ws) + "," + ws(rng, most_ws)
        return "{" + ws(rng, most_ws) + body + ws(rng, most_ws) + "}"
    if isinstance(value, list):
        if not value:
            return "[" + ws(rng, most_ws) + "]"
        body = (ws(rng, most_ws) + "," + ws(rng, most_ws)).join(json_written(v, rng, most_ws) for v in value)
        return "[" + ws(rng, most_ws) + body + ws(rng, most_ws) + "]"
    if isinstance(value, str):
        return string_text(value, rng)
    if isinstance(value, float):
        return rng.choice([repr(value), json.dumps(value), f"{value:e}"])
    return json.dumps(value)


SLIPS: list[tuple[str, str]] = [
    (r":(\s*)0(?=[\s,}\]])", ":-0"),  # -0: a number, not an integer
    (r":(\s*)7(?=[\s,}\]])", ":07"),  # a leading zero
    (r"\{\s*\}", "{ \t\r}"),  # an empty object with three whitespace characters
    (r"\{\s*\}", "{\r\n}"),  # ... with two
    (r"\[\s*\]", "[ \n\r]"),
    (r"\[\s*\]", "[\t ]"),
    (r":(\s*)", ":   "),  # three whitespace characters after a colon
    (r",(\s*)", ",\r\n"),
    (r"(\s*)\}\}", " \r\n}}"),
    (r"a", "\x01"),  # a raw control character inside a string
    (r"\}\}", ",}}"),  # a trailing comma
    (r"\\u00e9", "\\u00g9"),  # a bad escape
    (r"true", "True"),
]
"""(pattern, the text that replaces its first match) of classic slips; both grammars must read each
result the same way."""


def near_misses(text: str, rng: random.Random) -> list[str]:
    """Texts a character away from ``text``, and ``text`` with each slip of ``SLIPS``."""
    import re

    cuts = [rng.randrange(len(text)) for _ in range(2)]
    out = [text[:i] + text[i + 1 :] for i in cuts]
    out += [text[:i] + rng.choice(' \r,"\\0-{}[]\x01') + text[i:] for i in cuts]
    out += [re.sub(pattern, lambda _m, r=repl: r, text, count=1) for pattern, repl in SLIPS]
    return [t for t in dict.fromkeys(out) if t != text]


def texts_for(tools: list[Any], rng: random.Random, parallel: bool) -> list[str]:
    texts = []
    for tool in tools:
        schema = strict_schema(tool.parameters)
        for _ in range(TEXTS_PER_TOOL):
            args = value_for(schema, rng)
            text = f'<tool_call>\n{{"name": {json.dumps(tool.name)}, "arguments": {json_written(args, rng)}}}\n</tool_call>'
            texts.append(text)
            texts.extend(near_misses(text, rng))
    if parallel:
        texts.append("\n".join(texts[:2]))
    return texts


def _constraint(parallel: bool = False) -> Any:
    from harness.agents.constraint import DecodingConstraint

    return DecodingConstraint(strategy="structural_tag", allow_parallel_calls=parallel)


def _tag_kinds(schema: dict[str, Any]) -> list[str] | str:
    from harness.agents.types import ToolSchema

    tool = ToolSchema(name="f", description="d", parameters=schema)
    try:
        tag = json.loads(get_adapter("qwen").build_payload([tool], _constraint()).artifact.value)
    except ConstraintError:
        return "refused"
    return [t["content"]["type"] for t in tag["format"]["tags"]]


def _ebnf_refuses(schema: dict[str, Any]) -> bool:
    from harness.agents.constraint import DecodingConstraint
    from harness.agents.types import ToolSchema

    tool = ToolSchema(name="f", description="d", parameters=schema)
    try:
        get_adapter("qwen").build_payload([tool], DecodingConstraint(strategy="ebnf"))
    except ConstraintError:
        return True
    return False


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {"type": "object"}}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}, "minItems": 2}}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {"enum": [1.5, 2]}}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {"type": ["string", "null"]}, "b": {"enum": ["x", 3, None]}}, "additionalProperties": False},
    ],
)
def test_every_schema_is_one_grammar_tag_or_refused_as_ebnf_refuses_it(schema: dict[str, Any]) -> None:
    """One grammar per tool set, never one JSON-schema tag per tool; what ebnf refuses, the tag refuses."""
    assert _tag_kinds(schema) == ("refused" if _ebnf_refuses(schema) else ["grammar"])


def test_the_shipped_and_synthetic_tool_sets_are_one_grammar_tag() -> None:
    for name, tools in tool_sets().items():
        tag = json.loads(get_adapter("qwen").build_payload(tools, _constraint()).artifact.value)
        assert [t["content"]["type"] for t in tag["format"]["tags"]] == ["grammar"], name


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tool_set", ["shellper", "synthetic"])
def test_same_language_as_the_ebnf_strategy(tool_set: str, seed: int, parallel: bool) -> None:
    tools = tool_sets()[tool_set]
    ours = matcher_factory(get_adapter("qwen").build_payload(tools, _constraint(parallel)).artifact.value)
    reference = ebnf_matcher(tools, parallel)
    rng = random.Random(f"{tool_set}-{seed}-{parallel}")
    texts = texts_for(tools, rng, parallel)
    # With parallel calls the tag lets free text sit between calls (triggered tags) where ebnf allows
    # one newline: there every text ebnf takes, the tag takes; inside a call they read alike.
    differ = [t for t in texts if (ours(t) != reference(t)) and not (parallel and ours(t))]
    assert differ == [], f"{len(differ)} of {len(texts)} texts read differently, e.g. {differ[:3]!r}"
    accepted = sum(reference(t) for t in texts)
    assert 0.1 * len(texts) < accepted < 0.9 * len(texts)  # both kinds of text were tried
