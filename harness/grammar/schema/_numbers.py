"""Numbers with exact bounds (fractions and exponents included) and integers with ``multipleOf``, as EBNF.

A bounded number is compared as the harness reads it back (Python's JSON reader, and FunctionGemma's
parser, alike): an integer text exactly, a text with a fraction or an exponent as the double it
rounds to. So ``exclusiveMinimum: 0`` allows ``5e-324`` and ``1e-300`` and refuses ``0``, ``-0.0`` and
``1e-400`` (which reads back as 0). The digits are compared with the bound's, one run of equal digits
at a time: ``minimum: 0.5`` accepts ``0.5``, ``0.50``, ``0.51`` and ``5e-1`` and refuses ``0.49``. With
an exponent, the mantissa has one digit before the point (``1.5e+16``, as JSON writers write numbers;
``15e15`` is refused: stricter than JSON Schema); a text within a double's rounding of a bound (past
~17 digits) may be refused though it reads back inside. An integer's ``multipleOf`` is a remainder
automaton over its digits (at most ``MAX_MODULUS`` states) or, within bounds, the multiples listed (at
most ``MAX_LISTED``); other combinations are refused by name.
"""

from __future__ import annotations

import math
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
    low, low_ex, high, high_ex = _limits(schema)
    return _bound(low), low_ex, _bound(high), high_ex


def _limits(schema: Mapping[str, Any]) -> tuple[Any, bool, Any, bool]:
    """``number_bounds`` with the bounds as the schema gives them (an int or a double)."""
    low, high = schema.get("minimum"), schema.get("maximum")
    low = low if _bound(low) is not None else None
    high = high if _bound(high) is not None else None
    low_ex = schema.get("exclusiveMinimum") is True and low is not None
    high_ex = schema.get("exclusiveMaximum") is True and high is not None
    ex_low, ex_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if _bound(ex_low) is not None and (low is None or ex_low >= low):
        low, low_ex = ex_low, True
    if _bound(ex_high) is not None and (high is None or ex_high <= high):
        high, high_ex = ex_high, True
    return low, low_ex, high, high_ex


def _digits(value: Decimal) -> tuple[int, str]:
    """Integer part and fraction digits (trailing zeros dropped) of a non-negative decimal."""
    text = f"{value:f}"
    whole, _, frac = text.partition(".")
    return int(whole), frac.rstrip("0")


_ANY = "[0-9]*"
Digits = tuple[list[str], bool]
"""Alternatives for a non-empty fraction's digits, and whether no fraction at all is allowed."""


def _run(digits: str) -> tuple[str, int, str]:
    """The first digit of ``digits``, how often it repeats at the start, and what follows: a run of
    one digit (the 323 zeros of ``5e-324`` written out) is spelt as one repetition, not one level each."""
    d = digits[0]
    n = len(digits) - len(digits.lstrip(d))
    return d, n, digits[n:]


def _times(d: str, low: int, high: int) -> str:
    return f'"{d}"' if (low, high) == (1, 1) else f'"{d}"{{{low}}}' if low == high else f'"{d}"{{{low},{high}}}'


def _ge(lo: str) -> Digits:
    """Fractions f (digit strings, compared as 0.f) with f >= lo."""
    if not lo:
        return ["[0-9]+"], True
    d, n, rest = _run(lo)
    alts = []
    if d != "9":  # k < n digits d, then a greater digit
        bigger = f"[{int(d) + 1}-9] {_ANY}"
        alts.append(bigger if n == 1 else f"{_times(d, 0, n - 1)} {bigger}")
    more, empty = _ge(rest)
    alts.append(f'{_times(d, n, n)} ({" | ".join(more)})')
    if empty:
        alts.append(_times(d, n, n))
    return alts, False


def _le(hi: str) -> Digits:
    """Fractions f with f <= hi (a shorter prefix is smaller: the end is allowed anywhere)."""
    if not hi:
        return ['"0"+'], True
    d, n, rest = _run(hi)
    alts = []
    if d != "0":  # k < n digits d, then a smaller digit
        smaller = f"[0-{int(d) - 1}] {_ANY}"
        alts.append(smaller if n == 1 else f"{_times(d, 0, n - 1)} {smaller}")
    alts.append(_times(d, 1, n))  # ends inside the run
    more, _ = _le(rest)
    alts.append(f'{_times(d, n, n)} ({" | ".join(more)})')
    return alts, True


def _between(lo: str, hi: str) -> Digits:
    """Fractions f with lo <= f <= hi (as 0.f), lo <= hi."""
    if not lo:
        return _le(hi)
    if not hi:
        return [], False  # lo > 0 = hi: none
    d, h = int(lo[0]), int(hi[0])
    if d == h:
        inner, empty = _between(lo[1:], hi[1:])
        return ([f'"{d}" ({" | ".join(inner)})'] if inner else []) + ([f'"{d}"'] if empty else []), False
    ge_rest, ge_empty = _ge(lo[1:])
    alts = [f'"{d}" ({" | ".join(ge_rest)})'] + ([f'"{d}"'] if ge_empty else [])
    if d + 1 <= h - 1:
        alts.append(f"[{d + 1}-{h - 1}] {_ANY}")
    le_rest, _ = _le(hi[1:])
    alts += [f'"{h}" ({" | ".join(le_rest)})', f'"{h}"']
    return alts, False


def _fraction(digits: Digits) -> str | None:
    alts, empty = digits
    if not alts:
        return '""' if empty else None
    dotted = f'"." ({" | ".join(alts)})'
    return f"({dotted})?" if empty else dotted


def _magnitudes(low: Decimal, high: Decimal | None) -> list[str]:
    """Alternatives for non-negative decimals in [low, high] written without exponent (no sign)."""
    if high is not None and low > high:
        return []
    a, af = _digits(low)
    alts: list[str] = []
    if high is not None:
        b, bf = _digits(high)
        if a == b:
            frac = _fraction(_between(af, bf))
            return [f'"{a}" {frac}'] if frac else []
    frac = _fraction(_ge(af))
    if frac:
        alts.append(f'"{a}" {frac}')
    any_frac = '("." [0-9]+)?'
    if high is None:
        alts.append(f"({naturals(a + 1, None)}) {any_frac}")
        return alts
    if b - 1 >= a + 1:
        alts.append(f"({naturals(a + 1, b - 1)}) {any_frac}")
    frac = _fraction(_le(bf))
    if frac:
        alts.append(f'"{b}" {frac}')
    return alts


def _mantissa(low: Decimal | None, high: Decimal | None) -> str | None:
    """A mantissa of scientific notation (one digit 1-9, then a fraction) in [low, high] (each in [1, 10);
    None: no bound)."""
    a, af = _digits(low) if low is not None else (1, "")
    b, bf = _digits(high) if high is not None else (9, None)
    if a == b:
        frac = _fraction(_between(af, bf) if bf is not None else _ge(af))
        return None if frac is None else f'"{a}" {frac}'
    alts = [f'"{a}" {_fraction(_ge(af))}']
    top = b if bf is None else b - 1
    if top >= a + 1:
        alts.append(f'[{a + 1}-{top}] ("." [0-9]+)?' if top > a + 1 else f'"{top}" ("." [0-9]+)?')
    if bf is not None:
        alts.append(f'"{b}" {_fraction(_le(bf))}')
    return "(" + " | ".join(alts) + ")"


def _exponents(low: int | None, high: int | None) -> str | None:
    """An exponent (after ``e``) in [low, high] (None: unbounded), with JSON's optional sign and
    leading zeros (``1e-05``, as Python writes it)."""
    if low is not None and high is not None and low > high:
        return None
    alts = []
    if high is None or high >= 0:
        alts.append(f'"+"? "0"* ({naturals(max(low, 0) if low is not None else 0, high)})')
    if low is None or low < 0:
        top = None if low is None else -low
        bottom = 1 if high is None or high >= 0 else -high
        alts.append(f'"-" "0"* ({naturals(bottom, top)})')
    if (low is None or low <= 0) and (high is None or high >= 0):
        alts.append('"-" "0"+')
    return "[eE] (" + " | ".join(alts) + ")"


def _scientific(low: Decimal, high: Decimal | None) -> list[str]:
    """Alternatives for non-negative numbers in [low, high] written with an exponent, the mantissa with
    one digit before the point (as JSON writers write it: ``5e-324``, ``1.5e+16``)."""
    alts = []
    if low == 0:
        alts.append(f'"0" ("." "0"+)? {_exponents(None, None)}')
    if high is not None and high <= 0:
        return alts
    top = high.adjusted() if high is not None else None
    bottom = low.adjusted() if low > 0 else None
    low_m = low.scaleb(-bottom) if bottom is not None else None
    high_m = high.scaleb(-top) if high is not None and top is not None else None

    def at(exp_low: int | None, exp_high: int | None, m_low: Decimal | None, m_high: Decimal | None) -> None:
        mantissa, exps = _mantissa(m_low, m_high), _exponents(exp_low, exp_high)
        if mantissa is not None and exps is not None:
            alts.append(f"{mantissa} {exps}")

    if bottom is not None and bottom == top:
        at(bottom, bottom, low_m, high_m)
        return alts
    if bottom is not None:
        at(bottom, bottom, low_m, None)
    if top is not None:
        at(top, top, None, high_m)
    at(None if bottom is None else bottom + 1, None if top is None else top - 1, None, None)
    return alts


def _double_bound(value: Any, exclusive: bool, *, up: bool) -> Decimal | bool | None:
    """The bound a text with a fraction or an exponent is compared with: the shortest spelling of the
    first double at or past ``value`` (an int or a double, as the schema gives it) on the allowed side
    (``up``: above it). The harness reads such a text as a double and the validator compares that
    double with ``value``, so ``exclusiveMinimum: 0`` allows what reads back above 0, from ``5e-324``;
    and every valid double's own spelling lies between two such bounds (shortest spellings keep the
    doubles' order). None: no bound; False: no double lies on that side."""
    if value is None:
        return None
    try:
        near = float(value)
    except OverflowError:
        near = math.inf if value > 0 else -math.inf
    beyond = (near < value or (exclusive and near == value)) if up else (near > value or (exclusive and near == value))
    if beyond:
        near = math.nextafter(near, math.inf if up else -math.inf)
    if math.isinf(near):
        return False if (near > 0) == up else None
    return Decimal(repr(near + 0.0))


def number_range(schema: Mapping[str, Any], where: str) -> str | None:
    """An expression of the numbers the bounds allow (None: no bound); NoValue when none.

    A text is compared as the harness reads it back: an integer exactly, a text with a fraction or an
    exponent as the double it rounds to (``_double_bound``). Without an exponent any spelling is
    allowed; with one, the mantissa has one digit before the point."""
    low_raw, low_ex, high_raw, high_ex = _limits(schema)
    if low_raw is None and high_raw is None:
        return None
    low, high = _double_bound(low_raw, low_ex, up=True), _double_bound(high_raw, high_ex, up=False)
    if low is False or high is False or (low is not None and high is not None and low > high):
        raise NoValue(f"no number lies between the bounds at {where}")
    assert not isinstance(low, bool) and not isinstance(high, bool)
    alts: list[str] = []
    zero = Decimal(0)
    if high is None or high >= zero:
        from_low = low if low is not None and low >= zero else zero
        alts += _magnitudes(from_low, high) + _scientific(from_low, high)
    if low is None or low <= zero:  # negatives: -x with x in [max(0, -high), -low]; -0.0 is 0
        least = -high if high is not None and high < zero else zero
        most = None if low is None else -low
        mags = _magnitudes(least, most) + _scientific(least, most)
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
