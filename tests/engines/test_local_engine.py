"""The embedded engine in-process: real Gemma 3 270M weights, real tokenizer, real xgrammar."""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import numpy as np
import pytest

from harness.agents.client import ModelCallError
from harness.vocabulary import (
    HARNESS_STRATEGIES as CONSTRAINED_STRATEGIES,  # the grammars the harness builds (vLLM builds required/strict itself)
)

slow = pytest.mark.slow


def _walk_ids(request, token_ids):
    """Replay the generated ids through a fresh matcher of the request's grammar."""
    from harness.grammar import compile_artifact, constraint_from_request, get_tokenizer
    from harness.grammar.decode import GoldSource, decode

    artifact = constraint_from_request(request.extra_body, None)
    compiled = compile_artifact(artifact, "function_gemma").compiled
    tok = get_tokenizer("function_gemma")
    return decode(compiled, GoldSource(token_ids), tok, max_tokens=len(token_ids) + 1, mask_policy="always")


def test_model_id_says_base_model_in_functiongemma_format():
    from harness.engines.local import LOCAL_MODEL_ID

    assert "gemma-3-270m-base" in LOCAL_MODEL_ID
    assert "functiongemma format" in LOCAL_MODEL_ID
    assert not LOCAL_MODEL_ID.lower().startswith("functiongemma")


def test_qwen_family_is_a_clear_error():
    from harness.engines.local import LocalEngine, NoWeightsError

    with pytest.raises(NoWeightsError) as info:
        LocalEngine(family="qwen")
    message = str(info.value)
    assert info.value.kind == "model:no_weights"
    assert "PyPI" in message and "OpenAI-compatible" in message and "vllm" in message.lower()


async def test_qwen_model_request_is_a_clear_error(make_request):
    from harness.engines.local import LocalEngine, NoWeightsError

    engine = LocalEngine()  # not loaded: the model id is checked first
    with pytest.raises(NoWeightsError, match="no Qwen model weights are available on PyPI"):
        await engine.chat_completion(make_request("none", model="Qwen/Qwen3-0.6B"))


@slow
def test_prompt_ids_agree_with_llama_cpp_tokenizer(local_engine, make_request):
    """The family tokenizer's prompt ids are what llama.cpp reads for the same text (ids 46-52 are
    llama.cpp's <unused40>..<unused46>)."""
    from harness.grammar.families import get_adapter
    from harness.grammar.tokenizers import FUNCTION_GEMMA_CONTROL_TOKENS

    request = make_request("ebnf")
    ids = local_engine.prompt_ids(request)
    text = get_adapter("function_gemma").render_prompt(request.messages, request.tools)
    for i, name in FUNCTION_GEMMA_CONTROL_TOKENS.items():
        text = text.replace(name, f"<unused{i - 6}>")
    assert ids[0] == 2 and ids.count(2) == 1
    assert 46 in ids and 47 in ids
    assert local_engine.runtime.tokenize(text) == ids


@slow
@pytest.mark.parametrize("jump", ["verify", "append", "off"])
@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
@pytest.mark.parametrize("parallel", [False, True])
def test_constrained_output_is_valid_for_its_grammar(local_engine, make_request, strategy, parallel, jump):
    request = make_request(strategy, parallel=parallel, max_tokens=40)
    try:
        local_engine.jump = jump
        response = local_engine.complete(request)
    finally:
        local_engine.jump = "verify"
    ids = local_engine.last_decode.token_ids
    assert (response.stats.forced_tokens is None) is (jump == "off")
    assert response.stats.grammar_error is None
    walked = _walk_ids(request, ids)
    if response.finish_reason == "stop":
        assert walked.error is None and walked.terminated, (response.content, walked)
    else:  # cut by max_tokens: every token it did emit was allowed
        assert response.finish_reason == "length"
        assert walked.error is None or walked.rejected_at == len(ids), (response.content, walked)
    assert response.content == local_engine.tokenizer.decode(ids)


@slow
@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
def test_seeded_sampling_is_valid_and_repeatable(local_engine, make_request, strategy):
    request = make_request(strategy, parallel=True, max_tokens=32, temperature=1.0, seed=7)
    first = local_engine.complete(request)
    ids = local_engine.last_decode.token_ids
    again = local_engine.complete(request)
    assert first.content == again.content
    walked = _walk_ids(request, ids)
    assert walked.error is None or walked.rejected_at == len(ids)


@slow
@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
def test_top_p_is_taken_among_the_tokens_the_grammar_allows(local_engine, make_request, strategy):
    """A nucleus this small holds one token: the most likely *allowed* one, so sampling at temperature 1
    gives the greedy answer under the grammar (a nucleus of the unmasked scores would often hold no
    allowed token at all)."""
    greedy = local_engine.complete(make_request(strategy, max_tokens=24))
    sampled = local_engine.complete(make_request(strategy, max_tokens=24, temperature=1.0, top_p=1e-6, seed=3))
    assert sampled.content == greedy.content


@slow
@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
def test_lazy_mask_picks_the_same_tokens_as_always(local_engine, make_request, strategy):
    """The cheap path (argmax checked against the matcher) is exact for greedy decoding."""
    request = make_request(strategy, parallel=True, max_tokens=40)
    try:
        local_engine.mask_policy = "always"
        always = local_engine.complete(request)
        fills_always = len(always.stats.mask_us)
        steps_always = local_engine.last_decode.steps
        local_engine.mask_policy = "lazy"
        lazy = local_engine.complete(request)
    finally:
        local_engine.mask_policy = "lazy"
    assert lazy.content == always.content
    assert fills_always >= steps_always  # every model step filled the mask (forced tokens need none)
    assert len(lazy.stats.mask_us) < fills_always


@slow
@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
def test_verify_keeps_only_chosen_tokens_in_the_cache(local_engine, make_request, strategy):
    """Drafted tokens the model did not choose leave the KV cache: it holds the prompt and the
    answer (all but the last chosen token, which is never evaluated), and fewer forward passes ran
    than tokens were chosen."""
    request = make_request(strategy, parallel=True, max_tokens=48)
    response = local_engine.complete(request)
    result = local_engine.last_decode
    prompt = local_engine.prompt_ids(request)
    cached = local_engine.runtime.cached_ids
    assert cached[: len(prompt)] == tuple(prompt)
    answer = cached[len(prompt) :]
    assert answer == result.token_ids[: len(answer)] and len(result.token_ids) - len(answer) <= 1
    assert result.drafted >= result.forced > 0 and result.steps < result.generated
    assert response.stats.forced_tokens == result.forced


@slow
def test_a_batch_gives_the_scores_after_each_of_its_tokens(local_engine, make_request):
    rt = local_engine.runtime
    prompt = local_engine.prompt_ids(make_request("none"))
    tokens = local_engine.tokenizer.encode("<start_function_call>call:cat{")
    rows = []
    for _ in range(2):
        rt.prefill(prompt)
        rt.push(tokens, every_row=True)
        rows.append([np.array(rt.logits(i)) for i in range(len(tokens))])
        assert np.array_equal(rows[-1][-1], np.array(rt.logits()))
    assert all(np.array_equal(a, b) for a, b in zip(*rows, strict=True))  # the same batch, the same scores
    assert len({int(np.argmax(r)) for r in rows[0]}) > 1  # one row per position, not one row repeated
    rt.discard(len(tokens) - 1)
    assert rt.cached_ids == (*prompt, tokens[0])


@slow
def test_prefix_reuse_gives_bit_identical_logits(local_engine, make_request):
    rt = local_engine.runtime
    a = local_engine.prompt_ids(make_request("none"))
    b = local_engine.prompt_ids(make_request("none", user="Show me the last 5 lines of server.log."))
    rt.reset()
    fresh = rt.prefill(a)
    assert fresh.reused_tokens == 0
    logits_fresh = np.array(rt.logits())
    rt.push([int(np.argmax(logits_fresh))])  # the cache now also holds a generated token
    rt.prefill(b)
    again = rt.prefill(a)
    assert again.reused_tokens >= len(a) - 2 * rt.block and again.reused_tokens % rt.block == 0
    assert np.array_equal(np.array(rt.logits()), logits_fresh)


@slow
def test_same_request_twice_reuses_the_prompt_and_answers_the_same(local_engine, make_request):
    request = make_request("ebnf", parallel=True)
    local_engine.runtime.reset()
    first = local_engine.complete(request)
    second = local_engine.complete(request)
    assert first.stats.reused_prompt_tokens == 0
    assert second.stats.reused_prompt_tokens >= first.usage.prompt_tokens - local_engine.runtime.block
    assert second.content == first.content
    assert second.stats.compile_cached is True


@slow
def test_stop_sequence_cuts_the_text_and_never_streams_it(local_engine, make_request):
    base = local_engine.complete(make_request("none", max_tokens=24))
    text = base.content
    assert len(text) > 20
    stop = text[12:17]
    expected = text[: text.index(stop)]
    chunks: list[str] = []
    cut = local_engine.complete(make_request("none", max_tokens=24, stop=(stop,)), on_text=chunks.append)
    assert cut.content == expected
    assert cut.finish_reason == "stop"
    assert "".join(chunks) == expected


@slow
def test_max_tokens_bounds_the_output(local_engine, make_request):
    response = local_engine.complete(make_request("none", max_tokens=5))
    assert response.finish_reason == "length"
    assert response.usage.completion_tokens == 5
    assert response.stats.generated_tokens == 5


@slow
def test_records_per_request_figures(local_engine, make_request):
    response = local_engine.complete(make_request("json_schema", max_tokens=30))
    stats = response.stats
    assert stats.compile_ms is not None and stats.compile_cached is not None
    assert response.ttft_ms is not None and 0 < response.ttft_ms <= response.latency_ms
    assert stats.tokens_per_s is not None and stats.tokens_per_s > 0
    assert stats.prefill_ms is not None
    assert "gemma-3-270m-base" in stats.engine
    assert response.usage.prompt_tokens > 500  # 18 tool declarations


@slow
def test_a_bad_constraint_is_a_bad_request_not_an_unconstrained_answer(local_engine, make_request):
    for extra in (
        {"structured_outputs": {"grammar": 5}},
        {"structured_outputs": {"regexp": "a+"}},
        {"structured_outputs": {"grammar": 'root ::= "a" |'}},
        {"structured_outputs": {"grammar": 'root ::= "a"', "json": {"type": "object"}}},
    ):
        with pytest.raises(ModelCallError) as info:
            local_engine.complete(make_request("none", extra_body=extra))
        assert info.value.kind == "model:bad_request"


@slow
async def test_requests_run_in_a_worker_thread_one_at_a_time(local_engine, make_request):
    requests = [make_request("ebnf"), make_request("ebnf", user="Rename draft.txt to final.txt.")]
    sequential = [local_engine.complete(r).content for r in requests]
    threads: set[int] = set()
    original = local_engine.complete

    def spy(request, *args, **kwargs):
        threads.add(threading.get_ident())
        return original(request, *args, **kwargs)

    local_engine.complete = spy
    try:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.005)
                ticks += 1

        tick = asyncio.create_task(ticker())
        together = await asyncio.gather(*(local_engine.chat_completion(r) for r in requests))
        tick.cancel()
    finally:
        del local_engine.complete
    assert [r.content for r in together] == sequential
    assert threading.get_ident() not in threads
    assert ticks > 0  # the event loop ran while the model was busy


def test_engine_stats_fields_have_defaults():
    from harness.agents.client import EngineStats

    names = {f.name for f in dataclasses.fields(EngineStats)}
    assert {"tokens_per_s", "prefill_ms", "reused_prompt_tokens"} <= names
    assert EngineStats().tokens_per_s is None


@slow
def test_llama_cpps_own_log_lines_go_to_the_runs_log_not_the_terminal():
    import subprocess
    import sys

    code = ("from harness.engines.local import LocalEngine; lines = []; LocalEngine(log=lines.append).load(); "
            "print(sum('llama' in line for line in lines))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(done.stdout.strip()) > 10  # the loader's and the context's lines, to the sink
    assert "llama" not in done.stderr and "SWA" not in done.stderr, done.stderr
