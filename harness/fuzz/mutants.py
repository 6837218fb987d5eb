"""Near-miss mutants of a valid call, and the oracle that says whether a text is a valid answer.

A value mutant changes one place of the arguments (adds an unknown argument, drops a required one,
puts a value of another type, steps outside an enum, a bound, a length or a format, duplicates an
array item) and is kept only when the tool's strict schema rejects it; it is labelled with the keyword
the validator names. A text mutant breaks the family's string escaping in the rendered call; the
oracle (parse, then validate) decides whether it is still a valid answer. The oracle judges every
text a grammar accepts: mutants, and the random walks' outputs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.agents import ToolCall, ToolSchema
from harness.fuzz.values import broken_keyword, first_error

UNKNOWN_TOOL = "tool"
"""The keyword of a call to a tool the set does not hold."""
ESCAPING = "escaping"
"""The keyword of a text whose string escaping is broken."""
TRIES = 8


@dataclass(frozen=True, slots=True)
class Mutant:
    """A call (or a text) that must be rejected, and why."""

    what: str
    """What was done, in words (``maximum: 8 for 7``)."""
    keyword: str
    """The schema keyword it breaks (``enum``, ``format``...), ``tool`` or ``escaping``."""
    call: ToolCall | None = None
    """The mutated call (None for a text mutant)."""
    text: str | None = None
    """The mutated text (text mutants only)."""


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``value``: the root and each nested member and item."""
    out = [path]
    if isinstance(value, dict):
        for key, sub in value.items():
            out += _paths(sub, (*path, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            out += _paths(sub, (*path, i))
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    return [_replace(v, rest, new) if i == head else v for i, v in enumerate(value)]


def near_values(value: Any, rng: random.Random) -> list[Any]:
    """Values one step away from ``value``: other types, just past bounds and lengths (zeros and
    exponents for a number), an enum word changed, a broken date or address, an array with an item duplicated or dropped."""
    if isinstance(value, bool):
        return [not value, "true" if value else "false", 0, None]
    if isinstance(value, int):
        return [value + 1, value - 1, value + 0.5, str(value), -value - 1, value * 10 + 7, True, None]
    if isinstance(value, float):
        # zeros and values written with an exponent: past an exclusive bound at 0, or a bound's decade
        return [value + 1, value - 1, -value - 1.5, value * 10 + 7.25, str(value), None, round(value), 0.0, -0.0,
                -abs(value) * 1e-300 - 5e-324, abs(value) * 1e300 + 1e16]
    if isinstance(value, str):
        cut = value[:-1] if value else "x"
        return [value + "x", cut, "", value + value + "zz", 7, None, value.upper() + "!", "2024-13-45",
                "not an address", value.replace("-", "/").replace("@", " at ").replace(":", "-") or "x:"]
    if isinstance(value, list):
        out: list[Any] = [[], "[]", {"x": 1}, [*value, 7]]
        if value:
            out += [[*value, value[0]], value[:-1], [*value, *value]]
        return out
    if isinstance(value, dict):
        return [{}, [value], "{}", None]
    return [0, "x", [], {}]


def value_mutants(tools: Sequence[ToolSchema], call: ToolCall, check: Any, seed: int, count: int = 2) -> list[Mutant]:
    """Up to ``count`` invalid neighbours of ``call`` (``check``: the validator of its tool's strict
    schema), chosen with ``seed``; the first is always the unknown tool when ``seed`` is a multiple of 8."""
    rng = random.Random(seed)
    names = {t.name for t in tools}
    out: list[Mutant] = []
    if seed % 8 == 0:
        other = next(n for n in (call.name + "_x", "x" + call.name, call.name + "2") if n not in names)
        out.append(Mutant(f"unknown tool {other!r}", UNKNOWN_TOOL, ToolCall.create(other, call.arguments)))
    args = call.arguments
    places = _paths(args)
    for _ in range(TRIES * count):
        if len(out) >= count:
            break
        path = rng.choice(places)
        here = _get(args, path)
        choices: list[tuple[str, Any]] = []
        if isinstance(here, dict):
            extra = "zz_" + "_".join(sorted(here))[:12]
            choices.append((f"unknown argument {extra!r}", {**here, extra: 1}))
            choices += [(f"without {k!r}", {k2: v for k2, v in here.items() if k2 != k}) for k in here]
        choices += [(f"{_show(here)} -> {_show(v)}", v) for v in near_values(here, rng)]
        what, new = rng.choice(choices)
        mutated = _replace(args, path, new)
        if not isinstance(mutated, dict):  # a call's arguments stay an object
            continue
        error = first_error(check, mutated)
        if error is None:
            continue
        where = "/".join(str(p) for p in path) or "arguments"
        out.append(Mutant(f"{where}: {what}", broken_keyword(error), ToolCall.create(call.name, mutated)))
    return out


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


def escaping_mutant(family: str, strategy: str, text: str, seed: int) -> Mutant | None:
    """The rendered ``text`` with its string escaping broken once (None when it holds no string)."""
    rng = random.Random(seed)
    if family == "function_gemma" and strategy != "json_schema":
        marks = _all(text, "<escape>")
        if not marks:
            return None
        at = rng.choice(marks)
        how = rng.randrange(3)
        if how == 0:
            return Mutant("an <escape> dropped", ESCAPING, text=text[:at] + text[at + len("<escape>"):])
        if how == 1:
            return Mutant("an <escape> doubled", ESCAPING, text=text[:at] + "<escape>" + text[at:])
        return Mutant("<escape> spelt <escape >", ESCAPING, text=text[:at] + "<escape >" + text[at + len("<escape>"):])
    quotes = _string_starts(text)
    if not quotes:
        return None
    at = rng.choice(quotes) + 1
    piece = rng.choice(['\\q', '\n', '\x01', '"', '\\u12', '\\'])
    return Mutant(f"{piece!r} put inside a JSON string", ESCAPING, text=text[:at] + piece + text[at:])


def _all(text: str, word: str) -> list[int]:
    out, pos = [], text.find(word)
    while pos >= 0:
        out.append(pos)
        pos = text.find(word, pos + 1)
    return out


def _string_starts(text: str) -> list[int]:
    """Offsets of the opening quotes of JSON strings in ``text`` (escapes skipped)."""
    out, inside, i = [], False, 0
    while i < len(text):
        ch = text[i]
        if inside and ch == "\\":
            i += 2
            continue
        if ch == '"':
            if not inside:
                out.append(i)
            inside = not inside
        i += 1
    return out


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the oracle says of a text."""

    valid: bool
    keyword: str | None = None
    """The keyword it breaks (``parse:<kind>`` when it does not parse)."""
    reason: str = ""
    calls: tuple[ToolCall, ...] = ()


def judge(adapter: Any, text: str, tools: Sequence[ToolSchema], checks: dict[str, Any], *, parallel: bool) -> Verdict:
    """Is ``text`` a valid answer: it parses with no error into at least one call (one unless
    ``parallel``), each call of a known tool with arguments its strict schema accepts. Exceptions of
    the parser propagate (the caller counts them as parser crashes)."""
    parsed = adapter.parse_response(text, [], list(tools))
    if parsed.errors:
        err = parsed.errors[0]
        return Verdict(False, err.kind, err.message)
    if not parsed.tool_calls:
        return Verdict(False, "parse:no_call", "no call")
    if len(parsed.tool_calls) > 1 and not parallel:
        return Verdict(False, "parallel", f"{len(parsed.tool_calls)} calls where one is allowed", parsed.tool_calls)
    for call in parsed.tool_calls:
        check = checks.get(call.name)
        if check is None:
            return Verdict(False, UNKNOWN_TOOL, f"no tool is named {call.name!r}", parsed.tool_calls)
        error = first_error(check, call.arguments)
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "arguments"
            return Verdict(False, broken_keyword(error), f"{call.name}: {where}: {error.message[:160]}", parsed.tool_calls)
    return Verdict(True, calls=parsed.tool_calls)


__all__ = ["ESCAPING", "UNKNOWN_TOOL", "Mutant", "Verdict", "escaping_mutant", "judge", "near_values", "value_mutants"]
