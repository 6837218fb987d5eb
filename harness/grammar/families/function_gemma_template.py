"""FunctionGemma's chat template for vLLM (``harness/templates/functiongemma.jinja``), rendered here.

The template reproduces ``function_gemma.render_prompt`` byte for byte for OpenAI-format input, so a
vLLM server started with ``--chat-template <template_path()>`` sees the prompt the harness renders
itself. ``render_with_template`` renders it the way vLLM does (transformers' sandboxed Jinja
environment with ``tojson`` and ``raise_exception``); ``vllm_view`` applies vLLM's own preprocessing
of a request (tool-call arguments parsed to dicts, ``content: null`` read as ``""``, tools dumped
with every field) for tests that want the template's exact input on a server.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.grammar.families.chat_templates import chat_template_path, render_chat_template
from harness.vocabulary import Family


def template_path() -> Path:
    """Where the template is installed (pass it to ``vllm serve --chat-template``)."""
    return chat_template_path(Family.function_gemma)


def template_text() -> str:
    """The template source."""
    return template_path().read_text(encoding="utf-8")


def vllm_view(
    messages_openai: Sequence[dict[str, Any]], tools_openai: Sequence[dict[str, Any]] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """Messages and tools as vLLM's chat endpoint hands them to the template.

    Mirrors ``vllm.entrypoints.chat_utils``: ``content`` becomes a string (``None`` -> ``""``, text
    parts joined with newlines), tool-call arguments that are JSON strings are parsed (a value that
    is not a JSON object becomes ``{}``, as vLLM does with a warning), empty ``tool_calls`` are
    dropped; tools are ``model_dump``-ed (``description``/``parameters`` present, possibly ``None``).
    """
    messages: list[dict[str, Any]] = []
    for msg in messages_openai:
        out = copy.deepcopy(dict(msg))
        content = out.get("content")
        if content is None:
            out["content"] = ""
        elif not isinstance(content, str):
            out["content"] = "\n".join(p["text"] for p in content if isinstance(p, dict) and "text" in p)
        if out.get("role") == "assistant" and isinstance(out.get("tool_calls"), list):
            if not out["tool_calls"]:
                del out["tool_calls"]
            for call in out.get("tool_calls", []):
                args = call["function"].get("arguments")
                if isinstance(args, str) and args:
                    try:
                        args = json.loads(args)
                    except json.JSONDecodeError:
                        args = None
                call["function"]["arguments"] = args if isinstance(args, dict) else {}
        messages.append(out)
    if tools_openai is None:
        return messages, None
    tools = []
    for tool in tools_openai:
        fn = tool.get("function", tool)
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": fn["name"],
                    "description": fn.get("description"),
                    "parameters": fn.get("parameters"),
                },
            }
        )
    return messages, tools


def render_with_template(
    messages_openai: Sequence[dict[str, Any]],
    tools_openai: Sequence[dict[str, Any]] | None,
    *,
    add_generation_prompt: bool = True,
    bos_token: str = "<bos>",
) -> str:
    """The template's output for these OpenAI-format messages and tools (transformers' renderer)."""
    return render_chat_template(
        Family.function_gemma, messages_openai, tools_openai, add_generation_prompt=add_generation_prompt,
        bos_token=bos_token,
    )


__all__ = ["render_with_template", "template_path", "template_text", "vllm_view"]
