"""A ``python:`` bundle's classes as its tool source: the worker's settings read from ``bundle.yaml``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.agents import BundleConfig, BundleError
from harness.tools.python.client import WorkerFailure, WorkerSettings
from harness.tools.python.source import PythonClassSource


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
    tools_json = None
    if python.tools_json is not None:
        tools_json = _read_tools_json(file, file.parent / python.tools_json)
    settings = WorkerSettings(
        classes=python.classes, search_path=(file.parent,), memory=memory,
        wall_clock=limits.wall_clock or 5.0, max_output=limits.max_output or (1 << 20),
        bfcl=python.execution == "bfcl",
    )
    try:
        return PythonClassSource(settings, tools_json)
    except WorkerFailure as exc:
        raise BundleError(file, [f"python.classes: {exc}"]) from None


def _read_tools_json(file: Path, path: Path) -> dict[str, Sequence[dict[str, Any]]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(file, [f"python.tools_json: cannot read {path}: {exc}"]) from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise BundleError(file, [f"python.tools_json: {path}: expected {{class name: [tools]}}"])
    return data


__all__ = ["load_python_source"]
