"""What the decoding loop (``harness.grammar.decode``) takes and gives: its modes, the result of one
decode, and the running tally the loop keeps while it decodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.vocabulary import ErrorKind

MaskPolicy = Literal["always", "lazy"]
JumpMode = Literal["off", "append", "verify"]
JUMP_MODES: tuple[JumpMode, ...] = ("off", "append", "verify")
FinishReason = Literal["stop", "length", "rejected"]
DEAD_END = ErrorKind.grammar_dead_end
"""The matcher allowed no token at all (a grammar bug; never expected)."""


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
    forced: int = 0
    """Tokens appended by jump-forward (a forced stop id included): no source step chose them."""
    jumps: int = 0
    """Jump-forward appends (each one batch of forced tokens)."""
    held_back: int = 0
    """Tokens of forced text left to the model at a boundary (see ``harness.grammar.jump``)."""
    forced_at: tuple[int, ...] = ()
    """Indices into ``token_ids`` of the forced tokens."""
    drafted: int = 0
    """``verify``: drafted tokens evaluated (those the model did not choose were wasted)."""
    jump_us: tuple[float, ...] = ()
    """Microseconds of each jump-forward lookup that found text (forced string, tokenizing, the
    boundary check's mask fills, accepts); those fills are not in ``mask_us``."""

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def steps(self) -> int:
        """Source steps: tokens the source chose (``generated`` less the forced ones)."""
        return self.generated - self.forced


@dataclass(slots=True)
class DecodeRun:
    """What a decode has spent and emitted so far."""

    ids: list[int] = field(default_factory=list)
    mask_us: list[float] = field(default_factory=list)
    accept_us: list[float] = field(default_factory=list)
    grammar_ns: int = 0
    source_ns: int = 0
    fallbacks: int = 0
    forced: int = 0
    jumps: int = 0
    held_back: int = 0
    forced_at: list[int] = field(default_factory=list)
    drafted: int = 0
    jump_us: list[float] = field(default_factory=list)


__all__ = ["DEAD_END", "JUMP_MODES", "DecodeResult", "DecodeRun", "FinishReason", "JumpMode", "MaskPolicy"]
