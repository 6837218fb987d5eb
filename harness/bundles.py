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

from pathlib import Path
from typing import Unpack

from harness.agents import (
    Agent,
    AgentOptions,
    BundleConfig,
    BundleError,
    LLMClient,
    bundle_file,
    load_bundle_config,
)
from harness.sandbox import PymTool, bundle_limits, load_bundle_tools


def load_bundle(path: str | Path) -> BundleConfig:
    """``bundle.yaml`` validated: its schema, and its limits by the sandbox's ``Limits`` model."""
    file = bundle_file(path)
    config = load_bundle_config(file)
    bundle_limits(file, config)
    return config


def tools_folder(file: Path, config: BundleConfig) -> Path:
    """The bundle's ``tools_dir``, a folder holding ``.pym`` tools; BundleError naming the field otherwise
    (a bundle without tools cannot run a suite)."""
    folder = file.parent / config.tools_dir
    if not folder.is_dir():
        raise BundleError(file, [f"tools_dir: {str(folder)!r} is not a directory"])
    if not any(folder.glob("*.pym")):
        raise BundleError(file, [f"tools_dir: no .pym tools in {str(folder)!r}"])
    return folder


def load_tools(path: str | Path) -> tuple[BundleConfig, list[PymTool]]:
    """The bundle's config and its ``.pym`` tools with their limits, as ``harness run`` and ``harness
    score`` load them. Raises BundleError naming the file and the field."""
    file = bundle_file(path)
    config = load_bundle(file)
    tools_folder(file, config)
    return config, load_bundle_tools(file, config)


def load_agent(path: str | Path, client: LLMClient | None = None, **options: Unpack[AgentOptions]) -> Agent:
    """The agent of the bundle at ``path`` (its folder or its ``bundle.yaml``); see the module doc.

    ``options`` (family, strategy, model_id, allow_text_answer, max_tokens, observers) override the
    bundle's. Raises BundleError naming the file and the field."""
    file = bundle_file(path)
    config = load_bundle(file)
    tools_folder(file, config)

    def connect() -> LLMClient:
        from harness.engines.remote import OpenAICompatibleClient  # imports openai

        assert config.model.base_url is not None
        return OpenAICompatibleClient(config.model.base_url, api_key_env=config.model.api_key_env)

    return Agent.from_bundle(
        file, tool_loader=load_bundle_tools, config=config, client=client,
        connect=connect if config.model.base_url else None, **options,
    )


__all__ = ["load_agent", "load_bundle", "load_tools", "tools_folder"]
