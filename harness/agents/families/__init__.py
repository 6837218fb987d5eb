"""Model families: each module keeps a family's prompt format, its constraint for every strategy,
its output renderer and its parser side by side, because a grammar and the parser of the same
format must agree and are tested together.

``get_adapter(family)`` returns the family's ``ModelAdapter``. Nothing here imports xgrammar:
grammars are EBNF text and structural tags JSON text (xgrammar 0.2.8's format schema).
"""

from __future__ import annotations

from harness.agents.adapter import ModelAdapter
from harness.agents.families._ebnf import MAX_JSON_WS, canonical_keys

FAMILIES: tuple[str, ...] = ("function_gemma", "qwen")


def get_adapter(family: str) -> ModelAdapter:
    """The adapter of ``family`` (``function_gemma`` or ``qwen``)."""
    if family == "function_gemma":
        from harness.agents.families import function_gemma

        return function_gemma.ADAPTER
    if family == "qwen":
        from harness.agents.families import qwen

        return qwen.ADAPTER
    raise ValueError(f"unknown model family {family!r}: expected one of {', '.join(FAMILIES)}")


__all__ = ["FAMILIES", "MAX_JSON_WS", "canonical_keys", "get_adapter"]
