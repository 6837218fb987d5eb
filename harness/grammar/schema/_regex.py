"""Regular expressions (a schema's ``pattern``, and the ``format`` regexes of ``_formats``) as EBNF
rules over a string's characters, spelt in a family's value syntax.

The expression is Python's, read by its own parser (``re._parser``), which is what the JSON-schema
validator (``jsonschema``) searches with: JSON Schema's ``pattern`` matches anywhere in the string, so
an expression not anchored with ``^`` (or ``\\A``) may be preceded by any text, and one not anchored
with ``$`` (or ``\\Z``) followed by any; ``$`` also matches before a final newline, as Python's does.
``\\d``, ``\\w`` and ``\\s`` are Unicode classes unless ``(?a)`` says ASCII.

What no grammar spells is refused with ``RegexError`` naming it: backreferences, lookaround,
conditionals, atomic groups and possessive repeats, word boundaries and anchors inside the expression,
case-insensitive and multi-line matching. An expression Python cannot parse is refused with Python's
message. The characters are spelt by the caller (``CharSpeller``: JSON escapes for Qwen, raw text
for FunctionGemma), so one expression serves both syntaxes.
"""

from __future__ import annotations

import functools
import re
import re._constants as sre
import re._parser as sre_parse
from collections.abc import Callable
from typing import Any

from harness.agents import ConstraintError

MAX_CHAR = 0x10FFFF
Ranges = tuple[tuple[int, int], ...]
"""A set of code points as sorted, disjoint, inclusive ranges."""
CharSpeller = Callable[[Ranges], str]
"""An EBNF expression for one character of the set, as the value syntax writes it in a string."""
RuleAdder = Callable[[str, str], str]


class RegexError(ConstraintError):
    """A pattern no grammar here can spell, or one that is not a regular expression at all."""


ANY: Ranges = ((0, MAX_CHAR),)


def normalize(ranges: list[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def complement(ranges: Ranges) -> Ranges:
    out, start = [], 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= MAX_CHAR:
        out.append((start, MAX_CHAR))
    return tuple(out)


def subtract(ranges: Ranges, removed: Ranges) -> Ranges:
    return intersect(ranges, complement(removed))


def intersect(a: Ranges, b: Ranges) -> Ranges:
    out = [(max(lo1, lo2), min(hi1, hi2)) for lo1, hi1 in a for lo2, hi2 in b if max(lo1, lo2) <= min(hi1, hi2)]
    return normalize(out)


@functools.cache
def _category(name: str) -> Ranges:
    """Python's Unicode ``\\d``/``\\s``/``\\w`` as ranges (what its ``re`` matches in a str pattern)."""
    test: Callable[[str], bool] = {"digit": str.isdecimal, "space": str.isspace,
                                   "word": lambda c: c.isalnum() or c == "_"}[name]
    out: list[tuple[int, int]] = []
    for code in range(MAX_CHAR + 1):
        if test(chr(code)):
            if out and out[-1][1] == code - 1:
                out[-1] = (out[-1][0], code)
            else:
                out.append((code, code))
    return tuple(out)


_ASCII_CATEGORY: dict[str, Ranges] = {
    "digit": ((48, 57),), "space": ((9, 13), (32, 32)), "word": ((48, 57), (65, 90), (95, 95), (97, 122)),
}
_CATEGORIES = {
    sre.CATEGORY_DIGIT: ("digit", False), sre.CATEGORY_NOT_DIGIT: ("digit", True),
    sre.CATEGORY_SPACE: ("space", False), sre.CATEGORY_NOT_SPACE: ("space", True),
    sre.CATEGORY_WORD: ("word", False), sre.CATEGORY_NOT_WORD: ("word", True),
}


class _Converter:
    def __init__(self, chars: CharSpeller, add: RuleAdder, hint: str, flags: int) -> None:
        self.chars, self.add, self.hint = chars, add, hint
        self.ascii = bool(flags & re.ASCII)
        self.dotall = bool(flags & re.DOTALL)

    def category(self, code: Any) -> Ranges:
        name, negated = _CATEGORIES[code]
        ranges = _ASCII_CATEGORY[name] if self.ascii else _category(name)
        return complement(ranges) if negated else ranges

    def char_set(self, items: list[tuple[Any, Any]]) -> Ranges:
        ranges: list[tuple[int, int]] = []
        negate = False
        for op, arg in items:
            if op is sre.NEGATE:
                negate = True
            elif op is sre.LITERAL:
                ranges.append((arg, arg))
            elif op is sre.RANGE:
                ranges.append(arg)
            elif op is sre.CATEGORY:
                ranges += self.category(arg)
            else:
                raise RegexError(f"a character class holding {op} cannot be spelt")
        out = normalize(ranges)
        return complement(out) if negate else out

    def spell(self, ranges: Ranges) -> str:
        if not ranges:
            raise RegexError("a character class that matches no character")
        return self.chars(ranges)

    def sequence(self, nodes: Any) -> str:
        parts = [self.node(op, arg) for op, arg in nodes]
        parts = [p for p in parts if p]
        return " ".join(parts) if parts else '""'

    def node(self, op: Any, arg: Any) -> str:
        if op is sre.LITERAL:
            return self.spell(((arg, arg),))
        if op is sre.NOT_LITERAL:
            return self.spell(complement(((arg, arg),)))
        if op is sre.ANY:
            return self.spell(ANY if self.dotall else complement(((10, 10),)))
        if op is sre.IN:
            return self.spell(self.char_set(arg))
        if op is sre.BRANCH:
            return "(" + " | ".join(self.sequence(alt) for alt in arg[1]) + ")"
        if op is sre.SUBPATTERN:
            _group, add_flags, del_flags, body = arg
            if (add_flags | del_flags) & ~(re.DOTALL | re.ASCII | re.UNICODE | re.VERBOSE):
                raise RegexError("case-insensitive or multi-line matching inside the pattern cannot be spelt")
            return "(" + self.sequence(body) + ")"
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, body = arg
            inner = self.sequence(body)
            if high is sre.MAXREPEAT:
                return f"({inner})*" if low == 0 else f"({inner})+" if low == 1 else f"({inner}){{{low},}}"
            if (low, high) == (0, 1):
                return f"({inner})?"
            return f"({inner}){{{low},{high}}}" if low != high else f"({inner}){{{low}}}"
        what = {sre.GROUPREF: "a backreference", sre.GROUPREF_EXISTS: "a conditional group",
                sre.ASSERT: "a lookahead or lookbehind", sre.ASSERT_NOT: "a negative lookahead or lookbehind",
                sre.AT: "an anchor or word boundary inside the expression", sre.ATOMIC_GROUP: "an atomic group",
                sre.POSSESSIVE_REPEAT: "a possessive repeat"}.get(op, str(op))
        raise RegexError(f"{what} cannot be spelt as a grammar")


_STARTS = (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING)


def parsed_pattern(pattern: str) -> Any:
    """``pattern`` parsed by Python's own regex parser; RegexError when it is not valid or asks for
    case-insensitive or multi-line matching, which no character spelling can say."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        raise RegexError(f"pattern {pattern!r} is not a valid regular expression: {exc}") from None
    if parsed.state.flags & (re.IGNORECASE | re.MULTILINE):
        raise RegexError(f"pattern {pattern!r}: case-insensitive or multi-line matching cannot be spelt")
    return parsed


def regex_rule(pattern: str, chars: CharSpeller, add: RuleAdder, hint: str, *, full: bool = False) -> str:
    """A rule matching the strings ``pattern`` finds a match in (``full``: that it matches whole, as
    the format regexes are written), each character spelt by ``chars``. RegexError when it cannot."""
    if not isinstance(pattern, str):
        raise RegexError(f"pattern must be a string, not {type(pattern).__name__}")
    parsed = parsed_pattern(pattern)
    conv = _Converter(chars, add, hint, parsed.state.flags)
    nodes = list(parsed)
    branches = nodes[0][1][1] if len(nodes) == 1 and nodes[0][0] is sre.BRANCH else [nodes]
    anything = f"({chars(ANY)})*"
    alts = []
    for branch in branches:
        seq = list(branch)
        start = bool(seq) and seq[0][0] is sre.AT and seq[0][1] in _STARTS
        if start:
            seq = seq[1:]
        end_kind = seq[-1][1] if seq and seq[-1][0] is sre.AT and seq[-1][1] in (sre.AT_END, sre.AT_END_STRING) else None
        if end_kind is not None:
            seq = seq[:-1]
        try:
            body = conv.sequence(seq)
        except RegexError as exc:
            raise RegexError(f"pattern {pattern!r}: {exc}") from None
        head = "" if start or full else anything
        tail = "" if full or end_kind is sre.AT_END_STRING else f"({chars(((10, 10),))})?" if end_kind else anything
        alts.append(" ".join(p for p in (head, body, tail) if p))
    return add(hint, " | ".join(alts))


__all__ = ["ANY", "CharSpeller", "Ranges", "RegexError", "complement", "intersect", "normalize", "regex_rule",
           "subtract"]
