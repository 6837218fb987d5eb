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
        special_texts,
        to_llguidance,
        version,
    )
    from harness.grammar.guidance.walk import GuidanceWalk, walk_guidance

__getattr__, __dir__ = lazy_exports(__name__, {
    "SPECIAL_IN_TEXT": "convert",
    "NotExpressible": "convert",
    "available": "convert",
    "get_llg_tokenizer": "convert",
    "special_texts": "convert",
    "to_llguidance": "convert",
    "version": "convert",
    "GuidanceWalk": "walk",
    "walk_guidance": "walk",
})

__all__ = [
    "SPECIAL_IN_TEXT",
    "GuidanceWalk",
    "NotExpressible",
    "available",
    "get_llg_tokenizer",
    "special_texts",
    "to_llguidance",
    "version",
    "walk_guidance",
]
