"""From a bundle folder to a running agent: the one road, taken by ``harness run`` and by library users.

::

    from harness.bundles import load_agent

    agent = load_agent("bundles/shellper")                # client: model.base_url of bundle.yaml
    result = await agent.run("make a drafts folder", workspace=...)

``load_agent`` reads ``bundle.yaml`` (schema and limits, every problem with its field path), loads
the tools from the source it names (``harness.tools``: ``.pym`` scripts in the sandbox with the
bundle's limits and per-tool overrides, or Python classes in a worker), picks the
family's adapter and builds the constraint; the client is the one given, or an OpenAI-compatible
client on ``model.base_url`` (with ``model.api_key_env``) built when first needed. ``harness run``
loads each bundle once this way and takes one ``Agent.variant`` per lane (family x strategy) and
``Agent.make_kernel`` per sample. The kernel package (``harness.agents``) stays free of the sandbox,
the tool sources and the engines: this module, above them, puts them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Unpack

from harness.agents import (
    Agent,
    AgentOptions,
    BundleConfig,
    LLMClient,
    Tool,
    bundle_file,
    load_bundle_config,
)
from harness.grammar.families import get_adapter
from harness.sandbox import bundle_limits
from harness.tools import ToolSource, load_source


def load_bundle(path: str | Path) -> BundleConfig:
    """``bundle.yaml`` validated: its schema, and its limits by the sandbox's ``Limits`` model."""
    file = bundle_file(path)
    config = load_bundle_config(file)
    bundle_limits(file, config)
    return config


def source_tools(file: Path, config: BundleConfig) -> Sequence[Tool]:
    """The bundle's tools from the source it names (``harness.tools.load_source``): the agent's ``ToolLoader``."""
    return load_source(file, config).tools


def bundle_source(path: str | Path) -> tuple[BundleConfig, ToolSource]:
    """The bundle's config and its tool source, as ``harness run`` and ``harness score`` load them.
    Raises BundleError naming the file and the field."""
    file = bundle_file(path)
    config = load_bundle(file)
    return config, load_source(file, config)


def load_tools(path: str | Path) -> tuple[BundleConfig, list[Tool]]:
    """The bundle's config and its tools (see ``bundle_source``)."""
    config, source = bundle_source(path)
    return config, list(source.tools)


def load_agent(path: str | Path, client: LLMClient | None = None, source: ToolSource | None = None,
               **options: Unpack[AgentOptions]) -> Agent:
    """The agent of the bundle at ``path`` (its folder or its ``bundle.yaml``); see the module doc.

    ``source``: the bundle's tool source when the caller loaded it already (a run shares one between
    its agents and its workspaces); ``options`` (family, strategy, model_id, allow_text_answer,
    max_tokens, observers) override the bundle's. Raises BundleError naming the file and the field."""
    file = bundle_file(path)
    config = load_bundle(file)

    def connect() -> LLMClient:
        from harness.engines.remote import OpenAICompatibleClient  # imports openai

        assert config.model.base_url is not None
        return OpenAICompatibleClient(config.model.base_url, api_key_env=config.model.api_key_env)

    return Agent.from_bundle(
        file, tool_loader=source_tools if source is None else lambda _file, _config: source.tools,
        adapter_of=get_adapter, config=config, client=client,
        connect=connect if config.model.base_url else None, **options,
    )


__all__ = ["bundle_source", "load_agent", "load_bundle", "load_tools", "source_tools"]
