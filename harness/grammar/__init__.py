"""Grammar core: real tokenizers, compiling constraints with xgrammar, token bitmasks, the constrained
decoding loop, reading a constraint out of a request.

Importing this package is cheap: names resolve on first use (``harness.grammar.get_tokenizer``
imports the tokenizer module then; xgrammar loads only when something compiles or matches).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.grammar.compile import (
        CompiledConstraint,
        clear_compile_cache,
        compile_artifact,
        get_compiler,
    )
    from harness.grammar.decode import (
        REJECTED_GOLD,
        DecodeResult,
        GoldSource,
        MaskPolicy,
        TokenSource,
        WalkResult,
        walk_text,
    )
    from harness.grammar.decode import (
        decode as constrained_decode,
    )
    from harness.grammar.mask import allocate_bitmask, allowed_ids, masked_scores
    from harness.grammar.request import constraint_from_request
    from harness.grammar.tokenizers import (
        TOKENIZER_FAMILIES,
        FamilyTokenizer,
        TokenizerUnavailable,
        gemma_gguf_path,
        get_tokenizer,
    )

_EXPORTS: dict[str, str] = {
    "CompiledConstraint": "compile",
    "clear_compile_cache": "compile",
    "compile_artifact": "compile",
    "get_compiler": "compile",
    "REJECTED_GOLD": "decode",
    "DecodeResult": "decode",
    "GoldSource": "decode",
    "MaskPolicy": "decode",
    "TokenSource": "decode",
    "WalkResult": "decode",
    "allocate_bitmask": "mask",
    "allowed_ids": "mask",
    "masked_scores": "mask",
    "constrained_decode": "decode",
    "walk_text": "decode",
    "constraint_from_request": "request",
    "TOKENIZER_FAMILIES": "tokenizers",
    "FamilyTokenizer": "tokenizers",
    "TokenizerUnavailable": "tokenizers",
    "gemma_gguf_path": "tokenizers",
    "get_tokenizer": "tokenizers",
}

_ALIASES = {"constrained_decode": "decode"}
"""``decode`` is also the submodule's name (the import system would shadow a package-level function
with the module), so the loop is exported here as ``constrained_decode``; its home is
``harness.grammar.decode.decode``."""

__all__ = [
    "REJECTED_GOLD",
    "TOKENIZER_FAMILIES",
    "CompiledConstraint",
    "DecodeResult",
    "FamilyTokenizer",
    "GoldSource",
    "MaskPolicy",
    "TokenSource",
    "TokenizerUnavailable",
    "WalkResult",
    "allocate_bitmask",
    "allowed_ids",
    "clear_compile_cache",
    "compile_artifact",
    "constrained_decode",
    "constraint_from_request",
    "gemma_gguf_path",
    "get_compiler",
    "get_tokenizer",
    "masked_scores",
    "walk_text",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.grammar' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"harness.grammar.{module}"), _ALIASES.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
