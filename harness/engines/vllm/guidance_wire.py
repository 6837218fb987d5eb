"""Requests to a vLLM server whose structured-outputs backend is ``guidance`` (llguidance).

The families build their grammars for xgrammar: FunctionGemma's strings use xgrammar's
``TagDispatch``, Qwen's JSON strings a lookahead, both spell control tokens (``<start_function_call>``,
``<tool_call>``) as text, and structural tags are xgrammar's. vLLM's guidance backend reads a
``grammar`` field as Lark when it is Lark and converts it from GBNF otherwise; that conversion refuses
the first two, and a control token spelt as text never matches the special token a model emits (the
server then fails the request: "grammar rejected tokens"). Its ``structural_tag`` field reads only
vLLM's legacy form.

So this client sends each constraint as ``harness.grammar.vllm_guidance_field`` writes it: a JSON
schema as it is, a grammar or structural tag as the Lark text the oracle's guidance backend compiles
(control tokens by id). The grammar the server compiles is then the one the oracle replays gold
through (``tests/engines/test_vllm_guidance.py`` checks that with vLLM's own code).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Mapping

from harness.agents import (
    CompletionRequest,
    CompletionResponse,
    ConstraintArtifact,
    LLMClient,
    ModelCallError,
)

CONVERSIONS_KEPT = 256
"""Lark texts remembered (a single-turn suite brings a tool set per case)."""


class GuidanceWireClient:
    """``inner`` (a vLLM server started with ``--structured-outputs-config.backend guidance``), with each
    request's ``structured_outputs`` written for llguidance, for the tokenizer of the family whose model
    the request names (``families``: served model id -> family)."""

    def __init__(self, inner: LLMClient, families: Mapping[str, str]) -> None:
        self.inner = inner
        self.families = dict(families)

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        outputs = (request.extra_body or {}).get("structured_outputs")
        if isinstance(outputs, dict) and len(outputs) == 1:
            ((kind, value),) = outputs.items()
            if kind in ("grammar", "structural_tag") and isinstance(value, str):
                # in a thread: the first conversion loads the tokenizer (seconds), which would stall the
                # other samples' streams and inflate their time to first token
                field, text = await asyncio.to_thread(_converted, self._family(request.model), kind, value)
                body = {**request.extra_body, "structured_outputs": {field: text}}
                request = dataclasses.replace(request, extra_body=body)
        return await self.inner.chat_completion(request)

    def _family(self, model: str) -> str:
        family = self.families.get(model)
        if family is None:
            raise ModelCallError("model:bad_request", f"model {model!r} is not one this run serves "
                                 f"({', '.join(self.families)}): no tokenizer to write its grammar for llguidance")
        return family

    async def aclose(self) -> None:
        await self.inner.aclose()


@functools.lru_cache(maxsize=CONVERSIONS_KEPT)
def _converted(family: str, kind: str, value: str) -> tuple[str, str]:
    from harness.grammar import NotExpressible, vllm_guidance_field

    try:
        return vllm_guidance_field(ConstraintArtifact(kind, value), family)  # type: ignore[arg-type]
    except NotExpressible as exc:
        raise ModelCallError("model:bad_request", f"llguidance cannot read this {kind}: {exc}") from exc


__all__ = ["GuidanceWireClient"]
