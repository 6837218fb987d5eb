"""llama-cpp-python's server (``python -m llama_cpp.server``, 0.3.x) as the harness speaks to it.

What it reads (checked against the real server, ``tests/engines/test_llama_server.py``):

- a grammar as ``grammar``, in GBNF: the family's EBNF is converted (``harness.grammar.ebnf_to_gbnf``),
  what GBNF cannot say is refused by name;
- a JSON schema as ``response_format: {type: json_object, schema}`` on its chat endpoint only (it
  refuses OpenAI's ``{type: json_schema}``: "Input should be 'text' or 'json_object'"; ``/completions``
  ignores ``response_format``). The harness speaks ``/completions`` (below), so the schema goes as a
  ``grammar``, converted by llama-cpp-python's own converter (what its chat endpoint would build), with
  its whitespace rule emptied: the harness's compact JSON (xgrammar's ``separators=(",", ":")``);
- a structural tag only where it is a grammar: a ``grammar`` format, or ``triggered_tags`` that force
  exactly one tag whose content is a grammar (FunctionGemma's one call); anything else is refused by
  name;
- vLLM's ``structured_outputs`` it ignores without a word: that is why the dialect exists.

The prompt: a GGUF without a chat template makes this server fall back to its ``llama-2`` format
(``[INST] <<SYS>>``), not the family's. So every request goes to ``/completions`` with the prompt the
family renders (``render_prompt``, the one vLLM's template and the local engine build; its leading
``<bos>`` left to the server, which adds it), and the raw text comes back for the family's parser: no
assistant message with ``content: null`` (which its chat endpoint refuses with HTTP 500) is ever sent.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, ClassVar

_SPACE = re.compile(r"^space ::= .*$", re.MULTILINE)
COMPLETION_FIELDS = ("model", "temperature", "top_p", "max_tokens", "stop", "seed", "stream", "stream_options")
"""What of the chat body goes on to ``/completions`` (messages and tools are rendered into the prompt)."""


class LlamaCppDialect:
    name = "llama_cpp"
    fields: ClassVar[dict[str, str]] = {
        "grammar": "grammar (GBNF, converted from the family's EBNF)",
        "json": "grammar (GBNF, llama-cpp-python's JSON-schema converter, compact)",
        "structural_tag": "grammar (GBNF), where the tag is a grammar: a grammar format, or one forced tag "
                          "whose content is a grammar; else refused",
    }

    def wire(self, family: str, request: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        from harness.grammar import NotExpressible
        from harness.grammar.families import get_adapter

        if request.strict_tools or request.tool_choice not in (None, "none", "auto"):
            raise NotExpressible("dialect llama_cpp: the server builds no constraint from the tools (tool_choice "
                                 f"{request.tool_choice!r}, strict tools): the required and strict strategies are vLLM's")
        prompt = get_adapter(family).render_prompt(request.messages, request.tools if request.send_tools else ())
        out: dict[str, Any] = {k: body[k] for k in COMPLETION_FIELDS if k in body}
        out["prompt"] = prompt.removeprefix("<bos>")
        for kind, value in (body.get("structured_outputs") or {}).items():
            if kind == "json":
                out["grammar"] = schema_gbnf(value if isinstance(value, str) else json.dumps(value))
            elif kind == "grammar":
                out["grammar"] = _gbnf(value)
            elif kind == "structural_tag":
                out["grammar"] = tag_gbnf(json.loads(value) if isinstance(value, str) else value)
            else:
                raise NotExpressible(f"dialect llama_cpp: no field for a {kind} constraint")
        return "/completions", out

    def describe(self, family: str) -> dict[str, str]:
        return {"endpoint": "/completions",
                "prompt": f"{family}'s own template, rendered by the harness (the server's chat format is not used)",
                "tokens": "counted by the harness with the family's tokenizer: the server's streams carry no usage"}


@functools.lru_cache(maxsize=256)
def schema_gbnf(schema: str) -> str:
    """A JSON schema as GBNF, by llama-cpp-python's own converter (what its server builds from
    ``response_format``), with its whitespace rule emptied: the harness's compact JSON language."""
    from harness.grammar import NotExpressible

    try:
        from llama_cpp.llama_grammar import json_schema_to_gbnf
    except ImportError as exc:
        raise NotExpressible(f"dialect llama_cpp: a JSON schema on /completions needs llama-cpp-python's converter "
                             f"({exc}): pip install 'harness[llama-server]'") from None
    try:
        grammar = json_schema_to_gbnf(schema)
    except Exception as exc:
        raise NotExpressible(f"dialect llama_cpp: llama-cpp-python cannot convert this schema: {exc}") from None
    return _SPACE.sub('space ::= ""', grammar)


def _gbnf(ebnf: str, prefix: str = "") -> str:
    from harness.grammar import ebnf_to_gbnf

    return ebnf_to_gbnf(ebnf, prefix)


def tag_gbnf(tag: dict[str, Any]) -> str:
    """A structural tag as one GBNF grammar, where it is one (see the module doc); NotExpressible else."""
    from harness.grammar import NotExpressible, gbnf_literal

    fmt = tag.get("format") if isinstance(tag, dict) else None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "grammar":
        return _gbnf(str(fmt["grammar"]))  # type: ignore[index]
    if kind != "triggered_tags":
        raise NotExpressible(f"dialect llama_cpp: a structural tag of format {kind!r} is not a grammar GBNF can say")
    assert isinstance(fmt, dict)
    tags = fmt.get("tags") or []
    if not (fmt.get("at_least_one") and fmt.get("stop_after_first")):
        raise NotExpressible("dialect llama_cpp: triggered tags that allow free text or several calls (a plain "
                             "answer or parallel calls) are not expressed as GBNF here")
    parts, alts = [], []
    for i, t in enumerate(tags):
        content = t.get("content") or {}
        if content.get("type") != "grammar":
            raise NotExpressible(f"dialect llama_cpp: tag {i}'s content is {content.get('type')!r}, not a grammar")
        parts.append(_gbnf(str(content["grammar"]), f"t{i}-"))
        alts.append(f"{gbnf_literal(str(t.get('begin', '')))} t{i}-root {gbnf_literal(str(t.get('end', '')))}")
    if not alts:
        raise NotExpressible("dialect llama_cpp: triggered tags with no tag")
    return f"root ::= {' | '.join(alts)}\n" + "".join(parts)
