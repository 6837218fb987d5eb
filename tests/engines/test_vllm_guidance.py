"""What a vLLM server on the ``guidance`` structured-outputs backend compiles of the harness's
constraints, checked with vLLM's own code in process (``serialize_guidance_grammar``, what its engine
runs on every request with a grammar), with no server.

Sent as built, the families' grammars fail there: FunctionGemma's and Qwen's EBNF do not pass vLLM's
GBNF-to-Lark conversion (xgrammar's ``TagDispatch`` and lookahead), a grammar that spells a control token
as text rejects the special token the model emits (a real server ends such a request with "grammar
rejected tokens"), and xgrammar's structural tags are not vLLM's legacy form. The harness's guidance
client (``harness.engines.vllm.guidance_wire``) sends each as ``vllm_guidance_field`` writes it; the
grammar vLLM then compiles is, byte for byte, the one the oracle's guidance backend replays gold through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("llguidance")

from harness.agents import (
    CompletionRequest,
    CompletionResponse,
    ConstraintArtifact,
    DecodingConstraint,
    ToolCall,
    ToolSchema,
)
from harness.grammar import (
    get_llg_tokenizer,
    get_tokenizer,
    to_llguidance,
    vllm_guidance_field,
    walk_guidance,
)
from harness.grammar.families import get_adapter
from harness.vocabulary import FAMILIES, HARNESS_STRATEGIES

BFCL_SAMPLE = 60
"""About this many BFCL tools in the BFCL tool set (a spread of the corpus)."""
GOLD = [ToolCall.create("mkdir", {"dir_name": "reports"}), ToolCall.create("echo", {"content": "a < b, \"c\"\n"})]
"""Calls with strings (FunctionGemma's ``<escape>`` strings, Qwen's JSON escapes), two in one answer. No
HTML tag inside: Gemma's ``<b>`` is an added token, which llguidance never lets be text (the oracle
counts that as ``llguidance:special_in_text``)."""


@pytest.fixture(autouse=True, scope="module")
def _vllm() -> None:
    """vLLM is imported by the first test that needs it, not at collection (an import of several seconds
    that every pytest-xdist worker paid, though one runs these tests)."""
    pytest.importorskip("vllm")


def vllm_compiles(field: str, value: str) -> str:
    """The llguidance grammar vLLM's guidance backend compiles for ``structured_outputs: {field: value}``
    on a server the harness starts (``disable_any_whitespace``); raises what the server reports as an
    invalid grammar."""
    from vllm.sampling_params import StructuredOutputsParams
    from vllm.v1.structured_output.backend_guidance import serialize_guidance_grammar
    from vllm.v1.structured_output.request import get_structured_output_key

    key = get_structured_output_key(StructuredOutputsParams(**{field: value}))
    return serialize_guidance_grammar(*key, disable_any_whitespace=True)


def built(family: str, tools: Sequence[ToolSchema], strategy: str) -> ConstraintArtifact:
    artifact = get_adapter(family).build_payload(tools, DecodingConstraint(strategy, allow_parallel_calls=True)).artifact
    assert artifact is not None and not artifact.refused
    return artifact


def gold_walk(family: str, grammar: str) -> Any:
    tokenizer = get_tokenizer(family)
    text = get_adapter(family).render_output(GOLD, DecodingConstraint("ebnf", allow_parallel_calls=True))
    ids = tokenizer.encode(text)  # control tokens as the model emits them: one special id each
    return walk_guidance(family, grammar, ids, len(ids) + 1, tokenizer.eos_ids)


@pytest.fixture(scope="module")
def bfcl_tools() -> tuple[ToolSchema, ...]:
    pytest.importorskip("bfcl_eval", reason="BFCL's package is not installed")
    from harness.bfcl import distinct_tools
    from harness.grammar.schema.keywords import tool_problem

    corpus = distinct_tools()
    tools = [ToolSchema.from_openai(t) for t in corpus[:: len(corpus) // BFCL_SAMPLE]]
    return tuple(t for t in tools if all(tool_problem(t, f, s) is None for f in FAMILIES for s in HARNESS_STRATEGIES))


@pytest.mark.slow
@pytest.mark.parametrize("strategy", HARNESS_STRATEGIES)
@pytest.mark.parametrize("family", FAMILIES)
def test_vllm_guidance_compiles_the_grammar_the_oracle_replays(family: str, strategy: str, shellper_tools,
                                                                bfcl_tools) -> None:
    for tools in (shellper_tools, bfcl_tools):
        artifact = built(family, tools, strategy)
        compiled = vllm_compiles(*vllm_guidance_field(artifact, family))
        assert compiled == to_llguidance(artifact, family)[0]
        assert not __import__("llguidance").LLMatcher.validate_grammar(compiled, get_llg_tokenizer(family))


@pytest.mark.parametrize("family", FAMILIES)
def test_the_gold_walks_through_what_vllm_guidance_compiles(family: str, shellper_tools) -> None:
    for strategy in ("ebnf", "structural_tag"):
        walk = gold_walk(family, vllm_compiles(*vllm_guidance_field(built(family, shellper_tools, strategy), family)))
        assert walk.error is None, walk.reason


@pytest.mark.parametrize("family", FAMILIES)
def test_the_grammars_as_built_fail_on_vllm_guidance(family: str, shellper_tools) -> None:
    """Why the client rewrites them: each spelling the families build for xgrammar fails there."""
    with pytest.raises(ValueError, match="Failed to convert the grammar from GBNF to Lark"):
        vllm_compiles("grammar", built(family, shellper_tools, "ebnf").value)
    with pytest.raises(KeyError, match="triggers"):  # vLLM reads only its legacy structural tags there
        vllm_compiles("structural_tag", built(family, shellper_tools, "structural_tag").value)


def test_a_control_token_spelt_as_text_rejects_the_models_token(shellper_tools) -> None:
    """FunctionGemma's plain-GBNF spelling converts, but ``<start_function_call>`` in it is text: the
    model's special token is refused at the first step, as the real server refused it."""
    from harness.grammar.families.function_gemma import FORMAT
    from harness.grammar.formats import build_ebnf

    walk = gold_walk("function_gemma", vllm_compiles("grammar", build_ebnf(FORMAT, shellper_tools, parallel=True,
                                                                          portable=True)))
    assert walk.error == "grammar:rejected_gold" and walk.token_ids == ()


def test_the_guidance_client_sends_each_constraint_as_llguidance_reads_it(shellper_tools) -> None:
    from harness.engines.vllm.guidance_wire import GuidanceWireClient

    sent: list[dict[str, Any]] = []

    class Server:  # a fake of one seam: records what would go on the wire
        async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
            sent.append(request.extra_body)
            return CompletionResponse(content="", tool_calls=[], finish_reason="stop")

        async def aclose(self) -> None: ...

    client = GuidanceWireClient(Server(), {"served-fg": "function_gemma"})
    for strategy in HARNESS_STRATEGIES:
        artifact = built("function_gemma", shellper_tools, strategy)
        body = {"structured_outputs": {artifact.kind: artifact.value}, "skip_special_tokens": False}
        asyncio.run(client.chat_completion(CompletionRequest(model="served-fg", messages=[], extra_body=body)))
        field, value = vllm_guidance_field(artifact, "function_gemma")
        assert sent[-1] == {"structured_outputs": {field: value}, "skip_special_tokens": False}
    assert [next(iter(b["structured_outputs"])) for b in sent] == ["grammar", "grammar", "json"]
    asyncio.run(client.chat_completion(CompletionRequest(model="served-fg", messages=[])))
    assert sent[-1] == {}  # no constraint: untouched
