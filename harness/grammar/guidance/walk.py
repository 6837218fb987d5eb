"""A gold answer walked token by token through llguidance, as the oracle walks it through xgrammar
(``harness.grammar.decode`` with the gold source and the mask at every step).

``compile`` is the ``LLMatcher`` construction: llguidance compiles lazily and keeps no compiled-grammar
cache (vLLM's guidance backend builds a matcher per request), so every request pays it and reports it
as compiled for it. At each step the mask is filled (timed) and the gold token's bit read; a token
outside the mask, or one ``consume_token`` refuses, ends the walk with ``grammar:rejected_gold`` and a
reason (``SPECIAL_IN_TEXT`` when llguidance refused an added token that xgrammar reads as text). After
the last gold token a stop token must be allowed (or the grammar accepting).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.agents import REJECTED_GOLD, ConstraintArtifact, ConstraintError
from harness.grammar.guidance.convert import SPECIAL_IN_TEXT, NotExpressible, get_llg_tokenizer, to_llguidance


@dataclass(frozen=True, slots=True)
class GuidanceWalk:
    """What walking one gold answer through llguidance found."""

    token_ids: tuple[int, ...]
    """The gold tokens the grammar took."""
    compile_ms: float
    mask_us: tuple[float, ...]
    accept_us: tuple[float, ...]
    error: str | None = None
    """``grammar:rejected_gold`` or None."""
    reason: str | None = None
    """Why the grammar refused (the token, llguidance's message)."""
    finish_reason: str = "stop"


def _bit(bm: Any, token: int) -> bool:
    return bool((int(bm[0, token >> 5]) >> (token & 31)) & 1)


def compile_guidance(artifact: ConstraintArtifact, family: str) -> str:
    """The llguidance grammar of ``artifact``; ConstraintError when llguidance cannot express it."""
    try:
        grammar, _notes = to_llguidance(artifact, family)
    except NotExpressible as exc:
        raise ConstraintError(f"llguidance cannot express the {artifact.kind} artifact: {exc}") from exc
    return grammar


def walk_guidance(family: str, grammar: str, ids: Sequence[int], steps: int, stop_ids: Sequence[int]) -> GuidanceWalk:
    """Walk ``ids`` through a fresh matcher of ``grammar``: at most ``steps`` tokens (``len(ids) + 1``:
    every token, then the end must allow a stop id)."""
    import llguidance.numpy as llnp
    from llguidance import LLMatcher

    from harness.grammar.tokenizers import get_tokenizer

    tok = get_tokenizer(family)
    lt = get_llg_tokenizer(family)
    clock = time.perf_counter_ns
    t0 = clock()
    matcher = LLMatcher(lt, grammar, log_level=0)
    compile_ms = (clock() - t0) / 1e6
    if matcher.is_error():
        raise ConstraintError(f"llguidance refuses the grammar: {matcher.get_error()[:300]}")
    bm = llnp.allocate_token_bitmask(1, tok.vocab_size)
    masks: list[float] = []
    accepts: list[float] = []
    taken: list[int] = []
    reason = None
    for step, token in enumerate([*ids, None]):
        if step >= steps:
            return GuidanceWalk(tuple(taken), compile_ms, tuple(masks), tuple(accepts), finish_reason="length")
        t0 = clock()
        llnp.fill_next_token_bitmask(matcher, bm, 0)
        masks.append((clock() - t0) / 1000.0)
        if token is None:
            if not any(_bit(bm, s) for s in stop_ids) and not matcher.is_accepting():
                reason = f"no stop token allowed after the last token ({matcher.get_error()[:200]})"
            break
        if not _bit(bm, token):
            reason = f"token {step}/{len(ids)} {tok.token_text(token)!r} (id {token}) not in the mask"
        else:
            t0 = clock()
            ok = matcher.consume_token(token)
            accepts.append((clock() - t0) / 1000.0)
            if not ok or matcher.is_error():
                reason = f"token {step}/{len(ids)} {tok.token_text(token)!r} refused: {matcher.get_error()[:200]}"
        if reason is not None:
            if lt.is_special_token(token) and token not in tok.special_ids:
                reason = f"{SPECIAL_IN_TEXT}: {reason}"
            break
        taken.append(token)
    if reason is None:
        return GuidanceWalk(tuple(taken), compile_ms, tuple(masks), tuple(accepts))
    return GuidanceWalk(tuple(taken), compile_ms, tuple(masks), tuple(accepts), error=REJECTED_GOLD,
                        reason=reason, finish_reason="rejected")


__all__ = ["GuidanceWalk", "compile_guidance", "walk_guidance"]
