"""Engines: where tokens come from, each behind the kernel's LLMClient protocol.

Names are loaded on first use, so importing ``harness.engines`` does not import ``openai``
(or, for the in-process engines, torch and xgrammar).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.engines.local import LocalEngine
    from harness.engines.openai_client import OpenAICompatibleClient
    from harness.engines.oracle import OracleEngine

_LAZY = {
    "LocalEngine": "harness.engines.local",
    "OpenAICompatibleClient": "harness.engines.openai_client",
    "OracleEngine": "harness.engines.oracle",
}

__all__ = ["LocalEngine", "OpenAICompatibleClient", "OracleEngine"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.engines' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
