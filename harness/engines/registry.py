"""The one list of model engines: what ``harness run --engine`` and ``harness serve --engine`` accept.

An engine is registered with one ``EngineInfo`` line below; its code is a module of its own. For a
run it provides an opener, ``open(options, context) -> (RunEngine, families)`` (the run's
``RunOptions`` and where it works), that sets the engine up once
per run; ``harness serve`` needs a ``server(**options) -> ServedEngine`` as well. Adding an engine
(say ``vllm``, in ``harness/engines/vllm/``) is that module plus one line here. Openers and servers
are named by import path and load on first use, so this table imports nothing heavy.

Each engine is one unit of ``harness.engines`` (``oracle/``, ``local/``, ``openai_engine.py``,
``vllm/``) holding its opener; the shapes they take for a run are ``harness.engines.shapes``. The CLI
and the runner ask an engine's ``EngineInfo`` what it takes (a model, its own servers, a grammar
target) instead of naming engines.

Today: ``oracle`` (gold replay through the grammar, no model), ``local`` (the embedded llama.cpp
engine), ``openai`` (any OpenAI-compatible server, or replicas), ``vllm`` (a real vLLM server the run
starts and stops).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.engines.shapes import EngineContext, EngineError, GrammarTarget, Opener, RunEngine
from harness.run_options import RunOptions
from harness.vocabulary import FAMILIES

if TYPE_CHECKING:
    from harness.engines.served import ServedEngine


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
    """It runs the model a run names (``--model``, a suite's ``models``, a config file's): a server engine."""
    starts_servers: bool = False
    """It starts its own servers: it takes ``--vllm-arg``, ``--keep-server`` and a config file's ``server`` section."""
    grammar_target: str | None = None
    """``module:function`` giving its grammar compiler for a family (a ``GrammarTarget``), for
    ``--engine oracle --target NAME``; None: no target."""
    target_note: str = ""
    """What ``--target NAME`` adds to the oracle's note."""


REGISTRY: dict[str, EngineInfo] = {
    info.name: info
    for info in (
        # CPU-bound on the event loop: more samples in flight only add noise to the mask times it measures.
        EngineInfo(
            "oracle", "gold replay through the grammar, no model (measures grammars)",
            opener="harness.engines.oracle.opener:open_oracle", server="harness.engines.oracle.engine:ServedOracle",
            serve_options=("grammar_backend",),
        ),
        # One llama.cpp context: requests are serialized anyway.
        EngineInfo(
            "local", "Gemma 3 270M (base) on llama.cpp, in FunctionGemma's format",
            opener="harness.engines.local.opener:open_local", server="harness.engines.local:LocalEngine",
            availability="harness.engines.local.opener:local_unavailable", serve_options=("mask_policy", "n_ctx"),
        ),
        # A server gains from requests in flight.
        EngineInfo(
            "openai", "any OpenAI-compatible server (vLLM first); several --base-url = replicas",
            opener="harness.engines.openai_engine:open_openai", concurrency=4, serves_models=True,
        ),
        # A real vLLM server per family, started and stopped by the run; it batches requests in flight:
        # 8 at a time ran the main job's 150 samples in 75 s against 110 s at 4, every answer the same
        # (docs/measurements.md).
        EngineInfo(
            "vllm", "a real vLLM server the harness starts and stops (Gemma 3 270M base weights)",
            opener="harness.engines.vllm.opener:open_vllm",
            availability="harness.engines.vllm.launch:vllm_unavailable", concurrency=8, serves_models=True,
            starts_servers=True, grammar_target="harness.engines.vllm.backend:grammar_target",
            target_note=("target vllm: grammars compiled by vLLM's own xgrammar backend (its tokenizer view, "
                         "whitespace setting and stop tokens), as a server the harness starts compiles them"),
        ),
    )
}
ENGINE_NAMES: tuple[str, ...] = tuple(REGISTRY)
SERVED_ENGINE_NAMES: tuple[str, ...] = tuple(n for n, info in REGISTRY.items() if info.server)
TARGET_NAMES: tuple[str, ...] = tuple(n for n, info in REGISTRY.items() if info.grammar_target)
"""The engines ``--engine oracle --target`` can replay gold through (their own grammar compilers)."""


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


def grammar_target(name: str, family: str) -> GrammarTarget:
    """Engine ``name``'s own grammar compiler for ``family`` (not loaded yet): ``--target NAME``."""
    info = get_engine(name)
    if info.grammar_target is None:
        raise EngineError(f"unknown --target {name!r}: expected {', '.join(TARGET_NAMES)}")
    return _load(info.grammar_target)(family)  # type: ignore[no-any-return]


def layered_models(info: EngineInfo, bare: str | None, given: Mapping[str, str],
                   lower: Mapping[str, str]) -> dict[str, str]:
    """The ``--model FAMILY=NAME`` table once a lower source is layered under the one ``given``: ``lower``
    (a config file's ``models``, a suite's) fills the families ``given`` leaves out, and only for an engine
    that runs the model a run names (``serves_models``) and only without a bare ``--model`` (which names
    every family's model)."""
    if bare is not None or not info.serves_models:
        return dict(given)
    return {**lower, **given}


def model_asked(family: str, models: Mapping[str, str], bare: str | None) -> str | None:
    """The model ``family`` runs on, as the run asks: ``--model FAMILY=NAME`` (``models``: a config file's
    and a suite's layered in by ``layered_models``), else a bare ``--model``; None: the engine's own choice
    (the one model a server lists, vLLM's default folder for the family). Every engine asks this one
    function."""
    return models.get(family) or bare


def families_named(options: RunOptions) -> list[str]:
    """The families a run names: ``--family``, else those ``--model FAMILY=NAME`` names, in the registry's
    order of families ([] when neither says)."""
    return [str(f) for f in options.families or ()] or [f for f in FAMILIES if f in options.models]


def refuse_server_options(name: str, options: RunOptions) -> None:
    """EngineError for a server's option given to engine ``name``, which runs no server."""
    if options.dialect is not None:
        raise EngineError(f"--dialect is for --engine openai (a server the harness speaks to), not {name}")
    if options.base_urls or options.model or options.models:
        raise EngineError(f"--base-url and --model are for a server engine (openai, vllm), not {name}")
    if options.target is not None and name != "oracle":
        raise EngineError("--target is for --engine oracle (whose grammar compiler the gold is replayed through)")
    if (options.grammar_backend or "xgrammar") != "xgrammar" and name != "oracle":
        raise EngineError(f"--grammar-backend is for --engine oracle or vllm, not {name}")


__all__ = [
    "ENGINE_NAMES",
    "REGISTRY",
    "SERVED_ENGINE_NAMES",
    "TARGET_NAMES",
    "EngineInfo",
    "build_served",
    "families_named",
    "get_engine",
    "grammar_target",
    "layered_models",
    "model_asked",
    "open_engine",
    "refuse_server_options",
    "unavailable",
]
