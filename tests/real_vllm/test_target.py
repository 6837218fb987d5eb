"""``--engine oracle --target vllm``: gold replayed through vLLM's own structured-output backend (no
server), and the steps where vLLM's grammar allows other tokens than the harness's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.agents.client import CompletionRequest
from harness.agents.constraint import DecodingConstraint
from harness.agents.types import Message, ToolCall
from harness.grammar.families import get_adapter

from .conftest import _vllm_missing
from .test_real_vllm import bundle_tools

pytestmark = pytest.mark.slow

CAT = ToolCall.create("cat", {"file_name": "notes.txt"})


@pytest.fixture(scope="module")
def targets() -> dict[str, Any]:
    why = _vllm_missing()
    if why:
        pytest.skip(f"vLLM not available: {why}")
    from harness.engines.vllm.backend import VllmGrammarTarget
    from harness.engines.vllm.models import default_model

    out = {f: VllmGrammarTarget(default_model(f)) for f in ("function_gemma", "qwen")}
    for target in out.values():
        target.load()
    return out


def replay(family: str, strategy: str, target: Any, call: ToolCall = CAT) -> Any:
    from harness.engines.oracle import OracleEngine

    constraint = DecodingConstraint(strategy)  # type: ignore[arg-type]
    payload = get_adapter(family).build_payload(bundle_tools(), constraint)
    engine = OracleEngine(family, [[call]], constraint=constraint, target=target)
    request = CompletionRequest(model="oracle", messages=(Message("user", "x"),), extra_body=payload.extra_body,
                                stop=payload.stop)
    return asyncio.run(engine.chat_completion(request))


@pytest.mark.parametrize("strategy", ["ebnf", "structural_tag", "json_schema"])
@pytest.mark.parametrize("family", ["function_gemma", "qwen"])
def test_gold_passes_vllm_compile_path_and_differences_are_counted(targets: dict[str, Any], family: str,
                                                                   strategy: str) -> None:
    response = replay(family, strategy, targets[family])
    stats = response.stats
    assert stats.grammar_error is None, response.content
    assert stats.target_steps == len(stats.mask_us)  # every step compared, the end included
    # vLLM gives every vocabulary entry its text, special tokens included: inside the string
    # "notes.txt" it allows tokens the harness's vocabulary blanks; outside strings the two agree.
    assert 0 < stats.target_mask_diff_steps < stats.target_steps
    assert stats.target_only_tokens, "expected special tokens that only vLLM allows as text"


def test_vllm_json_language_is_compact_with_the_server_setting(targets: dict[str, Any]) -> None:
    """The server setting the harness starts vLLM with (disable_any_whitespace) gives compact JSON only:
    the gold the harness renders passes, the same call with spaces after the separators does not."""

    from harness.grammar import get_tokenizer

    target = targets["qwen"]
    artifact = get_adapter("qwen").build_payload(bundle_tools(), DecodingConstraint("json_schema")).artifact
    compiled, _, _ = target.compile(artifact)
    tok = get_tokenizer("qwen")
    for text, ok in (('{"name":"cat","arguments":{"file_name":"a"}}', True),
                     ('{"name": "cat", "arguments": {"file_name": "a"}}', False)):
        matcher = target.matcher(compiled)
        accepted = all(matcher.accept_token(i) for i in tok.encode(text))
        assert accepted is ok, text
