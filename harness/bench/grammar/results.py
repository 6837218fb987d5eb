"""``harness bench grammar``'s files as typed records: its configuration, the growth curves' rows, the
summary line, and ``GrammarBench``, the whole of bench.json (its rows: ``figures``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from harness.bench.grammar.figures import GrammarRow
from harness.bench.records import BenchRecord, OmitsAbsent, SparseRecord
from harness.vocabulary import CONSTRAINED_STRATEGIES, FAMILIES

GRAMMAR_ENGINES = ("xgrammar", "llguidance")
"""Grammar engines the bench measures (not the model engines of ``harness run``)."""


class GrammarBenchConfig(BenchRecord):
    """What ``harness bench grammar`` measures, and how long it may take (bench.json's ``config``)."""

    families: tuple[str, ...] = FAMILIES
    """The model families."""
    strategies: tuple[str, ...] = CONSTRAINED_STRATEGIES
    """The constraint strategies (constrained ones)."""
    engines: tuple[str, ...] = GRAMMAR_ENGINES
    """The grammar engines."""
    tools_path: str | None = None
    """A JSON list of OpenAI tools or a .pym folder (None: ``inputs.DEFAULT_TOOLS``)."""
    calls_path: str | None = None
    """A CALLS.jsonl or a suite folder (None: ``inputs.DEFAULT_SUITE``)."""
    out_dir: str | None = None
    """Where bench.json, bench.md and the plots go (None: ``results/bench/grammar-<UTC time>``)."""
    quick: bool = False
    """Fewer outputs, repeats, mask-application positions and growth points (a smoke run)."""
    growth: bool = True
    """Also measure growth with the number of tools and the output length."""
    growth_corpus: str | None = None
    """Measure the tool-count growth on this real corpus (a tools path, or a benchmark's name: ``harness.benchmarks``) at 10 ... 1,000
    tools instead of on synthetic tools (``harness.bench.grammar.corpus``)."""
    repeats: int = 0
    """Compile repeats (0: 5, or 3 with ``quick``)."""
    budget_s: float = 0.0
    """Time budget per (family, strategy, engine) for timed walks (0: 40 s, or 8 s with ``quick``)."""
    max_outputs: int = 0
    """Gold outputs used (0: all, or 24 with ``quick``)."""
    extra: dict[str, Any] = Field(default_factory=dict, exclude=True)
    """Free-form notes (not written to bench.json)."""

    def resolved(self) -> GrammarBenchConfig:
        """The zeros replaced by their defaults (in place)."""
        self.repeats = self.repeats or (3 if self.quick else 5)
        self.budget_s = self.budget_s or (8.0 if self.quick else 40.0)
        self.max_outputs = self.max_outputs or (24 if self.quick else 0)
        return self


class GrowthToolsRow(BenchRecord):
    """One point of the growth curve against the number of tools (synthetic tool sets)."""

    family: str
    """The model family."""
    strategy: str
    """The constraint strategy."""
    engine: str
    """The grammar engine."""
    compile_ms_cold: float | None = None
    """Median cold compile."""
    compile_ms_cached: float | None = None
    """Median cached compile."""
    mask_us_p50: float | None = None
    """Median mask fill."""
    mask_us_p99: float | None = None
    """99th percentile mask fill."""
    mask_us_max: float | None = None
    """Slowest mask fill."""
    accept_us_p50: float | None = None
    """Median accept."""
    gold_accepted: int | None = None
    """Synthetic calls accepted."""
    gold_total: int | None = None
    """Synthetic calls checked."""
    outputs_timed: int | None = None
    """Calls walked within the budget."""
    tokens_timed: int | None = None
    """Tokens of the timed walks."""
    walk_ms_p50: float | None = None
    """Median whole walk."""
    expressible: bool | None = None
    """The engine could express the grammar."""
    note: str | None = None
    """Why not, or conversion notes."""
    artifact_chars: int | None = None
    """The artifact's length."""
    tools: int
    """Tools in the set (synthetic, or the first of a real corpus)."""
    corpus: str | None = None
    """The real corpus the set comes from (``--growth-tools``; None: synthetic)."""
    grammar_kb: float | None = None
    """The compiled grammar's size (xgrammar's ``memory_size_bytes``), in KiB (corpus curves)."""
    unmeasured: str | None = None
    """Why the point has no figures (``cells.NO_CONSTRAINT``)."""


class GrowthLengthRow(SparseRecord):
    """One point of the growth curves against the output's length."""

    family: str
    """The model family."""
    strategy: str
    """The constraint strategy."""
    engine: str
    """The grammar engine."""
    series: str
    """``string_chars`` (one call, a string argument of ``x`` characters) or ``parallel_calls`` (``x`` calls)."""
    x: int
    """The point on the curve."""
    chars: int | None = None
    """The rendered output's length."""
    tokens: int | None = None
    """Its tokens."""
    walk_ms: float | None = None
    """Median of the whole walk (None: skipped, see ``note``)."""
    mask_us_p50: float | None = None
    """Median mask fill."""
    mask_us_p99: float | None = None
    """99th percentile mask fill."""
    accepted: bool | None = None
    """The grammar accepted the output (None: not expressible)."""
    note: str | None = None
    """Why the point was skipped or not measured."""


class GrammarInputs(BenchRecord):
    """What the bench measured."""

    tools: int
    """Tools in the set."""
    tool_names: list[str]
    """Their names."""
    gold_outputs: int
    """Distinct gold outputs."""
    gold_source: str
    """Where they came from."""
    parallel: bool
    """Some gold output holds several calls (grammars allow parallel calls)."""


class Machine(BenchRecord):
    """Where the figures were measured."""

    platform: str
    """``platform.platform()``."""
    cpus: int | None
    """CPUs this process may run on."""


class GoalVerdict(BenchRecord):
    """One of the project's goals against the worst cell."""

    goal: float
    """The figure must be at most this."""
    worst: float | None
    """The worst cell's figure."""
    met: bool
    """``worst <= goal``."""


class LlguidanceSummary(BenchRecord):
    """llguidance's worst figures, alongside xgrammar's."""

    mask_us_p50: float | None
    """Worst median mask fill."""
    mask_us_p99: float | None
    """Worst 99th percentile mask fill."""
    compile_ms_cold: float | None
    """Worst matcher construction."""
    gold_rejected: int
    """Gold outputs refused over the expressible cells."""
    gold_rejected_special_in_text: int
    """Of them, special tokens where the grammar expects text (an engine difference)."""
    not_expressible: list[str]
    """The lanes (``family/strategy``) whose grammar it cannot express."""


class GrammarSummary(OmitsAbsent):
    """The final JSON line: the worst xgrammar figure per goal, llguidance's alongside."""

    OMITTED_WHEN_NONE = ("llguidance",)

    bench: str = "grammar"
    """Which bench."""
    out: str
    """The output folder."""
    tools: int
    """Tools in the set."""
    gold_outputs: int
    """Distinct gold outputs."""
    families: list[str]
    """The families measured."""
    strategies: list[str]
    """The strategies measured."""
    engines: list[str]
    """The grammar engines measured."""
    mask_us_p50: float | None = None
    """Worst cell's median mask fill."""
    mask_us_p99: float | None = None
    """Worst cell's 99th percentile mask fill."""
    mask_us_max: float | None = None
    """Worst cell's slowest mask fill."""
    compile_ms_cold: float | None = None
    """Worst cell's cold compile."""
    compile_ms_cached: float | None = None
    """Worst cell's cached compile."""
    accept_us_p50: float | None = None
    """Worst cell's median accept."""
    apply_us_p50: float | None = None
    """Worst cell's median mask application (xgrammar's kernel)."""
    apply_np_us_p50: float | None = None
    """Worst cell's median mask application (numpy)."""
    worst_at: dict[str, str | None]
    """Figure -> the lane (``family/strategy``) of the xgrammar cell it comes from."""
    gold_accepted: int
    """Gold outputs accepted over every xgrammar cell."""
    gold_total: int
    """Gold outputs checked over every xgrammar cell."""
    gold_rejected: int
    """``gold_total - gold_accepted`` (any is a grammar bug)."""
    forced_fraction: dict[str, float | None]
    """``family/strategy`` -> the fraction jump-forward forces."""
    steps_over_plain: dict[str, float | None]
    """``family/strategy`` -> model steps with jump-forward over the plain loop's."""
    retokenized: int
    """Outputs whose jump-forward tokens differ from the tokenizer's, over every cell."""
    compile_ms_cold_100_tools: float | None = None
    """Worst cold compile of the 100 synthetic tools (growth curve)."""
    goals: dict[str, GoalVerdict]
    """Each goal against its worst cell."""
    goals_met: bool
    """Every goal met and no gold output rejected."""
    llguidance: LlguidanceSummary | None = None
    """llguidance's figures, when it ran."""
    unmeasured: dict[str, str] = Field(default_factory=dict)
    """Lane (``family/strategy``) -> why its cells have no figures (vLLM builds no constraint there)."""
    duration_s: float | None
    """The bench's wall time."""


class GrammarBench(OmitsAbsent):
    """bench.json: the configuration, inputs, machine, every row, the growth curves and the summary."""

    OMITTED_WHEN_NONE = ("growth_tools", "growth_length", "stopped")

    bench: str = "grammar"
    """Which bench."""
    config: GrammarBenchConfig
    """The configuration as run (its ``extra`` notes left out)."""
    inputs: GrammarInputs
    """What was measured."""
    goals: dict[str, float] = Field(default_factory=dict)
    """The project's goals (each figure must be at most its goal)."""
    machine: Machine
    """Where."""
    versions: dict[str, str | None]
    """Python's and the libraries' versions."""
    setup_s: dict[str, float]
    """Family -> seconds to build its tokenizers."""
    started_at: str
    """UTC start, ISO 8601."""
    main: list[GrammarRow]
    """One row per family x strategy x engine."""
    growth_tools: list[GrowthToolsRow] | None = None
    """Growth with the number of tools (when measured)."""
    growth_length: list[GrowthLengthRow] | None = None
    """Growth with the output's length (when measured)."""
    duration_s: float | None = None
    """The bench's wall time."""
    stopped: str | None = None
    """The error that stopped the bench before its end (the file holds what was measured before it)."""
    summary: GrammarSummary | None = None
    """The final JSON line."""


__all__ = [
    "GRAMMAR_ENGINES",
    "GoalVerdict",
    "GrammarBench",
    "GrammarBenchConfig",
    "GrammarInputs",
    "GrammarSummary",
    "GrowthLengthRow",
    "GrowthToolsRow",
    "LlguidanceSummary",
    "Machine",
]
