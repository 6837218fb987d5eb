"""A constraint is never assumed: every answer to a request that carries one of the harness's
constraints is walked through that constraint, compiled by the harness (xgrammar, the family's
tokenizer: ``harness.grammar.walk_text``), whatever engine answered. An answer the grammar rejects was
not produced under it (a server that ignored the field, a server's grammar engine that differs, a vLLM
bug): its response carries ``stats.grammar_error = "constraint:not_enforced"`` with the walk's reason,
and the sample is counted as that, never as the model's invalidity.

Two things are not a rejection: an answer cut by the token bound (``finish_reason`` ``length``) that
is a prefix the grammar allows, and, for a JSON schema, an answer that differs from the harness's
compact JSON only by whitespace (llama.cpp's schema grammar allows whitespace): it is compared compacted.
Strategies the server builds itself (``required``, ``strict``) send no harness constraint and are not
walked here (the server parses the answer; its raw text does not come back).

The same wrapper counts an answer's tokens where the server sent no ``usage`` (llama-cpp-python's
streams carry none): the text encoded with the family's tokenizer (control tokens as single ids, as the
model emits them; the walk's encoding), marked ``counted_by="harness"``, so tokens per second is
measured on every server and the record says who counted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json

from harness.agents import (
    CompletionRequest,
    CompletionResponse,
    ConstraintArtifact,
    EngineStats,
    LLMClient,
    TokenUsage,
)
from harness.vocabulary import ErrorKind

NOT_ENFORCED = ErrorKind.constraint_not_enforced


@functools.lru_cache(maxsize=256)
def _compiled(family: str, kind: str, value: str) -> object:
    from harness.grammar import compile_artifact

    return compile_artifact(ConstraintArtifact(kind, value), family, keep=True).compiled  # type: ignore[arg-type]


def rejection(family: str, kind: str, value: str, text: str, finish_reason: str | None) -> str | None:
    """Why the constraint (``kind``, ``value``) compiled for ``family`` rejects ``text``; None when it
    accepts it (see the module doc for a cut answer and JSON whitespace)."""
    from harness.grammar import walk_text

    compiled = _compiled(family, kind, value)
    walked = walk_text(compiled, family, text)
    if walked.accepted:
        return None
    reason = walked.reason or "rejected"
    if finish_reason == "length" and walked.result.rejected_at in (None, len(walked.token_ids)):
        return None  # a prefix the grammar allows, cut by the bound
    if kind == "json":
        try:
            compact = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
        except (ValueError, RecursionError):
            return reason
        if compact != text and walk_text(compiled, family, compact).accepted:
            return None
    return reason


COUNTED_BY = "harness"
"""``TokenUsage.counted_by`` of counts the harness made (the server sent none)."""


def counted_usage(family: str, text: str) -> TokenUsage:
    """The answer's completion tokens as the family's tokenizer encodes ``text`` (the prompt not counted)."""
    from harness.grammar import get_tokenizer

    tokens = len(get_tokenizer(family).encode(text))
    return TokenUsage(0, tokens, tokens, counted_by=COUNTED_BY)


class EnforcementAudit:
    """``inner`` with each constrained answer walked through its constraint (see the module doc)."""

    def __init__(self, inner: LLMClient, family: str) -> None:
        self.inner, self.family = inner, family

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        response = await self.inner.chat_completion(request)
        if response.usage is None and response.content:
            usage = await asyncio.to_thread(counted_usage, self.family, response.content)
            response = dataclasses.replace(response, usage=usage)
        outputs = (request.extra_body or {}).get("structured_outputs")
        if not isinstance(outputs, dict) or len(outputs) != 1 or response.tool_calls:
            return response
        ((kind, value),) = outputs.items()
        if not isinstance(value, str):
            value = json.dumps(value)
        if response.stats is not None and response.stats.grammar_error:
            return response  # the engine ran the grammar itself and said what went wrong
        reason = await asyncio.to_thread(rejection, self.family, kind, value, response.content or "",
                                         response.finish_reason)
        if reason is None:
            return response
        stats = dataclasses.replace(response.stats or EngineStats(), grammar_error=NOT_ENFORCED,
                                    grammar_reason=f"the answer breaks the request's {kind} constraint: {reason}")
        return dataclasses.replace(response, stats=stats)

    async def aclose(self) -> None:
        """The inner client belongs to the run."""


__all__ = ["COUNTED_BY", "NOT_ENFORCED", "EnforcementAudit", "counted_usage", "rejection"]
