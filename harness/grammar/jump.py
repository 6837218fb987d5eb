"""Jump-forward: the tokens a grammar forces, tokenized so a model would not have split them otherwise.

xgrammar's ``find_jump_forward_string`` gives the longest text every valid continuation starts with.
That text is tokenized here (the family tokenizer, as the model's own text is), and the loop appends
those tokens without asking the model (``harness.grammar.decode``).

The catch is the end of the forced text. Tokenized alone, ``{`` is one token; followed by what the
model writes next, the tokenizer (and a model trained on its output) would often use a token that
spans both, ``{"`` or ``{}``. Forcing ``{`` takes that choice away and shows the model a split it
rarely saw. So the forced tokens stop before the first token that some vocabulary token, allowed by
the grammar there, could run past the end of the forced text: from there on the model chooses, under
the mask, as it would without jump-forward (see :func:`forced_prefix`). On the gold answers of the
shipped suites this makes the jump-forward tokenization the tokenizer's own for all but a handful of
outputs (``harness bench grammar`` reports how many), at the price of a few more model steps.
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable

    from numpy.typing import NDArray

    from harness.grammar.tokenizers import FamilyTokenizer


class TokenExtensions:
    """Which vocabulary tokens strictly extend a byte string: the decoded vocabulary sorted, so the
    tokens that start with a prefix are one contiguous range (two bisections)."""

    def __init__(self, decoded_vocab: list[bytes], control_ids: frozenset[int] = frozenset()) -> None:
        pairs = sorted((b, i) for i, b in enumerate(decoded_vocab) if b)
        self._keys = [b for b, _ in pairs]
        self._ids = np.fromiter((i for _, i in pairs), dtype=np.int64, count=len(pairs))
        self.token_bytes = decoded_vocab
        """Each id's text as bytes (``b""`` for ids no grammar can produce)."""
        self.control_ids = control_ids
        """Control tokens that keep their text: the tokenizer never splits their text."""

    def extending(self, prefix: bytes) -> NDArray[np.int64]:
        """Ids of the tokens whose text starts with ``prefix`` and is longer."""
        lo = bisect.bisect_right(self._keys, prefix)
        end = prefix.rstrip(b"\xff")
        if not end:
            return self._ids[lo:]
        hi = bisect.bisect_left(self._keys, end[:-1] + bytes([end[-1] + 1]), lo)
        return self._ids[lo:hi]


_MEMO: dict[str, TokenExtensions] = {}
_MEMO_LOCK = threading.Lock()


def token_extensions(tokenizer: FamilyTokenizer) -> TokenExtensions:
    """The :class:`TokenExtensions` of a family's xgrammar vocabulary (built once, ~0.3 s)."""
    with _MEMO_LOCK:
        found = _MEMO.get(tokenizer.name)
        if found is None:
            found = _MEMO[tokenizer.name] = TokenExtensions(
                list(tokenizer.info.decoded_vocab), frozenset(tokenizer.control_tokens.values())
            )
        return found


def any_allowed(bitmask: NDArray[np.int32], ids: NDArray[np.int64]) -> bool:
    """Whether row 0 of ``bitmask`` allows any of ``ids``."""
    words = bitmask[0, ids >> 5].astype(np.int64)
    return bool(((words >> (ids & 31)) & 1).any())


@dataclass(frozen=True, slots=True)
class ForcedTokens:
    """What :func:`forced_prefix` appended: the tokens, and how many mask fills its checks took."""

    ids: tuple[int, ...]
    held_back: int
    """Tokens of the forced text left for the model to choose (a token could run past its end)."""
    fills: int


def forced_prefix(
    matcher: Any,
    text: str,
    tokenizer: FamilyTokenizer,
    bitmask: NDArray[np.int32],
    limit: int,
    extensions: TokenExtensions | None = None,
    fill: Callable[[Any], None] | None = None,
) -> ForcedTokens:
    """Tokenize the forced ``text`` and accept, in ``matcher``, the tokens of it that are safe to
    append without the model (at most ``limit``); returns them.

    Token ``j`` of the text is held back (with every token after it) when at some byte offset ``p``
    inside it a vocabulary token that the grammar allows at ``p`` starts with ``text[p:]`` and is
    longer: the model might write that token, and the tokenizer would too. The grammar is asked at
    ``p`` with a mask fill (on a fork of the matcher when ``p`` is inside a token). ``bitmask`` is
    scratch space; ``fill(matcher)`` fills it (the caller's timed fill), by default directly."""
    ext = extensions or token_extensions(tokenizer)
    ids = tokenizer.encode(text)[:limit]
    raw = text.encode("utf-8")
    fills = 0

    def allowed_at(m: Any, candidates: NDArray[np.int64]) -> bool:
        nonlocal fills
        fills += 1
        if fill is None:
            m.fill_next_token_bitmask(bitmask)
        else:
            fill(m)
        return any_allowed(bitmask, candidates)

    start = 0
    for j, token in enumerate(ids):
        piece = ext.token_bytes[token]
        if not piece or raw[start : start + len(piece)] != piece:
            return ForcedTokens(tuple(ids[:j]), len(ids) - j, fills)  # not the text's bytes: stop here
        # A control token is one id whenever the tokenizer meets its text: only its start can be a
        # boundary. Inside ordinary text any byte can (``":"`` + ``.x`` is ``":`` + ``".`` + ``x``).
        inner = 1 if token in ext.control_ids else len(piece)
        for p in range(start, start + inner):
            if 0x80 <= raw[p] < 0xC0:
                continue  # inside a UTF-8 character: no token boundary can fall here
            candidates = ext.extending(raw[p:])
            if candidates.size == 0:
                continue
            if p == start:
                risky = allowed_at(matcher, candidates)
            else:
                probe = matcher.fork()
                risky = probe.accept_string(raw[start:p]) and allowed_at(probe, candidates)
            if risky:
                return ForcedTokens(tuple(ids[:j]), len(ids) - j, fills)
        if not matcher.accept_token(token):  # never expected: the text is the grammar's own
            return ForcedTokens(tuple(ids[:j]), len(ids) - j, fills)
        start += len(piece)
    return ForcedTokens(tuple(ids), 0, fills)


__all__ = ["ForcedTokens", "TokenExtensions", "any_allowed", "forced_prefix", "token_extensions"]
