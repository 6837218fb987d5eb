"""The shapes every engine takes for a run, and the small records they share (``harness.engines.registry``
names the engines; each engine's module holds its opener).

A run opens its engine once (an ``Opener``: ``(options, context) -> (RunEngine, families)``) and asks it
for one client per sample. Two shapes cover today's engines: ``PerSampleClients`` builds a fresh client
per sample (the oracle, whose answers are the gold of the sample's ``SampleContext``) and
``SharedClient`` gives every sample the same one (an OpenAI-compatible server, the embedded engine).
``GoldRelay`` puts each sample's gold answer into its requests when the served model is an oracle
(``harness serve --engine oracle``). ``GrammarTarget`` is another engine's grammar compiler the oracle
replays gold through (``--target``), asked of the registry, so the oracle names no other engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.agents import (
    CompletionRequest,
    CompletionResponse,
    ConstraintArtifact,
    DecodingConstraint,
    LLMClient,
    ToolCall,
)
from harness.run_options import RunOptions

if TYPE_CHECKING:
    from harness.agents import ModelConfig

SERVED_PREFIX = "oracle-"
"""Model ids of the served oracle (``harness serve --engine oracle``): ``oracle-<family>``. A server
whose models all carry it gets each sample's gold answer in its requests (``GoldRelay``)."""


class EngineError(ValueError):
    """An engine that cannot be set up for this run (bad options, no server, no weights); says why."""


@dataclass(frozen=True, slots=True)
class EngineContext:
    """Where an engine opened for a run works, beside what the run asks of it (its ``RunOptions``:
    ``engine``, ``base_urls``, ``model``, ``models``, ``vllm_args``, ``keep_server``, ``target``,
    ``families``, ``sample_timeout_s``)."""

    run_dir: Path | None = None
    """The run's directory, for files an engine keeps (a vLLM server's log)."""
    log: Callable[[str], None] = field(default=lambda _m: None, compare=False)
    """Where an engine reports what it is doing before samples start (a server starting)."""
    engine_log: Callable[[str], None] | None = field(default=None, compare=False)
    """Where an in-process engine's own log lines go (llama.cpp's): the run's log file, not the
    terminal (None: Python's logging, logger ``harness.engines``)."""
    bundle_model: ModelConfig | None = None
    """The bundle's ``model`` section: defaults for the server, its key, the model id and its family."""


@dataclass(frozen=True, slots=True)
class SampleContext:
    """What an engine may know of the sample it answers, given to ``RunEngine.client_for``. A model
    engine needs the family and constraint at most; a replay (the oracle) answers from ``gold``."""

    sample_id: str
    """``<case_id>/<family>/<strategy>/<epoch>``, as samples.jsonl names it."""
    family: str
    """The model family the requests are formatted for."""
    constraint: DecodingConstraint
    """The sample's decoding constraint (its strategy, parallel calls, text answers)."""
    gold: tuple[tuple[ToolCall, ...], ...] = ()
    """The sample's gold answers, request by request (an empty answer is a closing plain message):
    what the oracle replays; an engine that is not a replay ignores them."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A server a run's requests go to, as its preflight checks it before the first sample."""

    family: str
    """The family whose requests it answers."""
    base_url: str
    """``http://host:port/v1``."""
    model: str
    """The served model id the family's requests carry."""
    api_key: str | None = None
    """The key sent (None: none configured)."""


class RunEngine(Protocol):
    """An engine set up for one run: one client per sample (the oracle, which replays that sample's
    gold) or one shared client (a server, the embedded engine)."""

    name: str
    """The registry name (``oracle``, ``local``, ``openai``...)."""
    note: str
    """What the engine is, in words, for run.json and reports."""
    base_url: str | None
    model_id: str
    """The served model id, for run.json (the requests carry ``model_for(family)``)."""
    stream: bool
    """Requests stream (a server: time to first token is then measured as a client sees it)."""

    @property
    def audits_answers(self) -> bool:
        """Each answer to a harness constraint is walked through it (``constraint:not_enforced``): every
        engine but the oracle, which replays gold through the grammar itself."""
        ...

    def model_for(self, family: str) -> str:
        """The served model id the requests of ``family`` carry (one server per family: its own)."""
        ...

    def prepare(self, families: list[str]) -> None:
        """Load what every sample needs (tokenizers, weights, a started server) before samples are timed."""
        ...

    def describe(self) -> dict[str, Any]:
        """What run.json records beyond the note once the engine ran (servers, replicas); may be empty."""
        ...

    def endpoints(self, families: list[str]) -> list[Endpoint]:
        """The servers the families' requests go to, once ``prepare`` ran ([]: an in-process engine)."""
        ...

    def client_for(self, sample: SampleContext) -> LLMClient:
        """The client of one sample (see ``SampleContext``)."""
        ...

    async def aclose(self) -> None: ...


Opener = Callable[[RunOptions, EngineContext], tuple[RunEngine, list[str] | None]]
"""``(options, context) -> (engine, families)``: the families to run, or None for the suite's."""


SampleClient = Callable[[SampleContext], LLMClient]
"""The client of one sample, from what the engine may know of it."""


@dataclass
class PerSampleClients:
    """A fresh client per sample from ``factory`` (the oracle: each sample replays its own gold)."""

    name: str
    note: str
    factory: SampleClient
    warm: Callable[[list[str]], None] | None = None
    """Loads what samples need (tokenizers, compilers) before they are timed."""
    base_url: str | None = None
    model_id: str = ""
    stream: bool = False

    @property
    def audits_answers(self) -> bool:
        return False  # the oracle: each sample replays its gold through the grammar

    def model_for(self, family: str) -> str:
        return self.model_id

    def prepare(self, families: list[str]) -> None:
        if self.warm is not None:
            self.warm(families)

    def describe(self) -> dict[str, Any]:
        return {}

    def endpoints(self, families: list[str]) -> list[Endpoint]:
        return []

    def client_for(self, sample: SampleContext) -> LLMClient:
        return self.factory(sample)

    async def aclose(self) -> None:
        return None


class GoldRelay:
    """Per sample, around the run's shared client: each request carries the sample's next gold
    answer in the ``oracle`` field that ``harness serve --engine oracle`` reads. Used when the served
    model is an oracle (``oracle-<family>``): the whole HTTP path runs with answers known to be right."""

    def __init__(self, inner: Any, answers: Sequence[Sequence[Any]], strategy: str) -> None:
        self.inner, self.answers, self.strategy = inner, [list(a) for a in answers], strategy

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        calls = self.answers.pop(0) if self.answers else []
        gold = {"calls": [{"name": c.name, "arguments": c.arguments} for c in calls], "strategy": self.strategy}
        return await self.inner.chat_completion(
            dataclasses.replace(request, extra_body={**request.extra_body, "oracle": gold})
        )

    async def aclose(self) -> None:
        """The shared client is closed by the run."""


@dataclass
class SharedClient:
    """One client for every sample: an OpenAI-compatible server or the embedded engine."""

    name: str
    note: str
    base_url: str | None
    model_id: str
    client: Any
    relay_gold: bool = False
    stream: bool = False
    """Stream responses (a server: time to first token is then measured as a client sees it)."""

    models: dict[str, str] | None = None
    """Family -> the served model id its requests carry, when the families are served different models."""
    base_urls: tuple[str, ...] = ()
    """The servers a preflight checks (empty: an in-process engine)."""

    def model_for(self, family: str) -> str:
        return (self.models or {}).get(family, self.model_id)

    api_key: str | None = None
    """The key sent to the servers (None: none configured)."""
    dialect: dict[str, Any] | None = None
    """The servers' dialect as run.json records it (``harness.engines.dialects``; None: an in-process engine)."""

    def endpoints(self, families: list[str]) -> list[Endpoint]:
        """Every server (each replica) for every family ([] for an in-process engine)."""
        return [Endpoint(family, url, self.model_for(family), self.api_key)
                for family in families for url in self.base_urls]

    def prepare(self, families: list[str]) -> None:
        """Load an in-process engine's weights before samples are timed (a server needs nothing)."""
        load = getattr(self.client, "load", None)
        if callable(load):
            load()

    def describe(self) -> dict[str, Any]:
        """Per-replica request counts when the client spreads requests over several servers."""
        replicas = getattr(self.client, "describe", None)
        out: dict[str, Any] = {"replicas": replicas()} if callable(replicas) else {}
        return {**out, "dialect": self.dialect} if self.dialect else out

    @property
    def audits_answers(self) -> bool:
        return not self.relay_gold

    def client_for(self, sample: SampleContext) -> LLMClient:
        from harness.engines.dialects.audit import EnforcementAudit

        if self.relay_gold:  # a served oracle replays gold through the grammar itself, as the oracle does
            return GoldRelay(self.client, sample.gold, sample.constraint.strategy)
        return EnforcementAudit(self.client, sample.family)

    async def aclose(self) -> None:
        await self.client.aclose()


@dataclass(frozen=True, slots=True)
class MaskDifference:
    """Where a target's grammar and the harness's allow different tokens along one token stream."""

    steps: int
    """Steps compared (every token of the stream, and the end)."""
    differing_steps: int
    """Steps where the two allowed sets differ."""
    target_only: tuple[int, ...]
    """A few ids only the target allows (e.g. special tokens as text)."""
    harness_only: tuple[int, ...]
    """A few ids only the harness allows."""


class GrammarTarget(Protocol):
    """An engine's own grammar compiler for one family, in process (``--engine oracle --target NAME``):
    gold is replayed through the grammar it compiles, to predict what that engine's server accepts."""

    @property
    def stop_ids(self) -> list[int]:
        """The end tokens the target's matcher is given."""
        ...

    def load(self) -> None:
        """Load the target's tokenizer and compiler before samples are timed."""
        ...

    def compile(self, artifact: ConstraintArtifact) -> tuple[Any, float, bool]:
        """(compiled grammar, compile ms, whether it was cached); ConstraintError for one it refuses."""
        ...

    def difference(self, target_grammar: Any, harness_grammar: Any, ids: list[int]) -> MaskDifference:
        """Walk ``ids`` through both grammars side by side and compare the allowed sets at every step."""
        ...


__all__ = [
    "SERVED_PREFIX",
    "Endpoint",
    "EngineContext",
    "EngineError",
    "GoldRelay",
    "GrammarTarget",
    "MaskDifference",
    "Opener",
    "PerSampleClients",
    "RunEngine",
    "SampleClient",
    "SampleContext",
    "SharedClient",
]
