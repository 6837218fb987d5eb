"""Engines: where tokens come from, each behind the kernel's LLMClient protocol.

``harness.engines.registry`` is the one list of them (``oracle``, ``local``, ``openai``): adding an
engine is its module plus one line there. Names are loaded on first use, so importing
``harness.engines`` does not import ``openai`` (or, for the in-process engines, torch and xgrammar).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.engines.local import LocalEngine
    from harness.engines.openai_client import OpenAICompatibleClient
    from harness.engines.oracle import OracleEngine, ServedOracle
    from harness.engines.registry import (
        ENGINE_NAMES,
        EngineError,
        EngineInfo,
        EngineOptions,
        RunEngine,
        get_engine,
        open_engine,
    )

_LAZY = {
    "LocalEngine": "harness.engines.local",
    "OpenAICompatibleClient": "harness.engines.openai_client",
    "OracleEngine": "harness.engines.oracle",
    "ServedOracle": "harness.engines.oracle",
    **{
        name: "harness.engines.registry"
        for name in ("ENGINE_NAMES", "EngineError", "EngineInfo", "EngineOptions", "RunEngine", "get_engine", "open_engine")
    },
}

__all__ = [
    "ENGINE_NAMES",
    "EngineError",
    "EngineInfo",
    "EngineOptions",
    "LocalEngine",
    "OpenAICompatibleClient",
    "OracleEngine",
    "RunEngine",
    "ServedOracle",
    "get_engine",
    "open_engine",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.engines' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
