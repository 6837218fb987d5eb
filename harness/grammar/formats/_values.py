"""Values as the families' call formats write them: the canonical key order, JSON text, FunctionGemma
text (strings between ``<escape>`` delimiters, keys bare), and the names FunctionGemma's syntax allows.

Objects follow one canonical key order everywhere: ``canonical_keys`` (case-insensitive sort, ties
broken case-sensitively) -- the order FunctionGemma's chat template (``dictsort``) writes arguments in.
Grammars, renderers, strict JSON schemas and the declared tools all use it, so a renderer that sees
only a call (no schema) still emits what the grammar accepts.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from harness.agents import ConstraintError

MAX_JSON_WS = 2
"""Most whitespace characters allowed at any one place in JSON output (grammar and structural tag)."""
ESCAPE = "<escape>"


def canonical_keys(keys: Iterable[str]) -> list[str]:
    """The canonical order of object keys (Jinja's case-insensitive ``dictsort``, made total)."""
    return sorted(keys, key=lambda k: (k.lower(), k))


def canonical_value(value: Any) -> Any:
    """``value`` with every dict's keys in canonical order (lists keep their order)."""
    if isinstance(value, dict):
        return {k: canonical_value(value[k]) for k in canonical_keys(value)}
    if isinstance(value, list | tuple):
        return [canonical_value(v) for v in value]
    return value


def json_text(value: Any, *, compact: bool = False) -> str:
    """``value`` as JSON, keys in canonical order: Python's default separators (``", "``, ``": "``; what
    Qwen's chat template writes), or with ``compact`` none (``","``, ``":"``; what vLLM's json_schema
    language allows with ``disable_any_whitespace``)."""
    separators = (",", ":") if compact else None
    try:
        return json.dumps(canonical_value(value), ensure_ascii=False, allow_nan=False, separators=separators)
    except ValueError as exc:
        raise ConstraintError(f"value cannot be written as JSON: {exc}") from exc


def fg_text(value: Any, *, escape_keys: bool = False, strict: bool = True) -> str:
    """``value`` in FunctionGemma's value syntax (strings in ``<escape>``, everything else bare).

    ``strict`` raises ``ConstraintError`` for what the syntax cannot hold (a string containing
    ``<escape>``, a bare key with a delimiter, NaN); prompts render with ``strict=False`` (lossy).
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if strict and not math.isfinite(value):
            raise ConstraintError(f"{value!r} cannot be written in FunctionGemma's call syntax")
        return json.dumps(value)
    if isinstance(value, str):
        if strict and ESCAPE in value:
            raise ConstraintError(f"a string holding {ESCAPE!r} cannot be written in FunctionGemma's syntax")
        return f"{ESCAPE}{value}{ESCAPE}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(fg_text(v, escape_keys=escape_keys, strict=strict) for v in value) + "]"
    if isinstance(value, dict):
        parts = []
        for key in canonical_keys(value):
            if strict and not escape_keys:
                check_fg_name(key, "key")
            shown = f"{ESCAPE}{key}{ESCAPE}" if escape_keys else key
            parts.append(f"{shown}:{fg_text(value[key], escape_keys=escape_keys, strict=strict)}")
        return "{" + ",".join(parts) + "}"
    if strict:
        raise ConstraintError(f"{type(value).__name__} is not a JSON value")
    return fg_text(str(value), strict=False)


_FG_BAD_NAME = re.compile(r"[\s:{}\[\],<>]")


def check_fg_name(name: str, what: str) -> None:
    """FunctionGemma writes names bare: they must be non-empty and hold none of ``:{}[],<>`` or spaces."""
    if not isinstance(name, str) or not name or _FG_BAD_NAME.search(name):
        raise ConstraintError(
            f"{what} name {name!r} cannot be written in FunctionGemma's call syntax "
            "(it must be non-empty, without whitespace or any of : { } [ ] , < >)"
        )


__all__ = ["ESCAPE", "MAX_JSON_WS", "canonical_keys", "canonical_value", "check_fg_name", "fg_text", "json_text"]
