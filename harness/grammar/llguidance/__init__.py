"""llguidance, the second grammar engine: the families' constraints converted to its grammars (EBNF to
Lark, JSON schemas and structural tags as llguidance reads them) and its tokenizer per family.

Names load on first use; llguidance itself loads only when a grammar is converted or a tokenizer built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.grammar.llguidance.convert import (
        available,
        get_llg_tokenizer,
        to_llguidance,
        version,
    )
    from harness.grammar.llguidance.lark import NotExpressible, ebnf_to_lark

__getattr__, __dir__ = lazy_exports(__name__, {
    "available": "convert",
    "get_llg_tokenizer": "convert",
    "to_llguidance": "convert",
    "version": "convert",
    "NotExpressible": "lark",
    "ebnf_to_lark": "lark",
})

__all__ = [
    "NotExpressible",
    "available",
    "ebnf_to_lark",
    "get_llg_tokenizer",
    "to_llguidance",
    "version",
]
