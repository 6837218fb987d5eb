"""BFCL (the Berkeley Function Calling Leaderboard) in one folder: its package's data and code (``data``),
the importers of its multi-turn (``multi_import``) and single-turn (``single_import``, with the answers
the oracle replays: ``answers``) categories, its single-turn verdict by its own checker (``ast_check``,
``single_verdict``), its multi-turn checker run in the Python-tool worker (``multi_verdict``), the
worker's ``execution: bfcl`` mode (``execution``) and the small seams (``seams``: the ground truth's
check for ``harness validate``, the tool corpus).

The rest of the harness names none of these modules: it asks the table ``harness.benchmarks``, whose
``bfcl`` entry points here by import path (``tests/test_architecture.py`` counts the modules outside
this folder that name BFCL). Only the commands (``harness import bfcl``) import this face.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.bfcl.ast_check import BfclVerdict, bfcl_verdict
    from harness.bfcl.data import (
        BfclDataError,
        category_files,
        distinct_tools,
        multi_turn_classes,
        tool_schemas,
    )
    from harness.bfcl.multi_import import (
        BFCL_ADDED_TOOLS_PROMPT,
        MULTI_TURN,
        CallSyntaxError,
        bfcl_sources,
        import_bfcl,
        import_bfcl_multi_turn,
        parse_python_call,
    )
    from harness.bfcl.single_import import ALL, SINGLE_TURN, import_bfcl_single_turn, is_single_turn

# The face stays light: the Python-tool worker imports ``harness.bfcl.execution`` through it.
__getattr__, __dir__ = lazy_exports(__name__, {
    "BfclVerdict": "ast_check",
    "bfcl_verdict": "ast_check",
    "BfclDataError": "data",
    "category_files": "data",
    "distinct_tools": "data",
    "multi_turn_classes": "data",
    "tool_schemas": "data",
    "BFCL_ADDED_TOOLS_PROMPT": "multi_import",
    "MULTI_TURN": "multi_import",
    "CallSyntaxError": "multi_import",
    "bfcl_sources": "multi_import",
    "import_bfcl": "multi_import",
    "import_bfcl_multi_turn": "multi_import",
    "parse_python_call": "multi_import",
    "ALL": "single_import",
    "SINGLE_TURN": "single_import",
    "import_bfcl_single_turn": "single_import",
    "is_single_turn": "single_import",
})

__all__ = [
    "ALL",
    "BFCL_ADDED_TOOLS_PROMPT",
    "MULTI_TURN",
    "SINGLE_TURN",
    "BfclDataError",
    "BfclVerdict",
    "CallSyntaxError",
    "bfcl_sources",
    "bfcl_verdict",
    "category_files",
    "distinct_tools",
    "import_bfcl",
    "import_bfcl_multi_turn",
    "import_bfcl_single_turn",
    "is_single_turn",
    "multi_turn_classes",
    "parse_python_call",
    "tool_schemas",
]
