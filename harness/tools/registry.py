"""The one list of tool sources: what ``source:`` in ``bundle.yaml`` may name.

A source is registered with one ``SourceInfo`` line below; its code is a module of its own, with a
loader ``(bundle.yaml path, BundleConfig) -> ToolSource`` named by import path and imported on first
use (so this table imports nothing heavy). A bundle without ``source:`` names ``python`` when it has a
``python:`` section and ``pym`` otherwise, as every bundle did before sources were named. Adding a
source (say one whose tools an MCP server serves) is its module plus one line here.

Today: ``pym`` (``.pym`` scripts in the sandbox, on a file-system state) and ``python`` (Python
classes in a worker process, one instance per class the state).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.agents import BundleConfig, BundleError
from harness.tools.base import ToolSource

Loader = Callable[[Path, BundleConfig], ToolSource]


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """One registered tool source."""

    name: str
    summary: str
    """One line for the docs and errors."""
    loader: str
    """``module:function`` of its ``Loader``."""
    shared: bool = False
    """Loaded once per bundle for the process (a source that owns a process: a run, its agents and its
    scoring share one worker); otherwise loaded afresh each time (a bundle's scripts read as they are now)."""


SOURCES: dict[str, SourceInfo] = {
    info.name: info
    for info in (
        SourceInfo("pym", ".pym scripts in the sandbox, on a file-system state", "harness.tools.pym:load_pym_source"),
        SourceInfo("python", "Python classes in a worker process", "harness.tools.python.load:load_python_source",
                   shared=True),
        SourceInfo("mcp", "the tools an MCP server serves (a stdio command per sample, or a URL)",
                   "harness.tools.mcp.load:load_mcp_source", shared=True),
    )
}


def source_name(config: BundleConfig) -> str:
    """The source ``bundle.yaml`` names (``source:``, else ``python`` with a ``python:`` section, else ``pym``)."""
    if config.source is not None:
        return config.source
    return "python" if config.python is not None else "pym"


def load_source(file: Path, config: BundleConfig) -> ToolSource:
    """The tool source of the bundle whose ``bundle.yaml`` is ``file`` (a ``shared`` one loaded once per
    process). BundleError naming the field."""
    name = source_name(config)
    info = SOURCES.get(name)
    if info is None:
        raise BundleError(file, [f"source: unknown tool source {name!r}: expected one of {', '.join(SOURCES)}"])
    module, _, attr = info.loader.partition(":")
    loader: Loader = getattr(importlib.import_module(module), attr)
    if not info.shared:
        return loader(file, config)
    key = (str(file.resolve()), config.model_dump_json())
    if key not in _LOADED:
        _LOADED[key] = loader(file.resolve(), config)
    return _LOADED[key]


_LOADED: dict[tuple[str, str], ToolSource] = {}


__all__ = ["SOURCES", "Loader", "SourceInfo", "load_source", "source_name"]
