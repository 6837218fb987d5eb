"""The one list of model engines: what ``harness run --engine`` and ``harness serve --engine`` accept.

An engine is registered with one ``EngineInfo`` line below; its code is a module of its own. For a
run it provides an opener, ``open(options, context) -> (RunEngine, families)`` (the run's
``RunOptions`` and where it works), that sets the engine up once
per run; ``harness serve`` needs a ``server(**options) -> ServedEngine`` as well. Adding an engine
(say ``vllm``, in ``harness/engines/vllm/``) is that module plus one line here. Openers and servers
are named by import path and load on first use, so this table imports nothing heavy.

Today: ``oracle`` (gold replay through the grammar, no model), ``local`` (the embedded llama.cpp
engine), ``openai`` (any OpenAI-compatible server, or replicas), ``vllm`` (a real vLLM server the run
starts and stops).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.agents import DecodingConstraint, LLMClient, ToolCall
from harness.run_options import RunOptions

if TYPE_CHECKING:
    from harness.agents import ModelConfig
    from harness.engines.served import ServedEngine


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


@dataclass(frozen=True, slots=True)
class EngineInfo:
    """One registered engine."""

    name: str
    summary: str
    """One line for ``--help``."""
    opener: str
    """``module:function`` of its ``Opener``."""
    server: str | None = None
    """``module:function`` building its ``ServedEngine`` (``harness serve``); None: not servable."""
    availability: str | None = None
    """``module:function`` returning None when the engine can run here, else why not."""
    concurrency: int = 1
    """Samples in flight by default. (The bound per model response is the run's, the same on every
    engine: ``harness.eval.run.token_bound``.)"""
    serve_options: tuple[str, ...] = field(default=())
    """The ``harness serve`` options it takes (``mask_policy``, ``n_ctx``...)."""
    serves_models: bool = False
    """It runs the model a run names (``--model``, a suite's ``models``): a server engine."""


REGISTRY: dict[str, EngineInfo] = {
    info.name: info
    for info in (
        # CPU-bound on the event loop: more samples in flight only add noise to the mask times it measures.
        EngineInfo(
            "oracle", "gold replay through the grammar, no model (measures grammars)",
            opener="harness.engines.openers:open_oracle", server="harness.engines.oracle.engine:ServedOracle",
            serve_options=("grammar_backend",),
        ),
        # One llama.cpp context: requests are serialized anyway.
        EngineInfo(
            "local", "Gemma 3 270M (base) on llama.cpp, in FunctionGemma's format",
            opener="harness.engines.openers:open_local", server="harness.engines.local:LocalEngine",
            availability="harness.engines.openers:local_unavailable", serve_options=("mask_policy", "n_ctx"),
        ),
        # A server gains from requests in flight.
        EngineInfo(
            "openai", "any OpenAI-compatible server (vLLM first); several --base-url = replicas",
            opener="harness.engines.openers:open_openai", concurrency=4, serves_models=True,
        ),
        # A real vLLM server per family, started and stopped by the run; it batches requests in flight:
        # 8 at a time ran the main job's 150 samples in 75 s against 110 s at 4, every answer the same
        # (docs/measurements.md).
        EngineInfo(
            "vllm", "a real vLLM server the harness starts and stops (Gemma 3 270M base weights)",
            opener="harness.engines.vllm.opener:open_vllm",
            availability="harness.engines.vllm.launch:vllm_unavailable", concurrency=8, serves_models=True,
        ),
    )
}
ENGINE_NAMES: tuple[str, ...] = tuple(REGISTRY)
SERVED_ENGINE_NAMES: tuple[str, ...] = tuple(n for n, info in REGISTRY.items() if info.server)


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def get_engine(name: str) -> EngineInfo:
    """The registered engine ``name``; EngineError naming the known ones otherwise."""
    info = REGISTRY.get(name)
    if info is None:
        raise EngineError(f"unknown engine {name!r}: expected one of {', '.join(ENGINE_NAMES)}")
    return info


def open_engine(options: RunOptions, context: EngineContext | None = None) -> tuple[RunEngine, list[str] | None]:
    """Set ``options.engine`` up for a run (see ``Opener``). An engine that cannot run here is an EngineError
    naming what is missing and how to install it: never another engine in its place (a stand-in would
    report its figures as the asked-for engine's)."""
    name = options.engine
    why = unavailable(name)
    if why is not None:
        raise EngineError(f"--engine {name} cannot run on this machine: {why}")
    opener: Opener = _load(get_engine(name).opener)
    return opener(options, context or EngineContext())


def unavailable(name: str) -> str | None:
    """None when engine ``name`` can run on this machine, else why not (a package is missing...)."""
    info = get_engine(name)
    return None if info.availability is None else _load(info.availability)()  # type: ignore[no-any-return]


def build_served(name: str, **options: Any) -> ServedEngine:
    """The engine ``harness serve --engine NAME`` runs (not loaded yet)."""
    info = get_engine(name)
    if info.server is None:
        raise EngineError(f"engine {name!r} cannot be served; servable: {', '.join(SERVED_ENGINE_NAMES)}")
    given = {k: v for k, v in options.items() if k in info.serve_options}
    return _load(info.server)(**given)  # type: ignore[no-any-return]


__all__ = [
    "ENGINE_NAMES",
    "REGISTRY",
    "SERVED_ENGINE_NAMES",
    "Endpoint",
    "EngineContext",
    "EngineError",
    "EngineInfo",
    "Opener",
    "RunEngine",
    "SampleContext",
    "build_served",
    "get_engine",
    "open_engine",
    "unavailable",
]
