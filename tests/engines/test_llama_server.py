"""llama-cpp-python's OpenAI-compatible server as a real second server (issue 43): started here on the
embedded Gemma 3 270M GGUF with the command docs/servers.md prints, spoken to in its dialect, and sent
vLLM's field to show that a constraint a server ignores is refused, never scored as the strategy."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("starlette_context")

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "servers.md").read_text(encoding="utf-8")
START = next(line for line in PAGE.splitlines() if line.startswith("python -m llama_cpp.server "))
"""docs/servers.md's command that starts the server, as printed (GGUF and PORT filled in)."""
RUN = next(line for line in PAGE.splitlines() if line.startswith("harness run ") and "PORT" in line)
"""docs/servers.md's run against it, as printed (PORT filled in; --out added)."""
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from harness.grammar import gemma_gguf_path

    port = _free_port()
    command = shlex.split(START.replace("GGUF", str(gemma_gguf_path())).replace("PORT", str(port)))
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, *command[1:]], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def _harness(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from harness.cli.main import main; sys.argv[0] = 'harness'; main()"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_lanes_run_in_its_dialect_and_every_constrained_answer_fits(llama_server: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    port = llama_server.rsplit(":", 1)[1].removesuffix("/v1")
    done = _harness(*shlex.split(RUN.replace("PORT", port))[1:], "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 3  # --limit 1 x none, ebnf, json_schema
    wire = [s["sample_id"] for s in samples if str(s.get("error_kind") or "").startswith("model:")]
    assert wire == [], [s.get("error") for s in samples if s["sample_id"] in wire]
    unenforced = [s["sample_id"] for s in samples if s.get("error_kind") == "constraint:not_enforced"]
    assert unenforced == []
    run = json.loads((out / "run.json").read_text())
    assert run["engine_details"]["dialect"]["name"] == "llama_cpp"
    assert run["engine_details"]["dialect"]["function_gemma"]["endpoint"] == "/completions"
    summary = json.loads((out / "summary.json").read_text())
    rows = summary["rows"] if isinstance(summary, dict) else summary
    assert {(r["strategy"], r["value"]) for r in rows if r["metric"] == "not_enforced"} == {
        ("ebnf", 0.0), ("json_schema", 0.0)}
    # its streams carry no usage: the harness counted each answer's tokens, said so, and measured tokens/s
    from harness.grammar import get_tokenizer

    steps = [step for s in samples for step in s["steps"] if step["output"]]
    assert steps and all(step["usage"]["counted_by"] == "harness" for step in steps)
    assert all(step["usage"]["completion_tokens"] == len(get_tokenizer("function_gemma").encode(step["output"]))
               for step in steps)
    assert "counted by the harness" in run["engine_details"]["dialect"]["function_gemma"]["tokens"]
    assert any(r["metric"] == "tokens_per_s_p50" for r in rows)


def test_vllms_field_on_this_server_is_refused_before_the_first_sample(llama_server: str, tmp_path: Path) -> None:
    done = _harness("run", "suites/shellper", "--limit", "1", "--engine", "openai", "--base-url", llama_server,
                    "--family", "function_gemma", "--strategy", "ebnf", "--dialect", "vllm", "--out",
                    str(tmp_path / "refused"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "lane function_gemma/ebnf refused" in done.stderr
    assert "does not enforce structured_outputs.grammar" in done.stderr
    assert "seems to speak llama_cpp" in done.stderr
    assert not (tmp_path / "refused" / "samples.jsonl").exists() or not (tmp_path / "refused" / "samples.jsonl").read_text()


def test_the_required_strategy_is_refused_by_name_not_run_unconstrained(llama_server: str, tmp_path: Path) -> None:
    done = _harness("run", "suites/shellper", "--limit", "1", "--engine", "openai", "--base-url", llama_server,
                    "--family", "function_gemma", "--strategy", "required", "--out", str(tmp_path / "required"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "the server builds no constraint from the tools" in done.stderr


def test_the_dialect_table_names_a_field_or_a_refusal_for_every_constraint_kind() -> None:
    from harness.engines import DIALECT_NAMES
    from harness.engines.dialects import DIALECTS, get_dialect

    assert DIALECT_NAMES == tuple(DIALECTS) == ("vllm", "llama_cpp", "openai")
    for name in DIALECT_NAMES:
        assert set(get_dialect(name).fields) == {"grammar", "json", "structural_tag"}
