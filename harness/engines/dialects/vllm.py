"""vLLM's dialect: the request as the families build it (``structured_outputs``, ``tool_choice``,
``tools[].function.strict``, ``skip_special_tokens``), on ``/chat/completions`` with the chat template
the server was started with (``harness vllm serve`` gives it the family's own)."""

from __future__ import annotations

from typing import Any, ClassVar


class VllmDialect:
    name = "vllm"
    fields: ClassVar[dict[str, str]] = {
        "grammar": "structured_outputs.grammar (xgrammar EBNF)",
        "json": "structured_outputs.json",
        "structural_tag": "structured_outputs.structural_tag",
    }

    def wire(self, family: str, request: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "/chat/completions", body

    def describe(self, family: str) -> dict[str, str]:
        return {"endpoint": "/chat/completions", "prompt": "the server's chat template"}
