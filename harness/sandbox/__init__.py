"""Sandboxed ``.pym`` tools on pydantic-monty: loading, limits, errors, events, virtual files, mutations.

- ``load_script(path)`` parses the ``Input()``/``@external`` declarations with ``ast``, blanks their
  lines (errors keep the ``.pym`` line numbers) and type-checks the script once; ``run_script(script,
  inputs, ...)`` runs it in a fresh session.
- ``PymTool`` implements the kernel's Tool protocol; ``discover_tools(folder)`` loads a folder of them;
  ``load_bundle_tools`` loads a bundle's, with its limits and per-tool overrides (the kernel's ToolLoader).
- ``Limits`` (presets strict/default/permissive, "16mb"/"2s", merge) bound every run, in the sandbox and
  on the host (wall clock, wait for a worker, prints, value depth, mutations); ``TreeLimits`` bound a
  file-system tree.
- ``Workspace`` (a ``DataProvider`` of hidden inputs and virtual files, a ``ResultHandler`` of
  mutations) is what the kernel passes to tools as ``ToolContext.workspace``;
  ``Workspace.filesystem(FileSystemState)`` serves the Gorilla file-system tools (the state as inputs).

Each call runs in a fresh session of one process-wide pool (pydantic-monty's sync pool, driven from
runner threads so the event loop never blocks, with admission so that an overdue call is never charged
to a healthy one); see ``harness/sandbox/runtime/pool.py`` for the measurements behind that choice.
pydantic-monty itself is imported only when a script is loaded or run.

Layout: ``pym/`` the script format (declarations, schemas, loading, the type check); ``runtime/``
running a script (limits, the pool, virtual files, one run); ``gorilla/`` the Gorilla file system
(state, tree, the tools' signatures, a session); here: errors, value checks (``values``), argument
validation (``validation``), ``PymTool`` (``tool``), a bundle's tools (``bundle_tools``), workspaces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports
from harness.sandbox.bundle_tools import bundle_limits, load_bundle_tools
from harness.sandbox.errors import (
    ERROR_KINDS,
    CheckError,
    ExecutionError,
    ExternalError,
    LimitError,
    OutputError,
    ParseError,
    SandboxError,
    ScriptInputError,
    UnavailableError,
)
from harness.sandbox.gorilla import MOUNT, FileSystemState, MutationError, TreeLimitError, TreeLimits
from harness.sandbox.pym import ExternalSpec, Input, InputSpec, Script, external, load_script, parse_script
from harness.sandbox.runtime import PRESETS, Limits
from harness.sandbox.tool import PymTool, discover_tools
from harness.sandbox.workspace import (
    DataProvider,
    FileSystemBridge,
    RecordingResultHandler,
    ResultHandler,
    StaticDataProvider,
    Workspace,
)

if TYPE_CHECKING:
    from harness.sandbox.runtime.execute import run_script
    from harness.sandbox.runtime.pool import close_pool, get_pool
    from harness.sandbox.validation import SchemaCheck, argument_check, argument_errors

# pydantic-monty is imported by these modules: loaded when a name is first used.
__getattr__, __dir__ = lazy_exports(__name__, {
    "SchemaCheck": "validation",
    "argument_check": "validation",
    "argument_errors": "validation",
    "close_pool": "runtime.pool", "get_pool": "runtime.pool", "run_script": "runtime.execute",
})


__all__ = [
    "ERROR_KINDS",
    "MOUNT",
    "PRESETS",
    "CheckError",
    "DataProvider",
    "ExecutionError",
    "ExternalError",
    "ExternalSpec",
    "FileSystemBridge",
    "FileSystemState",
    "Input",
    "InputSpec",
    "LimitError",
    "Limits",
    "MutationError",
    "OutputError",
    "ParseError",
    "PymTool",
    "RecordingResultHandler",
    "ResultHandler",
    "SandboxError",
    "SchemaCheck",
    "Script",
    "ScriptInputError",
    "StaticDataProvider",
    "TreeLimitError",
    "TreeLimits",
    "UnavailableError",
    "Workspace",
    "argument_check",
    "argument_errors",
    "bundle_limits",
    "close_pool",
    "discover_tools",
    "external",
    "get_pool",
    "load_bundle_tools",
    "load_script",
    "parse_script",
    "run_script",
]
