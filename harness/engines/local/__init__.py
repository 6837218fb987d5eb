"""The embedded engine: Gemma 3 270M (base, Q4_K_M) on the CPU through llama.cpp, in FunctionGemma's
format, under xgrammar constraints. Names load on first use (no llama_cpp import at package import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.engines.local.engine import (
        DEFAULT_MAX_TOKENS,
        LOCAL_MODEL_ID,
        NO_QWEN_WEIGHTS,
        LocalEngine,
        NoWeightsError,
        check_family,
    )
    from harness.engines.local.runtime import BLOCK, LlamaRuntime, PrefillStats

__getattr__, __dir__ = lazy_exports(__name__, {
    "DEFAULT_MAX_TOKENS": "engine",
    "LOCAL_MODEL_ID": "engine",
    "NO_QWEN_WEIGHTS": "engine",
    "LocalEngine": "engine",
    "NoWeightsError": "engine",
    "check_family": "engine",
    "BLOCK": "runtime",
    "LlamaRuntime": "runtime",
    "PrefillStats": "runtime",
})

__all__ = [
    "BLOCK",
    "DEFAULT_MAX_TOKENS",
    "LOCAL_MODEL_ID",
    "NO_QWEN_WEIGHTS",
    "LlamaRuntime",
    "LocalEngine",
    "NoWeightsError",
    "PrefillStats",
    "check_family",
]

