"""llguidance (vLLM's ``guidance`` backend) on the same grammars and tokenizers, for comparison: the
measuring half. How each strategy's constraint is converted (and what cannot be: ``NotExpressible``),
why control tokens inside strings are counted apart (``SPECIAL_IN_TEXT``) and how the tokenizer is built
is said once, in ``harness.grammar.guidance.convert``.

Figures mirror ``harness.bench.grammar.measure``: ``compile_ms_cold`` is the ``LLMatcher`` construction (llguidance
has no compiled-grammar cache: vLLM builds a matcher per request, so there is no "cached" figure);
each gold output gets a fresh matcher, as a request would; mask fills are timed with
``llguidance.numpy.fill_next_token_bitmask`` and the gold id's bit checked; ``accept_us`` is
``consume_token``; an output is accepted when its last token is consumed and a stop id is allowed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.agents import ConstraintArtifact
from harness.bench.grammar.figures import EngineFigures, Rejection
from harness.bench.grammar.measure import REJECTIONS_KEPT, GoldText, median
from harness.bench.records import spread_fields
from harness.grammar import (
    SPECIAL_IN_TEXT,
    NotExpressible,
    get_llg_tokenizer,
    to_llguidance,
)
from harness.grammar import guidance_available as available
from harness.grammar import llguidance_version as version


def _bit(bm: Any, token: int) -> bool:
    return bool((int(bm[0, token >> 5]) >> (token & 31)) & 1)


@dataclass
class _Walks:
    """What the walks of one grammar's gold outputs found (see ``measure_llguidance``)."""

    masks: list[float] = field(default_factory=list)
    firsts: list[float] = field(default_factory=list)
    accepts: list[float] = field(default_factory=list)
    walk_ms: list[float] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    accepted: int = 0
    timed: int = 0
    tokens: int = 0
    special_in_text: int = 0


def _walk(lt: Any, tok: Any, grammar: str, out: GoldText, timing: bool, bm: Any, found: _Walks) -> None:
    """One gold output through a fresh matcher (as a request gets one); masks timed when ``timing``."""
    import llguidance.numpy as llnp
    from llguidance import LLMatcher

    clock = time.perf_counter_ns
    ids = tok.encode(out.text)
    m = LLMatcher(lt, grammar, log_level=0)
    reason = None
    start = clock()
    for step, token in enumerate([*ids, None]):
        if timing:
            t0 = clock()
            llnp.fill_next_token_bitmask(m, bm, 0)
            dt = (clock() - t0) / 1000.0
            found.masks.append(dt)
            if step == 0:
                found.firsts.append(dt)
        if token is None:
            if not timing:
                llnp.fill_next_token_bitmask(m, bm, 0)
            if not any(_bit(bm, e) for e in tok.eos_ids) and not m.is_accepting():
                reason = f"incomplete: no stop token allowed after the last token ({m.get_error()[:200]})"
            break
        if timing and not _bit(bm, token):
            reason = f"token {step}/{len(ids)} {tok.token_text(token)!r} (id {token}) not in the mask"
            break
        t0 = clock()
        ok = m.consume_token(token)
        if timing:
            found.accepts.append((clock() - t0) / 1000.0)
        if not ok or m.is_error():
            reason = f"token {step}/{len(ids)} {tok.token_text(token)!r} refused: {m.get_error()[:200]}"
            break
    if reason is not None and token is not None and lt.is_special_token(token) and token not in tok.special_ids:
        reason = f"{SPECIAL_IN_TEXT}: {reason}"
    if timing:
        found.timed += 1
        found.tokens += len(ids)
        found.walk_ms.append((clock() - start) / 1e6)
    found.accepted += reason is None
    found.special_in_text += reason is not None and reason.startswith(SPECIAL_IN_TEXT)
    if reason is not None and len(found.rejections) < REJECTIONS_KEPT:
        found.rejections.append(Rejection(output_id=out.output_id, reason=reason, text=out.text[:300]))


def measure_llguidance(
    family: str,
    artifact: ConstraintArtifact,
    outputs: Sequence[GoldText],
    *,
    repeats: int,
    budget_s: float,
) -> EngineFigures:
    """llguidance figures for one grammar, or ``expressible: False`` with the reason."""
    import llguidance.numpy as llnp
    from llguidance import LLMatcher

    from harness.grammar import get_tokenizer

    engine, total = "llguidance", len(outputs)
    try:
        grammar, notes = to_llguidance(artifact, family)
    except NotExpressible as exc:
        return EngineFigures(engine=engine, gold_total=total, expressible=False, note=f"not expressible: {exc}")
    lt = get_llg_tokenizer(family)
    tok = get_tokenizer(family)
    cold: list[float] = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        m = LLMatcher(lt, grammar, log_level=0)
        cold.append((time.perf_counter_ns() - t0) / 1e6)
        if m.is_error():
            return EngineFigures(engine=engine, gold_total=total, expressible=False,
                                 note=f"llguidance refused it: {m.get_error()[:300]}")
    found = _Walks()
    bm = llnp.allocate_token_bitmask(1, tok.vocab_size)
    deadline = time.perf_counter() + budget_s
    for out in outputs:
        _walk(lt, tok, grammar, out, time.perf_counter() < deadline, bm, found)
    return EngineFigures(
        engine=engine, gold_total=total, expressible=True, note="; ".join(notes) or None,
        compile_ms_cold=median(cold), compile_ms_cold_min=round(min(cold), 4),
        compile_ms_cold_max=round(max(cold), 4), compile_ms_cached=None, compile_repeats=repeats,
        outputs=total, outputs_timed=found.timed, tokens_timed=found.tokens,
        **spread_fields(found.masks, "mask_us"), first_mask_us_p50=median(found.firsts), **spread_fields(found.accepts, "accept_us"),
        walk_ms_p50=median(found.walk_ms), walk_ms_total=round(sum(found.walk_ms), 3), gold_accepted=found.accepted,
        gold_rejected_special_in_text=found.special_in_text, rejections=found.rejections,
    )


__all__ = ["available", "get_llg_tokenizer", "measure_llguidance", "to_llguidance", "version"]
