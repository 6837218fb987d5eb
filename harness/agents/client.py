"""The LLMClient protocol and the request/response types every engine speaks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness.agents.types import Message, TokenUsage, ToolCall, ToolSchema


class ModelCallError(RuntimeError):
    """The model could not be called or its answer could not be read (after retries).

    ``kind`` is a ``checker:reason`` string: ``model:timeout``, ``model:http_500``,
    ``model:connection``, ``model:bad_response``, ``model:bad_request``...
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.detail = message
        """The message without its kind (to add to it without naming the kind twice)."""


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """One chat-completions request, before it is put on the wire."""

    model: str
    """The served model id (not the family name)."""
    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...] = ()
    """The tools of this step; in-process engines render them into the prompt themselves."""
    send_tools: bool = True
    """Whether ``tools`` go in the request's ``tools`` field."""
    tool_choice: str | None = None
    """The request's ``tool_choice`` when tools are sent; None leaves the server's default."""
    strict_tools: bool = False
    """Send every tool with ``"strict": true`` (vLLM's strict tool calling)."""
    parallel_tool_calls: bool | None = None
    """The request's ``parallel_tool_calls`` when tools are sent; None leaves it out."""
    extra_body: dict[str, Any] = field(default_factory=dict)
    stop: tuple[str, ...] = ()
    max_tokens: int | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    """Nucleus sampling: sample among the most likely tokens whose probabilities add up to this (1: all)."""
    seed: int | None = None
    """Seed of the request's sampler (vLLM's per-request ``seed``): the same seed, prompt and settings give
    the same answer. None: the server's own randomness."""
    stream: bool = False


@dataclass(frozen=True, slots=True)
class EngineStats:
    """Figures only an engine that runs the grammar itself can measure. ``None``/empty = not measured."""

    compile_ms: float | None = None
    compile_cached: bool | None = None
    compile_found: str | None = None
    """Where the grammar came from: ``compiled`` (cold, for this request), ``memory`` (this process
    compiled it before) or ``disk`` (kept by an earlier run); None: not measured."""
    grammar_backend: str | None = None
    """The grammar library that ran the constraint (``xgrammar`` or ``guidance``)."""
    grammar_reason: str | None = None
    """Why the grammar refused the answer, in the grammar library's words (with ``grammar_error``)."""
    mask_us: tuple[float, ...] = ()
    """Time of each token-mask fill. The oracle fills the mask at every step (one entry per token); the
    embedded engine's lazy policy fills it only when the grammar rejects the model's own choice, so its
    entries are the fills it paid (fewer than its tokens), and its mask figures describe those."""
    accept_us: tuple[float, ...] = ()
    generated_tokens: int = 0
    grammar_error: str | None = None
    """Set when the grammar forbade a token the engine had to emit (``grammar:rejected_gold``)."""
    engine: str = ""
    tokens_per_s: float | None = None
    """Generation speed after the first token (in-process engines)."""
    prefill_ms: float | None = None
    """Time to put the prompt into the model's KV cache (in-process engines)."""
    reused_prompt_tokens: int | None = None
    """Prompt tokens whose KV entries came from the engine's prefix cache."""
    target_steps: int | None = None
    """Oracle with a target (``--target vllm``): steps where the target's grammar and the harness's
    were compared (None: no target)."""
    target_mask_diff_steps: int | None = None
    """Of those, steps where the target allows other tokens than the harness's grammar."""
    target_only_tokens: tuple[str, ...] = ()
    """A few tokens only the target allows there (e.g. ``<unused0>`` as text inside a string)."""
    forced_tokens: int | None = None
    """Tokens the grammar forced and the engine appended without a model step (jump-forward)."""


@dataclass(frozen=True, slots=True)
class CompletionResponse:
    """What came back: text, native tool calls (if the server parsed any), usage and timings."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: TokenUsage | None = None
    finish_reason: str | None = None
    latency_ms: float | None = None
    ttft_ms: float | None = None
    """Time to first token, measured when streaming (or by an in-process engine)."""
    constraint_first: bool | None = None
    """A server client's first call with this constraint (the server compiles it for that call unless it
    kept it from before); None: no constraint, or not a server client."""
    model: str = ""
    stats: EngineStats | None = None
    malformed_tool_calls: tuple[str, ...] = ()
    """Native tool calls whose arguments were not a JSON object (or that had no name), as the raw
    JSON text of the call. Never dropped and never decoded to ``{}``: the kernel reports each one as a
    ``parse:bad_arguments`` ParseFailure."""


@runtime_checkable
class LLMClient(Protocol):
    """Anything that answers chat-completion requests: an OpenAI-compatible server, the embedded
    engine, the oracle. ``chat_completion`` raises ModelCallError when it cannot answer."""

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse: ...

    async def aclose(self) -> None: ...
