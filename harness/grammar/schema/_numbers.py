"""Numbers with exact bounds (fractions included) and integers with ``multipleOf``, as EBNF.

A bounded number is spelt without an exponent (``1e3`` is refused where ``1000`` is accepted:
stricter than JSON Schema, which compares values); its fraction is compared digit by digit with the
bound's, so ``minimum: 0.5`` accepts ``0.5``, ``0.50`` and ``0.51`` and refuses ``0.49``. An integer's
``multipleOf`` is a remainder automaton over its digits (at most ``MAX_MODULUS`` states) or, within
bounds, the multiples listed (at most ``MAX_LISTED``); other combinations are refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from harness.agents import ConstraintError
from harness.grammar.schema._types import NoValue, integer_bounds, integer_range, naturals

MAX_MODULUS = 1000
MAX_LISTED = 2000


def _bound(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        return None


def number_bounds(schema: Mapping[str, Any]) -> tuple[Decimal | None, bool, Decimal | None, bool]:
    """(low, low exclusive, high, high exclusive); draft-4 boolean exclusives honoured."""
    low, high = _bound(schema.get("minimum")), _bound(schema.get("maximum"))
    low_ex = schema.get("exclusiveMinimum") is True and low is not None
    high_ex = schema.get("exclusiveMaximum") is True and high is not None
    ex_low, ex_high = _bound(schema.get("exclusiveMinimum")), _bound(schema.get("exclusiveMaximum"))
    if ex_low is not None and (low is None or ex_low >= low):
        low, low_ex = ex_low, True
    if ex_high is not None and (high is None or ex_high <= high):
        high, high_ex = ex_high, True
    return low, low_ex, high, high_ex


def _digits(value: Decimal) -> tuple[int, str]:
    """Integer part and fraction digits (trailing zeros dropped) of a non-negative decimal."""
    text = f"{value:f}"
    whole, _, frac = text.partition(".")
    return int(whole), frac.rstrip("0")


_ANY = "[0-9]*"
_NONZERO = '"0"* [1-9] [0-9]*'
Digits = tuple[list[str], bool]
"""Alternatives for a non-empty fraction's digits, and whether no fraction at all is allowed."""


def _ge(lo: str, strict: bool) -> Digits:
    if not lo:
        return ([_NONZERO] if strict else ["[0-9]+"]), not strict
    d = int(lo[0])
    alts = [f"[{d + 1}-9] {_ANY}"] if d < 9 else []
    rest, _ = _ge(lo[1:], strict)
    alts += [f'"{d}" ({" | ".join(rest)})'] + ([f'"{d}"'] if _ge(lo[1:], strict)[1] else [])
    return alts, False


def _le(hi: str, strict: bool) -> Digits:
    if not hi:
        return ([] if strict else ['"0"+']), not strict
    d = int(hi[0])
    alts = [f"[0-{d - 1}] {_ANY}"] if d > 0 else []
    rest, empty = _le(hi[1:], strict)
    if rest:
        alts.append(f'"{d}" ({" | ".join(rest)})')
    if empty:
        alts.append(f'"{d}"')
    return alts, True


def _between(lo: str, lo_ex: bool, hi: str, hi_ex: bool) -> Digits:
    """Fractions f (digit strings, compared as 0.f) with lo <(=) f <(=) hi, lo <= hi."""
    if not lo and not lo_ex:
        return _le(hi, hi_ex)
    if not hi:
        return [], False  # f <= 0 and f > 0 (or f >= lo > 0): none
    h = int(hi[0])
    if not lo:  # 0 < f <= hi
        alts = [f"[1-{h - 1}] {_ANY}"] if h > 1 else []
        inner, _ = _between("", True, hi[1:], hi_ex)
        if inner:
            alts.append(f'"0" ({" | ".join(inner)})')
        if h > 0:
            rest, empty = _le(hi[1:], hi_ex)
            alts += ([f'"{h}" ({" | ".join(rest)})'] if rest else []) + ([f'"{h}"'] if empty else [])
        return alts, False
    d = int(lo[0])
    if d == h:
        inner, empty = _between(lo[1:], lo_ex, hi[1:], hi_ex)
        return ([f'"{d}" ({" | ".join(inner)})'] if inner else []) + ([f'"{d}"'] if empty else []), False
    ge_rest, ge_empty = _ge(lo[1:], lo_ex)
    alts = [f'"{d}" ({" | ".join(ge_rest)})'] + ([f'"{d}"'] if ge_empty else [])
    if d + 1 <= h - 1:
        alts.append(f"[{d + 1}-{h - 1}] {_ANY}")
    le_rest, le_empty = _le(hi[1:], hi_ex)
    alts += ([f'"{h}" ({" | ".join(le_rest)})'] if le_rest else []) + ([f'"{h}"'] if le_empty else [])
    return alts, False


def _fraction(digits: Digits) -> str | None:
    alts, empty = digits
    if not alts:
        return '""' if empty else None
    dotted = f'"." ({" | ".join(alts)})'
    return f"({dotted})?" if empty else dotted


def _magnitudes(low: Decimal, low_ex: bool, high: Decimal | None, high_ex: bool) -> list[str]:
    """Alternatives for non-negative decimals (no sign, no exponent) in the interval."""
    if high is not None and (low > high or (low == high and (low_ex or high_ex))):
        return []
    a, af = _digits(low)
    alts: list[str] = []
    if high is not None:
        b, bf = _digits(high)
        if a == b:
            frac = _fraction(_between(af, low_ex, bf, high_ex))
            return [f'"{a}" {frac}'] if frac else []
    frac = _fraction(_ge(af, low_ex))
    if frac:
        alts.append(f'"{a}" {frac}')
    any_frac = '("." [0-9]+)?'
    if high is None:
        alts.append(f"({naturals(a + 1, None)}) {any_frac}")
        return alts
    if b - 1 >= a + 1:
        alts.append(f"({naturals(a + 1, b - 1)}) {any_frac}")
    frac = _fraction(_le(bf, high_ex))
    if frac:
        alts.append(f'"{b}" {frac}')
    return alts


def number_range(schema: Mapping[str, Any], where: str) -> str | None:
    """An expression of the numbers the bounds allow (None: no bound); NoValue when none."""
    low, low_ex, high, high_ex = number_bounds(schema)
    if low is None and high is None:
        return None
    alts: list[str] = []
    zero = Decimal(0)
    if high is None or high > zero or (high == zero and not high_ex):
        from_low = (low, low_ex) if low is not None and low >= zero else (zero, False)
        alts += _magnitudes(from_low[0], from_low[1], high, high_ex)
    if low is None or low < zero:  # negatives: -x with x in [max(0, -high), -low]
        if high is not None and high < zero:
            mags = _magnitudes(-high, high_ex, None if low is None else -low, low_ex)
        else:
            mags = _magnitudes(zero, False, None if low is None else -low, low_ex)
        if mags:
            alts.append(f'"-" ({" | ".join(mags)})')
    if not alts:
        raise NoValue(f"no number lies between the bounds at {where}")
    return "(" + " | ".join(alts) + ")"


def multiple_rule(builder: Any, schema: Mapping[str, Any], hint: str, *, number: bool) -> str | None:
    """An expression of the integers ``multipleOf`` allows within the bounds (with ``number``, a
    ``.0`` fraction allowed too); None when there is no ``multipleOf``."""
    step = schema.get("multipleOf")
    if step is None:
        return None
    if isinstance(step, bool) or not isinstance(step, (int, float)) or step <= 0 or step != int(step):
        raise ConstraintError(f"{hint}: multipleOf {step!r} (only a positive integer is spelt)")
    k, add = int(step), builder.add
    zeros = ' ("." "0"+)?' if number else ""
    if number and any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
        low_d, low_ex, high_d, high_ex = number_bounds(schema)
        schema = {"minimum": _int_bound(low_d, low_ex, up=True), "maximum": _int_bound(high_d, high_ex, up=False)}
    low, high = integer_bounds(schema)
    if low is not None and high is not None:
        first, last = -(-low // k) * k, high // k * k
        if first > last:
            raise NoValue(f"no multiple of {k} lies in [{low}, {high}] ({hint})")
        if (last - first) // k + 1 > MAX_LISTED:
            raise ConstraintError(f"{hint}: multipleOf {k} with more than {MAX_LISTED} multiples in range")
        body = " | ".join(f'"{v}"' for v in range(first, last + 1, k))
        return add(f"{hint}-multiple", f"({body}){zeros}")
    if low is not None or high is not None:
        raise ConstraintError(f"{hint}: multipleOf with a bound on one side only (not spelt)")
    if k == 1:
        return add(f"{hint}-multiple", f"int{zeros}")
    if k > MAX_MODULUS:
        raise ConstraintError(f"{hint}: multipleOf {k} (above {MAX_MODULUS}: the automaton is not built)")
    states = [f"mod{k}-r{r}" for r in range(k)]
    for r in range(k):
        targets: dict[int, list[int]] = {}
        for d in range(10):
            targets.setdefault((r * 10 + d) % k, []).append(d)
        alts = [f"{_digit_class(ds)} {states[t]}" for t, ds in targets.items()]
        if r == 0:
            alts.append('""')
        builder.rules.setdefault(states[r], " | ".join(alts))  # shared by every multipleOf k
    leading: dict[int, list[int]] = {}
    for d in range(1, 10):
        leading.setdefault(d % k, []).append(d)
    start = " | ".join(f"{_digit_class(ds)} {states[t]}" for t, ds in leading.items())
    return add(f"{hint}-multiple", f'("0" | "-"? ({start})){zeros}')


def _int_bound(value: Decimal | None, exclusive: bool, *, up: bool) -> int | None:
    if value is None:
        return None
    whole = int(value.to_integral_value(rounding="ROUND_CEILING" if up else "ROUND_FLOOR"))
    if exclusive and whole == value:
        whole += 1 if up else -1
    return whole


def _digit_class(digits: list[int]) -> str:
    return f'"{digits[0]}"' if len(digits) == 1 else "[" + "".join(str(d) for d in digits) + "]"


__all__ = ["MAX_LISTED", "MAX_MODULUS", "integer_range", "multiple_rule", "number_bounds", "number_range"]
