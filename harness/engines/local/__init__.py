"""The embedded engine: Gemma 3 270M (base, Q4_K_M) on the CPU through llama.cpp, in FunctionGemma's
format, under xgrammar constraints. Names load on first use (no llama_cpp import at package import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.engines.local.engine import (
        LOCAL_MODEL_ID,
        LocalEngine,
        NoWeightsError,
        check_family,
    )
    from harness.engines.local.runtime import LlamaRuntime, PrefillStats

__getattr__, __dir__ = lazy_exports(__name__, {
    "LOCAL_MODEL_ID": "engine",
    "LocalEngine": "engine",
    "NoWeightsError": "engine",
    "check_family": "engine",
    "LlamaRuntime": "runtime",
    "PrefillStats": "runtime",
})

__all__ = [
    "LOCAL_MODEL_ID",
    "LlamaRuntime",
    "LocalEngine",
    "NoWeightsError",
    "PrefillStats",
    "check_family",
]

