"""The body of ``POST /v1/chat/completions`` as ``harness serve`` reads it: a pydantic model.

Stricter than vLLM where vLLM fails open: an unknown field is refused rather than ignored (a removed
``guided_*`` field says what replaced it), fields the server cannot honour are accepted only at their
default, every value is checked for its type (strictly: ``"5"`` is not a number), and the constraint
(``structured_outputs`` / ``response_format``) is read with vLLM's rules and compiled before anything
is generated. Every problem is a ``BadRequest`` (HTTP 400, or 404 for a model the engine does not
serve) whose message names the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.agents import (
    CompletionRequest,
    ConstraintArtifact,
    ConstraintError,
    Message,
    ModelCallError,
    ToolCall,
    ToolSchema,
)
from harness.engines.tool_choice import ToolChoice, read_tool_choice
from harness.files import InputFileError, TooDeep, load_json

if TYPE_CHECKING:
    from harness.engines.served import ServedEngine

IGNORED = frozenset({"user", "metadata", "store", "chat_template_kwargs"})
"""Accepted and without effect here: the grammar decides how many calls there are, and the family
adapter renders the prompt (Qwen's ``enable_thinking: false`` is what it renders anyway)."""
MUST_BE_DEFAULT: dict[str, tuple[Any, ...]] = {
    "n": (1,), "logprobs": (False,), "frequency_penalty": (0, 0.0),
    "presence_penalty": (0, 0.0), "echo": (False,), "include_stop_str_in_output": (False,),
}
"""Accepted only at their default (or null): anything else would be silently ignored."""
DEFAULT_TEMPERATURE = 1.0
"""OpenAI's and vLLM's default when a request gives none."""


class BadRequest(Exception):
    """A request the server refuses: ``status`` 400 (or 404) with an OpenAI-style error ``kind``."""

    def __init__(self, message: str, status: int = 400, kind: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class TextPart(_Body):
    """A content part; only text is understood."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)
    type: Literal["text"]
    """Only ``text``."""
    text: str = ""
    """The text."""


class FunctionCallBody(_Body):
    """The function of an assistant message's tool call."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)
    name: str
    """The tool."""
    arguments: str | dict[str, Any]
    """The arguments: their JSON text (as OpenAI sends them) or the object."""


class ToolCallBody(_Body):
    """A tool call on an assistant message of the history."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)
    id: str | None = None
    """The call id (made up when missing)."""
    function: FunctionCallBody
    """What was called."""


class MessageBody(_Body):
    """One message of the history."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)
    role: Literal["system", "developer", "user", "assistant", "tool"]
    """Who speaks."""
    content: str | list[TextPart] | None = None
    """The text (text parts are joined)."""
    tool_calls: list[ToolCallBody] | None = None
    """An assistant message's calls."""
    tool_call_id: str | None = None
    """The call a tool message answers."""
    name: str | None = None
    """The tool a tool message comes from."""


class StreamOptions(_Body):
    """Streaming options."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)
    include_usage: bool = False
    """Send a last chunk with the token usage."""


class ChatCompletionBody(_Body):
    """A chat-completions request body, with vLLM's field names."""

    model: str
    """A model id the engine serves."""
    messages: list[MessageBody] = Field(min_length=1)
    """The conversation (at least one message)."""
    tools: list[dict[str, Any]] | None = None
    """OpenAI-style tools (read with ``ToolSchema.from_openai``)."""
    tool_choice: Any = None
    """``none``, ``auto``, ``required`` or a named function, as vLLM applies them (``tool_choice.py``)."""
    parallel_tool_calls: bool | None = None
    """False keeps only the first call (and bounds ``required`` to one), as vLLM does."""
    stop: str | list[str] | None = None
    """Stop strings."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Bound of the answer in tokens."""
    max_completion_tokens: int | None = Field(default=None, ge=1)
    """The newer name of ``max_tokens`` (it wins when both are given)."""
    temperature: float | None = Field(default=None, ge=0, le=2, allow_inf_nan=False)
    """0 is greedy; None is ``DEFAULT_TEMPERATURE``; at most 2, as vLLM."""
    top_p: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    """Nucleus sampling over the tokens the grammar allows (None: 1, every token); in (0, 1], as vLLM."""
    seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1)
    """Seed of the sampler (a 64-bit integer, as vLLM)."""
    stream: bool = False
    """Answer as server-sent events."""
    stream_options: StreamOptions | None = None
    """Streaming options."""
    structured_outputs: Any = None
    """vLLM's ``StructuredOutputsParams`` (checked by ``constraint_from_request``)."""
    response_format: Any = None
    """OpenAI's ``response_format`` (checked by ``constraint_from_request``)."""
    skip_special_tokens: bool | None = None
    """Accepted: control tokens always stay in the text here."""
    oracle: Any = None
    """The gold answer, for the served oracle (checked by it)."""

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("the request body must be a JSON object")
        unknown = sorted(k for k in data if k not in cls.model_fields and k not in IGNORED and k not in MUST_BE_DEFAULT)
        guided = [k for k in unknown if k.startswith("guided_")]
        if guided:
            raise ValueError(
                f"{', '.join(guided)}: removed from vLLM in v0.12; use structured_outputs "
                "(json, regex, choice, grammar, json_object, structural_tag)"
            )
        if unknown:
            raise ValueError(f"unknown request field(s) {', '.join(unknown)}: refused rather than ignored")
        for key, allowed in MUST_BE_DEFAULT.items():
            if data.get(key) is not None and data[key] not in allowed:
                raise ValueError(f"{key}={data[key]!r} is not supported (only {allowed[0]!r})")
        return {k: v for k, v in data.items() if k in cls.model_fields}

    def history(self) -> tuple[Message, ...]:
        """The messages as kernel messages; BadRequest for a tool call whose arguments are not an object."""
        return tuple(_message(m, i) for i, m in enumerate(self.messages))

    def tool_schemas(self) -> tuple[ToolSchema, ...]:
        out = []
        for i, tool in enumerate(self.tools or ()):
            try:
                out.append(ToolSchema.from_openai(tool))
            except (ValueError, AttributeError, TypeError) as exc:
                raise BadRequest(f"tools[{i}]: {exc}") from exc
        return tuple(out)

    def strict_names(self) -> frozenset[str]:
        """The tools sent with ``"strict": true`` (vLLM's strict tool calling)."""
        out = set()
        for tool in self.tools or ():
            fn = tool.get("function", tool) if isinstance(tool, dict) else None
            if isinstance(fn, dict) and fn.get("strict") is True and isinstance(fn.get("name"), str):
                out.add(fn["name"])
        return frozenset(out)

    def stops(self) -> tuple[str, ...]:
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())


def _message(raw: MessageBody, i: int) -> Message:
    content = raw.content
    if isinstance(content, list):
        content = "".join(p.text for p in content)
    calls = []
    for j, tc in enumerate(raw.tool_calls or ()):
        args = tc.function.arguments
        try:
            decoded = json.loads(args) if isinstance(args, str) else args
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict):
            raise BadRequest(f"messages[{i}].tool_calls[{j}] needs function.name and JSON-object arguments")
        calls.append(ToolCall(id=tc.id or f"call_{i}_{j}", name=tc.function.name, arguments=decoded))
    return Message(role=raw.role, content=content, tool_calls=tuple(calls), tool_call_id=raw.tool_call_id,
                   name=raw.name)


def _problem(exc: ValidationError) -> str:
    from harness.agents import field_path

    return "; ".join(
        f"{field_path(e['loc'])}: {e['msg']}" if e["loc"] else str(e["msg"]).removeprefix("Value error, ")
        for e in exc.errors(include_url=False)
    )


@dataclass(frozen=True, slots=True)
class Parsed:
    """A checked request, ready for the engine."""

    request: CompletionRequest
    family: str
    tool_choice: ToolChoice
    """How calls are read out of the answer (see ``harness.engines.tool_choice``)."""
    include_usage: bool
    """Streaming: end with a usage chunk."""
    artifact: ConstraintArtifact | None = None
    """The one constraint the answer must follow (compiled by ``parse_body`` unless told not to)."""
    server_built: str = "none"
    """What vLLM builds itself for the request's ``tool_choice`` and strict tools (``structural_tag:hermes``,
    ``json_array``, ``json_object``, ``none``): how the answer's calls are read back."""


MAX_CONSTRAINT_BYTES = 256 * 1024
"""``parse_body``'s default bound on a constraint's size (``harness serve`` passes its own)."""


def _size(value: Any) -> int:
    return len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else len(json.dumps(value))


def _check_sizes(checked: ChatCompletionBody, artifact: ConstraintArtifact | None, bound: int) -> None:
    """Each constraint field as sent, and the grammar or schema built from it, within ``bound`` bytes."""
    for name in ("structured_outputs", "response_format"):
        value = getattr(checked, name)
        if value is not None and _size(value) > bound:
            raise BadRequest(f"{name} is {_size(value)} bytes: over the bound max_constraint_bytes={bound}")
    if artifact is not None and _size(artifact.value) > bound:
        raise BadRequest(f"the {artifact.kind} constraint built from this request is {_size(artifact.value)} bytes: "
                         f"over the bound max_constraint_bytes={bound}")


def _check_depth(structured: Any, max_depth: int | None) -> None:
    """A JSON schema or structural tag sent as text nests no deeper than the body may (``max_json_depth``);
    text that is not JSON is left to the constraint's own reader, which names the field."""
    if not isinstance(structured, dict) or max_depth is None:
        return
    for name in ("json", "structural_tag"):
        if isinstance(structured.get(name), str):
            try:
                load_json(structured[name], f"structured_outputs.{name}", max_depth, "max_json_depth")
            except TooDeep as exc:
                raise BadRequest(str(exc)) from None
            except InputFileError:
                pass


def parse_body(
    body: Any, engine: ServedEngine, *, max_constraint_bytes: int = MAX_CONSTRAINT_BYTES, compile: bool = True,
    max_json_depth: int | None = None,
) -> Parsed:
    """Validate a chat-completions body (raises BadRequest) and build the engine's request. The
    constraint is compiled here unless ``compile`` is false (the server compiles it itself, under its
    time and memory bounds): a bad grammar is a 400, never an unconstrained answer. A schema sent as
    text is held to ``max_json_depth`` like the body itself."""
    from harness.grammar import compile_artifact, constraint_from_request

    try:
        checked = ChatCompletionBody.model_validate(body)
    except ValidationError as exc:
        raise BadRequest(_problem(exc)) from None
    except RecursionError:
        raise BadRequest("the request body is nested too deep") from None
    _check_sizes(checked, None, max_constraint_bytes)
    try:
        family = engine.family_of(checked.model)
    except ModelCallError as exc:
        raise BadRequest(str(exc), 404, "NotFoundError") from exc
    messages = checked.history()
    tools = checked.tool_schemas()
    try:
        choice = read_tool_choice(checked.tool_choice, checked.parallel_tool_calls, tools)
    except ValueError as exc:
        raise BadRequest(f"tool_choice: {exc}") from None
    _check_depth(checked.structured_outputs, max_json_depth)
    try:
        artifact = constraint_from_request({"structured_outputs": checked.structured_outputs}, checked.response_format)
        server = choice.server_constraint(family, tools, checked.strict_names())
        if server.artifact is not None and artifact is not None:
            raise ConstraintError(
                f"tool_choice {choice.mode!r} with these tools makes vLLM build its own constraint "
                f"({server.label}): it cannot be combined with structured_outputs or response_format"
            )
        artifact = server.artifact or artifact
        _check_sizes(checked, artifact, max_constraint_bytes)
        if artifact is not None and compile:
            compile_artifact(artifact, family, keep=True)
    except ConstraintError as exc:
        raise BadRequest(str(exc)) from exc
    extra: dict[str, Any] = {}
    if artifact is not None:
        extra["structured_outputs"] = {artifact.kind: artifact.value}
    if checked.oracle is not None:
        extra["oracle"] = checked.oracle
    served = next((m for m in engine.model_ids if engine.family_of(m) == family), checked.model)
    temperature = DEFAULT_TEMPERATURE if checked.temperature is None else checked.temperature
    request = CompletionRequest(
        model=served, messages=messages, tools=tools, extra_body=extra, stop=checked.stops(),
        max_tokens=checked.max_completion_tokens or checked.max_tokens, temperature=temperature,
        top_p=1.0 if checked.top_p is None else checked.top_p, seed=checked.seed, stream=checked.stream,
    )
    include_usage = checked.stream_options is not None and checked.stream_options.include_usage
    return Parsed(request, family, choice, include_usage, artifact, server.built)


__all__ = ["IGNORED", "MAX_CONSTRAINT_BYTES", "MUST_BE_DEFAULT", "BadRequest", "ChatCompletionBody", "Parsed", "parse_body"]
