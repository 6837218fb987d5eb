"""How a model's output is constrained: the strategy, and what a strategy produces.

``DecodingConstraint`` is validated when built: an unknown strategy is an error, never a silent
no-op (an earlier version accepted any string and then sent no constraint at all).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Strategy = Literal["none", "ebnf", "structural_tag", "json_schema"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)
CONSTRAINED_STRATEGIES: tuple[str, ...] = tuple(s for s in STRATEGIES if s != "none")

ArtifactKind = Literal["grammar", "json", "structural_tag"]
"""The field of vLLM's ``StructuredOutputsParams`` that carries the artifact."""
STRATEGY_OF_ARTIFACT: dict[str, Strategy] = {"grammar": "ebnf", "structural_tag": "structural_tag", "json": "json_schema"}
"""The strategy whose artifact has this kind (a constraint read back from a request)."""

REJECTED_GOLD = "grammar:rejected_gold"
"""The error kind of a gold answer the constraint forbids (the oracle engine's finding: a grammar bug)."""


class ConstraintError(ValueError):
    """A constraint that cannot be built or is configured wrongly."""


@dataclass(frozen=True, slots=True)
class DecodingConstraint:
    """Which strategy constrains the model's output, and how tools reach the API."""

    strategy: Strategy = "ebnf"
    allow_parallel_calls: bool = False
    send_tools_to_api: bool = True
    """Send the tools in the request's ``tools`` field so the server's chat template declares them."""
    allow_text_answer: bool = False
    """Let the model answer in plain text instead of calling a tool. A constrained grammar that forces a
    call leaves a model no way to end a turn, so episode suites (the agent loop) set this: the grammars
    then allow either the calls or a plain-text answer (under ``json_schema``, a JSON string)."""

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ConstraintError(
                f"unknown decoding strategy {self.strategy!r}: expected one of {', '.join(STRATEGIES)}"
            )
        if self.strategy == "none" and not self.send_tools_to_api:
            raise ConstraintError(
                "strategy 'none' relies on native tool calling: send_tools_to_api must be true"
            )

    @property
    def constrained(self) -> bool:
        return self.strategy != "none"


@dataclass(frozen=True, slots=True)
class ConstraintArtifact:
    """The grammar a strategy built: what xgrammar compiles and what vLLM receives.

    ``value`` is always text: EBNF for ``grammar``, a JSON schema for ``json``, a structural tag as a
    JSON string for ``structural_tag`` (vLLM's ``StructuredOutputsParams.structural_tag`` is a str).
    """

    kind: ArtifactKind
    value: str


@dataclass(frozen=True, slots=True)
class RequestPayload:
    """What a constraint adds to a chat-completions request."""

    extra_body: dict[str, Any] = field(default_factory=dict)
    """Passed through untouched as the request's ``extra_body`` (e.g. ``structured_outputs``)."""
    stop: tuple[str, ...] = ()
    artifact: ConstraintArtifact | None = None
    tool_choice: str | None = None
    """The request's ``tool_choice``; None leaves the server's default (``auto`` when tools are sent)."""
