"""The one constrained decoding loop, shared by the oracle engine, the embedded engine and
``harness grammar check``.

A :class:`TokenSource` proposes each next token: a gold source (:class:`GoldSource`) proposes a fixed
id, a model source proposes next-token logits (a 1-D numpy array). The loop asks the xgrammar matcher
whether the token may come next, records what that cost, and feeds the chosen token back.

Mask policies:

- ``"always"``: fill the token mask at every step (timed). A gold id is checked against the mask
  (its bit) and a rejected gold id ends the run with ``grammar:rejected_gold``; logits pick the best
  allowed token.
- ``"lazy"``: try the source's choice first with ``accept_token`` (logits: the argmax, or a sample);
  only when the matcher rejects it fill the mask and pick the best allowed token. A gold id rejected
  by ``accept_token`` is a ``grammar:rejected_gold`` as well. Cheaper when the model mostly agrees with
  the grammar; ``mask_us`` then has fewer entries than there are tokens.

The end: a stop id accepted by the matcher (``terminated``); a source with nothing more to propose
(the loop then asks the matcher for a stop token: a gold text that the grammar cannot end after is
rejected at index ``len(ids)``; a model source that stops early is just not ``terminated``); or
``max_tokens``. Without a grammar every token passes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from harness.agents.constraint import REJECTED_GOLD

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from harness.grammar.tokenizers import FamilyTokenizer

MaskPolicy = Literal["always", "lazy"]
FinishReason = Literal["stop", "length", "rejected"]
DEAD_END = "grammar:dead_end"
"""The matcher allowed no token at all (a grammar bug; never expected)."""


class TokenSource(Protocol):
    """Where tokens come from. ``propose`` returns the next gold id (int), next-token logits (a 1-D
    float array, one score per id), or None when the source has nothing more (gold text ended, or a
    model engine's own stop condition). ``feed`` receives the token the loop chose for that step."""

    def propose(self) -> int | NDArray[np.floating[Any]] | None: ...

    def feed(self, token_id: int) -> None: ...


class GoldSource:
    """Replays fixed ids (a gold answer) one per step."""

    __slots__ = ("ids", "pos")

    def __init__(self, ids: Sequence[int]) -> None:
        self.ids = list(ids)
        self.pos = 0

    def propose(self) -> int | None:
        return self.ids[self.pos] if self.pos < len(self.ids) else None

    def feed(self, token_id: int) -> None:
        self.pos += 1


@dataclass(frozen=True, slots=True)
class DecodeResult:
    """What one decode produced and what the grammar cost."""

    token_ids: tuple[int, ...]
    """The tokens emitted, the final stop token excluded."""
    text: str
    """``token_ids`` decoded (special tokens kept)."""
    mask_us: tuple[float, ...]
    """Microseconds per mask fill (every step under ``always``; only fallbacks under ``lazy``)."""
    accept_us: tuple[float, ...]
    """Microseconds of ``accept_token`` per step (both attempts when lazy fell back)."""
    terminated: bool
    """The grammar ended properly (matcher terminated by a stop token); without a grammar: the
    source stopped or a stop id came."""
    finish_reason: FinishReason
    rejected_at: int | None = None
    """Index in the token stream where the grammar refused the source's token (``len(ids)``: the
    gold text ended where the grammar could not)."""
    error: str | None = None
    """``grammar:rejected_gold`` or ``grammar:dead_end``; None when fine."""
    rejected_token: int | None = None
    stop_id: int | None = None
    generated: int = 0
    """Tokens produced, the stop token included."""
    ttft_ms: float | None = None
    total_ms: float = 0.0
    source_ms: float = 0.0
    """Time spent inside the source (model forward passes)."""
    grammar_us: float = 0.0
    """Total time in the matcher and in picking allowed tokens."""
    fallbacks: int = 0
    """Lazy policy: steps where the proposal was rejected and the mask had to be applied."""

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(slots=True)
class _Run:
    ids: list[int] = field(default_factory=list)
    mask_us: list[float] = field(default_factory=list)
    accept_us: list[float] = field(default_factory=list)
    grammar_ns: int = 0
    source_ns: int = 0
    fallbacks: int = 0


def allocate_bitmask(vocab_size: int) -> NDArray[np.int32]:
    """An xgrammar token bitmask for one sequence as a numpy array (no torch needed)."""
    return np.full((1, (vocab_size + 31) // 32), -1, dtype=np.int32)


def allowed_ids(bitmask: NDArray[np.int32], limit: int) -> NDArray[np.intp]:
    """Ids whose bit is set in row 0 of ``bitmask``, below ``limit``."""
    bits = np.unpackbits(bitmask[0].view(np.uint8), bitorder="little", count=limit)
    return np.flatnonzero(bits)


_LANES = np.arange(32)


def masked_scores(
    logits: NDArray[np.floating[Any]], bitmask: NDArray[np.int32], limit: int
) -> tuple[NDArray[np.floating[Any]], NDArray[np.intp] | None]:
    """The logits of the allowed ids: ``(scores, ids)`` when few are allowed (gathered), or
    ``(scores, None)`` with forbidden ids at -inf when many are. Cheaper than xgrammar's CPU
    ``apply_token_bitmask_inplace`` (~18 us sparse, ~100 us dense against ~1.2 ms for 262k ids)."""
    nwords = (limit + 31) // 32
    words = bitmask[0, :nwords]
    nonzero = np.flatnonzero(words)
    if nonzero.size * 32 <= limit // 16:
        bits = np.unpackbits(words[nonzero].view(np.uint8), bitorder="little").reshape(-1, 32).astype(bool)
        ids = (nonzero[:, None] * 32 + _LANES)[bits]
        ids = ids[ids < limit]
        return logits[ids], ids
    masked = np.full(nwords * 32, -np.inf, dtype=logits.dtype)
    masked[:limit] = logits[:limit]
    rows = masked.reshape(-1, 32)
    rows[words == 0] = -np.inf
    partial = np.flatnonzero((words != 0) & (words != -1))
    if partial.size:
        bits = np.unpackbits(words[partial].view(np.uint8), bitorder="little").reshape(-1, 32).astype(bool)
        sub = rows[partial]
        sub[~bits] = -np.inf
        rows[partial] = sub
    return masked[:limit], None


def _bit(bitmask: NDArray[np.int32], token_id: int) -> bool:
    return bool((int(bitmask[0, token_id >> 5]) >> (token_id & 31)) & 1)


def _pick(
    scores: NDArray[np.floating[Any]],
    ids: NDArray[np.intp] | None,
    temperature: float,
    rng: np.random.Generator | None,
) -> int:
    """Greedy (temperature 0) or sampled choice; ``ids`` maps positions of ``scores`` to token ids."""
    if temperature <= 0.0:
        k = int(np.argmax(scores))
    else:
        z = scores.astype(np.float64) / temperature
        z -= z.max()
        p = np.exp(z)
        p /= p.sum()
        k = int((rng or np.random.default_rng()).choice(len(p), p=p))
    return k if ids is None else int(ids[k])


def decode(
    compiled: Any | None,
    source: TokenSource,
    tokenizer: FamilyTokenizer,
    *,
    max_tokens: int,
    mask_policy: MaskPolicy = "always",
    stop_ids: Sequence[int] | None = None,
    temperature: float = 0.0,
    rng: np.random.Generator | None = None,
) -> DecodeResult:
    """Run ``source`` through ``compiled`` (an ``xgr.CompiledGrammar``; None = unconstrained).

    ``stop_ids`` default to the tokenizer's end-of-turn ids; with a grammar a stop id is only taken
    where the grammar may end. ``max_tokens`` counts every token, the stop token included.
    """
    if mask_policy not in ("always", "lazy"):
        raise ValueError(f"unknown mask policy {mask_policy!r}: expected 'always' or 'lazy'")
    stops = tuple(tokenizer.eos_ids if stop_ids is None else stop_ids)
    stop_set = frozenset(stops)
    clock = time.perf_counter_ns
    start = clock()
    run = _Run()
    ttft_ns: int | None = None
    matcher = None
    bitmask = None
    if compiled is not None:
        import xgrammar as xgr

        matcher = xgr.GrammarMatcher(compiled)
        bitmask = allocate_bitmask(tokenizer.vocab_size)

    finish: FinishReason = "length"
    error: str | None = None
    rejected_at: int | None = None
    rejected_token: int | None = None
    stop_id: int | None = None
    terminated = False
    generated = 0
    from_model = False  # the source gave logits: its end is the engine's stop, not a gold text's end

    def fill() -> None:
        assert matcher is not None and bitmask is not None
        t0 = clock()
        matcher.fill_next_token_bitmask(bitmask)
        dt = clock() - t0
        run.mask_us.append(dt / 1000.0)
        run.grammar_ns += dt

    def accept(token: int) -> tuple[bool, int]:
        assert matcher is not None
        t0 = clock()
        ok = bool(matcher.accept_token(token))
        dt = clock() - t0
        run.grammar_ns += dt
        return ok, dt

    while generated < max_tokens:
        t0 = clock()
        proposal = source.propose()
        run.source_ns += clock() - t0
        step = generated

        if proposal is None:  # the source ended: the grammar must be able to stop here
            if matcher is None:
                terminated, finish = True, "stop"
                break
            chosen = None
            if mask_policy == "always":
                fill()
                assert bitmask is not None
                chosen = next((s for s in stops if _bit(bitmask, s)), None)
                if chosen is not None:
                    _, dt = accept(chosen)
                    run.accept_us.append(dt / 1000.0)
            else:
                spent = 0
                for s in stops:
                    ok, dt = accept(s)
                    spent += dt
                    if ok:
                        chosen = s
                        break
                run.accept_us.append(spent / 1000.0)
            if chosen is None and from_model:
                finish = "stop"  # an engine stop (e.g. a stop string) before the grammar could end
            elif chosen is None:
                finish, error, rejected_at = "rejected", REJECTED_GOLD, step
            else:
                stop_id, generated = chosen, generated + 1
                terminated, finish = matcher.is_terminated(), "stop"
            break

        if isinstance(proposal, (int, np.integer)):  # a gold id
            token = int(proposal)
            if matcher is not None:
                if not 0 <= token < tokenizer.vocab_size:
                    finish, error, rejected_at, rejected_token = "rejected", REJECTED_GOLD, step, token
                    break
                if mask_policy == "always":
                    fill()
                    assert bitmask is not None
                    allowed = _bit(bitmask, token)
                    ok, dt = accept(token) if allowed else (False, 0)
                    if allowed:
                        run.accept_us.append(dt / 1000.0)
                else:
                    ok, dt = accept(token)
                    run.accept_us.append(dt / 1000.0)
                if not ok:
                    finish, error, rejected_at, rejected_token = "rejected", REJECTED_GOLD, step, token
                    break
        else:  # next-token logits
            logits = proposal
            from_model = True
            token = -1
            if matcher is None:
                t0 = clock()
                token = _pick(logits, None, temperature, rng)
                run.grammar_ns += clock() - t0
            else:
                spent = 0
                if mask_policy == "lazy":
                    t0 = clock()
                    token = _pick(logits, None, temperature, rng)
                    run.grammar_ns += clock() - t0
                    ok, spent = accept(token)
                    if not ok:
                        run.fallbacks += 1
                        token = -1
                if token < 0:
                    fill()
                    assert bitmask is not None
                    t0 = clock()
                    limit = min(len(logits), tokenizer.vocab_size)
                    dead = False
                    if mask_policy == "always" and temperature <= 0.0:
                        best = int(np.argmax(logits[:limit]))  # greedy: the argmax wins when allowed
                        if _bit(bitmask, best):
                            token = best
                    if token < 0:
                        scores, ids = masked_scores(logits, bitmask, limit)
                        dead = scores.size == 0
                        if not dead:
                            token = _pick(scores, ids, temperature, rng)
                            dead = ids is None and bool(scores[token] == -np.inf)
                    run.grammar_ns += clock() - t0
                    if dead:
                        finish, error, rejected_at = "rejected", DEAD_END, step
                        break
                    ok, dt = accept(token)
                    spent += dt
                    if not ok:  # the mask said yes and the matcher no: never expected
                        finish, error, rejected_at, rejected_token = "rejected", DEAD_END, step, token
                        break
                run.accept_us.append(spent / 1000.0)

        t0 = clock()
        source.feed(token)
        run.source_ns += clock() - t0
        generated += 1
        if ttft_ns is None:
            ttft_ns = clock() - start
        if token in stop_set:
            stop_id = token
            terminated = matcher.is_terminated() if matcher is not None else True
            finish = "stop"
            break
        run.ids.append(token)
        if matcher is not None and matcher.is_terminated():
            terminated, finish = True, "stop"
            break

    total_ns = clock() - start
    return DecodeResult(
        token_ids=tuple(run.ids),
        text=tokenizer.decode(run.ids),
        mask_us=tuple(run.mask_us),
        accept_us=tuple(run.accept_us),
        terminated=terminated,
        finish_reason=finish,
        rejected_at=rejected_at,
        error=error,
        rejected_token=rejected_token,
        stop_id=stop_id,
        generated=generated,
        ttft_ms=None if ttft_ns is None else ttft_ns / 1e6,
        total_ms=total_ns / 1e6,
        source_ms=run.source_ns / 1e6,
        grammar_us=run.grammar_ns / 1000.0,
        fallbacks=run.fallbacks,
    )


@dataclass(frozen=True, slots=True)
class WalkResult:
    """A gold text walked through a compiled grammar token by token (``harness grammar check``)."""

    accepted: bool
    reason: str | None
    """Why not, in words: where, which token, what came before."""
    token_ids: tuple[int, ...]
    result: DecodeResult

    @property
    def tokens(self) -> int:
        return len(self.token_ids)

    @property
    def mask_us(self) -> tuple[float, ...]:
        return self.result.mask_us

    @property
    def accept_us(self) -> tuple[float, ...]:
        return self.result.accept_us


def walk_text(compiled: Any, family: str | FamilyTokenizer, text: str) -> WalkResult:
    """Encode ``text`` as the model would emit it (control tokens as single ids), replay it through
    ``compiled`` with the mask filled at every step, and require the grammar to end right after it
    (a stop token must be allowed there)."""
    from harness.grammar.tokenizers import get_tokenizer

    tok = get_tokenizer(family) if isinstance(family, str) else family
    ids = tok.encode(text)
    res = decode(compiled, GoldSource(ids), tok, max_tokens=len(ids) + 1, mask_policy="always")
    reason: str | None = None
    if res.error is not None and res.rejected_at is not None:
        before = tok.decode(ids[max(0, res.rejected_at - 12) : res.rejected_at])
        if res.rejected_at >= len(ids):
            reason = f"incomplete: the grammar cannot end after the last token (text ends ...{before!r})"
        else:
            bad = ids[res.rejected_at]
            reason = (
                f"token {res.rejected_at}/{len(ids)} {tok.token_text(bad)!r} (id {bad}) not allowed "
                f"after ...{before!r}"
            )
    elif not res.terminated:
        reason = f"not terminated ({res.finish_reason})"
    return WalkResult(
        accepted=res.error is None and res.terminated, reason=reason, token_ids=tuple(ids), result=res
    )
