"""Tool sources besides the sandboxed ``.pym`` folder: Python classes whose public methods are tools.

A bundle names its source in ``bundle.yaml``: ``tools_dir`` (``.pym`` scripts, run in the sandbox) or
``python`` (classes, run in a worker process with the user's privileges: ``harness.agents.python_tools.worker``).
Single-turn suites bring schema-only tools of their own. See docs/python-tools.md.

Importing this package is cheap (the worker process imports it first): names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.agents.python_tools.client import WorkerClient, WorkerFailure, WorkerSettings
    from harness.agents.python_tools.source import (
        PythonClassSource,
        PythonSession,
        WorkerTool,
        call_text,
        python_source,
    )

__getattr__, __dir__ = lazy_exports(__name__, {
    "WorkerClient": "client",
    "WorkerFailure": "client",
    "WorkerSettings": "client",
    "PythonClassSource": "source",
    "PythonSession": "source",
    "WorkerTool": "source",
    "call_text": "source",
    "python_source": "source",
})

__all__ = [
    "PythonClassSource",
    "PythonSession",
    "WorkerClient",
    "WorkerFailure",
    "WorkerSettings",
    "WorkerTool",
    "call_text",
    "python_source",
]
