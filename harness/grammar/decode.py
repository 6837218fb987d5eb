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
from harness.grammar.mask import allocate_bitmask, masked_scores, pick_token, token_allowed

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
    """What a decode has spent and emitted so far."""

    ids: list[int] = field(default_factory=list)
    mask_us: list[float] = field(default_factory=list)
    accept_us: list[float] = field(default_factory=list)
    grammar_ns: int = 0
    source_ns: int = 0
    fallbacks: int = 0


class _Decoder:
    """One decode, step by step: the matcher, the clock, and where the decode ended (see ``decode``)."""

    def __init__(
        self,
        compiled: Any | None,
        tokenizer: FamilyTokenizer,
        mask_policy: MaskPolicy,
        stops: tuple[int, ...],
        temperature: float,
        rng: np.random.Generator | None,
        matcher_stop_ids: Sequence[int] | None = None,
    ) -> None:
        self.tokenizer, self.policy, self.temperature, self.rng = tokenizer, mask_policy, temperature, rng
        self.stops, self.stop_set = stops, frozenset(stops)
        self.clock = time.perf_counter_ns
        self.start = self.clock()
        self.run = _Run()
        self.matcher: Any = None
        self.bitmask: NDArray[np.int32] = allocate_bitmask(tokenizer.vocab_size if compiled is not None else 0)
        if compiled is not None:
            import xgrammar as xgr

            overrides = None if matcher_stop_ids is None else list(matcher_stop_ids)
            self.matcher = xgr.GrammarMatcher(compiled, override_stop_tokens=overrides)
        self.finish: FinishReason = "length"
        self.error: str | None = None
        self.rejected_at: int | None = None
        self.rejected_token: int | None = None
        self.stop_id: int | None = None
        self.terminated = False
        self.generated = 0
        """Tokens fed so far (the index of the current step)."""
        self.from_model = False
        """The source gave logits: its end is the engine's stop, not a gold text's end."""
        self.ttft_ns: int | None = None

    # -- timed grammar work -----------------------------------------------------------------------

    def _fill(self) -> None:
        t0 = self.clock()
        self.matcher.fill_next_token_bitmask(self.bitmask)
        dt = self.clock() - t0
        self.run.mask_us.append(dt / 1000.0)
        self.run.grammar_ns += dt

    def _accept(self, token: int) -> tuple[bool, int]:
        """Whether the matcher takes ``token`` (and advances), and the nanoseconds it took."""
        t0 = self.clock()
        ok = bool(self.matcher.accept_token(token))
        dt = self.clock() - t0
        self.run.grammar_ns += dt
        return ok, dt

    def _pick(self, scores: NDArray[np.floating[Any]], ids: NDArray[np.intp] | None) -> int:
        t0 = self.clock()
        token = pick_token(scores, ids, self.temperature, self.rng)
        self.run.grammar_ns += self.clock() - t0
        return token

    def _reject(self, error: str, token: int | None = None) -> None:
        self.finish, self.error, self.rejected_at, self.rejected_token = "rejected", error, self.generated, token

    # -- one step ---------------------------------------------------------------------------------

    def propose(self, source: TokenSource) -> int | NDArray[np.floating[Any]] | None:
        t0 = self.clock()
        proposal = source.propose()
        self.run.source_ns += self.clock() - t0
        return proposal

    def source_ended(self) -> None:
        """The source has nothing more: the grammar must be able to stop here (a gold text that it
        cannot end after is rejected at ``len(ids)``; a model that stopped early just did not end it)."""
        if self.matcher is None:
            self.terminated, self.finish = True, "stop"
            return
        chosen = self._stop_always() if self.policy == "always" else self._stop_lazy()
        if chosen is None and self.from_model:
            self.finish = "stop"  # an engine stop (e.g. a stop string) before the grammar could end
        elif chosen is None:
            self._reject(REJECTED_GOLD)
        else:
            self.stop_id, self.generated = chosen, self.generated + 1
            self.terminated, self.finish = self.matcher.is_terminated(), "stop"

    def _stop_always(self) -> int | None:
        self._fill()
        chosen = next((s for s in self.stops if token_allowed(self.bitmask, s)), None)
        if chosen is not None:
            _, dt = self._accept(chosen)
            self.run.accept_us.append(dt / 1000.0)
        return chosen

    def _stop_lazy(self) -> int | None:
        spent = 0
        chosen = None
        for stop in self.stops:
            ok, dt = self._accept(stop)
            spent += dt
            if ok:
                chosen = stop
                break
        self.run.accept_us.append(spent / 1000.0)
        return chosen

    def gold_token(self, token: int) -> bool:
        """Check a gold id against the grammar; False (and the decode rejected) when it is forbidden."""
        if self.matcher is None:
            return True
        if not 0 <= token < self.tokenizer.vocab_size:
            self._reject(REJECTED_GOLD, token)
            return False
        if self.policy == "always":
            self._fill()
            allowed = token_allowed(self.bitmask, token)
            ok, dt = self._accept(token) if allowed else (False, 0)
            if allowed:
                self.run.accept_us.append(dt / 1000.0)
        else:
            ok, dt = self._accept(token)
            self.run.accept_us.append(dt / 1000.0)
        if not ok:
            self._reject(REJECTED_GOLD, token)
        return ok

    def model_token(self, logits: NDArray[np.floating[Any]]) -> int | None:
        """The token chosen from a model's logits under the grammar; None at a dead end (rejected)."""
        self.from_model = True
        if self.matcher is None:
            return self._pick(logits, None)
        spent = 0
        if self.policy == "lazy":  # the model's own choice first; the mask only when it is refused
            token = self._pick(logits, None)
            ok, spent = self._accept(token)
            if ok:
                self.run.accept_us.append(spent / 1000.0)
                return token
            self.run.fallbacks += 1
        self._fill()
        t0 = self.clock()
        chosen = self._best_allowed(logits)
        self.run.grammar_ns += self.clock() - t0
        if chosen is None:
            self._reject(DEAD_END)
            return None
        ok, dt = self._accept(chosen)
        if not ok:  # the mask said yes and the matcher no: never expected
            self._reject(DEAD_END, chosen)
            return None
        self.run.accept_us.append((spent + dt) / 1000.0)
        return chosen

    def _best_allowed(self, logits: NDArray[np.floating[Any]]) -> int | None:
        """The allowed token to emit (greedy: the argmax when allowed, else the best allowed; or a
        sample of the allowed ones); None when the mask allows nothing."""
        limit = min(len(logits), self.tokenizer.vocab_size)
        if self.policy == "always" and self.temperature <= 0.0:
            best = int(np.argmax(logits[:limit]))
            if token_allowed(self.bitmask, best):
                return best
        scores, ids = masked_scores(logits, self.bitmask, limit)
        if scores.size == 0:
            return None
        token = pick_token(scores, ids, self.temperature, self.rng)
        return None if ids is None and bool(scores[token] == -np.inf) else token

    def feed(self, source: TokenSource, token: int) -> bool:
        """Give the source the chosen token; True when the decode ends with it."""
        t0 = self.clock()
        source.feed(token)
        self.run.source_ns += self.clock() - t0
        self.generated += 1
        if self.ttft_ns is None:
            self.ttft_ns = self.clock() - self.start
        if token in self.stop_set:
            self.stop_id = token
            self.terminated = self.matcher.is_terminated() if self.matcher is not None else True
            self.finish = "stop"
            return True
        self.run.ids.append(token)
        if self.matcher is not None and self.matcher.is_terminated():
            self.terminated, self.finish = True, "stop"
            return True
        return False

    def result(self) -> DecodeResult:
        run = self.run
        return DecodeResult(
            token_ids=tuple(run.ids),
            text=self.tokenizer.decode(run.ids),
            mask_us=tuple(run.mask_us),
            accept_us=tuple(run.accept_us),
            terminated=self.terminated,
            finish_reason=self.finish,
            rejected_at=self.rejected_at,
            error=self.error,
            rejected_token=self.rejected_token,
            stop_id=self.stop_id,
            generated=self.generated,
            ttft_ms=None if self.ttft_ns is None else self.ttft_ns / 1e6,
            total_ms=(self.clock() - self.start) / 1e6,
            source_ms=run.source_ns / 1e6,
            grammar_us=run.grammar_ns / 1000.0,
            fallbacks=run.fallbacks,
        )


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
    matcher_stop_ids: Sequence[int] | None = None,
) -> DecodeResult:
    """Run ``source`` through ``compiled`` (an ``xgr.CompiledGrammar``; None = unconstrained).

    ``stop_ids`` default to the tokenizer's end-of-turn ids; with a grammar a stop id is only taken
    where the grammar may end. ``max_tokens`` counts every token, the stop token included.
    ``matcher_stop_ids`` overrides the stop tokens the grammar itself knows (as vLLM does with the
    generation config's end ids); by default they are those of the tokenizer info it was compiled for.
    """
    if mask_policy not in ("always", "lazy"):
        raise ValueError(f"unknown mask policy {mask_policy!r}: expected 'always' or 'lazy'")
    stops = tuple(tokenizer.eos_ids if stop_ids is None else stop_ids)
    d = _Decoder(compiled, tokenizer, mask_policy, stops, temperature, rng, matcher_stop_ids)
    while d.generated < max_tokens:
        proposal = d.propose(source)
        if proposal is None:
            d.source_ended()
            break
        if isinstance(proposal, (int, np.integer)):
            token: int | None = int(proposal) if d.gold_token(int(proposal)) else None
        else:
            token = d.model_token(proposal)
        if token is None or d.feed(source, token):
            break
    return d.result()


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
