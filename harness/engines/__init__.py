"""Engines: where tokens come from, each behind the kernel's LLMClient protocol.

``harness.engines.registry`` is the one list of them (``oracle``, ``local``, ``openai``): adding an
engine is its module plus one line there. Names are loaded on first use, so importing
``harness.engines`` does not import ``openai`` (or, for the in-process engines, torch and xgrammar).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.engines.local import LocalEngine
    from harness.engines.oracle import OracleEngine, ServedOracle
    from harness.engines.registry import (
        ENGINE_NAMES,
        EngineContext,
        EngineError,
        EngineInfo,
        RunEngine,
        get_engine,
        open_engine,
    )
    from harness.engines.remote.client import OpenAICompatibleClient

__getattr__, __dir__ = lazy_exports(__name__, {
    "LocalEngine": "local",
    "OpenAICompatibleClient": "remote.client",
    "OracleEngine": "oracle",
    "ServedOracle": "oracle",
    **{
        name: "registry"
        for name in ("ENGINE_NAMES", "EngineError", "EngineInfo", "EngineContext", "RunEngine", "get_engine", "open_engine")
    },
})

__all__ = [
    "ENGINE_NAMES",
    "EngineContext",
    "EngineError",
    "EngineInfo",
    "LocalEngine",
    "OpenAICompatibleClient",
    "OracleEngine",
    "RunEngine",
    "ServedOracle",
    "get_engine",
    "open_engine",
]

