"""vLLM's own strict tool calling (the ``required`` and ``strict`` strategies) against vLLM itself:

- the constraint the harness predicts is, byte for byte, what vLLM's own code builds (its chat request
  model, its parsers' structural-tag registry and JSON-array fallback) for SHELLper's tools and for a BFCL
  single-turn sample's tools, both families, with and without parallel calls;
- the oracle's verdicts on the gold answers (SHELLper's first 25 points and the BFCL sample) equal the
  verdicts of vLLM's own compile path (``--engine oracle --target vllm``: the same artifact compiled by
  vLLM's xgrammar backend, with its tokenizer view and stop tokens): 0 differences;
- a real vLLM server takes the strategies' requests, and what it answers under its own grammar is in the
  grammar the harness predicts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from harness.agents.constraint import DecodingConstraint
from harness.agents.types import ToolSchema
from harness.cli.main import app
from harness.grammar.families import canonical_schema, get_adapter
from harness.grammar.formats.vllm_tools import openai_tools, server_constraint, strategy_request
from harness.vocabulary import SERVER_STRATEGIES

from .conftest import _vllm_missing
from .test_real_vllm import bundle_tools

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SHELLPER = ROOT / "suites" / "shellper"
LIMIT = 25
FAMILIES = ("function_gemma", "qwen")
runner = CliRunner()


@pytest.fixture(scope="module")
def vllm_code() -> None:
    why = _vllm_missing()
    if why:
        pytest.skip(f"vLLM not available: {why}")


@pytest.fixture(scope="module")
def bfcl_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """BFCL's ``simple_python`` category as a suite (its first LIMIT entries are the sample)."""
    out = tmp_path_factory.mktemp("bfcl") / "simple_python"
    result = runner.invoke(app, ["import", "bfcl", "simple_python", "--out", str(out)])
    if result.exit_code != 0:
        pytest.skip(f"bfcl-eval not available: {result.output[-300:]}")
    return out


def _bfcl_tool_sets(suite: Path) -> list[list[ToolSchema]]:
    sets = []
    for line in (suite / "cases.jsonl").read_text().splitlines()[:LIMIT]:
        case = json.loads(line)
        sets.append([ToolSchema.from_openai(t) for t in case["functions"]])  # as the suite converts them
    return sets


def _differences(tool_sets: list[list[ToolSchema]]) -> list[str]:
    from harness.grammar.formats.vllm_tools import vllm_own_constraint

    found = []
    for tools in tool_sets:
        canonical = [canonical_schema(t) for t in tools]
        for family in FAMILIES:
            for strategy in SERVER_STRATEGIES:
                for parallel in (False, True):
                    fields = strategy_request(strategy, allow_parallel_calls=parallel)
                    ours, theirs = server_constraint(family, canonical, fields), vllm_own_constraint(family, canonical, fields)
                    if (ours.label, ours.artifact) != (theirs.label, theirs.artifact):
                        found.append(f"{family}/{strategy}/parallel={parallel} {[t.name for t in tools]}: "
                                     f"{ours.label} != {theirs.label}")
    return found


def test_the_harness_builds_what_vllms_own_code_builds(vllm_code: None, bfcl_sample: Path) -> None:
    tool_sets = [bundle_tools(), *_bfcl_tool_sets(bfcl_sample)]
    assert len(tool_sets) == 1 + LIMIT
    assert _differences(tool_sets) == []


def _verdicts(suite: Path, out: Path, *extra: str) -> dict[str, tuple[str, str | None, str | None]]:
    result = runner.invoke(app, ["run", str(suite), "--engine", "oracle", "--family", ",".join(FAMILIES),
                                 "--strategy", ",".join(SERVER_STRATEGIES), "--limit", str(LIMIT),
                                 "--out", str(out), *extra])
    assert result.exit_code == 0, result.output[-2000:]
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    return {r["sample_id"]: (r["status"], r["error_kind"], r.get("server_constraint")) for r in records}


@pytest.mark.parametrize("suite", ["shellper", "bfcl"])
def test_oracle_verdicts_equal_vllms_compile_path(vllm_code: None, bfcl_sample: Path, tmp_path: Path,
                                                   suite: str) -> None:
    path = SHELLPER if suite == "shellper" else bfcl_sample
    harness = _verdicts(path, tmp_path / "oracle")
    vllm = _verdicts(path, tmp_path / "target", "--target", "vllm")
    assert len(harness) == len(FAMILIES) * len(SERVER_STRATEGIES) * LIMIT
    differences = {k: (harness[k], vllm.get(k)) for k in harness if harness[k] != vllm.get(k)}
    assert differences == {}
    built = {(k.split("/")[1], k.split("/")[2]): v[2] for k, v in harness.items()}
    assert built[("qwen", "required")] == built[("qwen", "strict")] == "structural_tag:hermes"
    assert built[("function_gemma", "required")] == "json_array" and built[("function_gemma", "strict")] == "none"


def _ask(server: Any, family: str, strategy: str) -> dict[str, Any]:
    tools = bundle_tools()
    payload = get_adapter(family).build_payload(tools, DecodingConstraint(strategy))
    body: dict[str, Any] = {
        "model": server.model.served_name, "messages": [{"role": "user", "content": "Where am I?"}],
        "tools": openai_tools([canonical_schema(t) for t in tools], strict=payload.strict_tools),
        "temperature": 0, "max_tokens": 24, **payload.extra_body,
    }
    for name in ("tool_choice", "parallel_tool_calls"):
        if getattr(payload, name) is not None:
            body[name] = getattr(payload, name)
    reply = httpx.post(server.base_url + "/chat/completions", json=body, timeout=180)
    assert reply.status_code == 200, reply.text
    return reply.json()["choices"][0]  # type: ignore[no-any-return]


@pytest.mark.parametrize("strategy", SERVER_STRATEGIES)
@pytest.mark.parametrize("family", FAMILIES)
def test_a_real_server_answers_within_the_predicted_grammar(vllm_servers: dict[str, Any], family: str,
                                                            strategy: str) -> None:
    """The server's raw answer (cut at 24 tokens, or its calls written back as the grammar spells them)
    is accepted by the constraint the harness predicts, compiled as the harness compiles it."""
    import xgrammar as xgr

    from harness.grammar import compile_artifact

    choice = _ask(vllm_servers[family], family, strategy)
    artifact = get_adapter(family).build_payload(bundle_tools(), DecodingConstraint(strategy)).artifact
    message = choice["message"]
    if artifact is None:  # function_gemma/strict: vLLM builds nothing; the answer is free
        return
    calls = message.get("tool_calls") or []
    if artifact.kind == "json" and calls:  # the JSON array vLLM read the calls from
        text = json.dumps([{"name": c["function"]["name"], "parameters": json.loads(c["function"]["arguments"])}
                           for c in calls], separators=(",", ":"))
    elif calls:  # hermes: the calls in the tag's first spelling
        text = "".join(f'<tool_call>\n{{"name": "{c["function"]["name"]}", "arguments": '
                       f'{c["function"]["arguments"]}}}\n</tool_call>' for c in calls)
    else:
        text = message.get("content") or ""
    compiled = compile_artifact(artifact, family).compiled
    assert xgr.GrammarMatcher(compiled).accept_string(text), f"{family}/{strategy}: {text!r}"
    if strategy == "required":
        assert calls or choice["finish_reason"] == "length", choice
