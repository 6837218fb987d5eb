"""xgrammar EBNF -> llama.cpp's GBNF, for the grammars the model families build (llama.cpp's server
takes a grammar as ``grammar``, in GBNF).

The two dialects share most of their syntax; the conversion reads the grammar with the same parser as
the llguidance conversion (``ebnf.parse_ebnf``) and writes it again, converting exactly or refusing:

- rules, string literals, character classes, groups, ``|``, ``* + ?`` and ``{m}``/``{m,n}`` are
  written as GBNF spells them (rule names keep only letters, digits and ``-``, GBNF's name charset);
- ``TagDispatch(loop_after_dispatch=false, excludes=("X"))`` with no tags (any text without ``X``:
  FunctionGemma's string body) becomes a right-linear rule set, the automaton of "has not yet seen
  ``X``" (one rule per matched prefix of ``X``);
- lookahead assertions ``(= ...)`` are dropped, as for llguidance (in our grammars they restate what
  must follow, so the language is unchanged);
- any other xgrammar builtin raises ``NotExpressible`` naming it.

GBNF matches text: control tokens (``<start_function_call>``, ``<escape>``) stay literal text here,
which a llama.cpp grammar matches against each token's text (a control token included).
"""

from __future__ import annotations

import re

from harness.grammar.guidance.ebnf import (
    Atom,
    CharClass,
    Exclude,
    Group,
    Item,
    Lit,
    NotExpressible,
    Ref,
    Special,
    parse_ebnf,
)

_NAME = re.compile(r"[^A-Za-z0-9-]")


def _char(code: int, in_class: bool) -> str:
    ch = chr(code)
    if ch == "\\":
        return "\\\\"
    if ch == "\n":
        return "\\n"
    if ch == "\r":
        return "\\r"
    if ch == "\t":
        return "\\t"
    if (ch == '"' and not in_class) or (in_class and ch in "]^-["):
        return "\\" + ch
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02X}"
    return ch


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return '"' + "".join(_char(ord(c), False) for c in text) + '"'


class _Writer:
    def __init__(self, names: list[str], prefix: str) -> None:
        self.names: dict[str, str] = {}
        taken: set[str] = set()
        for name in names:
            base = prefix + (_NAME.sub("-", name) or "r")
            out, k = base, 1
            while out in taken:
                out, k = f"{base}-{k}", k + 1
            taken.add(out)
            self.names[name] = out
        self.taken = taken
        self.prefix = prefix
        self.extra: list[str] = []
        self.excludes: dict[str, str] = {}

    def fresh(self, base: str) -> str:
        k = 0
        while f"{base}{k}" in self.taken:
            k += 1
        self.taken.add(f"{base}{k}")
        return f"{base}{k}"

    def atom(self, a: Atom) -> str:
        if isinstance(a, Lit):
            return gbnf_literal(a.text)
        if isinstance(a, Ref):
            if a.name not in self.names:
                raise NotExpressible(f"the grammar refers to rule {a.name!r}, which it does not define")
            return self.names[a.name]
        if isinstance(a, CharClass):
            body = "".join(_char(lo, True) if lo == hi else f"{_char(lo, True)}-{_char(hi, True)}" for lo, hi in a.ranges)
            return f"[{'^' if a.negated else ''}{body}]"
        if isinstance(a, Exclude):
            return self.exclude(a.text)
        if isinstance(a, Special):  # parse_ebnf is given no specials: never produced here
            raise NotExpressible(f"token id {a.token_id}: GBNF matches text, not token ids")
        assert isinstance(a, Group)
        return "(" + self.alts(a.alts) + ")"

    def alts(self, alts: tuple[tuple[Item, ...], ...]) -> str:
        return " | ".join(" ".join(self.atom(i.atom) + i.quant for i in seq) if seq else '""' for seq in alts)

    def exclude(self, text: str) -> str:
        """Rules for "any text that does not contain ``text``": state k = the longest suffix read so
        far that is a prefix of ``text`` is ``text[:k]`` (Knuth-Morris-Pratt); reading ``text`` whole
        has no transition, so it cannot occur."""
        if text in self.excludes:
            return self.excludes[text]
        if not text:
            raise NotExpressible("TagDispatch excludes the empty string: no text at all")
        base = self.fresh(f"{self.prefix}not-containing-")
        states = [f"{base}-s{k}" for k in range(len(text))]
        self.taken.update(states)
        alphabet = sorted(set(text))
        for k, name in enumerate(states):
            alts = ['""']
            for ch in alphabet:
                seen = text[:k] + ch
                nxt = next(n for n in range(len(seen), -1, -1) if text.startswith(seen[len(seen) - n:]))
                if nxt < len(text):
                    alts.append(f"{gbnf_literal(ch)} {states[nxt]}")
            other = "".join(_char(ord(c), True) for c in alphabet)
            alts.append(f"[^{other}] {states[0]}")
            self.extra.append(f"{name} ::= {' | '.join(alts)}")
        self.excludes[text] = states[0]
        return states[0]


def ebnf_to_gbnf(ebnf: str, prefix: str = "") -> str:
    """``ebnf`` (xgrammar syntax, with a ``root`` rule) as GBNF; NotExpressible naming what GBNF cannot
    say. With ``prefix``, every rule name starts with it (``root`` is then ``<prefix>root``), so that
    several grammars can be joined in one."""
    rules, _dropped = parse_ebnf(ebnf, {})
    if "root" not in rules:
        raise NotExpressible("the grammar has no root rule")
    writer = _Writer(list(rules), _NAME.sub("-", prefix))
    lines = [f"{writer.names[name]} ::= {writer.alts(body)}" for name, body in rules.items()]
    return "\n".join([*lines, *writer.extra]) + "\n"


__all__ = ["ebnf_to_gbnf", "gbnf_literal"]
