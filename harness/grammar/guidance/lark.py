"""xgrammar EBNF -> llguidance Lark, for the grammars the model families build (a second engine).

Only what can be converted *exactly* is converted; anything else raises :class:`NotExpressible`
with the reason (the bench then reports the strategy as "not expressible" for llguidance):

- rules, string literals, character classes, groups, ``|``, ``* + ?`` and ``{m}``/``{m,n}``;
- ``TagDispatch(loop_after_dispatch=false, excludes=("X"))`` with no tags (any text that does not
  contain ``X``: FunctionGemma's string body) -> the terminal ``/(?s:.*)/ & ~/(?s:.*)X(?s:.*)/``;
- lookahead assertions ``(= ...)`` are dropped (in our grammars they restate what must follow, so
  the language is unchanged); the number dropped is reported;
- other builtins (``Token(...)``, ``TagDispatch`` with tags, ...) are not expressible.

llguidance treats every added token as *special*: it never matches text, a grammar must name it
(``<[id]>``). Literal text equal to such a token (``<start_function_call>``, ``<escape>``,
``<tool_call>``...) is therefore split out and emitted as a token reference. The language is then
the xgrammar language restricted to the single-token spelling of those markers, which is how a
model emits them (xgrammar also accepts them spelled with ordinary pieces).

Rules that neither reach a special token nor recurse become Lark *terminals* (one lexeme, a lazy
DFA, llguidance's fast path); the others stay context-free rules, with maximal runs of
terminal-able items grouped into one generated terminal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

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

__all__ = ["LarkGrammar", "NotExpressible", "ebnf_to_lark", "lark_literal", "lark_regex_text"]




@dataclass(frozen=True, slots=True)
class LarkGrammar:
    text: str
    start: str
    """The name of the grammar's top rule (``start`` unless a prefix was given)."""
    terminals: int
    rules: int
    dropped_lookaheads: int
    specials: tuple[int, ...]
    notes: tuple[str, ...] = field(default=())


# --- emitting Lark -----------------------------------------------------------------------------------


def lark_literal(text: str) -> str:
    """A Lark string literal."""
    return json.dumps(text, ensure_ascii=False)


def _rx_char(code: int) -> str:
    ch = chr(code)
    return ch if ch.isascii() and ch.isalnum() else f"\\x{{{code:X}}}"


def lark_regex_text(text: str) -> str:
    """``text`` as a regex matching it literally (every non-alphanumeric char as ``\\x{..}``)."""
    return "".join(_rx_char(ord(c)) for c in text)


def _refs(alts: tuple[tuple[Item, ...], ...]) -> set[str]:
    out: set[str] = set()
    for seq in alts:
        for item in seq:
            if isinstance(item.atom, Ref):
                out.add(item.atom.name)
            elif isinstance(item.atom, Group):
                out |= _refs(item.atom.alts)
    return out


def _has_special(alts: tuple[tuple[Item, ...], ...]) -> bool:
    return any(
        isinstance(i.atom, Special) or (isinstance(i.atom, Group) and _has_special(i.atom.alts))
        for seq in alts
        for i in seq
    )


def _reach(graph: Mapping[str, set[str]], start: set[str]) -> set[str]:
    """Every rule reachable from the rules ``start``."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        n = todo.pop()
        if n not in seen and n in graph:
            seen.add(n)
            todo.extend(graph[n])
    return seen


def _unwrap(alts: tuple[tuple[Item, ...], ...]) -> tuple[tuple[Item, ...], ...]:
    """``(a | b)`` as a whole rule body -> ``a | b``."""
    while len(alts) == 1 and len(alts[0]) == 1 and isinstance(alts[0][0].atom, Group) and not alts[0][0].quant:
        alts = alts[0][0].atom.alts
    return alts


def unroll_right_recursion(rules: dict[str, tuple[tuple[Item, ...], ...]]) -> int:
    """Rewrite right-linear self-recursive rules ``X ::= r1 X | r2 X | b1 | b2`` (nothing else reaching
    ``X``) as ``X ::= (r1 | r2)* (b1 | b2)``: the same language, and no longer recursive, so it can
    become a terminal (xgrammar's own JSON string rule has this shape). Returns how many were rewritten."""
    graph = {n: _refs(b) for n, b in rules.items()}
    count = 0
    for name, body in list(rules.items()):
        alts = _unwrap(body)
        rec, base = [], []
        for seq in alts:
            if seq and isinstance(seq[-1].atom, Ref) and seq[-1].atom.name == name and not seq[-1].quant:
                rec.append(seq[:-1])
            else:
                base.append(seq)
        if not rec or not base:
            continue
        others = {r for seq in (*rec, *base) for r in _refs(((*seq,),))}
        if name in others:
            continue
        if name in _reach(graph, others):
            continue
        rules[name] = ((Item(Group(tuple(rec)), "*"), Item(Group(tuple(base)))),)
        count += 1
    return count


class _Emitter:
    def __init__(self, rules: dict[str, tuple[tuple[Item, ...], ...]], prefix: str = "") -> None:
        self.rules = rules
        self.prefix = prefix
        self.graph = {name: _refs(body) for name, body in rules.items()}
        for name, refs in self.graph.items():
            missing = refs - rules.keys()
            if missing:
                raise NotExpressible(f"rule {name!r} refers to undefined {sorted(missing)}")
        reach = {name: _reach(self.graph, self.graph[name]) for name in rules}
        recursive = {n for n in rules if n in reach[n]}
        special = {n for n in rules if _has_special(rules[n])}
        self.terminal = {n for n in rules if not ({n} | reach[n]) & (recursive | special)}
        self.names: dict[str, str] = {}
        used = {"start"}
        for idx, name in enumerate(rules):
            if name == "root":
                lark = f"{prefix}root" if prefix else "start"
            else:
                base = prefix + (re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_") or "r")
                lark = base.upper() if name in self.terminal else base.lower()
                if lark in used or not lark[0].isalpha():
                    lark = f"{'T' if name in self.terminal else 'r'}{idx}_{lark}"
            used.add(lark)
            self.names[name] = lark
        if "root" in self.terminal:  # start must be a rule
            self.terminal.discard("root")
        self.extra: list[str] = []
        self.exclude_names: dict[str, str] = {}

    def term_ok(self, item: Item) -> bool:
        a = item.atom
        if isinstance(a, Special):
            return False
        if isinstance(a, Ref):
            return a.name in self.terminal
        if isinstance(a, Group):
            return all(self.term_ok(i) for seq in a.alts for i in seq)
        return True

    def atom(self, a: Atom) -> str:
        if isinstance(a, Lit):
            return lark_literal(a.text)
        if isinstance(a, Special):
            return f"<[{a.token_id}]>"
        if isinstance(a, Ref):
            return self.names[a.name]
        if isinstance(a, CharClass):
            body = "".join(
                _rx_char(lo) if lo == hi else f"{_rx_char(lo)}-{_rx_char(hi)}" for lo, hi in a.ranges
            )
            return f"/[{'^' if a.negated else ''}{body}]/"
        if isinstance(a, Exclude):
            name = self.exclude_names.get(a.text)
            if name is None:
                name = f"{self.prefix.upper()}EXCLUDE_{len(self.exclude_names)}"
                self.exclude_names[a.text] = name
                self.extra.append(f"{name}: /(?s:.*)/ & ~/(?s:.*){lark_regex_text(a.text)}(?s:.*)/")
            return name
        return "(" + self.alts(a.alts) + ")"

    def alts(self, alts: tuple[tuple[Item, ...], ...], group_hint: str | None = None) -> str:
        return " | ".join(self.seq(seq, f"{group_hint}_{k}" if group_hint else None) for k, seq in enumerate(alts))

    def seq(self, seq: tuple[Item, ...], group_hint: str | None) -> str:
        if not seq:
            return '""'
        if group_hint is None:
            return " ".join(self.atom(i.atom) + i.quant for i in seq)
        out: list[str] = []
        run: list[Item] = []

        def flush() -> None:
            if len(run) > 1:
                name = f"{group_hint.upper()}_P{len(self.extra)}"
                self.extra.append(f"{name}: {self.seq(tuple(run), None)}")
                out.append(name)
            elif run:
                out.append(self.atom(run[0].atom) + run[0].quant)
            run.clear()

        for item in seq:
            if self.term_ok(item):
                run.append(item)
            else:
                flush()
                out.append(self.atom(item.atom) + item.quant)
        flush()
        return " ".join(out)

    def render(self) -> str:
        lines = [] if self.prefix else ["%llguidance {}", ""]
        for name, body in self.rules.items():
            lark = self.names[name]
            if name in self.terminal:
                lines.append(f"{lark}: {self.alts(body)}")
            else:
                lines.append(f"{lark}: {self.alts(body, lark)}")
        return "\n".join([*lines, *self.extra]) + "\n"


def ebnf_to_lark(ebnf: str, specials: Mapping[str, int] | None = None, *, prefix: str = "") -> LarkGrammar:
    """Convert ``ebnf`` (xgrammar syntax, with a ``root`` rule) to llguidance Lark; ``specials`` maps
    the text of each token llguidance treats as special to its id. With ``prefix`` every name is
    prefixed and no header is written (for embedding in a larger grammar; the top rule is
    ``<prefix>root``). Raises :class:`NotExpressible`."""
    parsed, dropped = parse_ebnf(ebnf, dict(specials or {}))
    unrolled = unroll_right_recursion(parsed)
    emitter = _Emitter(parsed, prefix)
    text = emitter.render()
    used = sorted({int(x) for x in re.findall(r"<\[(\d+)\]>", text)})
    notes = []
    if dropped:
        notes.append(f"{dropped} lookahead assertion(s) dropped")
    if used:
        notes.append("control tokens as special tokens " + ",".join(map(str, used)))
    if unrolled:
        notes.append(f"{unrolled} right-recursive rule(s) written as repetition")
    return LarkGrammar(
        text=text,
        start=emitter.names["root"],
        terminals=len(emitter.terminal),
        rules=len(parsed) - len(emitter.terminal),
        dropped_lookaheads=dropped,
        specials=tuple(used),
        notes=tuple(notes),
    )
