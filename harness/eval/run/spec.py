"""A run's two shapes: what was asked (``RunSpec``: the options of ``harness run`` or a library call)
and what will run (``ResolvedRun``: every option settled once, by ``resolve.resolve_run``).

``RunSpec`` holds options as given: ``None`` means "not given" (the suite's, the engine's or, on
resume, the recorded value). ``ResolvedRun`` holds no ``None`` that means "decide later": the suite
and the bundle's agent read once, the engine and the model each family's requests carry, the matrix,
the case selection, the per-request settings (``Sampling``), the bounds and, on resume, the run.json
it continues. Both are frozen: resolving never changes what was asked.

Where the next features go without reshaping it: temperature, top_p and a seed are ``Sampling``
fields; one model per family is ``models`` (one entry per family, from ``--model FAMILY=NAME``, a
config file or the suite); the arguments of a vLLM server the run manages are ``EngineChoice``'s;
case selection by ids, tags, a seeded random subset or a shard is ``CaseSelection``'s (its ``select``
applies them). Each new field that changes the samples is recorded in run.json and compared on resume
(``resolve.MATRIX_FIELDS``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.agents import Agent
from harness.eval.data import Case, Suite
from harness.eval.store import RunRecord, Selection
from harness.vocabulary import Family, Strategy


class RunError(Exception):
    """A run that cannot start (bad options, a run directory in the way, a server that does not answer...);
    the message says why."""


@dataclass(frozen=True)
class RunSpec:
    """The options of a run, as given (``harness run``'s flags); None: not given."""

    suite_dir: Path
    engine: str = "oracle"
    base_urls: list[str] = field(default_factory=list)
    """OpenAI-compatible servers (openai engine); several = replicas serving the same model."""
    model: str | None = None
    """``--model NAME``: the model of every family of the run (``models`` names one per family)."""
    models: Mapping[str, str] = field(default_factory=dict)
    """``--model FAMILY=NAME`` (and a config file's ``models``): a model folder, hub id or served id per
    family; a family left out takes ``model``, then the suite's ``models``, then the engine's default."""
    vllm_args: list[str] | None = None
    """``--vllm-arg``: arguments added to each vLLM server's command line (None: none; on resume: the
    recorded ones)."""
    keep_server: bool = False
    """``--keep-server``: a vLLM server the run starts stays up for later runs (``harness vllm down``)."""
    target: str | None = None
    """Oracle only: replay gold through another system's grammar compiler (``vllm``)."""
    grammar_backend: str = "xgrammar"
    """``--grammar-backend``: the grammar library (oracle: in process; vllm: the server's structured-outputs
    backend), ``xgrammar`` or ``guidance``."""
    families: list[str] | None = None
    """``--family`` (names or ``Family`` members); None: the suite's, or what the engine implies."""
    strategies: list[str] | None = None
    """``--strategy``; None: the suite's."""
    limit: int | None = None
    """Only the first N cases; None = all (on resume: the recorded limit)."""
    selection: Selection | None = None
    """Case ids, tags, a seeded random subset, a shard (None: every case; on resume: the recorded one)."""
    retry_errors: bool = False
    """With ``resume``: run again the saved samples that ended in a ``model:*`` error."""
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
    temperature: float | None = None
    """Sampling temperature; None = the suite's ``temperature``, else 0 (greedy)."""
    top_p: float | None = None
    """Nucleus sampling; None = the suite's ``top_p``, else 1 (every token)."""
    seed: int | None = None
    """The run's seed, from which each sample's is derived; None = the suite's ``seed``, else a random
    one (recorded in run.json: ``--seed`` with it reproduces the run)."""
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
    model_args: Mapping[str, str] = field(default_factory=dict)
    """The model asked for per family (flags, config file, suite), as given: a folder, hub id or served id."""
    vllm_args: tuple[str, ...] = ()
    """Arguments added to each vLLM server the run starts (recorded in run.json)."""
    keep_server: bool = False
    """A vLLM server the run starts stays up for later runs."""
    grammar_backend: str = "xgrammar"
    """The grammar library that runs the constraints (``xgrammar``, ``guidance``)."""


@dataclass(frozen=True, slots=True)
class Sampling:
    """What every model request of the run carries beside its prompt, the same on every engine."""

    max_tokens: int
    """The token bound of one model response."""
    max_tokens_source: str
    """Where it came from, in words (``--max-tokens``, ``suite.yaml max_tokens`` or how it was derived)."""
    temperature: float = 0.0
    """0: greedy; above: sampled."""
    top_p: float = 1.0
    """Nucleus sampling (1: every token the grammar allows)."""
    seed: int | None = None
    """The run's seed (None: a run recorded before seeds were): see ``seed_for``."""

    def seed_for(self, case_id: str, epoch: int) -> int | None:
        """The seed a sample's requests carry when the run samples (temperature > 0), else None."""
        if self.temperature <= 0.0 or self.seed is None:
            return None
        return sample_seed(self.seed, case_id, epoch)


def sample_seed(run_seed: int, case_id: str, epoch: int) -> int:
    """A sample's seed: a hash of the run's seed, the case and the epoch, below 2**31 (every server
    takes it). Not of the family or strategy: each lane of a case's epoch draws the same random
    numbers, so two strategies (or a baseline and a candidate run with one seed) differ by what
    they change, not by luck."""
    digest = hashlib.sha256(f"{run_seed}/{case_id}/{epoch}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 2**31


@dataclass(frozen=True, slots=True)
class CaseSelection:
    """Which of the suite's cases run, in the suite's order: ids and tags, then a seeded random subset,
    then the first ``limit``, then a shard (every N-th from the I-th, so N shards partition exactly the
    cases one run without ``--shard`` would take)."""

    limit: int | None = None
    """Only the first N cases (None: all)."""
    selection: Selection | None = None
    """``--sample-id``, ``--tag``, ``--sample``/``--seed``, ``--shard`` (None: none given)."""

    def _matches(self, case: Case) -> bool:
        chosen = self.selection
        assert chosen is not None
        if chosen.ids and not any(fnmatch.fnmatchcase(case.id, p.split("/")[0]) for p in chosen.ids):
            return False
        return not chosen.tags or any(t in case.tags for t in chosen.tags)

    def select(self, cases: Sequence[Case]) -> list[Case]:
        """The selected cases of ``cases``."""
        chosen, picked = self.selection, list(cases)
        if chosen is not None and (chosen.ids or chosen.tags):
            picked = [c for c in picked if self._matches(c)]
        if chosen is not None and chosen.sample is not None and chosen.sample < len(picked):
            keep = sorted(random.Random(chosen.seed or 0).sample(range(len(picked)), chosen.sample))
            picked = [picked[i] for i in keep]
        if self.limit:
            picked = picked[: self.limit]
        if chosen is not None and chosen.shard is not None:
            picked = picked[chosen.shard.index - 1 :: chosen.shard.count]
        return picked

    def wants(self, sample_id: str, case_id: str) -> bool:
        """Whether a sample of a selected case runs: ``--sample-id`` patterns naming whole sample ids
        (``case/family/strategy/epoch``) keep only theirs; case-id patterns keep every sample of a case."""
        patterns = self.selection.ids if self.selection is not None else ()
        whole = [p for p in patterns if "/" in p]
        if not whole:
            return True
        return any(fnmatch.fnmatchcase(sample_id, p) for p in whole) or any(
            fnmatch.fnmatchcase(case_id, p) for p in patterns if "/" not in p)


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
    retry_errors: bool = False
    """A resumed run runs again its saved samples that ended in a ``model:*`` error."""

    def lanes(self) -> list[tuple[Family, Strategy]]:
        """(family, strategy) of every agent variant, in run order."""
        return [(family, strategy) for family in self.families for strategy in self.strategies]

    def selected_cases(self) -> list[Case]:
        return self.cases.select(self.suite.cases)


__all__ = ["CaseSelection", "EngineChoice", "ResolvedRun", "RunError", "RunSpec", "Sampling", "sample_seed"]
