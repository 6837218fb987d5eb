"""The tools ``harness fuzz`` checks: an OpenAI tools JSON file, a folder of ``.pym`` tools, or a bundle.

Unlike the benchmarks' loader, one bad tool does not stop the run: a tool that cannot be read (not an
OpenAI tool, ``parameters`` that are not a schema object, a ``.pym`` that does not parse) becomes a
named problem, reported as a ``schema_invalid`` cell, and the others are fuzzed; so does one whose
parameters the fuzzer cannot take (``bounds.parameters_problem``: not an object schema, a ``$ref`` that
is not local or dangling). Only a path that holds no tool at all is an error
(``InputFileError``, exit 2).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.agents import ToolSchema
from harness.benchmarks import BENCHMARKS, CORPUS, seam, with_seam
from harness.files import InputFileError, read_json


@dataclass
class LoadedTools:
    """What a path held."""

    tools: list[ToolSchema] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(tool name or position, what is wrong) for each tool that could not be read."""


def load_fuzz_tools(path: Path) -> LoadedTools:
    """Tools from ``path``; InputFileError naming the path when it holds none."""
    if str(path) in with_seam(CORPUS) and not path.exists():  # a benchmark's corpus by its name
        return _corpus(path)
    if not path.exists():
        raise InputFileError(path, "no such file or folder: expected an OpenAI tools JSON file, a .pym folder or a bundle")
    if (path.is_dir() and (path / "bundle.yaml").is_file()) or path.name == "bundle.yaml":
        return _bundle(path)
    loaded = _pym_folder(path) if path.is_dir() else _json_file(path)
    if not loaded.tools and not loaded.problems:
        raise InputFileError(path, "no tools there: expected an OpenAI tools JSON file, a .pym folder or a bundle")
    return _screened(loaded, path)


def _screened(loaded: LoadedTools, path: Path) -> LoadedTools:
    """Tools whose parameters the fuzzer cannot take (``bounds.parameters_problem``) moved to problems."""
    from harness.fuzz.bounds import parameters_problem

    kept = []
    for tool in loaded.tools:
        why = parameters_problem(tool.parameters)
        if why is None:
            kept.append(tool)
        else:
            loaded.problems.append((tool.name, f"{path}: tool {tool.name!r}: {why}"))
    loaded.tools = kept
    return loaded


def _corpus(path: Path) -> LoadedTools:
    try:
        return _openai_tools(seam(str(path), CORPUS)(), BENCHMARKS[str(path)].label)
    except ImportError as exc:
        raise InputFileError(path, str(exc)) from None


def _bundle(path: Path) -> LoadedTools:
    from harness.agents import BundleError, bundle_file
    from harness.bundles import load_bundle
    from harness.tools import load_source, pym_folder, source_name

    file = bundle_file(path)
    try:
        config = load_bundle(file)
        if source_name(config) == "pym":
            return _pym_folder(pym_folder(file, config))
        # an MCP server's (or a Python class's) tools: their schemas as the source lists them
        return _screened(LoadedTools(tools=[tool.schema for tool in load_source(file, config).tools]), file)
    except BundleError as exc:
        raise InputFileError(file, str(exc)) from None


def _pym_folder(folder: Path) -> LoadedTools:
    from harness.sandbox import SandboxError
    from harness.sandbox.pym import load_script

    out = LoadedTools()
    scripts = sorted(folder.glob("*.pym"))
    if not scripts:
        raise InputFileError(folder, "no .pym tools in this folder (and no bundle.yaml)")
    for script in scripts:
        try:
            out.tools.append(load_script(script, type_check=False).tool_schema())
        except SandboxError as exc:
            out.problems.append((script.stem, f"{script}: {exc}"))
    return out


def _json_file(file: Path) -> LoadedTools:
    data = read_json(file)
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    if not isinstance(data, list) or not data:
        raise InputFileError(file, 'expected a non-empty JSON list of OpenAI-style tools (or {"tools": [...]})')
    return _openai_tools(data, str(file))


def _openai_tools(data: list[Any], file: str) -> LoadedTools:
    out = LoadedTools()
    for i, item in enumerate(data):
        fn = item.get("function", item) if isinstance(item, dict) else None
        name = str(fn["name"]) if isinstance(fn, dict) and isinstance(fn.get("name"), str) else f"tool {i}"
        try:
            out.tools.append(ToolSchema.from_openai(item))
        except (ValueError, TypeError, AttributeError) as exc:
            out.problems.append((name, f"{file}: tool {i}: {exc}"))
    names = Counter(t.name for t in out.tools)  # counted once: a file of 10,000 tools stays linear
    for name in sorted(n for n, count in names.items() if count > 1):
        out.problems.append((name, f"{file}: two tools are named {name!r}"))
    out.tools = [t for t in out.tools if names[t.name] == 1]
    return out


__all__ = ["LoadedTools", "load_fuzz_tools"]
