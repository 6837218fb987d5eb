"""JSON types of values against a schema's ``type``: what the EBNF builder keeps of an enum or a const.

Gorilla function documents hold enums whose values are not of the declared type (strings on a ``boolean``, on an
``array``): no value satisfies such a schema, and the builder must not let the enum's values through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.agents import ConstraintError


class NoValue(ConstraintError):
    """A schema no value satisfies (an optional argument with it is left out of the grammar)."""


_JSON_TYPES: dict[type, tuple[str, ...]] = {
    bool: ("boolean",), int: ("integer", "number"), float: ("number",), str: ("string",), type(None): ("null",),
    list: ("array",), dict: ("object",),
}


def declared_types(schema: Mapping[str, Any]) -> set[str] | None:
    """The types a schema's ``type`` names (a name or a list of them); None when it names none."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return None


def fits_type(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether ``value`` has one of ``schema``'s types (``nullable`` adds null; no type: any)."""
    kind = schema.get("type")
    if kind is None:
        return True
    kinds = set(kind) if isinstance(kind, list) else {kind}
    if schema.get("nullable"):
        kinds.add("null")
    names = _JSON_TYPES.get(type(value), ())
    if isinstance(value, float) and value.is_integer():
        names = ("integer", "number")
    return bool(kinds & set(names))




# --- integer bounds as EBNF ----------------------------------------------------------------------


def integer_bounds(schema: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The closed integer interval ``minimum``/``maximum``/``exclusive*`` allow (None: unbounded);
    draft-4 boolean exclusives honoured."""
    import math

    low: int | None = None
    high: int | None = None
    if isinstance(schema.get("minimum"), (int, float)) and not isinstance(schema.get("minimum"), bool):
        low = math.ceil(schema["minimum"])
        if schema.get("exclusiveMinimum") is True and low == schema["minimum"]:
            low += 1
    if isinstance(schema.get("maximum"), (int, float)) and not isinstance(schema.get("maximum"), bool):
        high = math.floor(schema["maximum"])
        if schema.get("exclusiveMaximum") is True and high == schema["maximum"]:
            high -= 1
    ex_low, ex_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(ex_low, (int, float)) and not isinstance(ex_low, bool):
        low = max(low if low is not None else -math.inf, math.floor(ex_low) + 1)  # type: ignore[assignment]
    if isinstance(ex_high, (int, float)) and not isinstance(ex_high, bool):
        high = min(high if high is not None else math.inf, math.ceil(ex_high) - 1)  # type: ignore[assignment]
    return low, high


def integer_range(low: int | None, high: int | None) -> str:
    """An EBNF expression of the integers in [low, high] (None: unbounded), written as JSON writes them
    (no leading zeros, ``-`` only before a non-zero value). NoValue when the interval is empty."""
    if low is not None and high is not None and low > high:
        raise NoValue(f"no integer lies in [{low}, {high}]")
    alts: list[str] = []
    if high is None or high >= 0:  # the non-negative part
        alts.append(naturals(max(low or 0, 0), high))
    if low is None or low < 0:  # the negative part, as the naturals it mirrors
        top = None if low is None else -low
        bottom = 1 if high is None or high >= 0 else -high
        alts.append(f'"-" ({naturals(bottom, top)})')
    return alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"


def naturals(low: int, high: int | None) -> str:
    """Naturals in [low, high] (high None: unbounded), grouped by their number of digits."""
    alts: list[str] = []
    digits = len(str(low))
    last = len(str(high)) if high is not None else digits
    for n in range(digits, last + 1):
        first = low if n == digits else 10 ** (n - 1)
        final = high if high is not None and n == last else 10 ** n - 1
        alts.append(_fixed(str(first), str(final)))
    if high is None:
        alts.append(f"[1-9] [0-9]{{{digits},}}")
    return alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"


def _fixed(low: str, high: str) -> str:
    """Digit strings of one length between ``low`` and ``high`` (inclusive)."""
    if low == high:
        return f'"{low}"'
    if len(low) == 1:
        return f"[{low}-{high}]"
    rest = len(low) - 1
    if low[1:] == "0" * rest and high[1:] == "9" * rest:
        return f"[{low[0]}-{high[0]}] [0-9]{{{rest}}}"
    if low[0] == high[0]:
        return f'"{low[0]}" {_fixed(low[1:], high[1:])}'
    alts = [f'"{low[0]}" {_fixed(low[1:], "9" * rest)}']
    if int(low[0]) + 1 <= int(high[0]) - 1:
        alts.append(f"[{int(low[0]) + 1}-{int(high[0]) - 1}] [0-9]{{{rest}}}")
    alts.append(f'"{high[0]}" {_fixed("0" * rest, high[1:])}')
    return "(" + " | ".join(alts) + ")"


__all__ = ["NoValue", "fits_type", "integer_bounds", "integer_range", "naturals"]
