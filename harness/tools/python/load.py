"""A ``python:`` bundle's classes as its tool source: the worker's settings read from ``bundle.yaml``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.agents import BundleConfig, BundleError, ToolSchema
from harness.tools.python.client import WorkerFailure, WorkerSettings
from harness.tools.python.source import PythonClassSource

WORKER_MEMORY_MIN = 256 << 20
"""The smallest address-space limit a Python-tool worker starts under (an interpreter maps ~200 MB)."""
WORKER_MEMORY_MAX = 1 << 50
"""The largest one (RLIMIT_AS takes 64-bit values; past this a number is a typo)."""


def load_python_source(file: Path, config: BundleConfig) -> PythonClassSource:
    """The bundle's classes, each imported in a worker. BundleError naming the field when a class does
    not import, a size is wrong or the tools JSON is wrong."""
    from pydantic import ValidationError

    from harness.sandbox import Limits, bundle_limits

    python = config.python
    if python is None:
        raise BundleError(file, ["python: the tool source 'python' needs a python: section (its classes)"])
    limits, _ = bundle_limits(file, config)
    try:  # a size as the sandbox's limits read one ('2gb', bytes)
        memory = Limits.model_validate({"max_memory": python.memory}).max_memory or 0
    except ValidationError as exc:
        raise BundleError(file, [f"python.memory: {exc.errors()[0]['msg']}"]) from None
    if memory and not WORKER_MEMORY_MIN <= memory <= WORKER_MEMORY_MAX:  # 0: no limit; else the worker dies at start
        raise BundleError(file, [f"python.memory: {python.memory!r} is {memory} bytes: a worker's limit is "
                                 f"between {WORKER_MEMORY_MIN >> 20} MiB (an interpreter maps that much before "
                                 f"it runs a line) and {WORKER_MEMORY_MAX >> 40} TiB"])
    tools_json = None
    if python.tools_json is not None:
        tools_json = _read_tools_json(file, file.parent / python.tools_json)
    settings = WorkerSettings(
        classes=python.classes, search_path=(file.parent,), memory=memory,
        wall_clock=limits.wall_clock or 5.0, max_output=limits.max_output or (1 << 20),
        execution=python.execution,
    )
    try:
        return PythonClassSource(settings, tools_json)
    except WorkerFailure as exc:
        raise BundleError(file, [f"python.classes: {exc}"]) from None


def _read_tools_json(file: Path, path: Path) -> dict[str, Sequence[dict[str, Any]]]:
    from harness.files import InputFileError, read_json

    try:  # bounded: a FIFO, a device or an oversized file is refused by name, never read
        data = read_json(path)
    except InputFileError as exc:
        raise BundleError(file, [f"python.tools_json: {exc}"]) from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise BundleError(file, [f"python.tools_json: {path}: expected {{class name: [tools]}}"])
    problems = [f"python.tools_json: {path}: {owner}[{i}]: {why}"
                for owner, entries in data.items() for i, entry in enumerate(entries)
                if (why := _tool_entry_problem(entry)) is not None]
    if problems:  # each named here, not a traceback when the source converts them
        raise BundleError(file, problems[:20])
    return data


def _tool_entry_problem(entry: Any) -> str | None:
    """Why one tools-JSON entry (an OpenAI tool, or its ``function`` object alone) is not a tool, or None."""
    if not isinstance(entry, dict):
        return f"expected a tool object, got {type(entry).__name__}"
    try:
        ToolSchema.from_openai(entry if entry.get("type") == "function" else {"type": "function", "function": entry})
    except (ValueError, KeyError, TypeError) as exc:
        return str(exc) if not isinstance(exc, KeyError) else f"no {exc} field"
    return None


__all__ = ["load_python_source"]
