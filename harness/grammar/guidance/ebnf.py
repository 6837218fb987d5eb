"""Reading the xgrammar EBNF subset the model families write (for the llguidance conversion).

``parse_ebnf`` returns each rule as alternatives of items (an atom and a quantifier). Literal text
equal to a special token's text is split out as :class:`Special`; the one xgrammar builtin our
grammars use, ``TagDispatch(loop_after_dispatch=false, excludes=("X"))`` with no tags (any text
without ``X``), becomes :class:`Exclude`; lookahead assertions ``(= ...)`` are skipped and counted.
Anything else unknown raises :class:`NotExpressible`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Union

__all__ = ["Atom", "CharClass", "Exclude", "Group", "Item", "Lit", "NotExpressible", "Ref", "Rules", "Special", "parse_ebnf"]

class NotExpressible(ValueError):
    """The grammar uses something llguidance cannot express exactly."""


@dataclass(frozen=True, slots=True)
class Lit:
    text: str


@dataclass(frozen=True, slots=True)
class CharClass:
    negated: bool
    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Ref:
    name: str


@dataclass(frozen=True, slots=True)
class Special:
    token_id: int


@dataclass(frozen=True, slots=True)
class Exclude:
    """Any text that does not contain ``text``."""

    text: str


@dataclass(frozen=True, slots=True)
class Group:
    alts: tuple[tuple[Item, ...], ...]


Atom = Union[Lit, CharClass, Ref, Special, Exclude, Group]  # noqa: UP007 (runtime alias)


@dataclass(frozen=True, slots=True)
class Item:
    atom: Atom
    quant: str = ""


Rules = dict[str, tuple[tuple[Item, ...], ...]]
# --- parsing xgrammar EBNF -------------------------------------------------------------------------

_RULE_HEAD = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_-]*)\s*::=\s*(.*)$")
_TAG_DISPATCH = re.compile(
    r'^TagDispatch\(\s*loop_after_dispatch\s*=\s*false\s*,\s*excludes\s*=\s*\(\s*("(?:[^"\\]|\\.)*")\s*\)\s*\)$'
)
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "'": "'", "]": "]", "[": "[", "-": "-", "^": "^"}


def split_rules(ebnf: str) -> dict[str, str]:
    rules: dict[str, str] = {}
    last: str | None = None
    for line in ebnf.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _RULE_HEAD.match(line)
        if m:
            last = m.group(1)
            if last in rules:
                raise NotExpressible(f"rule {last!r} is defined twice")
            rules[last] = m.group(2)
        elif last is not None:
            rules[last] += " " + line.strip()
        else:
            raise NotExpressible(f"cannot read the grammar line {line[:60]!r}")
    if "root" not in rules:
        raise NotExpressible("the grammar has no root rule")
    return rules


class _Parser:
    def __init__(self, text: str, specials: Mapping[str, int]) -> None:
        self.s = text
        self.i = 0
        self.specials = specials
        self.lookaheads = 0

    def fail(self, why: str) -> NotExpressible:
        return NotExpressible(f"{why} at {self.s[self.i : self.i + 40]!r}")

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def peek(self) -> str:
        self.ws()
        return self.s[self.i] if self.i < len(self.s) else ""

    def alts(self, closing: str = "") -> tuple[tuple[Item, ...], ...]:
        out = [self.seq(closing)]
        while self.peek() == "|":
            self.i += 1
            out.append(self.seq(closing))
        return tuple(out)

    def seq(self, closing: str) -> tuple[Item, ...]:
        items: list[Item] = []
        while True:
            ch = self.peek()
            if ch in ("", "|") or (closing and ch == closing):
                return tuple(items)
            if self.s.startswith("(=", self.i):
                self.skip_lookahead()
                continue
            atom = self.atom()
            quant = self.quant()
            if isinstance(atom, Lit) and not quant:
                items.extend(Item(a) for a in self.split_literal(atom.text))
            elif isinstance(atom, Lit):
                parts = self.split_literal(atom.text)
                items.append(Item(parts[0] if len(parts) == 1 else Group((tuple(Item(p) for p in parts),)), quant))
            else:
                items.append(Item(atom, quant))

    def split_literal(self, text: str) -> list[Atom]:
        if not self.specials or not text:
            return [Lit(text)]
        pattern = "|".join(re.escape(t) for t in sorted(self.specials, key=len, reverse=True))
        parts: list[Atom] = []
        for piece in re.split(f"({pattern})", text):
            if piece in self.specials:
                parts.append(Special(self.specials[piece]))
            elif piece:
                parts.append(Lit(piece))
        return parts or [Lit("")]

    def skip_lookahead(self) -> None:
        depth = 0
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch == '"':
                self.string()
                continue
            if ch == "[":
                self.char_class()
                continue
            self.i += 1
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    self.lookaheads += 1
                    return
        raise self.fail("unclosed lookahead")

    def atom(self) -> Atom:
        ch = self.peek()
        if ch == '"':
            return Lit(self.string())
        if ch == "[":
            return self.char_class()
        if ch == "(":
            self.i += 1
            alts = self.alts(")")
            if self.peek() != ")":
                raise self.fail("expected )")
            self.i += 1
            return Group(alts)
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*").match(self.s, self.i)
        if not m:
            raise self.fail("unexpected text")
        self.i = m.end()
        if self.s.startswith("(", self.i):  # a builtin call
            start, depth = m.start(), 0
            while self.i < len(self.s):
                c = self.s[self.i]
                if c == '"':
                    self.string()
                    continue
                self.i += 1
                depth += c == "("
                depth -= c == ")"
                if depth == 0:
                    break
            call = self.s[start : self.i]
            tm = _TAG_DISPATCH.match(call)
            if tm is None:
                raise NotExpressible(f"xgrammar builtin {call[:80]!r} has no llguidance equivalent here")
            return Exclude(_Parser(tm.group(1), {}).string())
        return Ref(m.group(0))

    def quant(self) -> str:
        ch = self.s[self.i] if self.i < len(self.s) else ""
        if ch in "*+?":
            self.i += 1
            return ch
        m = re.compile(r"\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}").match(self.s, self.i)
        if m:
            self.i = m.end()
            lo, comma, hi = m.group(1), m.group(2), m.group(3)
            return f"{{{lo}}}" if not comma else f"{{{lo},{hi}}}"
        return ""

    def char(self, terminator: str) -> int:
        ch = self.s[self.i]
        if ch != "\\":
            self.i += 1
            return ord(ch)
        nxt = self.s[self.i + 1]
        if nxt == "x":
            self.i += 4
            return int(self.s[self.i - 2 : self.i], 16)
        if nxt == "u":
            self.i += 6
            return int(self.s[self.i - 4 : self.i], 16)
        if nxt in _ESCAPES or nxt == terminator:
            self.i += 2
            return ord(_ESCAPES.get(nxt, nxt))
        raise self.fail(f"unknown escape \\{nxt}")

    def string(self) -> str:
        self.ws()
        assert self.s[self.i] == '"'
        self.i += 1
        out = []
        while self.i < len(self.s) and self.s[self.i] != '"':
            out.append(chr(self.char('"')))
        if self.i >= len(self.s):
            raise self.fail("unclosed string")
        self.i += 1
        return "".join(out)

    def char_class(self) -> CharClass:
        self.ws()
        self.i += 1
        negated = self.s.startswith("^", self.i)
        self.i += negated
        ranges: list[tuple[int, int]] = []
        while self.i < len(self.s) and self.s[self.i] != "]":
            lo = self.char("]")
            if self.s.startswith("-", self.i) and not self.s.startswith("-]", self.i):
                self.i += 1
                ranges.append((lo, self.char("]")))
            else:
                ranges.append((lo, lo))
        if self.i >= len(self.s):
            raise self.fail("unclosed character class")
        self.i += 1
        return CharClass(negated, tuple(ranges))


def parse_ebnf(ebnf: str, specials: Mapping[str, int]) -> tuple[Rules, int]:
    """The rules of ``ebnf`` (parsed) and how many lookahead assertions were skipped."""
    parsed: Rules = {}
    dropped = 0
    for name, body in split_rules(ebnf).items():
        p = _Parser(body, specials)
        alts = p.alts()
        if p.peek():
            raise p.fail(f"unexpected text in rule {name!r}")
        parsed[name] = alts
        dropped += p.lookaheads
    return parsed, dropped
