"""The two engines of the differential behind one small interface: xgrammar's matcher (the cell's own
compiled grammar) and llguidance's (the same constraint converted by ``harness.grammar.guidance``),
each filling a packed 32-bit token bitmask of the family's vocabulary, consuming tokens and going back
to a prefix (by replaying it: a few microseconds a token, simpler than each engine's rollback rules).

A completion from a prefix picks, at every step, a token the engine allows with a seeded generator,
biased harder than the fuzz's random walks (``harness.fuzz.walker``) towards ending soon in a valid
call: a stop token when allowed, nine times in ten; one of the walked instance's own tokens half the
time (they spell its values and closings); a control token a quarter of the time; a short closing
token four times in five. A completion is a probe of where a token leads, not a sample of the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from harness.fuzz.walker import _random_bit, _words_of, closing_words

CHANCES = (0.9, 0.5, 0.25, 0.8)
"""How often a completion takes a stop token, one of the instance's own tokens, a control token and a
closing token, where the engine allows one."""


class Engine(Protocol):
    name: str
    words: np.ndarray
    """The packed mask (int32 words) the last ``fill`` wrote."""

    def restore(self, prefix: Sequence[int]) -> bool:
        """Back to the start, then ``prefix`` consumed (False when the engine refuses it)."""
        ...

    def fill(self) -> None: ...

    def consume(self, token: int) -> bool: ...


class XgrammarEngine:
    """The cell's xgrammar matcher."""

    name = "xgrammar"

    def __init__(self, matcher: Any, vocab_size: int) -> None:
        import xgrammar as xgr

        self.matcher = matcher
        self.bitmask = xgr.allocate_token_bitmask(1, vocab_size)
        self.words = self.bitmask.numpy()[0]

    def restore(self, prefix: Sequence[int]) -> bool:
        self.matcher.reset()
        return all(self.matcher.accept_token(t) for t in prefix)

    def fill(self) -> None:
        self.matcher.fill_next_token_bitmask(self.bitmask)

    def consume(self, token: int) -> bool:
        return bool(self.matcher.accept_token(token))


class LlguidanceEngine:
    """An llguidance matcher of the converted grammar (one per cell, reset and replayed)."""

    name = "llguidance"

    def __init__(self, tokenizer: Any, grammar: str, vocab_size: int) -> None:
        import llguidance.numpy as llnp
        from llguidance import LLMatcher

        self.llnp = llnp
        self.tokenizer = tokenizer
        self.notes = ""
        self.matcher = LLMatcher(tokenizer, grammar, log_level=0)
        self.bitmask = llnp.allocate_token_bitmask(1, vocab_size)
        self.words = self.bitmask[0]

    @property
    def error(self) -> str | None:
        return str(self.matcher.get_error()) if self.matcher.is_error() else None

    def restore(self, prefix: Sequence[int]) -> bool:
        self.matcher.reset()
        return all(self.matcher.consume_token(t) for t in prefix) and not self.matcher.is_error()

    def fill(self) -> None:
        self.llnp.fill_next_token_bitmask(self.matcher, self.bitmask, 0)

    def consume(self, token: int) -> bool:
        return bool(self.matcher.consume_token(token)) and not self.matcher.is_error()


@dataclass(frozen=True, slots=True)
class Completion:
    """A walk on from a prefix under one engine."""

    ids: tuple[int, ...]
    """The tokens taken after the prefix (the stop token left out)."""
    ended: bool
    """A stop token was taken."""
    dead: bool = False
    """No token was allowed (the grammar cannot go on and cannot end)."""


class Picker:
    """Seeded choices among allowed tokens, biased towards ending (see the module's text)."""

    def __init__(self, tokenizer: Any, stop_ids: Sequence[int]) -> None:
        self.stop_ids = tuple(stop_ids)
        self.closing = closing_words(tokenizer)
        n = len(self.closing)
        self.control = _words_of(list(tokenizer.control_tokens.values()), n)
        self.stop_words = _words_of(self.stop_ids, n)

    def pick(self, words: np.ndarray, rng: np.random.Generator, prefer: np.ndarray) -> int | None:
        for mask, chance in zip((self.stop_words, prefer, self.control, self.closing), CHANCES, strict=True):
            hits = words & mask
            if hits.any() and rng.random() < chance:
                return _random_bit(hits, rng)
        return _random_bit(words, rng) if words.any() else None

    def complete(self, engine: Engine, rng: np.random.Generator, max_tokens: int, prefer: Sequence[int]) -> Completion:
        """Walk on from where ``engine`` stands until a stop token, a dead end or ``max_tokens``
        (``prefer``: the instance's tokens)."""
        out: list[int] = []
        preferred = _words_of(list(set(prefer)), len(self.closing))
        while len(out) < max_tokens:
            engine.fill()
            token = self.pick(engine.words, rng, preferred)
            if token is None:
                return Completion(tuple(out), False, dead=True)
            if token in self.stop_ids:
                return Completion(tuple(out), True)
            if not engine.consume(token):
                return Completion(tuple(out), False, dead=True)
            out.append(token)
        return Completion(tuple(out), False)


def bit(words: np.ndarray, token: int) -> bool:
    return bool((int(words[token >> 5]) >> (token & 31)) & 1)


def set_bits(words: np.ndarray) -> np.ndarray:
    """The ids whose bit is set in a packed mask."""
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")
    return np.flatnonzero(bits)


__all__ = ["Completion", "Engine", "LlguidanceEngine", "Picker", "XgrammarEngine", "bit", "set_bits"]
