"""EBNF text and the value syntaxes of the families' call formats: literals and rule names as xgrammar
reads them, rules for "any text without X", and ``Syntax`` -- how objects, arrays, strings, numbers
and keys are spelled -- for JSON (Qwen's ebnf and structural tag) and FunctionGemma (``<escape>`` strings, bare keys, no whitespace). Nothing here imports
xgrammar: grammars are text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from harness.grammar.formats._values import ESCAPE, MAX_JSON_WS, fg_text, json_text
from harness.grammar.schema import (
    ebnf_literal as ebnf_literal,  # re-exported: the families spell literals
)


def _class_char(ch: str) -> str:
    if ch in "\\]^-[":
        return "\\" + ch
    if ord(ch) < 0x20:
        return f"\\x{ord(ch):02x}"
    return ch


_RULE_JUNK = re.compile(r"[^A-Za-z0-9]+")


def rule_name(*parts: str) -> str:
    """A valid rule name from free text (letters, digits and hyphens; starts with a letter)."""
    cleaned = [(_RULE_JUNK.sub("-", p).strip("-") or "x") for p in parts]
    name = "-".join(cleaned)
    return name if name[0].isalpha() else "r-" + name


def excluding_rules(prefix: str, word: str) -> dict[str, str]:
    """Rules ``{prefix}0`` ... matching any text that does not contain ``word`` (a KMP automaton).

    The text may end with a proper prefix of ``word``: ``word`` has to be followed by the closing
    delimiter anyway, and when ``word`` has no border (``<escape>`` has none) that never forms it early.
    """
    m = len(word)

    def step(state: int, ch: str) -> int:
        seen = word[:state] + ch
        for k in range(min(len(seen), m), 0, -1):
            if seen.endswith(word[:k]):
                return k
        return 0

    rules: dict[str, str] = {}
    alphabet = sorted(set(word))
    for state in range(m):
        alts = ['""']
        special = []
        for ch in alphabet:
            nxt = step(state, ch)
            if nxt == 0:
                continue
            special.append(ch)
            if nxt < m:
                alts.append(f"{ebnf_literal(ch)} {prefix}{nxt}")
        negated = "".join(_class_char(c) for c in special)
        alts.insert(1, f"[^{negated}] {prefix}0")
        rules[f"{prefix}{state}"] = " | ".join(alts)
    return rules


NUMBER_RULES = {
    "int": '"-"? ("0" | [1-9] [0-9]*)',
    "num": 'int ("." [0-9]+)? ([eE] [+-]? [0-9]+)?',
    "bool": '"true" | "false"',
    "null": '"null"',
}


@dataclass(frozen=True, slots=True)
class Syntax:
    """How values are spelled in one call format (EBNF expressions and the text renderer)."""

    name: str
    obj_open: str
    obj_close: str
    arr_open: str
    arr_close: str
    kv_sep: str
    item_sep: str
    string: str
    """Rule name of any string."""
    generic_key: str
    """Rule name of a key of an object whose keys the schema does not list."""
    base_rules: Mapping[str, str]
    text: Callable[[Any], str]
    """Renders a value in this syntax (used for enum and const literals)."""
    key_text: Callable[[str], str]
    bare_keys: bool = False
    """Keys are written without quotes (FunctionGemma): names must pass ``check_fg_name``."""
    obj_empty: str = ""
    """When set, the empty object is an alternative of its own spelled so (``"{" ws "}"``: one
    whitespace run, as xgrammar's JSON-schema converter writes it); otherwise no members sit between
    the whitespace after the opening brace and the one before the closing brace."""
    arr_empty: str = ""
    """The same for the empty array."""
    string_open: str = '"\\""'
    """The delimiters of a string whose characters a rule spells (``format``, ``pattern``, lengths)."""
    string_close: str = '"\\""'
    raw_strings: bool = False
    """A string's text is written as it is (FunctionGemma), not with JSON's escapes."""


def _json_string_rules(string: str, rest: str, then: str) -> dict[str, str]:
    """A JSON string as rule ``string`` (with every JSON escape), followed by ``then`` (a lookahead:
    what may follow a string in JSON; it lets xgrammar precompute the masks of tokens that close a
    string, without which a mask inside a string took ~100 ms on Qwen's vocabulary). The escape is a
rule of its own with its four hex digits spelt out: inline, or as ``[0-9a-fA-F]{4}``, a mask after
``\\u0`` took 2-17 ms on Qwen's vocabulary (``harness fuzz`` timed it), as a rule ~25 us."""
    return {
        string: f'"\\"" {rest}',
        rest: f'("\\"" | [^"\\\\\\x00-\\x1f] {rest} | "\\\\" {rest}esc {rest}) (= {then})',
        f"{rest}esc": '["\\\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F]',
    }


JSON_SYNTAX = Syntax(
    name="json",
    obj_open='"{" ws',
    obj_close='ws "}"',
    arr_open='"[" ws',
    arr_close='ws "]"',
    kv_sep='ws ":" ws',
    item_sep='ws "," ws',
    string="jstring",
    generic_key="jstring",
    base_rules={
        "ws": f"[ \\n\\t]{{0,{MAX_JSON_WS}}}",
        **_json_string_rules("jstring", "jrest", "[ \\n\\t]* [,}\\]:]"),
    },
    text=json_text,
    key_text=lambda k: json.dumps(k, ensure_ascii=False),
)

FG_SYNTAX = Syntax(
    name="function_gemma",
    obj_open='"{"',
    obj_close='"}"',
    arr_open='"["',
    arr_close='"]"',
    kv_sep='":"',
    item_sep='","',
    string="fgstring",
    generic_key="fgkey",
    base_rules={
        "fgstring": f"{ebnf_literal(ESCAPE)} fgbody {ebnf_literal(ESCAPE)}",
        "fgbody": f"TagDispatch(loop_after_dispatch=false, excludes=({ebnf_literal(ESCAPE)}))",
        "fgkey": "[^:{}\\[\\],<>\\x00-\\x20]+",
    },
    text=fg_text,
    key_text=lambda k: k,
    bare_keys=True,
    string_open=ebnf_literal(ESCAPE),
    string_close=ebnf_literal(ESCAPE),
    raw_strings=True,
)
"""FunctionGemma's syntax as xgrammar reads it: "any text without ``<escape>``" is xgrammar's
``TagDispatch`` with ``excludes`` (what its structural tags compile ``any_text`` to; ~10 ms to compile
for Gemma's 262k vocabulary, against ~300 ms for the same language as plain rules)."""

FG_SYNTAX_PORTABLE = replace(
    FG_SYNTAX,
    name="function_gemma_portable",
    base_rules={
        "fgstring": f"{ebnf_literal(ESCAPE)} fgs0 {ebnf_literal(ESCAPE)}",
        **excluding_rules("fgs", ESCAPE),
        "fgkey": FG_SYNTAX.base_rules["fgkey"],
    },
)
"""The same language in plain EBNF (a KMP automaton), for engines without ``TagDispatch``."""


__all__ = [
    "FG_SYNTAX",
    "FG_SYNTAX_PORTABLE",
    "JSON_SYNTAX",
    "NUMBER_RULES",
    "Syntax",
    "ebnf_literal",
    "excluding_rules",
    "rule_name",
]
