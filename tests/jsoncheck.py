"""Strict JSON equality for tests of renderers and parsers (shared by tests/families and tests/fuzz)."""

from __future__ import annotations

from typing import Any


def same(a: Any, b: Any) -> bool:
    """Equal values of equal JSON types (True is not 1, 1 is not 1.0, "5" is not 5).

    Stricter than scoring's ``same_value`` on purpose: a round trip must give back the very types."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
