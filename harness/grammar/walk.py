"""A gold text walked through a compiled grammar token by token, the mask filled at every step: what
``harness grammar check``, the grammar bench and the tests use to ask "does the grammar accept this?"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.grammar.decode import decode
from harness.grammar.decode_result import DecodeResult
from harness.grammar.sources import GoldSource

if TYPE_CHECKING:
    from harness.grammar.tokenizers import FamilyTokenizer


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


__all__ = ["WalkResult", "walk_text"]
