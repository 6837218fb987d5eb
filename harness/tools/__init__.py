"""Tool sources: where a bundle's tools come from and where their state lives (``base``: the protocol;
``registry``: the one table of sources ``bundle.yaml`` names). ``pym``: ``.pym`` scripts in the sandbox
on a file-system state; ``python``: Python classes in a worker process (``harness.tools.python``).

Importing this package is cheap (the Python-tool worker process imports it first): names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.tools.base import (
        EchoMode,
        HistoryCall,
        SessionSetup,
        StateKind,
        ToolSession,
        ToolSource,
        ToolUnavailable,
        owners,
    )
    from harness.tools.mcp.probe import send_calls
    from harness.tools.pym import PymSource, pym_folder
    from harness.tools.python import (
        PythonClassSource,
        WorkerFailure,
        WorkerSettings,
        call_text,
    )
    from harness.tools.registry import SOURCES, SourceInfo, load_source, source_name

__getattr__, __dir__ = lazy_exports(__name__, {
    **{name: "base" for name in ("EchoMode", "HistoryCall", "SessionSetup", "StateKind", "ToolSession",
                                 "ToolSource", "ToolUnavailable", "owners")},
    "PymSource": "pym",
    "send_calls": "mcp.probe",
    "pym_folder": "pym",
    **{name: "python" for name in ("PythonClassSource", "WorkerFailure", "WorkerSettings",
                                   "call_text")},
    **{name: "registry" for name in ("SOURCES", "SourceInfo", "load_source", "source_name")},
})

__all__ = [
    "SOURCES",
    "EchoMode",
    "HistoryCall",
    "PymSource",
    "PythonClassSource",
    "SessionSetup",
    "SourceInfo",
    "StateKind",
    "ToolSession",
    "ToolSource",
    "ToolUnavailable",
    "WorkerFailure",
    "WorkerSettings",
    "call_text",
    "load_source",
    "owners",
    "pym_folder",
    "send_calls",
    "source_name",
]
