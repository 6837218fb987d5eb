"""A string's regular languages intersected, with its length counted: ``format`` and ``pattern``
together, or either with ``minLength``/``maxLength``, as one grammar (the intersection built).

Each expression (Python's, read by its own parser as ``_regex`` reads it: the same anchors, classes
and refusals) becomes an automaton over code points; the automata run side by side on a partition of
the characters into ranges no transition splits (subset construction), the result is minimised, and
the length is counted alongside it (``counted_rules``): one rule per (state, characters so far, capped
at the bound that matters). That is exact, and its size is the automaton's states times the bound:
past ``MAX_STATES`` rules the schema is refused by name (``Intersection.problem``), never built with a
bound dropped.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
import re._constants as sre
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.grammar.schema._regex import (
    _STARTS,
    ANY,
    MAX_CHAR,
    Ranges,
    RegexError,
    _Converter,
    normalize,
    parsed_pattern,
)

MAX_STATES = 20_000
"""Most rules one string's intersection may take (automaton states x counted characters)."""
MAX_NFA = 20_000
"""Most automaton states one expression may expand to (counted repeats are copied out)."""

_Frag = tuple[int, int]


class _Nfa:
    """A Thompson automaton: epsilon moves and moves on a set of code points."""

    def __init__(self) -> None:
        self.eps: list[list[int]] = []
        self.moves: list[list[tuple[Ranges, int]]] = []

    def new(self) -> int:
        if len(self.eps) >= MAX_NFA:
            raise RegexError(f"an expression past {MAX_NFA:,} automaton states (its counted repeats copied out)")
        self.eps.append([])
        self.moves.append([])
        return len(self.eps) - 1

    def chars(self, ranges: Ranges) -> _Frag:
        if not ranges:
            raise RegexError("a character class that matches no character")
        a, b = self.new(), self.new()
        self.moves[a].append((ranges, b))
        return a, b

    def empty(self) -> _Frag:
        a = self.new()
        return a, a

    def seq(self, frags: list[_Frag]) -> _Frag:
        if not frags:
            return self.empty()
        for (_, end), (start, _) in itertools.pairwise(frags):
            self.eps[end].append(start)
        return frags[0][0], frags[-1][1]

    def alt(self, frags: list[_Frag]) -> _Frag:
        a, b = self.new(), self.new()
        for start, end in frags:
            self.eps[a].append(start)
            self.eps[end].append(b)
        return a, b

    def star(self, frag: _Frag) -> _Frag:
        a = self.new()
        self.eps[a].append(frag[0])
        self.eps[frag[1]].append(a)
        return a, a


class _Builder(_Converter):
    """``_regex``'s reading of an expression, building automaton fragments instead of EBNF text."""

    def __init__(self, nfa: _Nfa, flags: int) -> None:
        super().__init__(lambda _r: "", lambda _h, _b: "", "", flags)
        self.nfa = nfa

    def frag_seq(self, nodes: Any) -> _Frag:
        return self.nfa.seq([self.frag(op, arg) for op, arg in nodes])

    def frag(self, op: Any, arg: Any) -> _Frag:
        nfa = self.nfa
        if op is sre.LITERAL:
            return nfa.chars(((arg, arg),))
        if op is sre.NOT_LITERAL:
            return nfa.chars(normalize([(0, arg - 1), (arg + 1, MAX_CHAR)]) if arg else ((1, MAX_CHAR),))
        if op is sre.ANY:
            return nfa.chars(ANY if self.dotall else ((0, 9), (11, MAX_CHAR)))
        if op is sre.IN:
            return nfa.chars(self.char_set(arg))
        if op is sre.BRANCH:
            return nfa.alt([self.frag_seq(alt) for alt in arg[1]])
        if op is sre.SUBPATTERN:
            _group, add_flags, del_flags, body = arg
            if (add_flags | del_flags) & ~(re.DOTALL | re.ASCII | re.UNICODE | re.VERBOSE):
                raise RegexError("case-insensitive or multi-line matching inside the pattern cannot be spelt")
            return self.frag_seq(body)
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, body = arg
            parts = [self.frag_seq(body) for _ in range(low)]
            if high is sre.MAXREPEAT:
                parts.append(nfa.star(self.frag_seq(body)))
            else:
                parts += [nfa.alt([self.frag_seq(body), nfa.empty()]) for _ in range(high - low)]
            return nfa.seq(parts)
        self.node(op, arg)  # raises the same RegexError the grammar converter raises
        raise RegexError(f"{op} cannot be spelt as a grammar")


def _nfa(pattern: str, full: bool) -> tuple[_Nfa, int, int]:
    """The automaton of the strings ``pattern`` finds a match in (``full``: matches whole)."""
    parsed = parsed_pattern(pattern)
    flags = parsed.state.flags
    nfa = _Nfa()
    conv = _Builder(nfa, flags)
    nodes = list(parsed)
    branches = nodes[0][1][1] if len(nodes) == 1 and nodes[0][0] is sre.BRANCH else [nodes]
    alts = []
    for branch in branches:
        seq = list(branch)
        start = bool(seq) and seq[0][0] is sre.AT and seq[0][1] in _STARTS
        seq = seq[1:] if start else seq
        end_kind = seq[-1][1] if seq and seq[-1][0] is sre.AT and seq[-1][1] in (sre.AT_END, sre.AT_END_STRING) else None
        seq = seq[:-1] if end_kind is not None else seq
        try:
            parts = [conv.frag_seq(seq)]
        except RegexError as exc:
            raise RegexError(f"pattern {pattern!r}: {exc}") from None
        if not (start or full):
            parts.insert(0, nfa.star(nfa.chars(ANY)))
        if not full and end_kind is not sre.AT_END_STRING:
            parts.append(nfa.alt([nfa.chars(((10, 10),)), nfa.empty()]) if end_kind else nfa.star(nfa.chars(ANY)))
        alts.append(nfa.seq(parts))
    first, last = nfa.alt(alts)
    return nfa, first, last


@dataclass(frozen=True, slots=True)
class Dfa:
    """A minimal deterministic automaton over ``atoms`` (ranges no transition splits)."""

    atoms: tuple[tuple[int, int], ...]
    moves: tuple[tuple[int, ...], ...]
    """Per state, the next state on each atom (-1: none)."""
    accepting: frozenset[int]


def _closure(nfa: _Nfa, states: set[int]) -> frozenset[int]:
    todo, seen = list(states), set(states)
    while todo:
        for nxt in nfa.eps[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return frozenset(seen)


def _atoms(nfas: list[_Nfa]) -> tuple[tuple[int, int], ...]:
    cuts = {0, MAX_CHAR + 1}
    for nfa in nfas:
        for moves in nfa.moves:
            for ranges, _ in moves:
                for lo, hi in ranges:
                    cuts.update((lo, hi + 1))
    points = sorted(cuts)
    return tuple((a, b - 1) for a, b in itertools.pairwise(points))


@functools.lru_cache(maxsize=64)
def intersection(patterns: tuple[tuple[str, bool], ...]) -> Dfa:
    """The minimal automaton of the strings every ``(pattern, full)`` accepts. RegexError when one
    cannot be read, or the automaton passes ``MAX_STATES``."""
    built = [_nfa(p, full) for p, full in patterns]
    nfas = [b[0] for b in built]
    atoms = _atoms(nfas)
    starts = [a[0] for a in atoms]
    # per automaton, per state: (atom index range) -> target, for quick stepping
    steps: list[list[list[tuple[int, int, int]]]] = []
    for nfa in nfas:
        per_state = []
        for moves in nfa.moves:
            spans = []
            for ranges, target in moves:
                for lo, hi in ranges:
                    spans.append((bisect.bisect_left(starts, lo), bisect.bisect_right(starts, hi) - 1, target))
            per_state.append(spans)
        steps.append(per_state)
    first = tuple(_closure(nfa, {start}) for nfa, (_, start, _) in zip(nfas, built, strict=True))
    index: dict[tuple[frozenset[int], ...], int] = {first: 0}
    order = [first]
    table: list[list[int]] = []
    while len(table) < len(order):
        current = order[len(table)]
        row = [-1] * len(atoms)
        targets: list[dict[int, set[int]]] = []
        for k, states in enumerate(current):
            per_atom: dict[int, set[int]] = {}
            for s in states:
                for lo, hi, target in steps[k][s]:
                    for atom in range(lo, hi + 1):
                        per_atom.setdefault(atom, set()).add(target)
            targets.append(per_atom)
        for atom in range(len(atoms)):
            if any(atom not in t for t in targets):
                continue
            key = tuple(_closure(nfas[k], targets[k][atom]) for k in range(len(nfas)))
            if key not in index:
                if len(order) >= MAX_STATES:
                    raise RegexError(f"an intersection past {MAX_STATES:,} automaton states")
                index[key] = len(order)
                order.append(key)
            row[atom] = index[key]
        table.append(row)
    accepting = {i for i, key in enumerate(order)
                 if all(built[k][2] in key[k] for k in range(len(nfas)))}
    return _minimal(atoms, table, accepting)


def _minimal(atoms: tuple[tuple[int, int], ...], table: list[list[int]], accepting: set[int]) -> Dfa:
    """Equivalent states merged (Moore's refinement), states that cannot reach acceptance dropped."""
    alive = set(accepting)
    changed = True
    while changed:
        changed = False
        for s, row in enumerate(table):
            if s not in alive and any(t in alive for t in row if t >= 0):
                alive.add(s)
                changed = True
    rows = [[t if t in alive else -1 for t in row] for row in table]
    block = {s: int(s in accepting) for s in range(len(rows))}
    while True:
        sigs: dict[tuple[int, ...], int] = {}
        new = {}
        for s, row in enumerate(rows):
            sig = (block[s], *(block[t] if t >= 0 else -1 for t in row))
            new[s] = sigs.setdefault(sig, len(sigs))
        if len(sigs) == len(set(block.values())):
            break
        block = new
    if 0 not in alive:
        return Dfa(atoms, (), frozenset())
    # renumber: the start first, dead states out
    names: dict[int, int] = {}
    for s in [0, *range(len(rows))]:
        if s in alive and block[s] not in names:
            names[block[s]] = len(names)
    moves: list[tuple[int, ...]] = [()] * len(names)
    for s, row in enumerate(rows):
        if s in alive:
            moves[names[block[s]]] = tuple(names[block[t]] if t >= 0 else -1 for t in row)
    return Dfa(atoms, tuple(moves), frozenset(names[block[s]] for s in accepting if s in alive))


def counted_size(dfa: Dfa, low: int, high: int | None) -> int:
    """How many rules ``counted_rules`` writes for ``dfa`` with lengths ``low`` to ``high``."""
    return len(dfa.moves) * ((high if high is not None else low) + 1)


def counted_rules(dfa: Dfa, low: int, high: int | None, chars: Callable[[Ranges], str], reserve: Callable[[str], str],
                  rules: dict[str, str], hint: str) -> str | None:
    """Rules for the strings of ``dfa`` of ``low`` to ``high`` characters (None: no upper bound), each
    character spelt by ``chars``; the name of the first rule, None when no string fits."""
    cap = high if high is not None else low
    alive: set[tuple[int, int]] = set()
    # backwards: (state, count) from which an accepted length is reachable
    for c in range(cap, -1, -1):
        changed = True
        while changed:
            changed = False
            for q, row in enumerate(dfa.moves):
                if (q, c) in alive:
                    continue
                nxt = min(c + 1, cap) if high is None else c + 1
                if (q in dfa.accepting and c >= low) or (
                        (high is None or c < high) and any(t >= 0 and (t, nxt) in alive for t in row)):
                    alive.add((q, c))
                    changed = True
    if (0, 0) not in alive:
        return None
    names = {key: reserve(f"{hint}-s{key[0]}-{key[1]}") for key in sorted(alive)}
    for (q, c), name in names.items():
        alts = ['""'] if q in dfa.accepting and c >= low else []
        nxt = min(c + 1, cap) if high is None else c + 1
        by_target: dict[int, list[tuple[int, int]]] = {}
        if high is None or c < high:
            for atom, t in enumerate(dfa.moves[q]):
                if t >= 0 and (t, nxt) in alive:
                    by_target.setdefault(t, []).append(dfa.atoms[atom])
        alts += [f"{chars(normalize(spans))} {names[(t, nxt)]}" for t, spans in by_target.items()]
        rules[name] = " | ".join(alts)
    return names[(0, 0)]


__all__ = ["MAX_STATES", "Dfa", "counted_rules", "counted_size", "intersection"]
