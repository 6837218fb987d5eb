"""From a bundle folder to a running agent: the one road, taken by ``harness run`` and by library users.

::

    from harness.bundles import load_agent

    agent = load_agent("bundles/shellper")                # client: model.base_url of bundle.yaml
    result = await agent.run("make a drafts folder", workspace=...)

``load_agent`` reads ``bundle.yaml`` (schema and limits, every problem with its field path), loads
the ``.pym`` tools through the sandbox with the bundle's limits and per-tool overrides, picks the
family's adapter and builds the constraint; the client is the one given, or an OpenAI-compatible
client on ``model.base_url`` (with ``model.api_key_env``) built when first needed. ``harness run``
loads each bundle once this way and takes ``Agent.variant`` per family and strategy and
``Agent.make_kernel`` per sample. The kernel package (``harness.agents``) stays free of the sandbox
and the engines: this module, above all three, puts them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Unpack

from harness.agents import (
    Agent,
    AgentOptions,
    BundleConfig,
    BundleError,
    LLMClient,
    Tool,
    ToolSchema,
    bundle_file,
    load_bundle_config,
)
from harness.grammar.families import get_adapter
from harness.sandbox import bundle_limits, load_bundle_tools


def load_bundle(path: str | Path) -> BundleConfig:
    """``bundle.yaml`` validated: its schema, and its limits by the sandbox's ``Limits`` model."""
    file = bundle_file(path)
    config = load_bundle_config(file)
    bundle_limits(file, config)
    return config


def python_tools(file: Path, config: BundleConfig) -> list[Tool]:
    """The tools of a bundle whose source is Python classes (``python:``), each class imported in a worker
    (one per bundle file, kept for the process). BundleError naming the field when a class does not
    import or the tools JSON is wrong."""
    key = (str(file.resolve()), config.model_dump_json())
    if key not in _SOURCES:
        _SOURCES[key] = _python_source(file.resolve(), config)
    return list(_SOURCES[key].tools)


_SOURCES: dict[tuple[str, str], Any] = {}
"""One worker per bundle for the process (a run, its agents and its scoring share it)."""


WORKER_MEMORY_MIN = 256 << 20
"""The smallest address-space limit a Python-tool worker can start under (torch-free, it maps ~200 MB)."""
WORKER_MEMORY_MAX = 1 << 50
"""The largest one (RLIMIT_AS takes 64-bit values; past this a number is a typo)."""


def _python_source(file: Path, config: BundleConfig) -> Any:
    from pydantic import ValidationError

    from harness.agents import PythonClassSource, WorkerFailure, WorkerSettings
    from harness.sandbox import Limits

    python = config.python
    assert python is not None
    limits, _ = bundle_limits(file, config)
    try:  # a size as the sandbox's limits read one ('2gb', bytes)
        memory = Limits.model_validate({"max_memory": python.memory}).max_memory or 0
    except ValidationError as exc:
        raise BundleError(file, [f"python.memory: {exc.errors()[0]['msg']}"]) from None
    if memory and not WORKER_MEMORY_MIN <= memory <= WORKER_MEMORY_MAX:  # 0: no limit; else the worker dies at start (or setrlimit overflows)
        raise BundleError(file, [f"python.memory: {python.memory!r} is {memory} bytes: a worker's limit is "
                                 f"between {WORKER_MEMORY_MIN >> 20} MiB (an interpreter maps that much before "
                                 f"it runs a line) and {WORKER_MEMORY_MAX >> 40} TiB"])
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


def source_tools(file: Path, config: BundleConfig) -> Sequence[Tool]:
    """The bundle's tools from the source it names: Python classes (``python``) or ``.pym`` scripts
    (``tools_dir``, sandboxed). The agent's ``ToolLoader``."""
    if config.python is not None:
        return python_tools(file, config)
    return load_bundle_tools(file, config)


def tools_folder(file: Path, config: BundleConfig) -> Path:
    """The bundle's ``tools_dir``, a folder holding ``.pym`` tools; BundleError naming the field otherwise
    (a bundle without tools cannot run a suite)."""
    folder = file.parent / config.tools_dir
    if not folder.is_dir():
        raise BundleError(file, [f"tools_dir: {str(folder)!r} is not a directory"])
    if not any(folder.glob("*.pym")):
        raise BundleError(file, [f"tools_dir: no .pym tools in {str(folder)!r}"])
    return folder


def load_tools(path: str | Path) -> tuple[BundleConfig, list[Tool]]:
    """The bundle's config and its tools (``.pym`` tools with their limits, or Python-class tools), as
    ``harness run`` and ``harness score`` load them. Raises BundleError naming the file and the field."""
    file = bundle_file(path)
    config = load_bundle(file)
    if config.python is not None:
        return config, python_tools(file, config)
    tools_folder(file, config)
    return config, list(load_bundle_tools(file, config))


def load_agent(path: str | Path, client: LLMClient | None = None, **options: Unpack[AgentOptions]) -> Agent:
    """The agent of the bundle at ``path`` (its folder or its ``bundle.yaml``); see the module doc.

    ``options`` (family, strategy, model_id, allow_text_answer, max_tokens, observers) override the
    bundle's. Raises BundleError naming the file and the field."""
    file = bundle_file(path)
    config = load_bundle(file)
    if config.python is None:
        tools_folder(file, config)

    def connect() -> LLMClient:
        from harness.engines.remote import OpenAICompatibleClient  # imports openai

        assert config.model.base_url is not None
        return OpenAICompatibleClient(config.model.base_url, api_key_env=config.model.api_key_env)

    return Agent.from_bundle(
        file, tool_loader=source_tools, adapter_of=get_adapter, config=config, client=client,
        connect=connect if config.model.base_url else None, **options,
    )


__all__ = ["load_agent", "load_bundle", "load_tools", "python_tools", "source_tools", "tools_folder"]
