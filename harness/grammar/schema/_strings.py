"""Strings with ``format``, ``pattern`` or lengths as EBNF, in a family's value syntax.

A string's characters are spelt per syntax (``json_chars``, ``fg_chars``): in JSON (Qwen) a character
is itself, or its escape -- the short escapes and ``\\u00XX`` for control characters, as Python's
``json.dumps`` writes them, and any ``\\uXXXX`` where the set is every character; a character outside
ASCII escaped as ``\\uXXXX`` is not accepted where the set is narrower (stricter than JSON: a model
writes the character itself). In FunctionGemma's syntax a string's text is raw, between ``<escape>``
delimiters. Lengths count characters, an escape counting as one.

``format`` is spelt as the regular expression of what the JSON-schema validator (``jsonschema`` with
its ``format-nongpl`` checkers) accepts: ``FORMAT_REGEXES``, each matched whole. A format not listed
there is refused (``format_problem``) when a validator checks it, an annotation otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.grammar.schema._regex import (
    ANY,
    Ranges,
    RegexError,
    complement,
    intersect,
    parsed_pattern,
    regex_rule,
    subtract,
)
from harness.grammar.schema._text import ebnf_literal

_D = "[0-9]"
_YEAR = "(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
_MONTH_DAY = "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))"
_DATE = f"({_YEAR}-{_MONTH_DAY}|{_LEAP}-02-29)"
_TIME = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])"
_IPV4 = f"{_OCTET}(\\.{_OCTET}){{3}}"
_H16 = "[0-9a-fA-F]{1,4}"
_LS32 = f"({_H16}:{_H16}|{_IPV4})"
_IPV6 = "|".join((
    f"({_H16}:){{6}}{_LS32}",
    f"::({_H16}:){{5}}{_LS32}",
    f"({_H16})?::({_H16}:){{4}}{_LS32}",
    f"(({_H16}:){{0,1}}{_H16})?::({_H16}:){{3}}{_LS32}",
    f"(({_H16}:){{0,2}}{_H16})?::({_H16}:){{2}}{_LS32}",
    f"(({_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
    f"(({_H16}:){{0,4}}{_H16})?::{_LS32}",
    f"(({_H16}:){{0,5}}{_H16})?::{_H16}",
    f"(({_H16}:){{0,6}}{_H16})?::",
))
_HEX = "[0-9a-fA-F]"
_LABEL = "[A-Za-z\\d]([A-Za-z\\d-]{0,61}[A-Za-z\\d])?"
_POINTER = "(/([^/~]|~[01])*)*"

FORMAT_REGEXES: dict[str, str] = {
    "date": _DATE,
    "time": f"{_TIME}\\n?",
    "date-time": f"{_DATE}[Tt]{_TIME}\\n?",
    "email": "(?s).*@.*",
    "idn-email": "(?s).*@.*",
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "uuid": f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}",
    "hostname": f"({_LABEL}\\.)*{_LABEL}\\.?\\n?",
    "json-pointer": _POINTER,
    "relative-json-pointer": f"(0|[1-9][0-9]*)(#|{_POINTER})",
}
"""What the validator's checker accepts, as a regular expression matched whole (see each note in
docs/schemas.md): ``date`` and ``date-time`` know month lengths and leap years and reject year 0;
``date-time`` and ``time`` accept a final newline and a lowercase ``t``/``z``, as the checker (it
upper-cases the text and matches with ``$``) does; ``email`` is any text holding ``@`` (the checker's
rule); ``ipv4`` refuses leading zeros as Python's ``ipaddress`` does; ``hostname`` does not bound the
name's total length to 253 characters."""


def format_regex(name: str) -> str | None:
    """The regular expression of ``format: name`` (None: none here). ``uri`` and ``uri-reference`` are
    the validator's own (``rfc3986_validator``'s expressions, matched with ``$``), where it is installed."""
    if name in FORMAT_REGEXES:
        return FORMAT_REGEXES[name]
    if name in ("uri", "uri-reference"):
        try:
            import rfc3986_validator as rfc
        except ImportError:
            return None
        body = rfc.URI_RE if name == "uri" else f"{rfc.URI_RE}|{rfc.RELATIVE_REF_RE}"
        return f"(?x)(?:{body})\\n?"
    return None


def format_problem(name: str) -> str | None:
    """Why ``format: name`` cannot be enforced by the EBNF builder (None: it can, or it is an annotation)."""
    from jsonschema import Draft202012Validator

    if format_regex(name) is not None or name not in Draft202012Validator.FORMAT_CHECKER.checkers:
        return None
    return f"format {name!r} (no grammar spells what its checker accepts)"


def class_text(ranges: Ranges) -> str:
    """An EBNF character class of ``ranges`` (negated when that is shorter); surrogates left out."""
    ranges = subtract(ranges, ((0xD800, 0xDFFF),))
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return ebnf_literal(chr(ranges[0][0]))
    negated = complement(ranges)
    negated = subtract(negated, ((0xD800, 0xDFFF),))
    use, prefix = (negated, "^") if len(negated) < len(ranges) else (ranges, "")
    parts = []
    for lo, hi in use:
        parts.append(_class_char(lo) if lo == hi else f"{_class_char(lo)}-{_class_char(hi)}")
    return f"[{prefix}{''.join(parts)}]"


def _class_char(code: int) -> str:
    ch = chr(code)
    if ch in "\\]^-[":
        return "\\" + ch
    if code > 0xFFFF:
        return f"\\U{code:08x}"
    if code < 0x20 or code >= 0x7F:
        return f"\\u{code:04x}"  # fixed width: xgrammar reads every hex digit after \\x
    return ch


_SHORT_ESCAPES = {0x22: '"', 0x5C: "\\", 0x2F: "/", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
_CONTROLS: Ranges = ((0, 0x1F),)


def json_chars(ranges: Ranges) -> str:
    """One character of ``ranges`` inside a JSON string: itself, or its escape."""
    alts = []
    raw = subtract(ranges, ((0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)))
    if raw:
        alts.append(class_text(raw))
    for code, esc in _SHORT_ESCAPES.items():
        if intersect(ranges, ((code, code),)):
            alts.append(ebnf_literal("\\" + esc))
    controls = intersect(ranges, _CONTROLS)
    if ranges == ANY or subtract(ANY, ranges) == ((0xD800, 0xDFFF),):
        alts.append('"\\\\u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F]')
    elif controls == _CONTROLS:
        alts.append('"\\\\u00" [01] [0-9a-fA-F]')
    else:
        for lo, hi in controls:
            for code in range(lo, hi + 1):
                low = f"{code & 0xF:x}"
                digit = f"[{low}{low.upper()}]" if low.isalpha() else f'"{low}"'
                alts.append(f'"\\\\u00{code >> 4}" {digit}')
    return alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"


def fg_chars(ranges: Ranges) -> str:
    """One character of ``ranges`` in FunctionGemma's raw string text. ``<`` is left out of a class
    that holds other characters too: a string's text must not hold ``<escape>`` (it would end the
    string), and a rule spelt by character cannot say "not that word" (xgrammar has no negative
    lookahead); so such a string may hold ``<`` only where its pattern names it alone (stricter than
    the schema, docs/schemas.md)."""
    if len(ranges) > 1 or ranges[0][0] != ranges[0][1]:
        ranges = subtract(ranges, ((0x3C, 0x3C),))
        if not ranges:
            raise RegexError("a character class of '<' alone and characters FunctionGemma cannot write")
    return class_text(ranges)


_AFTER_LT = "(?:e(?:s(?:c(?:a(?:pe?)?)?)?)?)?"
NO_DELIMITER = (f"(?:[^<]|(?:<{_AFTER_LT})*<(?:[^<e]|e(?:[^<s]|s(?:[^<c]|c(?:[^<a]|a(?:[^<p]|p(?:[^<e]|e[^<>])))))))*"
                f"(?:<{_AFTER_LT})*", True)
"""The FunctionGemma texts that do not hold ``<escape>`` (which would end the string), as an expression
matched whole: each ``<`` followed by at most ``escape`` and then a character that is not the next one
of the word. A pattern that names ``<`` alone is intersected with it: ``^<[a-z]+>$`` takes ``<b>`` and
not ``<escape>``."""


def _names_lt(pattern: Any) -> bool:
    """Whether ``pattern`` names ``<`` as a literal anywhere (where FunctionGemma's text may hold it;
    ``fg_chars`` leaves it out of a wider class). A negated class naming it counts too, harmlessly; a
    pattern that cannot be read does not (the intersection names its error)."""
    import re._constants as sre
    import re._parser as sre_parse

    try:
        parsed = parsed_pattern(pattern) if isinstance(pattern, str) else None
    except RegexError:
        parsed = None

    def holds(node: Any, depth: int) -> bool:
        if depth > 100:
            return True
        if isinstance(node, tuple) and len(node) == 2 and node[0] is sre.LITERAL:
            return bool(node[1] == 0x3C)
        if isinstance(node, (tuple, list, sre_parse.SubPattern)):
            return any(holds(child, depth + 1) for child in node)
        return False

    return parsed is not None and holds(parsed, 0)


def _expressions(schema: Mapping[str, Any], raw: bool) -> list[tuple[str, bool]]:
    """A string schema's expressions: its format's (matched whole), its pattern (searched) and, in
    FunctionGemma's raw text (``raw``) under a pattern naming ``<``, ``NO_DELIMITER`` (no format's
    regex names ``<``: tests/grammar/test_value_rules.py)."""
    fmt = schema.get("format")
    fmt_regex = format_regex(fmt) if isinstance(fmt, str) else None
    pattern = schema.get("pattern")
    found = ([(fmt_regex, True)] if fmt_regex is not None else []) + ([(pattern, False)] if pattern is not None else [])
    return found + ([NO_DELIMITER] if raw and _names_lt(pattern) else [])


def _lengths(schema: Mapping[str, Any]) -> tuple[int, int | None]:
    low, high = schema.get("minLength"), schema.get("maxLength")
    return (low if isinstance(low, int) and low > 0 else 0), (high if isinstance(high, int) else None)


def _cut(expression: tuple[str, bool], low: int, high: int | None) -> bool:
    """Whether the lengths may refuse a string the expression accepts (False: they say nothing more).
    From the widths Python's parser gives; a side not anchored (``^``/``$``) takes any text."""
    import re
    import re._constants as sre
    import re._parser as sre_parse

    pattern, full = expression
    if not isinstance(pattern, str):
        return True
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError):  # the grammar converter names the error
        return True
    least, most = parsed.getwidth()
    nodes = list(parsed)
    anchored = full or (len(nodes) >= 2 and nodes[0][0] is sre.AT and nodes[-1][0] is sre.AT)
    longest = most + 1 if anchored and most < sre.MAXREPEAT else None  # + a final newline before $
    return low > least or (high is not None and (longest is None or high < longest))


def _keywords(schema: Mapping[str, Any]) -> str:
    low, high = _lengths(schema)
    named = [f"format {schema['format']!r}"] if "format" in schema else []
    named += ["pattern"] if "pattern" in schema else []
    named += [f"minLength {low}"] if low else []
    named += [f"maxLength {high}"] if high is not None else []
    return ", ".join(named[:-1]) + " and " + named[-1] if len(named) > 1 else named[0]


def _intersected(schema: Mapping[str, Any], raw: bool) -> Any:
    """The automaton of a string's format, pattern and lengths together (and ``NO_DELIMITER`` in
    FunctionGemma's ``raw`` text), when one expression's rule alone would not say them all (None: it
    does). RegexError naming the keywords past the budget."""
    from harness.grammar.schema._automata import MAX_STATES, counted_size, intersection

    expressions = _expressions(schema, raw)
    low, high = _lengths(schema)
    if not expressions or (len(expressions) == 1 and not _cut(expressions[0], low, high)):
        return None
    try:
        dfa = intersection(tuple(expressions))
    except RegexError as exc:
        raise RegexError(f"{_keywords(schema)}: {exc}") from None
    if (size := counted_size(dfa, low, high)) > MAX_STATES:
        raise RegexError(f"{_keywords(schema)} together: their intersection takes {size:,} grammar rules (the "
                         f"automaton's {len(dfa.moves)} states x the length counted), over {MAX_STATES:,}")
    return dfa


def string_problem(schema: Mapping[str, Any]) -> str | None:
    """Why a string's ``format``, ``pattern`` and lengths cannot be enforced together (None: they can),
    naming the keywords: asked before a build, so a refusal names the tool and the property path. Asked
    of either family, it answers for FunctionGemma's raw text, the larger automaton where they differ."""
    if not isinstance(schema.get("pattern", ""), str):
        return None  # pattern_problem names it
    try:
        _intersected(schema, raw=True)
    except RegexError as exc:
        return str(exc)
    return None


def string_rule(builder: Any, syntax: Any, schema: Mapping[str, Any], hint: str) -> str | None:
    """A rule for a string schema's ``format``/``pattern``/lengths in ``syntax`` (None: none applies).
    A format and a pattern together, or either cut by lengths, are built as their intersection
    (``_automata``); RegexError naming the keywords when that is past its budget."""
    fmt = schema.get("format")
    fmt_regex = format_regex(fmt) if isinstance(fmt, str) else None
    fmt = fmt if fmt_regex is not None else None
    pattern = schema.get("pattern")
    low, high = _lengths(schema)
    lengths = bool(low) or high is not None
    if fmt is None and pattern is None and not lengths:
        return None
    add = builder.add
    spell = fg_chars if syntax.raw_strings else json_chars

    def chars(ranges: Ranges) -> str:  # a class with its escapes as a rule of its own: inline in a
        one = spell(ranges)  # repetition, xgrammar took ~7 s to compile maxLength 8 for Qwen, as a rule ~10 ms
        return add(f"{syntax.name}-char", one) if " | " in one else one

    if isinstance(high, int) and high < low:
        from harness.grammar.schema._types import NoValue

        raise NoValue(f"no string is at least {low} and at most {high} characters long ({hint})")
    if (fmt is not None or pattern is not None) and (dfa := _intersected(schema, syntax.raw_strings)) is not None:
        from harness.grammar.schema._automata import counted_rules

        inner = counted_rules(dfa, low, high, chars, builder.reserve, builder.rules, f"{hint}-both")
        if inner is None:
            from harness.grammar.schema._types import NoValue

            raise NoValue(f"no string matches {_keywords(schema)} together ({hint})")
    elif fmt_regex is not None:
        inner = regex_rule(fmt_regex, chars, add, f"{hint}-{fmt}", full=True)
    elif pattern is not None:
        inner = regex_rule(pattern, chars, add, f"{hint}-pattern")
    elif syntax.raw_strings and (high if isinstance(high, int) else low) <= MAX_COUNTED_TEXT:
        inner = _counted_text(builder, low, high if isinstance(high, int) else None, hint)
    else:
        one = chars(ANY)
        inner = f"({one}){{{low},{high}}}" if isinstance(high, int) else f"({one}){{{low},}}"
    return add(f"{hint}-str", f"{syntax.string_open} {inner} {syntax.string_close}")


MAX_COUNTED_TEXT = 1000
"""Longest bound a FunctionGemma string's length is spelt exactly up to (8 rules per character)."""
_WORD = "<escape>"


def _counted_text(builder: Any, low: int, high: int | None, hint: str) -> str:
    """FunctionGemma text of ``low`` to ``high`` characters (None: no upper bound) that holds no
    ``<escape>``: one rule per (characters of ``<escape>`` matched so far, characters counted, capped
    at the bound that matters), so ``<`` is allowed wherever it does not start the delimiter."""
    cap = high if high is not None else low
    names = {(k, c): builder.reserve(f"{hint}-x{k}-{c}") for k in range(len(_WORD)) for c in range(cap + 1)}
    special = sorted(set(_WORD))
    other = class_text(complement(tuple((ord(ch), ord(ch)) for ch in special)))
    for (k, c), name in names.items():
        alts = ['""'] if c >= low else []
        if high is None or c < high:
            nxt_c = min(c + 1, cap)
            for ch in special:
                nxt = _step(k, ch)
                if nxt < len(_WORD):
                    alts.append(f"{ebnf_literal(ch)} {names[(nxt, nxt_c)]}")
            alts.append(f"{other} {names[(0, nxt_c)]}")
        builder.rules[name] = " | ".join(alts)
    return names[(0, 0)]


def _step(state: int, ch: str) -> int:
    """The KMP step of ``<escape>`` (it has no border: a mismatch restarts, or starts over at ``<``)."""
    if _WORD[state] == ch:
        return state + 1
    return 1 if ch == "<" else 0


__all__ = ["FORMAT_REGEXES", "RegexError", "class_text", "fg_chars", "format_problem", "format_regex", "json_chars",
           "string_problem", "string_rule"]
