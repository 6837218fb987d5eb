"""JSON schema -> EBNF value rules (``EbnfBuilder``), shared by the family modules.

One builder serves both value syntaxes of the families' call formats:

- ``JSON_SYNTAX`` (Qwen): ``{"k": v}``; strings with every JSON escape; whitespace bounded to
  ``MAX_JSON_WS`` characters wherever JSON allows it.
- ``FG_SYNTAX`` (FunctionGemma): ``{k:v}``; strings between ``<escape>`` delimiters holding any text
  that does not contain ``<escape>``; keys bare; no whitespace at all.

Objects follow one canonical key order everywhere: ``canonical_keys`` (case-insensitive sort, ties
broken case-sensitively) -- the order FunctionGemma's chat template (``dictsort``) writes arguments in.
Grammars, renderers, strict JSON schemas and the declared tools all use it, so a renderer that sees
only a call (no schema) still emits what the grammar accepts. A tool's arguments, and objects that
list properties without saying ``additionalProperties``, are closed (only those keys) while the
``close_objects`` setting is on (the default; JSON Schema leaves them open); objects that say
``additionalProperties: true`` or give it a schema, or list no property, are open. Required keys must
appear; each listed key at most once.

Supported schema keywords: type (or a list of types), enum, const, anyOf/oneOf, a one-element
allOf, properties/required/additionalProperties/minProperties/maxProperties, items/prefixItems/
minItems/maxItems, nullable, ``$ref`` (recursive ones too), and on scalars ``format``, ``pattern``,
lengths (``_strings``), bounds and ``multipleOf`` (``_numbers``). Every other validation keyword is
refused before a grammar is built (``keywords.check_keywords``), never ignored.
Nothing here imports xgrammar: grammars are text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness.agents import ConstraintError
from harness.grammar.formats._syntax import NUMBER_RULES, Syntax, ebnf_literal, rule_name
from harness.grammar.formats._values import canonical_keys, check_fg_name
from harness.grammar.schema import (
    NoValue,
    fits_type,
    integer_bounds,
    integer_range,
    multiple_rule,
    number_range,
    resolve,
    string_rule,
    top_branches,
)


class EbnfBuilder:
    """Collects the rules of one grammar; ``value`` turns a JSON schema into an expression."""

    def __init__(self, syntax: Syntax, *, close_objects: bool = True) -> None:
        self.syntax = syntax
        self.close_objects = close_objects
        self.root: Any = None
        """The schema ``$ref`` pointers resolve from (the tool's parameters, set by ``arguments``)."""
        self._refs: dict[tuple[int, Any], str] = {}
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
        # dict, not list membership: a 100,000-value enum took minutes (quadratic), now 0.3 s
        alts = list(dict.fromkeys(ebnf_literal(self.syntax.text(v)) for v in values))
        return alts[0] if len(alts) == 1 else self.add(hint, " | ".join(alts))

    def arguments(self, schema: Any, hint: str) -> str:
        """The members of a tool's arguments object (between its braces): ``members`` with the tool's
        parameters as the root its ``$ref`` pointers resolve from; closed unless the schema or the
        ``close_objects`` setting opens it."""
        self.root = schema
        branches = top_branches(schema, hint)  # a root $ref, a union of objects at the top: each one's members
        alts = [self.members(b, hint if len(branches) == 1 else f"{hint}-{i}", closed=self._closed(b, top=True))
                for i, b in enumerate(branches)]
        return alts[0] if len(alts) == 1 else self.add(hint, " | ".join(a or _EMPTY for a in alts))

    def value(self, schema: Any, hint: str) -> str:
        """An expression matching the values ``schema`` allows."""
        if schema is True or schema is None or schema == {}:
            return self.any_value()
        if not isinstance(schema, Mapping):
            raise ConstraintError(f"unsupported schema at {hint}: {schema!r}")
        if "$ref" in schema:
            return self._ref(schema["$ref"], hint)
        if "const" in schema or "enum" in schema:
            values = [schema["const"]] if "const" in schema else list(schema["enum"] or ())
            fitting = [v for v in values if fits_type(v, schema)]
            if not fitting:  # an enum of strings on a boolean (the benchmark corpus has some): no value is valid
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
            if "properties" in schema or "additionalProperties" in schema:
                types = "object"
            elif "items" in schema or "prefixItems" in schema:
                types = "array"
            else:
                return self.any_value()
        type_list = list(types) if isinstance(types, list) else [types]
        if schema.get("nullable") and "null" not in type_list:
            type_list.append("null")
        alts = [self._typed(schema, t, hint if len(type_list) == 1 else f"{hint}-{t}") for t in type_list]
        return alts[0] if len(alts) == 1 else self.add(hint, " | ".join(alts))

    def _ref(self, pointer: Any, hint: str) -> str:
        """One rule per pointer target (a recursive one refers to itself by name)."""
        key = (id(self.root), pointer)
        if key not in self._refs:
            name = self._refs[key] = self.reserve(f"ref-{pointer}")
            self.rules[name] = self.value(resolve(self.root, pointer, hint), name)
        return self._refs[key]

    def reserve(self, hint: str) -> str:
        """A fresh rule name (its body set later: a rule that refers to itself)."""
        name = base = rule_name(hint)
        n = 1
        while name in self.rules or name in self._base or name == "root":
            n += 1
            name = f"{base}-{n}"
        self.rules[name] = '""'
        return name

    def _typed(self, schema: Mapping[str, Any], type_: str, hint: str) -> str:
        s = self.syntax
        if type_ == "string":
            return string_rule(self, s, schema, hint) or s.string
        if type_ == "integer":
            if (multiple := multiple_rule(self, schema, hint, number=False)) is not None:
                return multiple
            low, high = integer_bounds(schema)
            return "int" if low is None and high is None else self.add(f"{hint}-range", integer_range(low, high))
        if type_ == "number":
            if (multiple := multiple_rule(self, schema, hint, number=True)) is not None:
                return multiple
            bounded = number_range(schema, hint)
            return "num" if bounded is None else self.add(f"{hint}-range", bounded)
        if type_ == "boolean":
            return "bool"
        if type_ == "null":
            return "null"
        if type_ == "array":
            return self._array(schema, hint)
        if type_ == "object":
            closed = self._closed(schema, top=False)
            if s.obj_empty:
                members = self.members(schema, hint, closed=closed, allow_empty=False)
                if not members:
                    return self.add(hint, s.obj_empty)
                full = f"{s.obj_open} {members} {s.obj_close}"
                return self.add(hint, full if schema.get("required") else f"{full} | {s.obj_empty}")
            members = self.members(schema, hint, closed=closed)
            body = f"{s.obj_open} {members} {s.obj_close}" if members else f"{s.obj_open} {s.obj_close}"
            return self.add(hint, body)
        raise ConstraintError(f"unsupported type {type_!r} at {hint}")

    def _closed(self, schema: Mapping[str, Any], *, top: bool) -> bool:
        """Whether an object accepts only the properties it lists: ``additionalProperties: false``, or
        (with ``close_objects``) the tool's arguments and any object listing properties without saying
        ``additionalProperties`` (JSON Schema leaves those open: the grammar is stricter there)."""
        extra = schema.get("additionalProperties")
        if extra is False:
            return True
        if extra is not None or not self.close_objects:
            return False
        return top or bool(schema.get("properties")) or bool(schema.get("required"))

    def _array(self, schema: Mapping[str, Any], hint: str) -> str:
        s = self.syntax
        prefix = [self.value(sub, f"{hint}-p{i}") for i, sub in enumerate(schema.get("prefixItems") or ())]
        rest = schema.get("items", True)
        item = None if rest is False else self.value(rest, f"{hint}-item")
        low, high = int(schema.get("minItems", 0) or 0), schema.get("maxItems")
        high = None if high is None else int(high)
        if item is None:
            high = len(prefix) if high is None else min(high, len(prefix))
        if high == 0:
            return self.add(hint, s.arr_empty or f"{s.arr_open} {s.arr_close}")
        if prefix:
            return self.add(hint, f"{s.arr_open} {self._items(prefix, item, low, high, hint)} {s.arr_close}")
        more = _repeat(f"{s.item_sep} {item}", max(low - 1, 0), None if high is None else high - 1)
        required = low >= 1
        if s.arr_empty:
            full = f"{s.arr_open} {item} {more} {s.arr_close}"
            return self.add(hint, full if required else f"{full} | {s.arr_empty}")
        inner = f"{item} {more}" if required else f"({item} {more})?"
        return self.add(hint, f"{s.arr_open} {inner} {s.arr_close}")

    def _items(self, prefix: list[str], item: str | None, low: int, high: int | None, hint: str) -> str:
        """The items of an array with ``prefixItems`` (then ``item``, None: no more), ``low`` to ``high``."""
        sep = self.syntax.item_sep
        k = len(prefix)
        tail = ""
        if item is not None and (high is None or high > k):
            extra_high = None if high is None else high - k
            tail = _repeat(f"{sep} {item}", max(low - k, 0), extra_high)
        after = tail or '""'
        for i in range(k - 1, 0, -1):  # after i items: the (i+1)th, or the end once low is reached
            step = f"{sep} {prefix[i]} {after}"
            after = self.add(f"{hint}-after{i}", step if i < low else f"{step} | {_EMPTY}")
        first = f"{prefix[0]} {after}"
        return first if low >= 1 else f"({first})?"

    def members(self, schema: Mapping[str, Any], hint: str, *, closed: bool = False, allow_empty: bool = True) -> str:
        """An expression for the members of an object (between its braces); "" when none may appear.

        ``closed``: only the listed properties; otherwise other keys too, their values matching
        ``additionalProperties``. ``allow_empty`` False: at least one member (the caller spells the
        empty object itself). Listed keys come in canonical order; another key may stand anywhere.
        """
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        required = [r for r in schema.get("required") or () if isinstance(r, str)]
        all_props = {**{r: True for r in required if r not in props}, **props}
        values: dict[str, str] = {}
        for key in canonical_keys(all_props):
            try:
                values[key] = self.value(all_props[key], f"{hint}-{key}")
            except NoValue as exc:
                if key in required:
                    raise ConstraintError(f"required argument {key!r} can have no value: {exc}") from None
        low, high = schema.get("minProperties"), schema.get("maxProperties")
        counted = (isinstance(low, int) and low > 0) or isinstance(high, int)
        if closed and not counted:
            return self._listed(values, set(required), hint, allow_empty)
        extra = None if closed else self.value(schema.get("additionalProperties", True), f"{hint}-value")
        return self._counted(values, set(required), extra, hint, low if isinstance(low, int) else 0,
                             high if isinstance(high, int) else None)

    def _pair(self, key: str, value: str) -> str:
        if self.syntax.bare_keys:
            check_fg_name(key, "argument")
        return f"{ebnf_literal(self.syntax.key_text(key))} {self.syntax.kv_sep} {value}"

    def _listed(self, values: dict[str, str], required: set[str], hint: str, allow_empty: bool) -> str:
        """Only the listed keys, in canonical order (head/tail rules: 2 per key)."""
        s = self.syntax
        keys = list(values)
        n = len(keys)
        tail: list[str | None] = [None] * (n + 1)
        head: list[str | None] = [None] * (n + 1)
        for i in range(n - 1, -1, -1):
            key = keys[i]
            pair = self._pair(key, values[key])
            with_sep = _seq(s.item_sep, pair, tail[i + 1])
            first = _seq(pair, tail[i + 1])
            optional = key not in required
            if i > 0:  # tail[0] would never be used
                body = f"{with_sep} | {tail[i + 1] or _EMPTY}" if optional else with_sep
                tail[i] = self.add(f"{hint}-t{i}", body)
            rest = head[i + 1] or (_EMPTY if allow_empty else None)
            head[i] = self.add(f"{hint}-h{i}", f"{first} | {rest}" if optional and rest else first)
        return head[0] or ""

    def _counted(self, values: dict[str, str], required: set[str], extra: str | None, hint: str, low: int,
                 high: int | None) -> str:
        """Listed keys in canonical order, other keys (``extra`` their value; None: none) anywhere,
        between ``low`` and ``high`` members: one rule per (next listed key, members so far capped at
        the bound that matters, first member or not)."""
        if high is not None and high < low:
            raise NoValue(f"no object has at least {low} and at most {high} properties ({hint})")
        s = self.syntax
        keys = list(values)
        n = len(keys)
        cap = high if high is not None else low
        if (n + 1) * (cap + 1) > MAX_COUNTED_STATES:
            raise ConstraintError(f"{hint}: {n} properties counted up to {cap} (minProperties/maxProperties): over "
                                  f"{MAX_COUNTED_STATES:,} grammar states")
        extra_pair = None if extra is None else f"{self._other_key(keys, hint)} {s.kv_sep} {extra}"
        names: dict[tuple[int, int, bool], str] = {}
        for i in range(n, -1, -1):
            for count in range(cap, -1, -1):
                for first in (False, True):
                    if first and count:
                        continue  # no member yet: nothing counted
                    more = high is None or count < high
                    after = min(count + 1, cap)
                    sep = "" if first else f"{s.item_sep} "
                    alts = []
                    if i < n:
                        if more and (target := names.get((i + 1, after, False))):
                            alts.append(f"{sep}{self._pair(keys[i], values[keys[i]])} {target}")
                        if keys[i] not in required and (target := names.get((i + 1, count, first))):
                            alts.append(target)
                    elif count >= low:
                        alts.append(_EMPTY)
                    loop = extra_pair is not None and more and after == count and not first
                    if extra_pair is not None and more and not loop and (target := names.get((i, after, False))):
                        alts.append(f"{sep}{extra_pair} {target}")
                    if not alts:
                        continue  # no way to finish from here
                    if loop:
                        name = self.reserve(f"{hint}-m{i}-{count}")
                        self.rules[name] = " | ".join([f"{sep}{extra_pair} {name}", *alts])
                        names[(i, count, first)] = name
                    else:
                        names[(i, count, first)] = self.add(f"{hint}-m{i}-{count}", " | ".join(alts))
        if (0, 0, True) not in names:
            raise NoValue(f"no object satisfies the property counts at {hint}")
        return names[(0, 0, True)]

    def _other_key(self, keys: list[str], hint: str) -> str:
        """A key of the syntax that is none of ``keys`` (a trie of their texts: at each node a listed
        character goes on, any other ends the match with the rest of a key). JSON keys written with an
        escape that a listed key spells plainly (``"\\u0061"`` for ``"a"``) count as other keys."""
        if not keys:
            return self.syntax.generic_key
        texts = [self.syntax.key_text(k) for k in keys]
        raw = self.syntax.bare_keys
        if not raw:
            texts = [t[1:-1] for t in texts]  # between the quotes
        rest = None if raw else self.syntax.base_rules[self.syntax.string].split()[-1]  # e.g. jrest: to the quote

        def node(prefix: str) -> str:
            children = sorted({t[len(prefix)] for t in texts if t.startswith(prefix) and len(t) > len(prefix)})
            alts = [f"{ebnf_literal(c)} {node(prefix + c)}" for c in children]
            if raw:
                cls = "[^:{}\\[\\],<>\\u0000-\\u0020" + "".join(_class_escape(c) for c in children) + "]"
                alts.append(f"{cls} {_FG_KEY_CHAR}*")
                if prefix and prefix not in texts:
                    alts.append(_EMPTY)
            else:
                cls = '[^"\\\\\\u0000-\\u001f' + "".join(_class_escape(c) for c in children) + "]"
                alts.append(f"{cls} {rest}")
                if "\\" not in children:
                    alts.append(f'"\\\\" {rest}esc {rest}')
                if prefix not in texts:
                    alts.append('"\\""')
            return self.add(f"{hint}-k{len(prefix)}", " | ".join(alts))

        first = node("")
        return first if raw else self.add(f"{hint}-key", f'"\\"" {first}')

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
MAX_COUNTED_STATES = 50_000
"""Most rules an object with ``minProperties``/``maxProperties`` may take (listed keys x count)."""
_FG_KEY_CHAR = "[^:{}\\[\\],<>\\u0000-\\u0020]"
"""A character of a bare FunctionGemma key (``FG_SYNTAX``'s ``fgkey``)."""


def _repeat(expr: str, low: int, high: int | None) -> str:
    """``expr`` repeated ``low`` to ``high`` times (None: no bound): ``minItems``/``maxItems``."""
    if high is None:
        return f"({expr})*" if low == 0 else f"({expr}){{{low},}}"
    if high <= 0:
        return ""
    return f"({expr}){{{low},{high}}}"


def _class_escape(ch: str) -> str:
    if ch in "\\]^-[":
        return "\\" + ch
    return ch if ord(ch) >= 0x20 else f"\\u{ord(ch):04x}"  # \\x takes every hex digit after it


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
