"""Python classes as a tool source: each public method a tool, run in a worker process.

The ``python`` tool source (``harness.tools.registry``): a bundle's ``python:`` classes, run in a worker
process with the user's privileges (``harness.tools.python.worker``; the harness's side ``client``, the
source ``source``, its settings from ``bundle.yaml`` ``load``). See docs/python-tools.md.

Importing this package is cheap (the worker process imports it first): names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.tools.python.client import WorkerClient, WorkerFailure, WorkerSettings
    from harness.tools.python.source import (
        PythonClassSource,
        WorkerTool,
        call_text,
    )

__getattr__, __dir__ = lazy_exports(__name__, {
    "WorkerClient": "client",
    "WorkerFailure": "client",
    "WorkerSettings": "client",
    "PythonClassSource": "source",
    "WorkerTool": "source",
    "call_text": "source",
})

__all__ = [
    "PythonClassSource",
    "WorkerClient",
    "WorkerFailure",
    "WorkerSettings",
    "WorkerTool",
    "call_text",
]
