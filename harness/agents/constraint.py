"""How a model's output is constrained: the strategy, and what a strategy produces.

``Strategy`` and the lists ``STRATEGIES``/``CONSTRAINED_STRATEGIES`` are ``harness.vocabulary``'s,
re-exported here under the names the rest of the code has always imported.

``DecodingConstraint`` is validated when built: an unknown strategy is an error, never a silent
no-op (an earlier version accepted any string and then sent no constraint at all).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from harness import vocabulary
from harness.vocabulary import ErrorKind, Strategy

STRATEGIES: tuple[str, ...] = vocabulary.STRATEGIES
"""Every strategy (``harness.vocabulary.STRATEGIES``), in the canonical order."""
CONSTRAINED_STRATEGIES: tuple[str, ...] = vocabulary.CONSTRAINED_STRATEGIES
"""The strategies that build a grammar."""

ArtifactKind = Literal["grammar", "json", "structural_tag"]
"""The field of vLLM's ``StructuredOutputsParams`` that carries the artifact."""
STRATEGY_OF_ARTIFACT: dict[str, Strategy] = {
    "grammar": Strategy.ebnf, "structural_tag": Strategy.structural_tag, "json": Strategy.json_schema,
}
"""The strategy whose artifact has this kind (a constraint read back from a request)."""

REJECTED_GOLD = ErrorKind.grammar_rejected_gold
"""The error kind of a gold answer the constraint forbids (the oracle engine's finding: a grammar bug)."""


class ConstraintError(ValueError):
    """A constraint that cannot be built or is configured wrongly."""


@dataclass(frozen=True, slots=True, init=False)
class DecodingConstraint:
    """Which strategy constrains the model's output, and how tools reach the API."""

    strategy: Strategy
    """Given as a ``Strategy`` or its string (``"ebnf"``, the default): checked and kept as the ``Strategy``."""
    allow_parallel_calls: bool
    send_tools_to_api: bool
    """Send the tools in the request's ``tools`` field so the server's chat template declares them."""
    allow_text_answer: bool
    """Let the model answer in plain text instead of calling a tool. A constrained grammar that forces a
    call leaves a model no way to end a turn, so episode suites (the agent loop) set this: the grammars
    then allow either the calls or a plain-text answer (under ``json_schema``, a JSON string)."""
    close_objects: bool
    """Close a tool's arguments, and every object that lists properties without saying
    ``additionalProperties``, to the properties it lists (the default). JSON Schema leaves such objects
    open: with this setting the grammars are stricter than the schema; off, only
    ``additionalProperties: false`` closes an object. Objects that say ``additionalProperties: true``
    or give it a schema are open either way."""
    check_after: bool
    """Constrain a tool whose schema uses a keyword no grammar says (``uniqueItems``, a ``propertyNames``
    that constrains) by the rest of its schema, the keyword left to the check after decoding
    (``validity:checked_after``), instead of refusing the tool (the default; docs/schemas.md)."""
    grammar_backend: str
    """vLLM's structured-outputs backend the run uses (``xgrammar``, ``guidance``): whose JSON-schema check
    the json_schema lane refuses what vLLM refuses by (``harness.vllm_schemas``)."""

    def __init__(
        self,
        strategy: Strategy | str = Strategy.ebnf,
        allow_parallel_calls: bool = False,
        send_tools_to_api: bool = True,
        allow_text_answer: bool = False,
        close_objects: bool = True,
        check_after: bool = False,
        grammar_backend: str = "xgrammar",
    ) -> None:
        if strategy not in STRATEGIES:
            raise ConstraintError(f"unknown decoding strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
        if strategy == Strategy.none and not send_tools_to_api:
            raise ConstraintError("strategy 'none' relies on native tool calling: send_tools_to_api must be true")
        for name, value in (("strategy", Strategy(strategy)), ("allow_parallel_calls", allow_parallel_calls),
                            ("send_tools_to_api", send_tools_to_api), ("allow_text_answer", allow_text_answer),
                            ("close_objects", close_objects), ("check_after", check_after),
                            ("grammar_backend", grammar_backend)):
            object.__setattr__(self, name, value)  # frozen: set once, here

    @property
    def constrained(self) -> bool:
        return self.strategy.constrained


@dataclass(frozen=True, slots=True)
class ConstraintArtifact:
    """The grammar a strategy built: what xgrammar compiles and what vLLM receives.

    ``value`` is always text: EBNF for ``grammar``, a JSON schema for ``json``, a structural tag as a
    JSON string for ``structural_tag`` (vLLM's ``StructuredOutputsParams.structural_tag`` is a str).
    """

    kind: ArtifactKind
    value: str
    refused: tuple[tuple[str, str], ...] = ()
    """Tools the strategy refused, each with why (a keyword it cannot enforce, named with its place):
    they are left out of ``value`` and the rest are constrained; a call to one is ``constraint:refused``."""


@dataclass(frozen=True, slots=True)
class RequestPayload:
    """What a constraint adds to a chat-completions request."""

    extra_body: dict[str, Any] = field(default_factory=dict)
    """Passed through untouched as the request's ``extra_body`` (e.g. ``structured_outputs``)."""
    stop: tuple[str, ...] = ()
    artifact: ConstraintArtifact | None = None
    tool_choice: str | None = None
    """The request's ``tool_choice``; None leaves the server's default (``auto`` when tools are sent)."""
    strict_tools: bool = False
    """Send every tool with ``"strict": true`` (the ``strict`` strategy)."""
    parallel_tool_calls: bool | None = None
    """The request's ``parallel_tool_calls``; None leaves it out (vLLM's default: true)."""
    server_built: str | None = None
    """Under ``required``/``strict``: what vLLM builds for the request (``structural_tag:hermes``,
    ``json_array``, ``none``); ``artifact`` is then that prediction, and nothing of it is sent."""


__all__ = [
    "CONSTRAINED_STRATEGIES",
    "REJECTED_GOLD",
    "STRATEGIES",
    "STRATEGY_OF_ARTIFACT",
    "ArtifactKind",
    "ConstraintArtifact",
    "ConstraintError",
    "DecodingConstraint",
    "RequestPayload",
    "Strategy",
]
