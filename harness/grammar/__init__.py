"""Grammar core: real tokenizers, compiling constraints with xgrammar, token bitmasks, the constrained
decoding loop (``decode``; its modes and result in ``decode_result``, its token sources in ``sources``,
jump-forward in ``jump``), a gold text walked through a grammar (``walk``), reading a constraint out of
a request.

Importing this package is cheap: names resolve on first use (``harness.grammar.get_tokenizer``
imports the tokenizer module then; xgrammar loads only when something compiles or matches).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.grammar.compile import (
        CompiledConstraint,
        clear_compile_cache,
        compile_artifact,
        get_compiler,
    )
    from harness.grammar.decode import REJECTED_GOLD
    from harness.grammar.decode import decode as constrained_decode
    from harness.grammar.decode_result import DecodeResult, MaskPolicy
    from harness.grammar.mask import allocate_bitmask, allowed_ids, masked_scores
    from harness.grammar.request import constraint_from_request
    from harness.grammar.sources import GoldSource, TokenSource
    from harness.grammar.tokenizers import (
        TOKENIZER_FAMILIES,
        FamilyTokenizer,
        TokenizerUnavailable,
        gemma_gguf_path,
        get_tokenizer,
    )
    from harness.grammar.walk import WalkResult, walk_text

__getattr__, __dir__ = lazy_exports(__name__, {
    "CompiledConstraint": "compile",
    "clear_compile_cache": "compile",
    "compile_artifact": "compile",
    "get_compiler": "compile",
    "REJECTED_GOLD": "decode",
    "DecodeResult": "decode_result",
    "GoldSource": "sources",
    "MaskPolicy": "decode_result",
    "TokenSource": "sources",
    "WalkResult": "walk",
    "allocate_bitmask": "mask",
    "allowed_ids": "mask",
    "masked_scores": "mask",
    # ``decode`` is also the submodule's name (the import system would shadow a package-level function
    # with the module), so the loop is exported as ``constrained_decode``; its home is
    # ``harness.grammar.decode.decode``.
    "constrained_decode": "decode:decode",
    "walk_text": "walk",
    "constraint_from_request": "request",
    "TOKENIZER_FAMILIES": "tokenizers",
    "FamilyTokenizer": "tokenizers",
    "TokenizerUnavailable": "tokenizers",
    "gemma_gguf_path": "tokenizers",
    "get_tokenizer": "tokenizers",
})

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

