"""OracleEngine: gold answers replayed through the request's own grammar with the real tokenizers."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agents.client import CompletionRequest, ModelCallError
from harness.agents.constraint import STRATEGIES, DecodingConstraint
from harness.agents.types import Message, ToolCall, ToolSchema
from harness.engines.oracle import OracleEngine
from harness.grammar.families import FAMILIES, get_adapter
from harness.grammar.tokenizers import get_tokenizer

BUNDLE = Path(__file__).resolve().parents[2] / "bundles" / "shellper"


@pytest.fixture(scope="module")
def schemas() -> list[ToolSchema]:
    from harness.bundles import load_agent

    return [t.schema for t in load_agent(BUNDLE).tools]


def request_for(family: str, strategy: str, schemas: list[ToolSchema]) -> CompletionRequest:
    payload = get_adapter(family).build_payload(schemas, DecodingConstraint(strategy))  # type: ignore[arg-type]
    return CompletionRequest(
        model="oracle", messages=(Message(role="user", content="hi"),), tools=tuple(schemas),
        extra_body=payload.extra_body, stop=payload.stop, tool_choice=payload.tool_choice,
        strict_tools=payload.strict_tools, parallel_tool_calls=payload.parallel_tool_calls,
    )


CALL = ToolCall.create("echo", {"content": 'a "quoted" line, with {braces}', "file_name": "out.txt"})


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_gold_passes_the_grammar_and_parses_back(family: str, strategy: str, schemas: list[ToolSchema]) -> None:
    constraint = DecodingConstraint(strategy)  # type: ignore[arg-type]
    engine = OracleEngine(family, answers=[[CALL]], constraint=constraint)
    response = await engine.chat_completion(request_for(family, strategy, schemas))
    assert response.stats is not None and response.stats.grammar_error is None
    # The answer is the walked token ids decoded (not the rendered text handed back): all of the
    # rendered gold went through the grammar and the tokenizer, and nothing else.
    rendered = get_adapter(family).render_output([CALL], constraint)
    built = get_adapter(family).build_payload(schemas, constraint).server_built
    # vLLM's JSON-array fallback answers the calls it read from the JSON, not the text
    assert response.content == (None if built == "json_array" else rendered)
    assert response.stats.generated_tokens == len(get_tokenizer(family).encode(rendered))
    parsed = get_adapter(family).parse_response(response.content, response.tool_calls, schemas)
    assert parsed.errors == () and [(c.name, c.arguments) for c in parsed.tool_calls] == [(CALL.name, CALL.arguments)]
    if strategy == "none" or built == "none":  # no constraint: nothing compiled, no masks
        assert response.stats.compile_ms is None and response.stats.mask_us == ()
    else:  # one mask per gold token plus the stop token
        assert response.stats.compile_ms is not None
        assert len(response.stats.mask_us) == response.stats.generated_tokens + 1


async def test_a_shared_cache_compiles_each_grammar_once(schemas: list[ToolSchema]) -> None:
    cache: dict[object, object] = {}
    request = request_for("qwen", "ebnf", schemas)
    first = await OracleEngine("qwen", [[CALL]], DecodingConstraint("ebnf"), grammar_cache=cache).chat_completion(request)
    second = await OracleEngine("qwen", [[CALL]], DecodingConstraint("ebnf"), grammar_cache=cache).chat_completion(request)
    assert len(cache) == 1
    assert first.stats is not None and second.stats is not None and second.stats.compile_cached is True


async def test_the_shared_cache_keeps_only_the_recently_used_grammars(schemas: list[ToolSchema], monkeypatch) -> None:
    """A run over a corpus whose every case has its own tools must not hold every compiled grammar to its end
    (BFCL's single-turn gold replay held 1-2 GB a category): the least recently used go past the bound."""
    import harness.engines.oracle.engine as oracle

    monkeypatch.setattr(oracle, "GRAMMARS_KEPT", 2)
    cache: dict[object, object] = {}
    keys = []
    for tools in (schemas[:1], schemas[1:2], schemas[:1], schemas[2:3]):  # the first set again, then a third
        engine = OracleEngine("qwen", [[CALL]], DecodingConstraint("ebnf"), grammar_cache=cache)
        await engine.chat_completion(request_for("qwen", "ebnf", tools))
        keys.append(set(cache))
    assert len(keys[1]) == 2 and keys[2] == keys[1]  # a hit compiles nothing new
    assert len(keys[3]) == 2 and keys[1] - keys[3] == keys[1] - keys[0]  # the second set, least recently used, went


async def test_a_rejected_gold_token_ends_the_sample() -> None:
    # A grammar that cannot produce the gold answer: the text up to the rejection comes back with
    # grammar:rejected_gold, and the engine refuses any later request of the same sample.
    request = CompletionRequest(
        model="oracle", messages=(Message(role="user", content="hi"),),
        extra_body={"structured_outputs": {"grammar": 'root ::= "<tool_call>\\n{\\"name\\": \\"ls\\"" [^$]*'}},
    )
    engine = OracleEngine("qwen", answers=[[ToolCall.create("cat", {"file_name": "a"})], []],
                          constraint=DecodingConstraint("ebnf"))
    response = await engine.chat_completion(request)
    assert response.stats is not None and response.stats.grammar_error == "grammar:rejected_gold"
    assert response.content is not None and response.content.startswith('<tool_call>\n{"name": "')
    assert "cat" not in response.content
    with pytest.raises(ModelCallError) as info:
        await engine.chat_completion(request)
    assert info.value.kind == "grammar:rejected_gold"


async def test_running_out_of_answers_is_a_model_error(schemas: list[ToolSchema]) -> None:
    engine = OracleEngine("qwen", answers=[], constraint=DecodingConstraint("none"))
    with pytest.raises(ModelCallError) as info:
        await engine.chat_completion(request_for("qwen", "none", schemas))
    assert info.value.kind == "model:oracle_exhausted"


async def test_the_strategy_is_read_from_the_request_when_not_given(schemas: list[ToolSchema]) -> None:
    engine = OracleEngine("function_gemma", answers=[[CALL]])
    response = await engine.chat_completion(request_for("function_gemma", "json_schema", schemas))
    assert response.content == get_adapter("function_gemma").render_output([CALL], DecodingConstraint("json_schema"))
