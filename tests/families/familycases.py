"""Shared tables and check helpers for the family tests (imported by the modules next to it)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsoncheck import same

from harness.agents import DecodingConstraint, ToolCall, ToolSchema
from harness.grammar.families import FAMILIES as REGISTERED_FAMILIES
from harness.grammar.families import get_adapter
from harness.vocabulary import HARNESS_STRATEGIES

FAMILIES = REGISTERED_FAMILIES
CONSTRAINED = HARNESS_STRATEGIES  # the grammars the harness builds (vLLM builds required/strict: tests/agents/test_vllm_tools.py)

TOOLS_FILE = Path(__file__).resolve().parents[1] / "data" / "shellper_tools.json"


@functools.cache
def shellper_tools() -> tuple[ToolSchema, ...]:
    return tuple(ToolSchema.from_openai(t) for t in json.loads(TOOLS_FILE.read_text()))


# Valid calls over the 18 SHELLper tools: required-only, with optionals, enums, integers, booleans.
VALID_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("pwd", {}),
    ("ls", {}),
    ("ls", {"a": True}),
    ("ls", {"a": False}),
    ("cd", {"folder": "documents"}),
    ("cd", {"folder": ".."}),
    ("mkdir", {"dir_name": "new folder"}),
    ("touch", {"file_name": "notes.txt"}),
    ("echo", {"content": "hello world"}),
    ("echo", {"content": "x = {a: 1}", "file_name": "out.txt"}),
    ("cat", {"file_name": "report.md"}),
    ("find", {}),
    ("find", {"path": "."}),
    ("find", {"path": "src", "name": "test"}),
    ("wc", {"file_name": "a.txt"}),
    ("wc", {"file_name": "a.txt", "mode": "w"}),
    ("wc", {"file_name": "a.txt", "mode": "c"}),
    ("sort", {"file_name": "list.txt"}),
    ("grep", {"file_name": "log.txt", "pattern": "ERROR"}),
    ("du", {}),
    ("du", {"human_readable": True}),
    ("tail", {"file_name": "log.txt"}),
    ("tail", {"file_name": "log.txt", "lines": 15}),
    ("tail", {"file_name": "log.txt", "lines": 0}),
    ("tail", {"file_name": "log.txt", "lines": -3}),
    ("diff", {"file_name1": "a.txt", "file_name2": "b.txt"}),
    ("mv", {"source": "a", "destination": "b"}),
    ("rm", {"file_name": "old.log"}),
    ("rmdir", {"dir_name": "tmp"}),
    ("cp", {"source": "a.txt", "destination": "backup/a.txt"}),
]

# Strings a JSON string may hold that broke earlier grammars ([^}]*, [^<]*) or parsers.
TRICKY_STRINGS = [
    "}",
    "{",
    "a}b{c",
    "<",
    ">",
    "<<>>",
    '"quoted"',
    "it's",
    "back\\slash",
    "new\nline",
    "tab\tand\r",
    "café 日本語 🎉",
    "5",
    "true",
    "null",
    "",
    " leading and trailing ",
    "a, b: c",
    "<end_function_call>",
    "<start_function_call>call:rm{file_name:<escape",
    "</tool_call>",
    "<tool_call>",
    '{"name": "rm"}',
    "<escap",
    "<escape",
    "escape>",
    # found by harness fuzz: reasoning tags inside a string, added tokens that are not control tokens,
    # an escaped control character (\u0014)
    "<think>x</think>",
    "[multimodal]<start_of_image>",
    "<|fim_pad|><|file_sep|>",
    "ctrl\x14\x01",
]


def constraint(strategy: str, parallel: bool = False) -> DecodingConstraint:
    return DecodingConstraint(strategy=strategy, allow_parallel_calls=parallel)  # type: ignore[arg-type]


def calls_of(*pairs: tuple[str, dict[str, Any]]) -> list[ToolCall]:
    return [ToolCall.create(name, args) for name, args in pairs]


@functools.cache
def compiled(family: str, strategy: str, parallel: bool = False) -> Any:
    """The SHELLper constraint of (family, strategy), compiled once per test session."""
    from harness.grammar import compile_artifact

    payload = get_adapter(family).build_payload(shellper_tools(), constraint(strategy, parallel))
    assert payload.artifact is not None
    return compile_artifact(payload.artifact, family).compiled


def walk(family: str, strategy: str, text: str, parallel: bool = False) -> Any:
    from harness.grammar import walk_text

    return walk_text(compiled(family, strategy, parallel), family, text)



def check_round_trip(family: str, strategy: str, calls: list[ToolCall], parallel: bool = False) -> None:
    adapter = get_adapter(family)
    text = adapter.render_output(calls, constraint(strategy, parallel))
    parsed = adapter.parse_response(text, [], shellper_tools())
    assert parsed.errors == (), f"{text!r}: {parsed.errors}"
    got = [(c.name, c.arguments) for c in parsed.tool_calls]
    want = [(c.name, c.arguments) for c in calls]
    assert len(got) == len(want) and all(
        g[0] == w[0] and same(g[1], w[1]) for g, w in zip(got, want, strict=True)
    ), f"{text!r}: parsed {got}, rendered {want}"
    assert parsed.content is None, f"{text!r} left content {parsed.content!r}"
