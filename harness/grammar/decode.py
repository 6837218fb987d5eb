"""The one constrained decoding loop, shared by the oracle engine, the embedded engine and
``harness grammar check``.

A :class:`TokenSource` proposes each next token: a gold source (``harness.grammar.sources``) proposes a fixed
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

Jump-forward: before each step the loop asks the matcher for the text the grammar forces from here
(xgrammar's ``find_jump_forward_string``: the longest text every valid continuation starts with).
The tokenizer's tokens of that text need no model step to be chosen. Two ways to use them
(``jump``):

- ``"append"``: append them without asking the source (``harness.grammar.jump`` holds back the tail
  where a model's token could run past the forced text). The source is fed them one by one; a model
  source evaluates them in one batch with the next free position (``harness.engines.local.source``).
  Outputs can differ from the plain loop's: where the model would have written the forced text with
  other tokens (a base model spelling a control token in pieces), and where the scores after a batch
  differ in rounding from those after one token at a time.
- ``"verify"``: use them as a draft. A :class:`DraftingSource` evaluates the last chosen token and
  the draft in one batch and returns the scores at every drafted position; the loop chooses each
  token from those scores exactly as the plain loop would (greedy, lazy or masked, or sampled from
  the same distribution) and keeps the draft while the choice agrees with it; the first choice that
  differs is kept and the rest of the draft dropped. The output is the plain loop's (up to rounding
  of batched scores); a stretch the model writes as the tokenizer does costs one forward pass.

Either way ``forced`` counts the tokens no forward pass of their own produced. Where the grammar
can only end (complete, and nothing but stop ids allowed), the stop id is appended without a step.

The end: a stop id accepted by the matcher (``terminated``); a source with nothing more to propose
(the loop then asks the matcher for a stop token: a gold text that the grammar cannot end after is
rejected at index ``len(ids)``; a model source that stops early is just not ``terminated``); or
``max_tokens``. Without a grammar every token passes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.agents import REJECTED_GOLD
from harness.grammar.decode_result import (
    DEAD_END,
    JUMP_MODES,
    DecodeResult,
    DecodeRun,
    FinishReason,
    JumpMode,
    MaskPolicy,
)
from harness.grammar.jump import forced_prefix
from harness.grammar.mask import allocate_bitmask, allows_only, masked_scores, pick_token, token_allowed
from harness.grammar.sources import DraftingSource, GoldSource, GoldTextSource, TokenSource

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from harness.grammar.tokenizers import FamilyTokenizer

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
        top_p: float = 1.0,
    ) -> None:
        self.tokenizer, self.policy, self.temperature, self.rng = tokenizer, mask_policy, temperature, rng
        self.top_p = top_p
        # Trying the model's own pick first and masking only when the grammar refuses it is the same
        # as masking first for greedy choice and for plain sampling (a rejection sampler of the masked
        # distribution), not for top_p: the nucleus of the masked distribution is not the nucleus of
        # the whole one, so with top_p < 1 the mask comes first.
        self.lazy = mask_policy == "lazy" and (temperature <= 0.0 or top_p >= 1.0)
        self.stops, self.stop_set = stops, frozenset(stops)
        self.clock = time.perf_counter_ns
        self.start = self.clock()
        self.run = DecodeRun()
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
        token = pick_token(scores, ids, self.temperature, self.rng, self.top_p)
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

    def jump(self, source: TokenSource, max_tokens: int) -> bool:
        """Jump-forward ``append``: append what the grammar forces from here (see the module doc), the
        stop included when the grammar can only end after it; True when the decode ended."""
        while self.generated < max_tokens:
            t0 = self.clock()
            text = self.matcher.find_jump_forward_string()
            if not text:
                self.run.grammar_ns += self.clock() - t0
                return self._forced_stop(source)
            forced = forced_prefix(self.matcher, text, self.tokenizer, self.bitmask, max_tokens - self.generated)
            dt = self.clock() - t0
            self.run.grammar_ns += dt
            self.run.jump_us.append(dt / 1000.0)
            self.run.held_back += forced.held_back
            if not forced.ids:
                return False
            self.run.jumps += 1
            for token in forced.ids:
                self.run.forced += 1
                self.run.forced_at.append(len(self.run.ids))
                if self.feed(source, token):
                    return True
            if forced.held_back:
                return False
        return False

    def draft(self, source: DraftingSource, max_tokens: int) -> bool | None:
        """Jump-forward ``verify``: the tokenizer's tokens of the forced text are a draft that one
        batch evaluates with the chosen token before it; at each drafted position the token is chosen
        from the model's scores as without jump-forward, and the draft is kept while they agree. True
        when the decode ended, False after a batch, None when nothing is forced here (a plain step)."""
        t0 = self.clock()
        text = self.matcher.find_jump_forward_string()
        draft = self.tokenizer.encode(text)[: max_tokens - self.generated - 1] if text else []
        self.run.grammar_ns += self.clock() - t0
        if not draft:
            return True if self._forced_stop(source) else None
        t0 = self.clock()
        rows = source.propose_draft(draft)
        self.run.source_ns += self.clock() - t0
        if rows is None:
            self.source_ended()
            return True
        self.run.jumps += 1
        self.run.drafted += len(draft)
        for i, row in enumerate(rows):
            token = self.model_token(row)
            if token is None:
                return True
            agreed = i < len(draft) and token == draft[i]
            if agreed:
                self.run.forced += 1
                self.run.forced_at.append(len(self.run.ids))
            if self.feed(source, token) or self.generated >= max_tokens:
                return True
            if not agreed:
                return False
        return False

    def _forced_stop(self, source: TokenSource) -> bool:
        """Where the grammar is complete and allows nothing but stop ids, append one (True: ended)."""
        if not self.matcher.is_completed():
            return False
        self._fill()
        t0 = self.clock()
        chosen = None
        if allows_only(self.bitmask, self.matcher.stop_token_ids, self.tokenizer.vocab_size):
            chosen = next((s for s in self.stops if token_allowed(self.bitmask, s)), None)
        if chosen is not None and not self.matcher.accept_token(chosen):
            chosen = None
        self.run.grammar_ns += self.clock() - t0
        if chosen is None:
            return False
        self.run.forced += 1
        self.run.jumps += 1
        return self.feed(source, chosen)

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
        if self.lazy:  # the model's own choice first; the mask only when it is refused
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
        token = pick_token(scores, ids, self.temperature, self.rng, self.top_p)
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
            forced=run.forced,
            jumps=run.jumps,
            held_back=run.held_back,
            forced_at=tuple(run.forced_at),
            drafted=run.drafted,
            jump_us=tuple(run.jump_us),
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
    jump: JumpMode = "off",
    top_p: float = 1.0,
) -> DecodeResult:
    """Run ``source`` through ``compiled`` (an ``xgr.CompiledGrammar``; None = unconstrained).

    ``stop_ids`` default to the tokenizer's end-of-turn ids; with a grammar a stop id is only taken
    where the grammar may end. ``max_tokens`` counts every token, the stop token included (forced
    ones too). ``matcher_stop_ids`` overrides the stop tokens the grammar itself knows (as vLLM does
    with the generation config's end ids); by default they are those of the tokenizer info it was
    compiled for. ``jump``: what to do with text the grammar forces (module doc); ``verify`` needs a
    :class:`DraftingSource`. ``temperature`` > 0 samples from ``rng`` among the allowed tokens,
    restricted to the nucleus ``top_p`` of the masked distribution (``mask.pick_token``).
    """
    if mask_policy not in ("always", "lazy"):
        raise ValueError(f"unknown mask policy {mask_policy!r}: expected 'always' or 'lazy'")
    if jump not in JUMP_MODES:
        raise ValueError(f"unknown jump-forward mode {jump!r}: expected {', '.join(JUMP_MODES)}")
    if jump == "verify" and not hasattr(source, "propose_draft"):
        raise ValueError("jump-forward 'verify' needs a source that evaluates drafts (propose_draft)")
    stops = tuple(tokenizer.eos_ids if stop_ids is None else stop_ids)
    d = _Decoder(compiled, tokenizer, mask_policy, stops, temperature, rng, matcher_stop_ids, top_p)
    mode = jump if d.matcher is not None else "off"
    while d.generated < max_tokens:
        if mode == "append" and (d.jump(source, max_tokens) or d.generated >= max_tokens):
            break
        if mode == "verify":
            ended = d.draft(source, max_tokens)  # type: ignore[arg-type]
            if ended:
                break
            if ended is False:
                continue
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


__all__ = [
    "DEAD_END",
    "JUMP_MODES",
    "REJECTED_GOLD",
    "DecodeResult",
    "DraftingSource",
    "FinishReason",
    "GoldSource",
    "GoldTextSource",
    "JumpMode",
    "MaskPolicy",
    "TokenSource",
    "decode",
]
