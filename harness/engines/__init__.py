"""Engines: where tokens come from, each behind the kernel's LLMClient protocol.

``harness.engines.registry`` is the one list of them (``oracle``, ``local``, ``openai``, ``vllm``):
adding an engine is its module (holding its opener) plus one line there. The shapes an engine takes for
a run are ``harness.engines.shapes``; ``harness serve`` is ``harness.engines.serve``. Names are loaded
on first use, so importing ``harness.engines`` does not import ``openai`` (or, for the in-process
engines, torch and xgrammar).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.engines.dialects import DIALECT_NAMES, detect_dialect
    from harness.engines.local import LocalEngine
    from harness.engines.oracle.engine import CLOSING_TEXT, OracleEngine, ServedOracle
    from harness.engines.registry import (
        ENGINE_NAMES,
        REGISTRY,
        EngineInfo,
        get_engine,
        layered_models,
        open_engine,
    )
    from harness.engines.remote.client import OpenAICompatibleClient
    from harness.engines.serve.limits import ServeLimits
    from harness.engines.serve.server import ServeError, run_server
    from harness.engines.shapes import (
        SERVED_PREFIX,
        Endpoint,
        EngineContext,
        EngineError,
        RunEngine,
        SampleContext,
        SharedClient,
    )

__getattr__, __dir__ = lazy_exports(__name__, {
    "ServeLimits": "serve.limits",
    "DIALECT_NAMES": "dialects",
    "detect_dialect": "dialects",
    "CLOSING_TEXT": "oracle.engine",
    "REGISTRY": "registry",
    "ServeError": "serve.server",
    "run_server": "serve.server",
    "LocalEngine": "local",
    "OpenAICompatibleClient": "remote.client",
    "OracleEngine": "oracle.engine",
    "ServedOracle": "oracle.engine",
    **{name: "registry" for name in ("ENGINE_NAMES", "EngineInfo", "get_engine", "layered_models", "open_engine")},
    **{name: "shapes" for name in ("SERVED_PREFIX", "Endpoint", "EngineContext", "EngineError", "RunEngine",
                                    "SampleContext", "SharedClient")},
})

__all__ = [
    "CLOSING_TEXT",
    "DIALECT_NAMES",
    "ENGINE_NAMES",
    "REGISTRY",
    "SERVED_PREFIX",
    "Endpoint",
    "EngineContext",
    "EngineError",
    "EngineInfo",
    "LocalEngine",
    "OpenAICompatibleClient",
    "OracleEngine",
    "RunEngine",
    "SampleContext",
    "ServeError",
    "ServeLimits",
    "ServedOracle",
    "SharedClient",
    "detect_dialect",
    "get_engine",
    "layered_models",
    "open_engine",
    "run_server",
]

