"""JSON schema -> EBNF value rules (``EbnfBuilder``), shared by the family modules.

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

import re
from collections.abc import Mapping
from typing import Any

from harness.agents.constraint import ConstraintError
from harness.agents.families._syntax import NUMBER_RULES, Syntax, ebnf_literal, rule_name
from harness.agents.families._types import NoValue, fits_type, integer_bounds, integer_range
from harness.agents.families._values import canonical_keys, check_fg_name


class EbnfBuilder:
    """Collects the rules of one grammar; ``value`` turns a JSON schema into an expression."""

    def __init__(self, syntax: Syntax) -> None:
        self.syntax = syntax
        self.rules: dict[str, str] = {}
        self._base = {**NUMBER_RULES, **syntax.base_rules}
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
            low, high = integer_bounds(schema)
            return "int" if low is None and high is None else self.add(f"{hint}-range", integer_range(low, high))
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


__all__ = ["EbnfBuilder"]
