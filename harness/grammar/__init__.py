"""Grammar core: real tokenizers, compiling constraints with xgrammar, token bitmasks, the constrained
decoding loop (``decode``; its modes and result in ``decode_result``, its token sources in ``sources``,
jump-forward in ``jump``), a gold text walked through a grammar (``walk``), reading a constraint out of
a request; compiled grammars kept on disk across runs (``store``); llguidance, vLLM's other grammar
backend, on the same artifacts (``guidance``).

Importing this package is cheap: names resolve on first use (``harness.grammar.get_tokenizer``
imports the tokenizer module then; xgrammar loads only when something compiles or matches).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.grammar.bounded import BuildBound, set_build_bound
    from harness.grammar.compile import (
        CompiledConstraint,
        clear_compile_cache,
        compile_artifact,
        get_compiler,
        is_kept,
        set_cache_limit,
        was_compiled,
    )
    from harness.grammar.decode import JUMP_MODES, REJECTED_GOLD, GoldTextSource, JumpMode
    from harness.grammar.decode import decode as constrained_decode
    from harness.grammar.decode_result import DecodeResult, MaskPolicy
    from harness.grammar.guidance import (
        SPECIAL_IN_TEXT,
        NotExpressible,
        compile_guidance,
        ebnf_to_lark,
        get_llg_tokenizer,
        to_llguidance,
        vllm_guidance_field,
        walk_guidance,
    )
    from harness.grammar.guidance import available as guidance_available
    from harness.grammar.guidance import version as llguidance_version
    from harness.grammar.guidance.gbnf import ebnf_to_gbnf, gbnf_literal
    from harness.grammar.mask import allocate_bitmask, allowed_ids, masked_scores
    from harness.grammar.request import constraint_from_request
    from harness.grammar.sources import GoldSource, TokenSource
    from harness.grammar.tokenizer_files import cache_root, file_lock
    from harness.grammar.tokenizers import (
        TOKENIZER_FAMILIES,
        FamilyTokenizer,
        TokenizerUnavailable,
        ensure_cached,
        gemma_gguf_path,
        get_tokenizer,
    )
    from harness.grammar.walk import WalkResult, walk_text

__getattr__, __dir__ = lazy_exports(__name__, {
    "set_cache_limit": "compile",
    "was_compiled": "compile",
    "is_kept": "compile",
    "compile_guidance": "guidance.walk",
    "walk_guidance": "guidance.walk",
    "get_llg_tokenizer": "guidance.convert",
    "guidance_available": "guidance.convert:available",
    "llguidance_version": "guidance.convert:version",
    "SPECIAL_IN_TEXT": "guidance.convert",
    "NotExpressible": "guidance.convert",
    "to_llguidance": "guidance.convert",
    "vllm_guidance_field": "guidance.convert",
    "ebnf_to_lark": "guidance.lark",
    "ebnf_to_gbnf": "guidance.gbnf",
    "gbnf_literal": "guidance.gbnf",
    "GoldTextSource": "decode",
    "JUMP_MODES": "decode",
    "JumpMode": "decode",
    "cache_root": "tokenizer_files",
    "file_lock": "tokenizer_files",
    "ensure_cached": "tokenizers",
    "BuildBound": "bounded",
    "set_build_bound": "bounded",
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
    "needs_build": "tokenizers",
})

__all__ = [
    "JUMP_MODES",
    "REJECTED_GOLD",
    "SPECIAL_IN_TEXT",
    "TOKENIZER_FAMILIES",
    "BuildBound",
    "CompiledConstraint",
    "DecodeResult",
    "FamilyTokenizer",
    "GoldSource",
    "GoldTextSource",
    "JumpMode",
    "MaskPolicy",
    "NotExpressible",
    "TokenSource",
    "TokenizerUnavailable",
    "WalkResult",
    "allocate_bitmask",
    "allowed_ids",
    "cache_root",
    "clear_compile_cache",
    "compile_artifact",
    "compile_guidance",
    "constrained_decode",
    "constraint_from_request",
    "ebnf_to_gbnf",
    "ebnf_to_lark",
    "ensure_cached",
    "file_lock",
    "gbnf_literal",
    "gemma_gguf_path",
    "get_compiler",
    "get_llg_tokenizer",
    "get_tokenizer",
    "guidance_available",
    "is_kept",
    "llguidance_version",
    "masked_scores",
    "needs_build",
    "set_build_bound",
    "set_cache_limit",
    "to_llguidance",
    "vllm_guidance_field",
    "walk_guidance",
    "walk_text",
    "was_compiled",
]

