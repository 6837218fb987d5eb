"""What ``harness bench grammar`` measures of one grammar, as typed records: one ``GrammarRow`` per
family x strategy x grammar engine (bench.json's ``main``).

The figures of a row come in groups (``CompileFigures``, ``WalkFigures``, ``JumpFigures``,
``ApplyFigures``): an engine measures the groups it can (llguidance has no compiled-grammar cache, no
jump-forward and no mask application here; a grammar it cannot express has none), so a row holds the
fields that were measured and is written with exactly those keys (``SparseRecord``). Figures are
microseconds unless the name says ms; ``None`` is a figure that could not be measured.
"""

from __future__ import annotations

from harness.bench.records import BenchRecord, SparseRecord


class RenderError(BenchRecord):
    """A gold answer the family's format cannot hold (e.g. a FunctionGemma string holding ``<escape>``)."""

    output_id: str
    """The gold output."""
    error: str
    """Why it cannot be rendered."""


class Rejection(BenchRecord):
    """A gold output the grammar refused (any is a grammar bug, or an engine difference named as such)."""

    output_id: str
    """The gold output."""
    reason: str | None
    """Where and why, in words."""
    text: str
    """The output's first 300 characters."""


class SlowMask(BenchRecord):
    """One of the slowest mask fills of the xgrammar walks, timed again at the same matcher state."""

    us: float
    """The fill as timed in the walk."""
    retimed_us: float
    """The fastest of three fills at the same state (fast again: the machine, not the grammar)."""
    output_id: str
    """The gold output being walked."""
    step: int
    """The token position."""
    before: str
    """The text of the 8 tokens before (its last 40 characters)."""
    next: str
    """The gold token's text at this step (``<end>`` for the stop)."""


class CompileFigures(SparseRecord):
    """Compile times: cold (cache cleared before each) and cached, over ``compile_repeats`` compiles."""

    compile_ms_cold: float | None = None
    """Median of the cold compiles (llguidance: the matcher's construction)."""
    compile_ms_cold_min: float | None = None
    """Fastest cold compile."""
    compile_ms_cold_max: float | None = None
    """Slowest cold compile."""
    compile_ms_cached: float | None = None
    """Median of the cached compiles (llguidance has no cache: None)."""
    compile_cache_hits: int | None = None
    """Cached compiles that hit the cache."""
    compile_repeats: int | None = None
    """Compiles of each kind."""


class WalkFigures(SparseRecord):
    """The gold outputs walked through the grammar: the mask filled and timed at every step."""

    outputs: int | None = None
    """Gold outputs checked."""
    outputs_timed: int | None = None
    """Of them, walked within the time budget (the rest checked for acceptance only)."""
    tokens_timed: int | None = None
    """Tokens of the timed walks."""
    mask_us_p50: float | None = None
    """Every mask fill of every timed walk: median."""
    mask_us_p90: float | None = None
    """90th percentile of the mask fills."""
    mask_us_p99: float | None = None
    """99th percentile of the mask fills."""
    mask_us_max: float | None = None
    """Slowest mask fill."""
    first_mask_us_p50: float | None = None
    """Median of the fills at step 0."""
    accept_us_p50: float | None = None
    """Every ``accept_token`` (llguidance: ``consume_token``): median."""
    accept_us_p90: float | None = None
    """90th percentile of the accepts."""
    accept_us_p99: float | None = None
    """99th percentile of the accepts."""
    accept_us_max: float | None = None
    """Slowest accept."""
    walk_ms_p50: float | None = None
    """Median of a whole timed walk."""
    walk_ms_total: float | None = None
    """All timed walks together."""
    gold_accepted: int | None = None
    """Gold outputs the grammar accepts."""
    gold_total: int | None = None
    """Gold outputs checked."""
    gold_rejected_special_in_text: int | None = None
    """llguidance: refusals of a special token where the grammar expects text (an engine difference)."""
    mask_us_max_retimed: float | None = None
    """The slowest fill of ``slowest_masks`` timed again (xgrammar)."""
    rejections: list[Rejection] | None = None
    """The first refused gold outputs."""
    slowest_masks: list[SlowMask] | None = None
    """The slowest mask fills, each timed again (xgrammar)."""


class JumpFigures(SparseRecord):
    """Jump-forward on the gold outputs, no model: how much of each output the grammar forces."""

    forced_fraction: float | None = None
    """Tokens appended without a model step, over all tokens emitted (the stop included)."""
    steps_over_plain: float | None = None
    """Model steps with jump-forward over those of the plain loop."""
    jump_outputs: int | None = None
    """Gold outputs walked with jump-forward."""
    retokenized: int | None = None
    """Outputs whose tokens differ from the tokenizer's encoding of the whole text."""
    held_back: int | None = None
    """Forced tokens left to the model at a boundary."""
    jump_failed: list[str] | None = None
    """Gold outputs the jump-forward walk did not reproduce (the first few)."""
    jump_us_p50: float | None = None
    """Each jump-forward lookup (forced string, tokenizing, boundary check): median."""
    jump_us_p90: float | None = None
    """90th percentile of the lookups."""
    jump_us_p99: float | None = None
    """99th percentile of the lookups."""
    jump_us_max: float | None = None
    """Slowest lookup."""


class ApplyFigures(SparseRecord):
    """Applying real masks to full-vocabulary float32 logits (median of 5 per position)."""

    vocab_size: int | None = None
    """The tokenizer's vocabulary."""
    apply_positions: int | None = None
    """Positions of the longest gold walk whose masks were applied."""
    apply_us_p50: float | None = None
    """xgrammar's CPU kernel on a torch tensor: median over positions."""
    apply_us_max: float | None = None
    """xgrammar's kernel: slowest position."""
    apply_np_us_p50: float | None = None
    """The decode loop's numpy path: median over positions."""
    apply_np_us_max: float | None = None
    """The numpy path: slowest position."""
    allowed_tokens_p50: float | None = None
    """Tokens a mask allows: median over positions."""


class Measured(SparseRecord):
    """Which grammar engine measured, and whether it could."""

    engine: str
    """``xgrammar`` or ``llguidance`` (a grammar engine, not a model engine)."""
    expressible: bool | None = None
    """The engine could express the grammar exactly (else ``note`` says why and nothing is measured)."""
    note: str | None = None
    """Notes on the conversion, or why the grammar is not expressible."""


# A record's keys come in the order of its classes from the last base to the first (pydantic collects
# fields along the reversed MRO): engine, compile, walk, jump-forward, mask application.
class EngineFigures(ApplyFigures, JumpFigures, WalkFigures, CompileFigures, Measured):
    """Everything one grammar engine measured of one grammar."""


class GrammarCell(SparseRecord):
    """One lane's (family x strategy) grammar for a tool set."""

    family: str
    """The model family."""
    strategy: str
    """The constraint strategy."""
    tools: int | None = None
    """Tools in the set."""
    parallel: bool | None = None
    """Grammars built with ``allow_parallel_calls``."""
    artifact_kind: str | None = None
    """``grammar``, ``json`` or ``structural_tag``."""
    artifact_chars: int | None = None
    """The artifact's length."""
    build_ms: float | None = None
    """The family adapter building the artifact."""
    render_errors: list[RenderError] | None = None
    """Gold answers the format cannot hold (listed, not measured)."""
    unmeasured: str | None = None
    """Why the cell has no figures, a named reason (``cells.NO_CONSTRAINT``: vLLM builds no constraint
    for this family and strategy), where a number would be."""


class GrammarRow(EngineFigures, GrammarCell):
    """One family x strategy x grammar engine of bench.json's ``main``: the cell, then the figures."""


__all__ = [
    "ApplyFigures",
    "CompileFigures",
    "EngineFigures",
    "GrammarCell",
    "GrammarRow",
    "JumpFigures",
    "Measured",
    "Rejection",
    "RenderError",
    "SlowMask",
    "WalkFigures",
]
