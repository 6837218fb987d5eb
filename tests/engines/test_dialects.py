"""The server dialects (``harness.engines.dialects``), the EBNF -> GBNF conversion the llama.cpp one
needs, and the enforcement audit that walks every constrained answer through its own constraint."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from harness.agents import CompletionRequest, CompletionResponse, Message, TokenUsage
from harness.engines.dialects import get_dialect
from harness.engines.dialects.audit import COUNTED_BY, EnforcementAudit, rejection
from harness.grammar import NotExpressible, ebnf_to_gbnf

YES = 'root ::= "yes"'
SCHEMA = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                     "additionalProperties": False})
REQUEST = CompletionRequest(model="gemma", messages=(Message(role="user", content="hi"),))


def _body(kind: str, value: str) -> dict[str, Any]:
    return {"model": "gemma", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.0,
            "structured_outputs": {kind: value}, "skip_special_tokens": False}


@pytest.mark.parametrize(("dialect", "kind", "value", "path", "field"), [
    ("vllm", "grammar", YES, "/chat/completions", "structured_outputs"),
    ("vllm", "json", SCHEMA, "/chat/completions", "structured_outputs"),
    ("llama_cpp", "grammar", YES, "/completions", "grammar"),
    ("llama_cpp", "json", SCHEMA, "/completions", "grammar"),
    ("llama_cpp", "structural_tag", json.dumps({"type": "structural_tag", "format": {"type": "grammar", "grammar": YES}}),
     "/completions", "grammar"),
    ("openai", "json", SCHEMA, "/chat/completions", "response_format"),
])
def test_each_dialect_puts_the_constraint_where_its_server_reads_it(
    dialect: str, kind: str, value: str, path: str, field: str
) -> None:
    sent_path, body = get_dialect(dialect).wire("function_gemma", REQUEST, _body(kind, value))
    assert (sent_path, field in body) == (path, True)
    if dialect != "vllm":
        assert "structured_outputs" not in body and "skip_special_tokens" not in body


@pytest.mark.parametrize(("dialect", "kind", "value", "named"), [
    ("openai", "grammar", YES, "takes no grammar"),
    ("openai", "structural_tag", "{}", "takes no structural tag"),
    ("llama_cpp", "structural_tag", json.dumps({"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<x>"], "tags": [], "at_least_one": False, "stop_after_first": False}}),
     "free text or several calls"),
])
def test_what_a_dialect_cannot_say_is_refused_by_name(dialect: str, kind: str, value: str, named: str) -> None:
    with pytest.raises(NotExpressible, match=named):
        get_dialect(dialect).wire("function_gemma", REQUEST, _body(kind, value))


def test_llama_cpp_renders_the_familys_own_prompt() -> None:
    _path, body = get_dialect("llama_cpp").wire("function_gemma", REQUEST, _body("grammar", YES))
    assert body["prompt"].startswith("<start_of_turn>developer") and body["prompt"].endswith("<start_of_turn>model\n")


@pytest.mark.parametrize(("ebnf", "expected"), [
    (YES, 'root ::= "yes"\n'),
    ('root ::= my_rule+\nmy_rule ::= [a-c\\]] | "\\"q\\n"', 'root ::= my-rule+\nmy-rule ::= [a-c\\]] | "\\"q\\n"\n'),
    ('root ::= "a" (= "b") "b"{2,3}', 'root ::= "a" "b"{2,3}\n'),
])
def test_ebnf_becomes_the_same_gbnf(ebnf: str, expected: str) -> None:
    assert ebnf_to_gbnf(ebnf) == expected


def test_a_tagdispatch_exclusion_becomes_rules_that_gbnf_parses() -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    gbnf = ebnf_to_gbnf('root ::= "<e>" body "<e>"\nbody ::= TagDispatch(loop_after_dispatch=false, excludes=("<e>"))')
    assert "not-containing-0-s0" in gbnf
    llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)  # llama.cpp's own parser takes it


def test_a_builtin_gbnf_lacks_is_refused_by_name() -> None:
    with pytest.raises(NotExpressible, match="Token"):
        ebnf_to_gbnf('root ::= Token("a")')


@pytest.mark.parametrize(("kind", "value", "text", "finish", "rejected"), [
    ("grammar", YES, "yes", "stop", False),
    ("grammar", YES, "no", "stop", True),
    ("grammar", YES, "ye", "length", False),  # cut by the bound: a prefix the grammar allows
    ("grammar", YES, "ye", "stop", True),
    ("json", SCHEMA, '{"a":1}', "stop", False),
    ("json", SCHEMA, '{ "a": 1 }', "stop", False),  # whitespace only: llama.cpp's schema grammar allows it
    ("json", SCHEMA, '{"a":"x"}', "stop", True),
    ("json", SCHEMA, "free text", "stop", True),
])
def test_the_audit_rejects_what_the_constraint_rejects(kind: str, value: str, text: str, finish: str,
                                                       rejected: bool) -> None:
    assert (rejection("function_gemma", kind, value, text, finish) is not None) is rejected


class _Answers:
    """A one-seam fake of an engine client: answers ``text``, with ``usage`` or none (llama.cpp's streams)."""

    def __init__(self, text: str, usage: TokenUsage | None) -> None:
        self.text, self.usage = text, usage

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        return CompletionResponse(content=self.text, usage=self.usage, finish_reason="stop")

    async def aclose(self) -> None:
        pass


def test_tokens_a_server_did_not_count_are_counted_with_the_familys_tokenizer() -> None:
    from harness.grammar import get_tokenizer

    text = "<start_function_call>call:ls{path:<escape>.<escape>}<end_function_call>"
    counted = asyncio.run(EnforcementAudit(_Answers(text, None), "function_gemma").chat_completion(REQUEST))
    tokens = len(get_tokenizer("function_gemma").encode(text))
    assert counted.usage == TokenUsage(0, tokens, tokens, counted_by=COUNTED_BY)
    assert tokens < len(text) // 2  # control tokens are one id each, as the model emits them
    own = TokenUsage(10, 3, 13)
    kept = asyncio.run(EnforcementAudit(_Answers(text, own), "function_gemma").chat_completion(REQUEST))
    assert kept.usage == own  # the engine's own count is never replaced
