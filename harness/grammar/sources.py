"""Where the decoding loop (``harness.grammar.decode``) takes its tokens from: the protocols a source
implements, and the gold sources (fixed ids, or a text replayed through jump-forward; no model needed).
A model's source lives with its engine (``harness.engines.local``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from harness.grammar.tokenizers import FamilyTokenizer


class TokenSource(Protocol):
    """Where tokens come from. ``propose`` returns the next gold id (int), next-token logits (a 1-D
    float array, one score per id), or None when the source has nothing more (gold text ended, or a
    model engine's own stop condition). ``feed`` receives the token the loop chose for that step."""

    def propose(self) -> int | NDArray[np.floating[Any]] | None: ...

    def feed(self, token_id: int) -> None: ...


class DraftingSource(TokenSource, Protocol):
    """A model source that can check drafted tokens (jump-forward ``verify``): ``propose_draft``
    evaluates them in one batch and returns the logits before each and after the last (or None when
    the source has nothing more); drafted tokens count as chosen only once fed back, in order."""

    def propose_draft(self, draft: Sequence[int]) -> Sequence[NDArray[np.floating[Any]]] | None: ...


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


class GoldTextSource:
    """Replays a gold text (jump-forward without a model): each step proposes the first token of the
    tokenizer's own encoding of the text not yet emitted, and whatever the loop appends (forced
    tokens too) moves the position on by its bytes. ``diverged`` is set when an appended token is not
    the text's next bytes (the source then ends: the grammar forced something the gold does not say)."""

    def __init__(self, tokenizer: FamilyTokenizer, text: str) -> None:
        from harness.grammar.jump import token_extensions

        self._tok = tokenizer
        self._bytes = token_extensions(tokenizer).token_bytes
        self._raw = text.encode("utf-8")
        self._pos = 0
        self._next = tokenizer.encode(text)
        self.diverged = False

    def propose(self) -> int | None:
        return self._next[0] if self._next and not self.diverged else None

    def feed(self, token_id: int) -> None:
        piece = self._bytes[token_id]
        if not piece:
            return  # a stop id: no text
        if self._next and self._next[0] == token_id:
            self._next.pop(0)
        elif piece and self._raw.startswith(piece, self._pos):
            self._next = self._encode_from(self._pos + len(piece))
        else:
            self.diverged = True
        self._pos += len(piece)

    def _encode_from(self, pos: int) -> list[int]:
        """The tokenizer's encoding of the text from byte ``pos``, which may fall inside a character
        (a byte-level token split it): the stray bytes then go first, one byte token each."""
        rest = self._raw[pos:]
        lead = 0
        while lead < len(rest) and 0x80 <= rest[lead] < 0xC0:
            lead += 1
        singles = [self._bytes.index(rest[i : i + 1]) for i in range(lead)]
        return singles + self._tok.encode(rest[lead:].decode("utf-8"))


__all__ = ["DraftingSource", "GoldSource", "GoldTextSource", "TokenSource"]
