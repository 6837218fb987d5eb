"""The chat templates shipped for vLLM servers, one per family (``harness/templates/*.jinja``).

Each reproduces its family's ``render_prompt`` byte for byte for OpenAI-format input, so a vLLM server
started with ``--chat-template <chat_template_path(family)>`` builds the very prompt the harness renders
for its own engines (tested against the renderer, and against a real vLLM server's ``/tokenize``).
``render_chat_template`` renders one the way vLLM does: transformers' sandboxed Jinja environment, with
its ``tojson`` filter (``json.dumps``, non-ASCII kept, separators ``", "`` and ``": "``).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from harness.vocabulary import Family

TEMPLATE_FILES: dict[str, str] = {Family.function_gemma: "functiongemma.jinja", Family.qwen: "qwen3.jinja"}
"""Template file of each family, inside the installed package's ``templates`` folder."""


def chat_template_path(family: str) -> Path:
    """Where ``family``'s template is installed (pass it to ``vllm serve --chat-template``)."""
    try:
        name = TEMPLATE_FILES[family]
    except KeyError:
        raise ValueError(
            f"no chat template for family {family!r}: expected one of {', '.join(TEMPLATE_FILES)}"
        ) from None
    return Path(str(resources.files("harness") / "templates" / name))


def render_chat_template(
    family: str,
    messages_openai: Sequence[dict[str, Any]],
    tools_openai: Sequence[dict[str, Any]] | None,
    *,
    add_generation_prompt: bool = True,
    **variables: Any,
) -> str:
    """The template's output for OpenAI-format messages and tools, rendered as transformers renders it
    (``variables`` such as ``bos_token`` or ``enable_thinking`` are passed to the template)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    # (rendered conversations, generation indices); typed loosely upstream
    result: Any = render_jinja_template(
        conversations=[list(messages_openai)],
        tools=list(tools_openai) if tools_openai is not None else None,
        chat_template=chat_template_path(family).read_text(encoding="utf-8"),
        add_generation_prompt=add_generation_prompt,
        **variables,
    )
    return str(result[0][0])


__all__ = ["TEMPLATE_FILES", "chat_template_path", "render_chat_template"]
