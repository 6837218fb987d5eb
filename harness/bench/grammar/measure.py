"""Measuring one (family, strategy) grammar with xgrammar: compile, masks, accept, mask application.

Everything goes through the grammar core (``harness.grammar``): ``compile_artifact`` (the process
compiler of the family, cache on; ``clear_compile_cache`` makes the next compile cold),
``walk_text`` (the oracle walk: the mask filled and timed at every step, the gold bit checked,
``accept_token`` timed) and the decode loop's numpy mask application (``masked_scores``).

Figures (microseconds unless the name says ms):

- ``compile_ms_cold``: median of ``repeats`` compiles, each after clearing the compiler's cache;
- ``compile_ms_cached``: median of ``repeats`` compiles of the same artifact with the cache warm;
- ``mask_us_*``: every mask fill of every gold walk (p50, p90, p99, max), ``first_mask_us_p50``
  the fill at step 0 of each walk;
- ``accept_us_*``: every ``accept_token``;
- ``apply_us_*``: ``xgr.apply_token_bitmask_inplace`` on a float32 logits tensor of the full
  vocabulary with the real masks of one gold walk (median of 5 per position; p50 and max over
  positions), ``apply_np_us_*`` the same for the decode loop's numpy path;
- ``gold_accepted``/``gold_total``: gold outputs the grammar accepts (any rejection is a bug);
- ``forced_fraction``, ``steps_over_plain``, ``retokenized``, ``jump_us_*``: jump-forward on the gold
  outputs (``jump_walks``).

A time budget bounds the timed walks (a grammar with a 100 ms mask would otherwise take minutes);
outputs past the budget are still checked for acceptance with ``accept_token`` only (lazy policy),
and ``outputs_timed`` says how many were timed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.agents import ConstraintArtifact
from harness.bench.grammar.figures import (
    ApplyFigures,
    CompileFigures,
    EngineFigures,
    JumpFigures,
    Rejection,
    SlowMask,
    WalkFigures,
)
from harness.bench.records import BenchRecord, SparseRecord, spread_fields
from harness.stats import median as exact_median
from harness.stats import rounded_percentile

SLOWEST_KEPT = 5
REJECTIONS_KEPT = 10
APPLY_POSITIONS = 48
APPLY_POSITIONS_QUICK = 12
"""Positions whose masks ``--quick`` applies (each a full-vocabulary copy and apply, 5 times over)."""
APPLY_REPEATS = 5


@dataclass(frozen=True, slots=True)
class GoldText:
    """One gold output rendered for a family and strategy."""

    output_id: str
    text: str


def median(values: Sequence[float]) -> float | None:
    """The median (``harness.stats``) to 4 digits; None for no values."""
    return rounded_percentile(values, 50.0, 4)


def compile_times(artifact: ConstraintArtifact, family: str, repeats: int) -> CompileFigures:
    """Cold (cache cleared before each) and cached compile times through ``compile_artifact``."""
    from harness.grammar import clear_compile_cache, compile_artifact

    cold: list[float] = []
    for _ in range(repeats):
        clear_compile_cache(family)
        cold.append(compile_artifact(artifact, family).compile_ms)
    cached: list[float] = []
    hits = 0
    for _ in range(repeats):
        c = compile_artifact(artifact, family)
        cached.append(c.compile_ms)
        hits += c.cached
    return CompileFigures(
        compile_ms_cold=median(cold),
        compile_ms_cold_min=round(min(cold), 4),
        compile_ms_cold_max=round(max(cold), 4),
        compile_ms_cached=median(cached),
        compile_cache_hits=hits,
        compile_repeats=repeats,
    )


def _slow_mask(compiled: Any, tok: Any, us: float, output_id: str, step: int, ids: Sequence[int]) -> SlowMask:
    """A slow fill, timed again, with the tokens around it."""
    return SlowMask(
        us=round(us, 1), retimed_us=retime_mask(compiled, tok.vocab_size, ids, step), output_id=output_id, step=step,
        before=tok.decode(list(ids[max(0, step - 8) : step]))[-40:],
        next=tok.token_text(ids[step]) if step < len(ids) else "<end>",
    )


def walk_outputs(
    compiled: Any, family: str, outputs: Sequence[GoldText], budget_s: float
) -> WalkFigures:
    """Walk every output through ``compiled`` (``walk_text``) until the budget is spent, then check
    the rest with ``accept_token`` only. Returns the figures and the slowest mask steps."""
    from harness.grammar import GoldSource, constrained_decode, get_tokenizer, walk_text

    tok = get_tokenizer(family)
    masks: list[float] = []
    firsts: list[float] = []
    accepts: list[float] = []
    walk_ms: list[float] = []
    slow: list[tuple[float, str, int, tuple[int, ...]]] = []
    rejections: list[Rejection] = []
    accepted = timed = tokens = 0
    deadline = time.perf_counter() + budget_s
    for out in outputs:
        if time.perf_counter() < deadline:
            w = walk_text(compiled, tok, out.text)
            timed += 1
            tokens += w.tokens
            masks.extend(w.mask_us)
            accepts.extend(w.accept_us)
            walk_ms.append(w.result.total_ms)
            if w.mask_us:
                firsts.append(w.mask_us[0])
                k = int(np.argmax(w.mask_us))
                slow.append((w.mask_us[k], out.output_id, k, w.token_ids))
            ok, reason = w.accepted, w.reason
        else:
            ids = tok.encode(out.text)
            res = constrained_decode(compiled, GoldSource(ids), tok, max_tokens=len(ids) + 1, mask_policy="lazy")
            ok = res.error is None and res.terminated
            reason = None if ok else f"{res.error or res.finish_reason} at token {res.rejected_at}/{len(ids)}"
        accepted += ok
        if not ok and len(rejections) < REJECTIONS_KEPT:
            rejections.append(Rejection(output_id=out.output_id, reason=reason, text=out.text[:300]))
    slow.sort(key=lambda s: -s[0])
    slowest = [_slow_mask(compiled, tok, us, oid, step, ids) for us, oid, step, ids in slow[:SLOWEST_KEPT]]
    return WalkFigures(
        outputs=len(outputs),
        outputs_timed=timed,
        tokens_timed=tokens,
        **spread_fields(masks, "mask_us"),
        first_mask_us_p50=median(firsts),
        **spread_fields(accepts, "accept_us"),
        walk_ms_p50=median(walk_ms),
        walk_ms_total=round(sum(walk_ms), 3),
        gold_accepted=accepted,
        gold_total=len(outputs),
        mask_us_max_retimed=max((x.retimed_us for x in slowest), default=None),
        rejections=rejections,
        slowest_masks=slowest,
    )


def jump_walks(compiled: Any, family: str, outputs: Sequence[GoldText]) -> JumpFigures:
    """Jump-forward on the gold outputs, no model (``GoldTextSource``): how much of each output the
    grammar forces, and whether the forced tokens are the tokenizer's own.

    - ``forced_fraction``: tokens appended without a model step, over all tokens emitted (the stop
      token included);
    - ``steps_over_plain``: model steps with jump-forward over those of the plain loop (one per token
      of the tokenizer's encoding, plus the stop);
    - ``retokenized``: outputs whose tokens differ from the tokenizer's encoding of the whole text
      (a forced stretch split otherwise); ``held_back``: forced tokens left to the model at a boundary;
    - ``jump_us_*``: each lookup (forced string, tokenizing, the boundary check)."""
    from harness.grammar import GoldTextSource, constrained_decode, get_tokenizer

    tok = get_tokenizer(family)
    forced = emitted = plain = retokenized = held = 0
    failed: list[str] = []
    lookups: list[float] = []
    for out in outputs:
        canonical = tok.encode(out.text)
        source = GoldTextSource(tok, out.text)
        res = constrained_decode(
            compiled, source, tok, max_tokens=2 * len(canonical) + 2, mask_policy="lazy", jump="append"
        )
        if source.diverged or not res.terminated or res.text != out.text:
            failed.append(out.output_id)
            continue
        forced, emitted, plain = forced + res.forced, emitted + res.generated, plain + len(canonical) + 1
        retokenized += list(res.token_ids) != canonical
        held += res.held_back
        lookups.extend(res.jump_us)
    return JumpFigures(
        forced_fraction=round(forced / emitted, 4) if emitted else None,
        steps_over_plain=round((emitted - forced) / plain, 4) if plain else None,
        jump_outputs=len(outputs) - len(failed),
        retokenized=retokenized,
        held_back=held,
        jump_failed=failed[:REJECTIONS_KEPT],
        **spread_fields(lookups, "jump_us"),
    )


def retime_mask(compiled: Any, vocab_size: int, ids: Sequence[int], step: int, repeats: int = 3) -> float:
    """The mask fill at ``step`` of a walk timed again (fastest of ``repeats``, same matcher state).

    A slow fill that is fast when re-timed was the machine (a preempted thread: these spikes come in
    multiples of the 4 ms scheduler tick on a shared machine), not the grammar."""
    import xgrammar as xgr

    from harness.grammar import allocate_bitmask

    matcher = xgr.GrammarMatcher(compiled)
    for token in ids[:step]:
        if not matcher.accept_token(token):
            return float("nan")
    bm = allocate_bitmask(vocab_size)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        matcher.fill_next_token_bitmask(bm)
        best = min(best, (time.perf_counter_ns() - t0) / 1000.0)
    return round(best, 1)


def sample_masks(compiled: Any, family: str, text: str, limit: int = APPLY_POSITIONS) -> list[Any]:
    """The real token masks (numpy int32, 1 x words) at each step of one gold text (at most ``limit``)."""
    import xgrammar as xgr

    from harness.grammar import allocate_bitmask, get_tokenizer

    tok = get_tokenizer(family)
    matcher = xgr.GrammarMatcher(compiled)
    masks = []
    for token in [*tok.encode(text), None][:limit]:
        bm = allocate_bitmask(tok.vocab_size)
        matcher.fill_next_token_bitmask(bm)
        masks.append(bm)
        if token is None or not matcher.accept_token(token):
            break
    return masks


def apply_times(family: str, masks: Sequence[Any]) -> ApplyFigures:
    """Time applying each mask to full-vocabulary float32 logits: xgrammar's CPU kernel on a torch
    tensor, and the decode loop's numpy path (``masked_scores``)."""
    import torch
    import xgrammar as xgr

    from harness.grammar import get_tokenizer, masked_scores

    tok = get_tokenizer(family)
    vocab = tok.vocab_size
    rng = np.random.default_rng(0)
    base = rng.standard_normal(vocab).astype(np.float32)
    logits_t = torch.from_numpy(base.copy()).reshape(1, vocab)
    clock = time.perf_counter_ns
    torch_us: list[float] = []
    numpy_us: list[float] = []
    allowed: list[float] = []
    for bm in masks:
        bm_t = torch.from_numpy(bm)
        runs_t, runs_n = [], []
        for _ in range(APPLY_REPEATS):
            logits_t.copy_(torch.from_numpy(base).reshape(1, vocab))
            t0 = clock()
            xgr.apply_token_bitmask_inplace(logits_t, bm_t, vocab_size=vocab)
            runs_t.append((clock() - t0) / 1000.0)
            t0 = clock()
            masked_scores(base, bm, vocab)
            runs_n.append((clock() - t0) / 1000.0)
        torch_us.append(exact_median(runs_t))
        numpy_us.append(exact_median(runs_n))
        bits = np.unpackbits(bm[0].view(np.uint8), bitorder="little", count=vocab)
        allowed.append(float(bits.sum()))
    return ApplyFigures(
        vocab_size=vocab,
        apply_positions=len(masks),
        apply_us_p50=median(torch_us),
        apply_us_max=round(max(torch_us), 3) if torch_us else None,
        apply_np_us_p50=median(numpy_us),
        apply_np_us_max=round(max(numpy_us), 3) if numpy_us else None,
        allowed_tokens_p50=median(allowed),
    )


CACHED_REPEATS = 9
"""Cached compiles whose median ``check_outputs`` reports (one cache hit is mostly timer noise)."""


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """One output walked through the grammar (``harness grammar check``)."""

    output: GoldText
    accepted: bool
    reason: str | None
    """Why not, in words (None when accepted)."""
    tokens: int


class CheckFigures(BenchRecord):
    """The figures of ``harness grammar check``'s JSON line."""

    compile_ms_cold: float
    """The first compile in this process."""
    compile_ms_cached: float
    """Median of ``CACHED_REPEATS`` compiles of the same artifact (cache hits)."""
    compile_cold_was_cached: bool
    """The first compile hit a cache after all."""
    mask_us_p50: float | None
    """Every mask fill of every walk: median."""
    mask_us_p99: float | None
    """99th percentile of the mask fills."""
    mask_us_max: float | None
    """Slowest mask fill."""
    accept_us_p50: float | None
    """Median ``accept_token``."""
    masks: int
    """Mask fills timed."""
    tokens: int
    """Tokens walked."""


@dataclass(frozen=True, slots=True)
class GrammarCheck:
    """Every output of a ``harness grammar check`` walked through one compiled artifact."""

    compile_ms_cold: float
    """The first compile in this process (``compile_cold_was_cached`` says if it hit a cache)."""
    compile_cold_was_cached: bool
    compile_ms_cached: float
    """Median of ``CACHED_REPEATS`` compiles of the same artifact (cache hits)."""
    outputs: tuple[OutputCheck, ...]
    mask_us: tuple[float, ...]
    """Every mask fill of every walk (filled at every token)."""
    accept_us: tuple[float, ...]

    def figures(self) -> CheckFigures:
        """Compile times, mask and accept percentiles (``harness.stats``), counts."""
        return CheckFigures(
            compile_ms_cold=round(self.compile_ms_cold, 3),
            compile_ms_cached=round(self.compile_ms_cached, 4),
            compile_cold_was_cached=self.compile_cold_was_cached,
            mask_us_p50=rounded_percentile(self.mask_us, 50),
            mask_us_p99=rounded_percentile(self.mask_us, 99),
            mask_us_max=rounded_percentile(self.mask_us, 100),
            accept_us_p50=rounded_percentile(self.accept_us, 50),
            masks=len(self.mask_us),
            tokens=sum(o.tokens for o in self.outputs),
        )


def check_outputs(artifact: ConstraintArtifact, family: str, outputs: Sequence[GoldText]) -> GrammarCheck:
    """Compile ``artifact`` for ``family`` (cold, then cached), and walk every output through it with
    the mask filled at every token, the grammar required to end right after the text."""
    from harness.grammar import compile_artifact, get_tokenizer, walk_text

    tok = get_tokenizer(family)
    cold = compile_artifact(artifact, family)
    cached = exact_median([compile_artifact(artifact, family).compile_ms for _ in range(CACHED_REPEATS)])
    checks: list[OutputCheck] = []
    masks: list[float] = []
    accepts: list[float] = []
    for output in outputs:
        walk = walk_text(cold.compiled, tok, output.text)
        masks.extend(walk.mask_us)
        accepts.extend(walk.accept_us)
        checks.append(OutputCheck(output, walk.accepted, walk.reason, walk.tokens))
    return GrammarCheck(cold.compile_ms, cold.cached, cached, tuple(checks), tuple(masks), tuple(accepts))


def measure_xgrammar(
    family: str,
    artifact: ConstraintArtifact,
    outputs: Sequence[GoldText],
    *,
    repeats: int,
    budget_s: float,
    with_apply: bool = True,
    apply_positions: int = APPLY_POSITIONS,
) -> EngineFigures:
    """All xgrammar figures of one grammar over its gold outputs (masks applied at the first
    ``apply_positions`` steps of the longest)."""
    from harness.grammar import compile_artifact

    groups: list[SparseRecord] = [compile_times(artifact, family, repeats)]
    compiled = compile_artifact(artifact, family).compiled
    groups += [walk_outputs(compiled, family, outputs, budget_s), jump_walks(compiled, family, outputs)]
    if with_apply and outputs:
        longest = max(outputs, key=lambda o: len(o.text))
        groups.append(apply_times(family, sample_masks(compiled, family, longest.text, apply_positions)))
    measured = {k: v for group in groups for k, v in group.given().items()}
    return EngineFigures(engine="xgrammar", expressible=True, note=None, **measured)
