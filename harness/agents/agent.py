"""``Agent``: a bundle wired up (config, tools, family adapter, constraint, model id, client).

The one road from a bundle to a running agent is ``harness.bundles.load_agent``, which reads the
bundle and hands this module its tools and client; ``harness run`` takes the same road. This module
is part of the kernel package and imports neither the sandbox nor an engine: tools come from a
``ToolLoader`` and the client from whoever builds the agent (tests inject doubles).

Every bundle field is honoured here or by the loader: ``system_prompt`` (``opening``), ``model.id``,
``model.family``, ``constraint.*``, ``kernel.max_steps``/``max_concurrency``/``max_history_messages``
(``make_kernel``, ``run``), ``name`` (the kernel's ``agent_id``); ``limits``, ``tools_dir`` and
``tools[n]`` by the ``ToolLoader``; ``model.base_url`` and ``model.api_key_env`` by the default client.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict, Unpack

from harness.agents.adapter import ModelAdapter
from harness.agents.bundle import BundleConfig, BundleError, bundle_file, load_bundle_config
from harness.agents.client import LLMClient
from harness.agents.constraint import ConstraintError, DecodingConstraint, RequestPayload
from harness.agents.events import Observer
from harness.agents.kernel import AgentKernel
from harness.agents.tools import Tool
from harness.agents.types import Message, RunResult, ToolSchema

ToolLoader = Callable[[Path, BundleConfig], Sequence[Tool]]
"""``(bundle.yaml's path, its config) -> tools``: the bundle's tools with ``limits``, ``tools_dir`` and
the per-tool overrides applied; raises BundleError naming the field. The sandbox provides the real
one (``harness.sandbox.load_bundle_tools``)."""
AdapterLookup = Callable[[str], ModelAdapter]
"""A family's name -> its adapter; ValueError naming the known families for another name. The family
registry provides the real one (``harness.grammar.families.get_adapter``): the kernel package
imports no family."""
ClientFactory = Callable[[], LLMClient]
"""Builds the agent's client when it is first needed (e.g. an OpenAI-compatible client on
``model.base_url``)."""


class AgentOptions(TypedDict, total=False):
    """What may differ from the bundle (a run measures a matrix of families and strategies)."""

    family: str
    """Another registered model family (its prompt and call format)."""
    strategy: str
    """Another decoding strategy."""
    model_id: str
    """Another served model id."""
    allow_text_answer: bool
    """Whether the grammar allows a plain-text answer (episodes need one to end a turn)."""
    check_after: bool
    """Keywords no grammar says are checked after decoding instead of refusing the tool
    (``DecodingConstraint.check_after``)."""
    grammar_backend: str
    """vLLM's structured-outputs backend (``DecodingConstraint.grammar_backend``)."""
    max_tokens: int
    """Bound per model response (default: the engine's own)."""
    stream: bool
    """Stream responses (time to first token is then measured as a client sees it)."""
    observers: Sequence[Observer]
    """Observers of every kernel the agent makes."""


PAYLOADS_KEPT = 256
"""Payloads an agent remembers (suites whose cases bring their own tools build one per case)."""


def cached_payloads(adapter: ModelAdapter) -> ModelAdapter:
    """The adapter with ``build_payload`` memoized per (tool set, constraint): an agent builds each
    tool set's grammar once, not once per request. A tool set is its schema objects (frozen: the same
    object is the same tool; the cache keeps them, so their ids stay theirs), the last
    ``PAYLOADS_KEPT`` remembered."""
    cache: OrderedDict[tuple[tuple[int, ...], DecodingConstraint], tuple[tuple[ToolSchema, ...], RequestPayload]]
    cache = OrderedDict()
    build = adapter.build_payload

    def cached(tools: Sequence[ToolSchema], constraint: DecodingConstraint) -> RequestPayload:
        key = (tuple(id(t) for t in tools), constraint)
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
            return hit[1]
        payload = build(tools, constraint)
        cache[key] = (tuple(tools), payload)
        if len(cache) > PAYLOADS_KEPT:
            cache.popitem(last=False)
        return payload

    return dataclasses.replace(adapter, build_payload=cached)


class Agent:
    """A bundle wired up. ``make_kernel`` gives a kernel on any client (the run gives each sample
    its own); ``run`` answers one user input on the agent's own client."""

    def __init__(
        self,
        config: BundleConfig,
        path: Path,
        adapter: ModelAdapter,
        constraint: DecodingConstraint,
        tools: Sequence[Tool],
        *,
        model_id: str,
        client: LLMClient | None = None,
        connect: ClientFactory | None = None,
        observers: Sequence[Observer] = (),
        max_tokens: int | None = None,
        stream: bool = False,
        adapter_of: AdapterLookup | None = None,
    ) -> None:
        self.config = config
        self.path = path
        """The bundle's folder."""
        self.adapter = cached_payloads(adapter)
        """The family's adapter, its payloads memoized (a grammar is built once per tool set)."""
        self._base_adapter = adapter
        self.constraint = constraint
        self.tools: tuple[Tool, ...] = tuple(tools)
        self.model_id = model_id
        """The served model id sent in every request (never the family name)."""
        self.observers: tuple[Observer, ...] = tuple(observers)
        self.max_tokens = max_tokens
        """Bound per model response (None: the engine's own)."""
        self.stream = stream
        """Stream responses (a server engine: time to first token is then measured)."""
        self._client = client
        self._connect = connect
        self._adapter_of = adapter_of

    @classmethod
    def from_bundle(
        cls,
        path: str | Path,
        *,
        tool_loader: ToolLoader,
        adapter_of: AdapterLookup,
        config: BundleConfig | None = None,
        client: LLMClient | None = None,
        connect: ClientFactory | None = None,
        **options: Unpack[AgentOptions],
    ) -> Agent:
        """Read the bundle (unless ``config`` is given), load its tools, pick the family's adapter
        (``adapter_of``); ``options`` override the bundle."""
        file = bundle_file(path)
        config = config or load_bundle_config(file)
        family = options.pop("family", None) or config.model.family
        agent = cls(
            config, file.parent, _adapter(adapter_of, file, family), config.constraint.build(),
            tool_loader(file, config), model_id=config.model.id, client=client, connect=connect,
            adapter_of=adapter_of,
        )
        return agent.variant(**options) if options else agent

    def variant(self, **options: Unpack[AgentOptions]) -> Agent:
        """The same bundle, tools and client with ``options`` changed (the runner takes one per lane: its
        family and strategy)."""
        file = bundle_file(self.path)
        strategy, text_answer = options.get("strategy"), options.get("allow_text_answer")
        try:
            constraint = dataclasses.replace(
                self.constraint,
                strategy=strategy or self.constraint.strategy,  # type: ignore[arg-type]  # a string is checked on replace
                allow_text_answer=self.constraint.allow_text_answer if text_answer is None else text_answer,
                check_after=options.get("check_after", self.constraint.check_after),
                grammar_backend=options.get("grammar_backend", self.constraint.grammar_backend),
            )
        except ConstraintError as exc:
            raise BundleError(file, [f"constraint.strategy: {exc}"]) from exc
        family = options.get("family")
        return Agent(
            self.config, self.path, _adapter(self._adapter_of, file, family) if family else self._base_adapter,
            constraint, self.tools, model_id=options.get("model_id") or self.model_id, client=self._client,
            connect=self._connect, observers=options.get("observers", self.observers),
            max_tokens=options.get("max_tokens", self.max_tokens), stream=options.get("stream", self.stream),
            adapter_of=self._adapter_of,
        )

    @property
    def family(self) -> str:
        return self.adapter.family

    @property
    def client(self) -> LLMClient:
        """The agent's own client (built on first use from the bundle when none was given)."""
        if self._client is None:
            if self._connect is None:
                raise BundleError(bundle_file(self.path), ["model.base_url: required when no client is given"])
            self._client = self._connect()
        return self._client

    def make_kernel(
        self, client: LLMClient | None = None, observers: Sequence[Observer] | None = None, *,
        temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
    ) -> AgentKernel:
        """A kernel on ``client`` (default: the agent's own) with the bundle's kernel settings; its
        requests carry ``temperature``, ``top_p`` and ``seed`` (a run derives one seed per sample)."""
        kernel = self.config.kernel
        return AgentKernel(
            client if client is not None else self.client,
            self.adapter,
            model=self.model_id,
            constraint=self.constraint,
            observers=list(self.observers if observers is None else observers),
            max_concurrency=kernel.max_concurrency,
            max_history_messages=kernel.max_history_messages,
            agent_id=self.config.name,
            max_tokens=self.max_tokens,
            stream=self.stream,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
        )

    def opening(self, messages: Sequence[Message] = ()) -> list[Message]:
        """``messages`` behind the bundle's system prompt (unless they bring their own system message)."""
        prompt = self.config.system_prompt
        if prompt and not any(m.role == "system" for m in messages):
            return [Message(role="system", content=prompt), *messages]
        return list(messages)

    def messages_for(self, user_input: str) -> list[Message]:
        """The opening messages of a run: the bundle's system prompt (if any) and the user input."""
        return self.opening([Message(role="user", content=user_input)])

    async def run(self, user_input: str, workspace: Any = None, max_steps: int | None = None) -> RunResult:
        """Answer one user input (at most ``kernel.max_steps`` model calls unless ``max_steps`` is
        given); ``workspace`` reaches the tools untouched."""
        return await self.make_kernel().run(
            self.messages_for(user_input),
            self.tools,
            max_steps or self.config.kernel.max_steps,
            workspace=workspace,
        )

    async def aclose(self) -> None:
        """Close the agent's own client, if one was built or given."""
        if self._client is not None:
            await self._client.aclose()


def _adapter(adapter_of: AdapterLookup | None, file: Path, family: str) -> ModelAdapter:
    if adapter_of is None:
        raise BundleError(file, [f"model.family: {family!r} asked of an agent built without an adapter lookup"])
    try:
        return adapter_of(family)
    except ValueError as exc:
        raise BundleError(file, [f"model.family: {exc}"]) from exc


__all__ = ["PAYLOADS_KEPT", "AdapterLookup", "Agent", "AgentOptions", "ClientFactory", "ToolLoader", "cached_payloads"]
