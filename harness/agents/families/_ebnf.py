"""JSON schema -> EBNF value rules, shared by the family modules.

One builder serves both value syntaxes of the families' call formats:

- ``JSON_SYNTAX`` (Qwen): ``{"k": v}``; strings with every JSON escape; whitespace bounded to
  ``MAX_JSON_WS`` characters wherever JSON allows it.
- ``FG_SYNTAX`` (FunctionGemma): ``{k:v}``; strings between ``<escape>`` delimiters holding any text
  that does not contain ``<escape>``; keys bare; no whitespace at all.

Objects follow one canonical key order everywhere: ``canonical_keys`` (case-insensitive sort, ties
broken case-sensitively) -- the order FunctionGemma's chat template (``dictsort``) writes arguments in.
Grammars, renderers, strict JSON schemas and the declared tools all use it, so a renderer that sees
only a call (no schema) still emits what the grammar accepts. Objects that declare ``properties``
are closed (only those keys); required keys must appear; each key at most once.

Supported schema keywords: type (or a list of types), enum, const, anyOf/oneOf, a one-element
allOf, properties/required/additionalProperties, items/minItems/maxItems, nullable. Every other
validation keyword is refused before a grammar is built (``keywords.check_keywords``), never ignored;
``$ref`` raises ``ConstraintError`` here too.
Nothing here imports xgrammar: grammars are text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from harness.agents.constraint import ConstraintError
from harness.agents.families._types import NoValue, fits_type

MAX_JSON_WS = 2
"""Most whitespace characters allowed at any one place in JSON output (grammar and structural tag)."""
ESCAPE = "<escape>"


def canonical_keys(keys: Iterable[str]) -> list[str]:
    """The canonical order of object keys (Jinja's case-insensitive ``dictsort``, made total)."""
    return sorted(keys, key=lambda k: (k.lower(), k))


def canonical_value(value: Any) -> Any:
    """``value`` with every dict's keys in canonical order (lists keep their order)."""
    if isinstance(value, dict):
        return {k: canonical_value(value[k]) for k in canonical_keys(value)}
    if isinstance(value, list | tuple):
        return [canonical_value(v) for v in value]
    return value


def json_text(value: Any, *, compact: bool = False) -> str:
    """``value`` as JSON, keys in canonical order: Python's default separators (``", "``, ``": "``; what
    Qwen's chat template writes), or with ``compact`` none (``","``, ``":"``; what vLLM's json_schema
    language allows with ``disable_any_whitespace``)."""
    separators = (",", ":") if compact else None
    try:
        return json.dumps(canonical_value(value), ensure_ascii=False, allow_nan=False, separators=separators)
    except ValueError as exc:
        raise ConstraintError(f"value cannot be written as JSON: {exc}") from exc


def fg_text(value: Any, *, escape_keys: bool = False, strict: bool = True) -> str:
    """``value`` in FunctionGemma's value syntax (strings in ``<escape>``, everything else bare).

    ``strict`` raises ``ConstraintError`` for what the syntax cannot hold (a string containing
    ``<escape>``, a bare key with a delimiter, NaN); prompts render with ``strict=False`` (lossy).
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if strict and not math.isfinite(value):
            raise ConstraintError(f"{value!r} cannot be written in FunctionGemma's call syntax")
        return json.dumps(value)
    if isinstance(value, str):
        if strict and ESCAPE in value:
            raise ConstraintError(f"a string holding {ESCAPE!r} cannot be written in FunctionGemma's syntax")
        return f"{ESCAPE}{value}{ESCAPE}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(fg_text(v, escape_keys=escape_keys, strict=strict) for v in value) + "]"
    if isinstance(value, dict):
        parts = []
        for key in canonical_keys(value):
            if strict and not escape_keys:
                check_fg_name(key, "key")
            shown = f"{ESCAPE}{key}{ESCAPE}" if escape_keys else key
            parts.append(f"{shown}:{fg_text(value[key], escape_keys=escape_keys, strict=strict)}")
        return "{" + ",".join(parts) + "}"
    if strict:
        raise ConstraintError(f"{type(value).__name__} is not a JSON value")
    return fg_text(str(value), strict=False)


_FG_BAD_NAME = re.compile(r"[\s:{}\[\],<>]")


def check_fg_name(name: str, what: str) -> None:
    """FunctionGemma writes names bare: they must be non-empty and hold none of ``:{}[],<>`` or spaces."""
    if not isinstance(name, str) or not name or _FG_BAD_NAME.search(name):
        raise ConstraintError(
            f"{what} name {name!r} cannot be written in FunctionGemma's call syntax "
            "(it must be non-empty, without whitespace or any of : { } [ ] , < >)"
        )


def ebnf_literal(text: str) -> str:
    """``text`` as an EBNF string literal (quotes, backslashes and control characters escaped)."""
    out = ['"']
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


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


_NUMBER_RULES = {
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

XGRAMMAR_JSON_SYNTAX = replace(
    JSON_SYNTAX,
    name="xgrammar_json",
    string="xstring",
    generic_key="xstring",
    base_rules={
        "ws": f"[ \\n\\r\\t]{{0,{MAX_JSON_WS}}}",
        **_json_string_rules("xstring", "xrest", f"[ \\n\\r\\t]{{0,{MAX_JSON_WS}}} [,}}\\]:]"),
        "int": '"0" | "-"? [1-9] [0-9]*',
        "num": '"-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?',
    },
    obj_empty='"{" ws "}"',
    arr_empty='"[" ws "]"',
)
"""The language xgrammar 0.2.8 compiles a JSON schema to with ``max_whitespace_cnt`` (what Qwen's
structural tag gives each tool's arguments), for the schemas ``xgrammar_json_subset`` accepts:
whitespace is space, newline, carriage return or tab, ``-0`` is a number but not an integer, and
empty containers are their own alternative. A test checks it against xgrammar's converter text by
text (``tests/families/test_qwen_structural_tag.py``)."""

XGRAMMAR_JSON_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "minItems", "enum", "const",
     "anyOf", "description", "title", "default", "examples"}
)
"""Schema keywords ``XGRAMMAR_JSON_SYNTAX`` spells as xgrammar does (annotations included)."""


def xgrammar_json_subset(schema: Any, where: str = "parameters") -> str | None:
    """None when ``schema`` (a strict tool schema) uses only what ``XGRAMMAR_JSON_SYNTAX`` spells as
    xgrammar's converter does; else where and what does not fit (a keyword, an open object...)."""
    if not isinstance(schema, Mapping):
        return f"{where}: not an object schema"
    unknown = sorted(set(schema) - XGRAMMAR_JSON_KEYWORDS)
    if unknown:
        return f"{where}: {', '.join(unknown)}"
    types = schema.get("type")
    type_list = types if isinstance(types, list) else [types]
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        if not values or any(isinstance(v, (dict, list, float)) for v in values):
            return f"{where}: enum or const of containers or floats"
        if not all(fits_type(v, schema) for v in values):
            return f"{where}: enum values outside the schema's type"
        return None
    if "anyOf" in schema:
        if set(schema) & {"type", "properties", "items"}:
            return f"{where}: anyOf next to a type"
        return next((r for i, sub in enumerate(schema["anyOf"]) if (r := xgrammar_json_subset(sub, f"{where}.anyOf[{i}]"))), None)
    if not all(t in ("string", "integer", "number", "boolean", "null", "array", "object") for t in type_list):
        return f"{where}: type {types!r}"
    if "object" in type_list:
        if schema.get("additionalProperties") is not False:
            return f"{where}: an object open to other properties"
        props = schema.get("properties") or {}
        if set(schema.get("required") or ()) - set(props):
            return f"{where}: a required property it does not describe"
        for key, sub in props.items():
            if (reason := xgrammar_json_subset(sub, f"{where}.{key}")) is not None:
                return reason
    if "array" in type_list:
        if schema.get("minItems", 0) not in (0, 1) or "items" not in schema:
            return f"{where}: an array without items or with minItems above 1"
        return xgrammar_json_subset(schema["items"], f"{where}[]")
    return None


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


class EbnfBuilder:
    """Collects the rules of one grammar; ``value`` turns a JSON schema into an expression."""

    def __init__(self, syntax: Syntax) -> None:
        self.syntax = syntax
        self.rules: dict[str, str] = {}
        self._base = {**_NUMBER_RULES, **syntax.base_rules}
        self._by_body: dict[str, str] = {}

    def add(self, hint: str, body: str) -> str:
        """Add a rule named after ``hint`` (made unique) and return its name; a body added before
        returns that rule instead (tools repeat argument shapes: one rule each, not one per tool)."""
        if body in self._by_body:
            return self._by_body[body]
        name = base = rule_name(hint)
        n = 1
        while name in self.rules or name in self._base or name == "root":
            n += 1
            name = f"{base}-{n}"
        self.rules[name] = body
        self._by_body[body] = name
        return name

    def render(self, root: str) -> str:
        """The grammar text: ``root ::= <root>``, the added rules, then the base rules they use."""
        needed: set[str] = set()
        todo = [root, *self.rules.values()]
        while todo:
            for ref in _refs(todo.pop()):
                if ref in self._base and ref not in needed:
                    needed.add(ref)
                    todo.append(self._base[ref])
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self.rules.items()]
        lines += [f"{name} ::= {body}" for name, body in self._base.items() if name in needed]
        return "\n".join(lines) + "\n"

    # --- values -------------------------------------------------------------------------------

    def literal(self, values: list[Any], hint: str) -> str:
        alts = []
        for v in values:
            lit = ebnf_literal(self.syntax.text(v))
            if lit not in alts:
                alts.append(lit)
        return alts[0] if len(alts) == 1 else self.add(hint, " | ".join(alts))

    def value(self, schema: Any, hint: str) -> str:
        """An expression matching the values ``schema`` allows."""
        if schema is True or schema is None or schema == {}:
            return self.any_value()
        if not isinstance(schema, Mapping):
            raise ConstraintError(f"unsupported schema at {hint}: {schema!r}")
        if "$ref" in schema:
            raise ConstraintError(f"$ref is not supported in tool schemas ({hint})")
        if "const" in schema or "enum" in schema:
            values = [schema["const"]] if "const" in schema else list(schema["enum"] or ())
            fitting = [v for v in values if fits_type(v, schema)]
            if not fitting:  # an enum of strings on a boolean (BFCL has some): no value is valid
                raise NoValue(f"no value of the enum or const at {hint} has the schema's type {schema.get('type')!r}")
            return self.literal(fitting, hint)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                alts = [self.value(sub, f"{hint}-{i}") for i, sub in enumerate(schema[key])]
                return self.add(hint, " | ".join(alts))
        if "allOf" in schema:
            if len(schema["allOf"]) != 1:
                raise ConstraintError(f"allOf with several schemas is not supported ({hint})")
            return self.value(schema["allOf"][0], hint)
        types = schema.get("type")
        if types is None:
            if "properties" in schema:
                types = "object"
            elif "items" in schema:
                types = "array"
            else:
                return self.any_value()
        type_list = list(types) if isinstance(types, list) else [types]
        if schema.get("nullable") and "null" not in type_list:
            type_list.append("null")
        alts = [self._typed(schema, t, hint if len(type_list) == 1 else f"{hint}-{t}") for t in type_list]
        return alts[0] if len(alts) == 1 else self.add(hint, " | ".join(alts))

    def _typed(self, schema: Mapping[str, Any], type_: str, hint: str) -> str:
        s = self.syntax
        if type_ == "string":
            return s.string
        if type_ == "integer":
            return "int"
        if type_ == "number":
            return "num"
        if type_ == "boolean":
            return "bool"
        if type_ == "null":
            return "null"
        if type_ == "array":
            item = self.value(schema.get("items", True), f"{hint}-item")
            low, high = int(schema.get("minItems", 0) or 0), schema.get("maxItems")
            if high == 0:
                return self.add(hint, s.arr_empty or f"{s.arr_open} {s.arr_close}")
            more = _repeat(f"{s.item_sep} {item}", max(low - 1, 0), None if high is None else int(high) - 1)
            required = low >= 1
            if s.arr_empty:
                full = f"{s.arr_open} {item} {more} {s.arr_close}"
                return self.add(hint, full if required else f"{full} | {s.arr_empty}")
            inner = f"{item} {more}" if required else f"({item} {more})?"
            return self.add(hint, f"{s.arr_open} {inner} {s.arr_close}")
        if type_ == "object":
            if s.obj_empty:
                members = self.members(schema, hint, allow_empty=False)
                if not members:
                    return self.add(hint, s.obj_empty)
                full = f"{s.obj_open} {members} {s.obj_close}"
                return self.add(hint, full if schema.get("required") else f"{full} | {s.obj_empty}")
            members = self.members(schema, hint)
            body = f"{s.obj_open} {members} {s.obj_close}" if members else f"{s.obj_open} {s.obj_close}"
            return self.add(hint, body)
        raise ConstraintError(f"unsupported type {type_!r} at {hint}")

    def members(self, schema: Mapping[str, Any], hint: str, *, closed: bool = False, allow_empty: bool = True) -> str:
        """An expression for the members of an object (between its braces); "" when none may appear.

        ``closed``: only the listed properties (tool parameters are always closed). ``allow_empty``
        False: at least one member (the caller spells the empty object itself).
        """
        s = self.syntax
        props = schema.get("properties")
        if not isinstance(props, Mapping) and schema.get("required"):
            props = {}  # required names declare properties (of any value): the object is closed to others
        if not isinstance(props, Mapping) or (not props and not schema.get("required")):
            if props is not None or closed or schema.get("additionalProperties") is False:
                return ""
            extra = schema.get("additionalProperties", True)
            val = self.value(extra, f"{hint}-value")
            pair = f"{s.generic_key} {s.kv_sep} {val}"
            return self.add(hint + "-members", f"({pair} ({s.item_sep} {pair})*)?")
        required = set(schema.get("required") or ())
        all_props = {**{r: True for r in required if r not in props}, **props}
        values: dict[str, str] = {}
        for key in canonical_keys(all_props):
            try:
                values[key] = self.value(all_props[key], f"{hint}-{key}")
            except NoValue as exc:
                if key in required:
                    raise ConstraintError(f"required argument {key!r} can have no value: {exc}") from None
        keys = list(values)
        n = len(keys)
        tail: list[str | None] = [None] * (n + 1)
        head: list[str | None] = [None] * (n + 1)
        for i in range(n - 1, -1, -1):
            key = keys[i]
            if s.bare_keys:
                check_fg_name(key, "argument")
            pair = f"{ebnf_literal(s.key_text(key))} {s.kv_sep} {values[key]}"
            with_sep = _seq(s.item_sep, pair, tail[i + 1])
            first = _seq(pair, tail[i + 1])
            optional = key not in required
            if i > 0:  # tail[0] would never be used
                body = f"{with_sep} | {tail[i + 1] or _EMPTY}" if optional else with_sep
                tail[i] = self.add(f"{hint}-t{i}", body)
            rest = head[i + 1] or (_EMPTY if allow_empty else None)
            head[i] = self.add(f"{hint}-h{i}", f"{first} | {rest}" if optional and rest else first)
        return head[0] or ""

    def choice(self, entries: list[tuple[str, str]], hint: str) -> str:
        """A rule choosing among ``(literal head, rest)`` alternatives (a tool's name, then its
        arguments), the heads spelt as a radix trie: shared prefixes once, then one rule per fork. The
        same language as ``head1 rest1 | head2 rest2 | ...``; at 1,000 tools the mask where the name
        starts took ~430 us and accepting a name ~9 ms as plain alternatives, ~4 us and ~0.1 ms so
        (xgrammar follows every alternative whose head agrees so far)."""
        alts: list[str] = []
        groups: dict[str, list[tuple[str, str]]] = {}
        for head, rest in entries:
            if head:
                groups.setdefault(head[0], []).append((head, rest))
            else:
                alts.append(rest or _EMPTY)
        for group in groups.values():
            if len(group) == 1:
                alts.append(_seq(ebnf_literal(group[0][0]), group[0][1]))
                continue
            common = _common_prefix([h for h, _ in group])
            child = self.choice([(h[len(common):], r) for h, r in group], f"{hint}-{len(common)}")
            alts.append(f"{ebnf_literal(common)} {child}")
        return alts[0] if len(alts) == 1 else self.add(hint, " | ".join(alts))

    def any_value(self) -> str:
        """Any JSON value in this syntax (rules added once)."""
        if "any-value" not in self.rules:
            s = self.syntax
            self.rules["any-value"] = f"{s.string} | num | bool | null | any-array | any-object"
            self.rules["any-array"] = f"{s.arr_open} (any-value ({s.item_sep} any-value)*)? {s.arr_close}"
            pair = f"{s.generic_key} {s.kv_sep} any-value"
            self.rules["any-object"] = f"{s.obj_open} ({pair} ({s.item_sep} {pair})*)? {s.obj_close}"
        return "any-value"


_EMPTY = '""'


def _repeat(expr: str, low: int, high: int | None) -> str:
    """``expr`` repeated ``low`` to ``high`` times (None: no bound): ``minItems``/``maxItems``."""
    if high is None:
        return f"({expr})*" if low == 0 else f"({expr}){{{low},}}"
    if high <= 0:
        return ""
    return f"({expr}){{{low},{high}}}"


def _common_prefix(texts: list[str]) -> str:
    first, last = min(texts), max(texts)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def _seq(*parts: str | None) -> str:
    return " ".join(p for p in parts if p)


_LITERALS = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]')
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*")


def _refs(body: str) -> list[str]:
    """Rule names an expression refers to (string literals and character classes skipped)."""
    return _NAME.findall(_LITERALS.sub(" ", body))
