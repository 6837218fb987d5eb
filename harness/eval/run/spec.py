"""A run's two shapes: what was asked (``RunSpec``: the options of ``harness run`` or a library call)
and what will run (``ResolvedRun``: every option settled once, by ``resolve.resolve_run``).

``RunSpec`` holds options as given: ``None`` means "not given" (the suite's, the engine's or, on
resume, the recorded value). ``ResolvedRun`` holds no ``None`` that means "decide later": the suite
and the bundle's agent read once, the engine and the model each family's requests carry, the matrix,
the case selection, the per-request settings (``Sampling``), the bounds and, on resume, the run.json
it continues. Both are frozen: resolving never changes what was asked.

Where the next features go without reshaping it: temperature, top_p and a seed are ``Sampling``
fields; one model per family is ``models`` (already one entry per family); the arguments of a vLLM
server the run manages belong to ``EngineChoice``; case selection by ids, tags, a seeded random subset
or a shard are ``CaseSelection`` fields (its ``select`` applies them). Each new field that changes the
samples is recorded in run.json and compared on resume (``resolve.MATRIX_FIELDS``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.agents.agent import Agent
from harness.eval.data.cases import Case
from harness.eval.data.suite import Suite
from harness.eval.store.records import RunRecord
from harness.vocabulary import Family, Strategy


@dataclass(frozen=True)
class RunSpec:
    """The options of a run, as given (``harness run``'s flags); None: not given."""

    suite_dir: Path
    engine: str = "oracle"
    base_urls: list[str] = field(default_factory=list)
    """OpenAI-compatible servers (openai engine); several = replicas serving the same model."""
    model: str | None = None
    target: str | None = None
    """Oracle only: replay gold through another system's grammar compiler (``vllm``)."""
    families: list[str] | None = None
    """``--family`` (names or ``Family`` members); None: the suite's, or what the engine implies."""
    strategies: list[str] | None = None
    """``--strategy``; None: the suite's."""
    limit: int | None = None
    """Only the first N cases; None = all (on resume: the recorded limit)."""
    concurrency: int | None = None
    """Samples in flight; None = the engine's default (its ``EngineInfo.concurrency``)."""
    epochs: int | None = None
    """Repetitions of every case; None = 1 (on resume: the recorded number)."""
    out: Path | None = None
    resume: bool = False
    sample_timeout_s: float = 300.0
    """Seconds one sample may take (positive and finite)."""
    max_steps_per_turn: int | None = None
    """Model calls per user turn of an episode; None = the bundle's ``kernel.max_steps``. When the
    last one still calls tools, the episode ends there and its state_match fails with
    ``state:force_terminated`` (BFCL's force quit; BFCL's 20 responses with calls plus one to answer
    are 21, as ``bundles/bfcl`` sets)."""
    max_tokens: int | None = None
    """Bound per model response; None = the suite's ``max_tokens``, else derived from its longest gold
    answer (``harness.eval.run.token_bound``). Always sent, and recorded in run.json with its source."""
    results_root: Path = Path("results")


@dataclass(frozen=True, slots=True)
class EngineChoice:
    """The engine a run uses and what the run asks of it (the engine itself is opened by
    ``resolve.resolve_run`` and handed over beside the resolved run)."""

    name: str
    """The registered engine (``oracle``, ``local``, ``openai``, ``vllm``)."""
    base_urls: tuple[str, ...]
    """``--base-url``: servers or replicas (empty: the engine's own rule)."""
    model: str | None
    """``--model`` as given (the served ids per family are ``ResolvedRun.models``)."""
    target: str | None
    """Oracle only: whose grammar compiler the gold is replayed through."""
    concurrency: int
    """Samples in flight."""


@dataclass(frozen=True, slots=True)
class Sampling:
    """What every model request of the run carries beside its prompt, the same on every engine."""

    max_tokens: int
    """The token bound of one model response."""
    max_tokens_source: str
    """Where it came from, in words (``--max-tokens``, ``suite.yaml max_tokens`` or how it was derived)."""


@dataclass(frozen=True, slots=True)
class CaseSelection:
    """Which of the suite's cases run, in the suite's order."""

    limit: int | None = None
    """Only the first N cases (None: all)."""

    def select(self, cases: Sequence[Case]) -> list[Case]:
        """The selected cases of ``cases``."""
        return list(cases[: self.limit]) if self.limit else list(cases)


@dataclass(frozen=True, slots=True)
class ResolvedRun:
    """A run with every option settled (see the module doc); built by ``resolve.resolve_run``."""

    suite: Suite
    """The suite, loaded and checked."""
    agent: Agent
    """The bundle's agent: bundle.yaml and its tools, read once for the whole run (generation and scoring)."""
    run_dir: Path
    """The results directory."""
    engine: EngineChoice
    models: Mapping[Family, str]
    """Family -> the served model id its requests carry (one per family)."""
    families: tuple[Family, ...]
    """Model families, in run order."""
    strategies: tuple[Strategy, ...]
    """Constraint strategies, in run order."""
    cases: CaseSelection
    epochs: int
    """Repetitions of every case."""
    sampling: Sampling
    max_steps_per_turn: int
    """Model calls per user turn of an episode."""
    sample_timeout_s: float
    """Seconds one sample may take."""
    resumed: RunRecord | None = None
    """The run.json a resumed run continues (its recorded values are the ones above); None: a new run."""

    def lanes(self) -> list[tuple[Family, Strategy]]:
        """(family, strategy) of every agent variant, in run order."""
        return [(family, strategy) for family in self.families for strategy in self.strategies]

    def selected_cases(self) -> list[Case]:
        return self.cases.select(self.suite.cases)


__all__ = ["CaseSelection", "EngineChoice", "ResolvedRun", "RunSpec", "Sampling"]
