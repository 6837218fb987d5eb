"""llguidance, the grammar library behind vLLM's ``guidance`` structured-outputs backend, on the
harness's constraint artifacts: the conversion of each artifact kind (``convert``; EBNF read by
``ebnf`` and written as Lark by ``lark``) and a gold answer walked through it (``walk``), for the
oracle's ``--grammar-backend guidance`` and ``harness bench grammar``'s llguidance columns.

Importing this package is cheap: llguidance loads only when something converts or matches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.grammar.guidance.convert import (
        SPECIAL_IN_TEXT,
        NotExpressible,
        available,
        get_llg_tokenizer,
        to_llguidance,
        version,
        vllm_guidance_field,
    )
    from harness.grammar.guidance.lark import ebnf_to_lark
    from harness.grammar.guidance.walk import compile_guidance, walk_guidance

__getattr__, __dir__ = lazy_exports(__name__, {
    "SPECIAL_IN_TEXT": "convert",
    "NotExpressible": "convert",
    "available": "convert",
    "get_llg_tokenizer": "convert",
    "to_llguidance": "convert",
    "version": "convert",
    "vllm_guidance_field": "convert",
    "walk_guidance": "walk",
    "compile_guidance": "walk",
    "ebnf_to_lark": "lark",
})

__all__ = [
    "SPECIAL_IN_TEXT",
    "NotExpressible",
    "available",
    "compile_guidance",
    "ebnf_to_lark",
    "get_llg_tokenizer",
    "to_llguidance",
    "version",
    "vllm_guidance_field",
    "walk_guidance",
]
