"""pytest-benchmark: the grammar path of one request, per family x strategy, on the 18 SHELLper tools.

- building the artifact (``adapter.build_payload``);
- compiling it cold (``compile_artifact`` after ``clear_compile_cache``);
- one mask fill (xgrammar ``fill_next_token_bitmask``) at the start of the answer and inside a string
  argument (where a grammar's string rule decides the cost);
- parsing a gold answer (``adapter.parse_response``).

The sandboxed tool call is in ``test_bench_sandbox.py``. Run with ``tox -e bench`` (saved as
pytest-benchmark JSON for comparison over time); the plain test run executes each once as a test.
The project's goals: mask p50 <= 25 us, compile cold <= 50 ms (and <= 100 ms at 100 tools: `harness bench grammar`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.agents.constraint import DecodingConstraint
from harness.agents.types import ToolCall
from harness.grammar.families import FAMILIES, get_adapter
from harness.vocabulary import HARNESS_STRATEGIES

CASES = [(f, s) for f in FAMILIES for s in HARNESS_STRATEGIES]  # the grammars the harness builds and compiles
GOLD = ToolCall("gold", "grep", {"file_name": "notes.txt", "pattern": "plumber"})


@pytest.fixture(scope="module")
def tools() -> Any:
    from harness.bench.inputs import load_tool_schemas

    loaded = load_tool_schemas(Path(__file__).resolve().parents[2] / "bundles" / "shellper" / "tools")
    assert len(loaded) == 18
    return loaded


def _constraint(strategy: str) -> DecodingConstraint:
    return DecodingConstraint(strategy=strategy)  # type: ignore[arg-type]


@pytest.mark.parametrize(("family", "strategy"), CASES)
def test_bench_build_payload(benchmark, tools, family: str, strategy: str) -> None:
    adapter = get_adapter(family)
    payload = benchmark(adapter.build_payload, tools, _constraint(strategy))
    assert payload.artifact is not None
    assert "grep" in payload.artifact.value


@pytest.mark.parametrize(("family", "strategy"), CASES)
def test_bench_compile_cold(benchmark, tools, family: str, strategy: str) -> None:
    from harness.grammar import clear_compile_cache, compile_artifact

    artifact = get_adapter(family).build_payload(tools, _constraint(strategy)).artifact
    assert artifact is not None
    compile_artifact(artifact, family)  # tokenizer and compiler built outside the timing

    result = benchmark.pedantic(
        compile_artifact, args=(artifact, family), setup=lambda: clear_compile_cache(family), rounds=5
    )
    assert not result.cached


def _matcher_at(family: str, strategy: str, tools: Any, marker: str | None) -> tuple[Any, Any]:
    """A matcher advanced through the gold answer up to (and including) the token that ends with
    ``marker`` (None: at the start), and a bitmask."""
    import xgrammar as xgr

    from harness.grammar import allocate_bitmask, compile_artifact, get_tokenizer

    tok = get_tokenizer(family)
    constraint = _constraint(strategy)
    adapter = get_adapter(family)
    compiled = compile_artifact(adapter.build_payload(tools, constraint).artifact, family).compiled
    matcher = xgr.GrammarMatcher(compiled)
    if marker is not None:
        text = adapter.render_output([GOLD], constraint)
        ids = tok.encode(text)
        prefix = text[: text.index(marker) + len(marker)]
        for i, token in enumerate(ids):
            assert matcher.accept_token(token)
            if len(tok.decode(ids[: i + 1])) >= len(prefix):
                break
    return matcher, allocate_bitmask(tok.vocab_size)


@pytest.mark.parametrize(("family", "strategy"), CASES)
@pytest.mark.parametrize("where", ["start", "in_string"])
def test_bench_mask_fill(benchmark, tools, family: str, strategy: str, where: str) -> None:
    from harness.grammar import allowed_ids, get_tokenizer

    matcher, bitmask = _matcher_at(family, strategy, tools, None if where == "start" else "plum")
    benchmark(matcher.fill_next_token_bitmask, bitmask)
    allowed = allowed_ids(bitmask, get_tokenizer(family).vocab_size)
    assert 0 < len(allowed) < get_tokenizer(family).vocab_size


@pytest.mark.parametrize(("family", "strategy"), CASES)
def test_bench_parse_response(benchmark, tools, family: str, strategy: str) -> None:
    adapter = get_adapter(family)
    text = adapter.render_output([GOLD], _constraint(strategy))
    parsed = benchmark(adapter.parse_response, text, [], tools)
    assert parsed.ok, parsed.errors
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [(GOLD.name, GOLD.arguments)]
