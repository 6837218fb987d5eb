"""A run with every option settled (``ResolvedRun``, built once by ``resolve.resolve_run``) and the
pieces derived from its options: the per-request settings (``Sampling``) and the case selection
(``CaseSelection``).

``ResolvedRun.options`` is the run's ``RunOptions`` (``harness.run_options``) with no ``None`` that
means "decide later": the suite's, the engine's or the recorded values filled in. Beside it: the suite
and the bundle's agent read once, the served model each family's requests carry, and on resume the
run.json it continues. Frozen: resolving never changes what was asked.
"""

from __future__ import annotations

import fnmatch
import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.agents import Agent
from harness.eval.data import Case, Suite
from harness.eval.store import RunRecord
from harness.run_options import RunOptions, Selection
from harness.tools import ToolSource
from harness.vocabulary import Family, Strategy


class RunError(Exception):
    """A run that cannot start (bad options, a run directory in the way, a server that does not answer...);
    the message says why."""


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
    source: ToolSource
    """The bundle's tool source (the agent's tools, the samples' sessions, scoring's state checks)."""
    run_dir: Path
    """The results directory."""
    options: RunOptions
    """The run's options, settled: what run.json records (``RunRecord.options``)."""
    models: Mapping[Family, str]
    """Family -> the served model id its requests carry (one per family)."""
    max_tokens_source: str
    """Where the token bound came from, in words (``--max-tokens``, ``suite.yaml max_tokens``, derived)."""
    resumed: RunRecord | None = None
    """The run.json a resumed run continues (its recorded values are the ones above); None: a new run."""
    retry_errors: bool = False
    """A resumed run runs again its saved samples that ended in a ``model:*`` error."""

    @property
    def families(self) -> tuple[Family, ...]:
        """Model families, in run order."""
        return self.options.families or ()

    @property
    def strategies(self) -> tuple[Strategy, ...]:
        """Constraint strategies, in run order."""
        return self.options.strategies or ()

    @property
    def epochs(self) -> int:
        return self.options.epochs or 1

    @property
    def cases(self) -> CaseSelection:
        return CaseSelection(limit=self.options.limit, selection=self.options.selection)

    @property
    def sampling(self) -> Sampling:
        return Sampling(max_tokens=self.options.max_tokens or 0, max_tokens_source=self.max_tokens_source,
                        temperature=self.options.temperature or 0.0, top_p=self.options.top_p or 1.0,
                        seed=self.options.seed)

    def lanes(self) -> list[tuple[Family, Strategy]]:
        """The run's lanes: (family, strategy) of every agent, in run order."""
        return [(family, strategy) for family in self.families for strategy in self.strategies]

    def selected_cases(self) -> list[Case]:
        return self.cases.select(self.suite.cases)


__all__ = ["CaseSelection", "ResolvedRun", "RunError", "Sampling", "sample_seed"]
