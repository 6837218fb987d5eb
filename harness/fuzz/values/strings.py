"""Strings of a ``pattern`` or a ``format`` with their ``minLength``/``maxLength`` counted while drawing,
so that a bound far from the typical draw (``maxLength: 8`` on an email, ``minLength: 20`` on
``^[a-z]+$``) is met by construction, not filtered for.

The expression is read by Python's own parser (the validator searches with Python's ``re``) into
characters, sequences, alternatives and repeats; each part knows the lengths it can take (a bit set,
capped), and a draw picks a length the whole can take, then splits it among the parts. A ``pattern``
not anchored with ``^`` (or ``$``) gets any text before (or after) it, as a search allows. A class
with categories or a negation draws from the candidate characters (``CANDIDATES``) it matches: a
subset of its language, never a character outside it. What this does not model (backreferences,
lookaround, anchors inside the expression, possessive repeats) gives None, and the caller filters
hypothesis-jsonschema's draws as before. Formats under a length bound are drawn from conservative
expressions of their own (``FORMAT_REGEXES``: names every checker and grammar accepts; with no bound,
``UNBOUNDED_VALUES``), or from Hypothesis's own values:
dates and times in each spelling whose length fits, UUIDs and IPv6 addresses filtered by length.
Everything drawn is still checked by the schema's validator.

This is independent of the grammar builder's automata (``harness.grammar.schema``) on purpose: the
values judge those grammars.
"""

from __future__ import annotations

import datetime
import re
import re._constants as sre
import re._parser as sre_parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

LENGTH_SLACK = 24
"""Drawn strings are at most this much longer than ``minLength`` (and never over ``maxLength``): a
bound of 2,083 characters (pydantic's ``HttpUrl``) is no reason to draw kilobyte URLs."""
CANDIDATES = "".join(map(chr, range(0x20, 0x7F))) + "\t\néßΩ€日٣\u00a0😀"
"""The characters a class with a category or a negation (``\\d``, ``[^"]``, ``.``) draws from."""
_CATEGORY_RE = {sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D", sre.CATEGORY_SPACE: r"\s",
                sre.CATEGORY_NOT_SPACE: r"\S", sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W"}


class Unmodelled(Exception):
    """A part of the expression this module does not draw (module doc)."""


@dataclass(frozen=True)
class _Part:
    kind: str  # "chars", "seq", "alt" or "rep"
    lens: int  # bit i: the part can be i characters long (up to the cap)
    chars: st.SearchStrategy[str] | None = None
    parts: tuple[_Part, ...] = ()
    counts: tuple[tuple[int, int], ...] = ()  # "rep": (repeats, lengths of exactly that many)
    suffixes: tuple[int, ...] = ()  # "seq": lengths of parts[i:]; "rep": of j repeats (the last, beyond)


def _bits(lens: int) -> list[int]:
    return [i for i in range(lens.bit_length()) if lens >> i & 1]


def _plus(a: int, b: int, cap: int) -> int:
    out = 0
    for i in _bits(a):
        out |= b << i
    return out & ((1 << (cap + 1)) - 1)


def _chars(ranges: Sequence[tuple[int, int]] | None, test: Callable[[str], bool]) -> _Part:
    """One character: from ``ranges`` when the set is exactly those, else the ``CANDIDATES`` ``test`` passes."""
    if ranges is not None:  # an exact set: every one of its characters (surrogates aside) can come
        spans = [(a, b) for a, b in ((a, min(b, 0x10FFFF)) for a, b in ranges) if not 0xD800 <= a <= b <= 0xDFFF]
        total = sum(b - a + 1 for a, b in spans)

        def pick(index: int) -> str:
            for a, b in spans:
                if index <= b - a:
                    return chr(a + index)
                index -= b - a + 1
            raise AssertionError(index)

        chars = st.integers(0, total - 1).map(pick) if total else None
    else:
        found = [c for c in CANDIDATES if test(c)]
        chars = st.sampled_from(found) if found else None
    if chars is None:
        raise Unmodelled("a class none of whose candidate characters matches")
    return _Part("chars", 0b10, chars=chars)


def _matcher(expression: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda c: expression.fullmatch(c) is not None


class _Reader:
    def __init__(self, flags: int, cap: int) -> None:
        self.flags, self.cap = flags, cap
        self.ascii = re.ASCII if flags & re.ASCII else 0

    def any_char(self) -> _Part:
        dotall = bool(self.flags & re.DOTALL)
        return _chars(None, lambda c: dotall or c != "\n")

    def char_set(self, items: list[tuple[Any, Any]]) -> _Part:
        ranges: list[tuple[int, int]] = []
        tests: list[Callable[[str], bool]] = []
        negate = False
        for op, arg in items:
            if op is sre.NEGATE:
                negate = True
            elif op is sre.LITERAL:
                ranges.append((arg, arg))
            elif op is sre.RANGE:
                ranges.append(arg)
            elif op is sre.CATEGORY and arg in _CATEGORY_RE:
                tests.append(_matcher(re.compile(_CATEGORY_RE[arg], self.ascii)))
            else:
                raise Unmodelled(f"a class holding {op}")

        def inside(c: str) -> bool:
            return any(a <= ord(c) <= b for a, b in ranges) or any(t(c) for t in tests)

        if negate or tests:
            return _chars(None, (lambda c: not inside(c)) if negate else inside)
        return _chars(ranges, inside)

    def seq(self, parts: list[_Part]) -> _Part:
        suffixes = [1]
        for part in reversed(parts):
            suffixes.insert(0, _plus(part.lens, suffixes[0], self.cap))
        return _Part("seq", suffixes[0], parts=tuple(parts), suffixes=tuple(suffixes))

    def rep(self, low: int, high: int, body: _Part) -> _Part:
        exact = [1]  # exact[k]: the lengths of k repeats
        stable = False
        while len(exact) - 1 < high:
            more = _plus(exact[-1], body.lens, self.cap)
            if more == 0:
                break
            if more == exact[-1]:  # a body that can be empty: more repeats add no length
                stable = True
                break
            exact.append(more)
        last = len(exact) - 1
        counts = [(k, exact[k]) for k in range(low, last + 1)] or ([(low, exact[-1])] if stable else [])
        lens = 0
        for _, got in counts:
            lens |= got
        return _Part("rep", lens, parts=(body,), counts=tuple(counts), suffixes=tuple(exact))

    def sequence(self, nodes: Any) -> _Part:
        return self.seq([self.node(op, arg) for op, arg in nodes])

    def node(self, op: Any, arg: Any) -> _Part:
        if op is sre.LITERAL:
            return _chars(((arg, arg),), lambda c: True)
        if op is sre.NOT_LITERAL:
            return _chars(None, lambda c: ord(c) != arg)
        if op is sre.ANY:
            return self.any_char()
        if op is sre.IN:
            return self.char_set(arg)
        if op is sre.BRANCH:
            alts = [self.sequence(alt) for alt in arg[1]]
            lens = 0
            for alt in alts:
                lens |= alt.lens
            return _Part("alt", lens, parts=tuple(alts))
        if op is sre.SUBPATTERN:
            return self.sequence(arg[3])
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, body = arg
            return self.rep(low, high, self.sequence(body))
        raise Unmodelled(str(op))


def _emit(draw: Callable[..., Any], part: _Part, length: int) -> str:
    """A string of ``part`` exactly ``length`` long (a length its ``lens`` holds)."""
    if part.kind == "chars":
        return str(draw(part.chars))
    if part.kind == "alt":
        return _emit(draw, draw(st.sampled_from([p for p in part.parts if p.lens >> length & 1])), length)
    if part.kind == "seq":
        out = []
        for i, sub in enumerate(part.parts):
            rest = part.suffixes[i + 1]
            size = draw(st.sampled_from([n for n in _bits(sub.lens) if n <= length and rest >> (length - n) & 1]))
            out.append(_emit(draw, sub, size))
            length -= size
        return "".join(out)
    count = draw(st.sampled_from([k for k, lens in part.counts if lens >> length & 1]))
    exact, out = part.suffixes, []
    for i in range(count):
        rest = exact[min(count - 1 - i, len(exact) - 1)]
        size = draw(st.sampled_from([n for n in _bits(part.parts[0].lens) if n <= length and rest >> (length - n) & 1]))
        out.append(_emit(draw, part.parts[0], size))
        length -= size
    return "".join(out)


def regex_strings(pattern: str, low: int = 0, high: int | None = None, *, full: bool = False) -> st.SearchStrategy[str] | None:
    """Strings ``pattern`` matches (searched; matched whole with ``full``) of ``low`` to ``high``
    characters; ``st.nothing()`` when no length in that range fits; None where the expression holds
    what this module does not model (module doc)."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError):
        return None
    cap = low + LENGTH_SLACK if high is None else min(high, low + LENGTH_SLACK)
    nodes = list(parsed)
    starts = bool(nodes) and nodes[0][0] is sre.AT and nodes[0][1] in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING)
    nodes = nodes[1:] if starts else nodes
    ends = bool(nodes) and nodes[-1][0] is sre.AT and nodes[-1][1] in (sre.AT_END, sre.AT_END_STRING)
    nodes = nodes[:-1] if ends else nodes
    reader = _Reader(parsed.state.flags, cap)
    try:
        body = reader.sequence(nodes)
        free = reader.rep(0, cap, reader.any_char())
    except (Unmodelled, RecursionError):
        return None
    whole = reader.seq([p for p, keep in ((free, not (starts or full)), (body, True), (free, not (ends or full))) if keep])
    sizes = [n for n in _bits(whole.lens) if n >= low]
    if not sizes:
        return st.nothing() if cap == high else None

    @st.composite
    def strings(draw: st.DrawFn) -> str:
        return _emit(draw, whole, draw(st.sampled_from(sizes)))

    return strings()


_LABEL = "[a-z]([a-z0-9-]{0,8}[a-z0-9])?"
_HOST = f"({_LABEL}\\.){{0,2}}[a-z]{{1,6}}"
_SEGMENTS = "(/[a-zA-Z0-9._~-]{1,8}){0,3}"
FORMAT_REGEXES = {
    "email": f"[a-z0-9]{{1,8}}([._+-][a-z0-9]{{1,4}})?@{_HOST}",
    "hostname": _HOST,
    "uri": f"(https|http|ftp)://{_HOST}{_SEGMENTS}(\\?[a-z]{{1,5}}=[a-z0-9]{{1,5}})?",
    "uri-reference": f"(https://{_HOST})?{_SEGMENTS}",
    "ipv4": "(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}",
}
"""Conservative spellings of these formats: names any checker and any grammar of the format accepts."""
_OFFSETS = st.sampled_from([datetime.UTC, datetime.timezone(datetime.timedelta(hours=-5, minutes=-30)),
                            datetime.timezone(datetime.timedelta(hours=9))])
_FRACTIONS = {"seconds": 0, "milliseconds": 4, "microseconds": 7}
"""Each ``isoformat`` spelling's characters past the seconds."""
FORMAT_VALUES: dict[str, st.SearchStrategy[str]] = {
    "date": st.dates().map(lambda d: d.isoformat()),
    "uuid": st.uuids().map(str),
    "ipv6": st.ip_addresses(v=6).map(str),
}
"""Formats drawn from Hypothesis's own values (``date-time`` and ``time`` too: ``_clock``)."""


def _clock(name: str, low: int, high: int | None) -> st.SearchStrategy[str]:
    """``date-time`` or ``time`` (JSON Schema's has a zone) in the spellings whose length fits: ``Z`` or
    an offset, no fraction or 3 or 6 digits; a fraction longer than 6 digits is never drawn."""
    base = 19 if name == "date-time" else 8
    fits = [(spec, zulu) for spec, extra in _FRACTIONS.items() for zulu in (True, False)
            if low <= base + extra + (1 if zulu else 6) <= (high if high is not None else base + 13)]

    def spelt(fit: tuple[str, bool]) -> st.SearchStrategy[str]:
        spec, zulu = fit
        zones = st.just(datetime.UTC) if zulu else _OFFSETS
        values = st.datetimes(timezones=zones) if name == "date-time" else st.times(timezones=zones)
        return values.map(lambda v: v.isoformat(timespec=spec).replace("+00:00", "Z" if zulu else "+00:00"))

    return st.sampled_from(fits).flatmap(spelt) if fits else st.nothing()


_WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10).filter(lambda t: t[0].isalpha())
_DOMAIN = st.lists(_WORD, min_size=1, max_size=3).map(".".join).map(lambda h: h + ".example")
_PATH = st.lists(_WORD, max_size=3).map(lambda parts: "".join("/" + p for p in parts))
UNBOUNDED_VALUES: dict[str, st.SearchStrategy[str]] = {
    "email": st.tuples(_WORD, _DOMAIN).map(lambda p: f"{p[0]}@{p[1]}"),
    "hostname": _DOMAIN,
    "uri": st.tuples(st.sampled_from(["https", "http", "ftp"]), _DOMAIN, _PATH).map(lambda p: f"{p[0]}://{p[1]}{p[2]}"),
    "uri-reference": st.tuples(_DOMAIN, _PATH).map(lambda p: f"https://{p[0]}{p[1]}") | _PATH.filter(bool),
    "ipv4": st.ip_addresses(v=4).map(str),
}
"""With no length bound, these formats are drawn as before ``FORMAT_REGEXES``: longer names and
top-level labels, which find defects the short spellings never reach (xgrammar's ``format: email``)."""


def format_strings(name: str, low: int = 0, high: int | None = None) -> st.SearchStrategy[str] | None:
    """Strings of ``format: name`` of ``low`` to ``high`` characters (None: a format not drawn here)."""
    if (low, high) == (0, None) and name in UNBOUNDED_VALUES:
        return UNBOUNDED_VALUES[name]
    if name in FORMAT_REGEXES:
        return regex_strings(FORMAT_REGEXES[name], low, high, full=True)
    if name in ("date-time", "time"):
        return _clock(name, low, high)
    if name in FORMAT_VALUES:
        return FORMAT_VALUES[name].filter(lambda s: low <= len(s) <= (len(s) if high is None else high))
    return None


__all__ = ["CANDIDATES", "FORMAT_REGEXES", "FORMAT_VALUES", "LENGTH_SLACK", "format_strings", "regex_strings"]
