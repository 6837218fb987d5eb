"""The plain OpenAI API's dialect, what hosted APIs and most servers take: a JSON schema as
``response_format: {type: json_schema, json_schema: {name, schema, strict: true}}``, strict tools as
``tools[].function.strict`` (the families' ``strict`` strategy sets it), ``tool_choice``. There is no
field for a grammar or a structural tag: those lanes are refused by name, and vLLM's own fields
(``skip_special_tokens``, ``chat_template_kwargs``) are not sent (an OpenAI server refuses unknown ones)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

VLLM_ONLY = ("structured_outputs", "skip_special_tokens", "chat_template_kwargs")
"""Fields of the families' requests that only vLLM reads."""


class OpenAIDialect:
    name = "openai"
    fields: ClassVar[dict[str, str]] = {
        "grammar": "refused: the OpenAI API takes no grammar",
        "json": "response_format: {type: json_schema, json_schema: {name, schema, strict: true}}",
        "structural_tag": "refused: the OpenAI API takes no structural tag",
    }

    def wire(self, family: str, request: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        from harness.grammar import NotExpressible

        outputs = body.get("structured_outputs") or {}
        out = {k: v for k, v in body.items() if k not in VLLM_ONLY}
        for kind, value in outputs.items():
            if kind != "json":
                raise NotExpressible(f"dialect openai: {self.fields.get(kind, f'refused: no field for {kind}')}")
            schema = json.loads(value) if isinstance(value, str) else value
            out["response_format"] = {"type": "json_schema",
                                      "json_schema": {"name": "answer", "schema": schema, "strict": True}}
        return "/chat/completions", out

    def describe(self, family: str) -> dict[str, str]:
        return {"endpoint": "/chat/completions", "prompt": "the server's chat template"}
