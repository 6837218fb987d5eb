"""Token-level checks of one compiled grammar: does it accept a text token by token and end right
after it, what does a mask cost, and where do seeded random walks through the mask lead.

One matcher is reset and reused for every text (making one per text costs more than the walk). A
text is encoded as the model emits it (``FamilyTokenizer.encode``: control tokens as single ids) and
accepted token by token; the grammar must then accept a stop token. Mask fills are timed on the first
``timed`` texts of a cell only: acceptance needs no mask, and timing every walk would triple a cell's
cost for the same percentiles.

Random walks fill the mask at every step and pick an allowed token with a seeded generator: half the
time any allowed token, half the time a short one holding punctuation that closes or separates
(quotes, brackets, commas, colons), more often as the walk grows, and a quarter of the time a
control token where one is allowed (FunctionGemma's ``<escape>`` closes its strings), so walks end in
a few dozen tokens instead of writing strings for ever; a stop token when allowed, half the time.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

CLOSING_CHARS = frozenset('"{}[],:<>\\')
CLOSING_LEN = 3
"""Closing tokens are short: a long token holding a quote is mostly text."""
SOFT_STEPS = 24
"""After this many tokens a walk prefers closing tokens nine times in ten."""


@dataclass(frozen=True, slots=True)
class Acceptance:
    """One text through the grammar."""

    accepted: bool
    rejected_at: int | None
    """Index of the first rejected token (``len(ids)``: the grammar cannot end there)."""
    ids: tuple[int, ...]
    mask_us: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class Walk:
    """One random walk's tokens (after the forced prefix) and how it ended."""

    ids: tuple[int, ...]
    ended: bool
    """A stop token was taken (else the walk ran out of steps)."""
    mismatch: bool = False
    """A token the mask allowed was refused by ``accept_token`` (an engine bug)."""


class GrammarWalker:
    """Acceptance, timing and random walks for one compiled grammar and one family tokenizer."""

    def __init__(self, compiled: Any, tokenizer: Any, *, matcher: Any = None, stop_ids: Sequence[int] | None = None) -> None:
        import xgrammar as xgr

        self.tok = tokenizer
        self.matcher = matcher if matcher is not None else xgr.GrammarMatcher(compiled)
        self.stop_ids = tuple(stop_ids if stop_ids is not None else tokenizer.eos_ids)
        self.bitmask = xgr.allocate_token_bitmask(1, tokenizer.vocab_size)
        self.words = self.bitmask.numpy()[0]
        self.closing = closing_words(tokenizer)
        self.control = _words_of(list(tokenizer.control_tokens.values()), len(self.words))
        self.stop_words = _words_of(self.stop_ids, len(self.words))

    def accepts(self, ids: Sequence[int], *, timed: bool = False) -> Acceptance:
        """Whether the grammar accepts ``ids`` token by token and a stop token right after them."""
        m = self.matcher
        m.reset()
        masks: list[float] = []
        for i, token in enumerate(ids):
            if timed:
                t0 = time.perf_counter_ns()
                m.fill_next_token_bitmask(self.bitmask)
                masks.append((time.perf_counter_ns() - t0) / 1000.0)
            if not m.accept_token(token):
                return Acceptance(False, i, tuple(ids), tuple(masks))
        ended = any(m.accept_token(s) for s in self.stop_ids)
        return Acceptance(ended, None if ended else len(ids), tuple(ids), tuple(masks))

    def accepts_text(self, text: str, *, timed: bool = False) -> Acceptance:
        return self.accepts(encode(self.tok, text), timed=timed)

    def random_walk(self, prefix: Sequence[int], rng: np.random.Generator, max_tokens: int) -> Walk | None:
        """A walk from ``prefix`` (None when the grammar refuses the prefix itself)."""
        m = self.matcher
        m.reset()
        if not all(m.accept_token(t) for t in prefix):
            return None
        out: list[int] = []
        while len(out) < max_tokens:
            m.fill_next_token_bitmask(self.bitmask)
            token = self._pick(rng, len(out))
            if token is None:
                return Walk(tuple(out), False)
            if not m.accept_token(token):
                return Walk((*out, token), False, mismatch=True)
            if token in self.stop_ids:
                return Walk(tuple(out), True)
            out.append(token)
        return Walk(tuple(out), False)

    def _pick(self, rng: np.random.Generator, steps: int) -> int | None:
        words = self.words
        stops = words & self.stop_words
        if stops.any() and rng.random() < 0.5:
            return _random_bit(stops, rng)
        control = words & self.control
        if control.any() and rng.random() < 0.25:
            return _random_bit(control, rng)
        closing = words & self.closing
        if closing.any() and rng.random() < (0.5 if steps < SOFT_STEPS else 0.9):
            return _random_bit(closing, rng)
        return _random_bit(words, rng) if words.any() else None


@functools.lru_cache(maxsize=16384)
def encode(tokenizer: Any, text: str) -> tuple[int, ...]:
    """``tokenizer.encode(text)``, remembered: a family's ebnf and structural_tag cells walk the same
    texts, and the same mutant text recurs."""
    return tuple(tokenizer.encode(text))


def _random_bit(words: np.ndarray, rng: np.random.Generator) -> int:
    """A set bit of a packed mask, chosen at random (a random non-empty word, then a bit of it)."""
    nonzero = np.flatnonzero(words)
    w = int(nonzero[rng.integers(len(nonzero))])
    bits = int(words[w]) & 0xFFFFFFFF
    set_bits = [b for b in range(32) if bits >> b & 1]
    return w * 32 + set_bits[int(rng.integers(len(set_bits)))]


def _words_of(ids: Sequence[int], n_words: int) -> np.ndarray:
    words = np.zeros(n_words, dtype=np.uint32)
    for i in ids:
        words[i // 32] |= np.uint32(1 << (i % 32))
    return words.view(np.int32)


_CLOSING_CACHE: dict[str, np.ndarray] = {}


def closing_words(tokenizer: Any) -> np.ndarray:
    """The packed mask of tokens holding a closing or separating character, or a control token."""
    cached = _CLOSING_CACHE.get(tokenizer.name)
    if cached is not None:
        return cached
    vocab = tokenizer.xgrammar_vocab()
    n_words = (tokenizer.vocab_size + 31) // 32
    ids = [i for i, text in enumerate(vocab) if 0 < len(text) <= CLOSING_LEN and not CLOSING_CHARS.isdisjoint(text)]
    words = _words_of(ids, n_words)
    _CLOSING_CACHE[tokenizer.name] = words
    return words


def target_walker(family: str, artifact: Any) -> GrammarWalker:
    """A walker of vLLM's own grammar backend on ``artifact`` (``--target vllm``)."""
    from harness.engines.vllm import VllmGrammarTarget, default_model
    from harness.grammar import get_tokenizer

    target = VllmGrammarTarget(default_model(family))
    compiled, _, _ = target.compile(artifact)
    return GrammarWalker(compiled, get_tokenizer(family), matcher=target.matcher(compiled), stop_ids=target.stop_ids)


def call_prefix(full: str, empty_args: str) -> str:
    """The text of a call up to its arguments: ``full`` is the call rendered with no arguments, whose
    arguments object is the last ``{}``-like pair (``{}`` in every format)."""
    at = full.rfind(empty_args)
    return full[:at] if at >= 0 else ""


__all__ = ["Acceptance", "GrammarWalker", "Walk", "call_prefix", "closing_words", "target_walker"]
