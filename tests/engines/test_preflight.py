"""The checks before a run's first sample: a setup that cannot work stops the run in seconds with exit 2
and the cause named, before any sample is filed as a model error."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from servers import Server
from typer.testing import CliRunner

from harness.cli.main import app
from harness.engines.shapes import Endpoint
from harness.eval.run import RunError
from harness.eval.run.preflight import fits_family

runner = CliRunner()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(tmp_path: Path, *args: str) -> tuple[int, str]:
    out = tmp_path / "r"
    result = runner.invoke(app, ["run", "smoke", "--family", "qwen", "--strategy", "ebnf,json_schema", "--out", str(out),
                                 *args])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stderr


@pytest.mark.parametrize("model", [["--model", "qwen=served-7b"], []])
def test_a_server_that_is_down_stops_the_run_with_exit_2(tmp_path: Path, model: list[str]) -> None:
    code, err = run(tmp_path, "--engine", "openai", "--base-url", f"http://127.0.0.1:{_closed_port()}/v1", *model)
    assert code == 2 and ("is the server running" in err or "does not answer" in err)
    assert not (tmp_path / "r" / "samples.jsonl").exists()  # no sample filed as model:connection


def test_vllm_base_url_is_checked_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_BASE_URL", f"http://127.0.0.1:{_closed_port()}/v1")
    code, err = run(tmp_path, "--engine", "vllm", "--model", "qwen=m")
    assert code == 2 and "does not answer" in err


@pytest.fixture(scope="module")
def strict_server() -> Iterator[Server]:
    """harness serve refusing every grammar over 1 KiB (400): a server that takes no constrained request."""
    server = Server("oracle", env={"HARNESS_SERVE_MAX_CONSTRAINT_BYTES": "1024"})
    yield server
    server.stop()


@pytest.mark.slow
def test_a_model_the_server_does_not_serve_is_named_with_what_it_serves(oracle_server: Server, tmp_path: Path) -> None:
    code, err = run(tmp_path, "--engine", "openai", "--base-url", oracle_server.url, "--model", "qwen=qwen-7b")
    assert code == 2 and "not 'qwen-7b' (qwen)" in err and "'oracle-qwen'" in err


@pytest.mark.slow
def test_a_server_that_refuses_the_strategys_requests_is_named_by_the_probe(strict_server: Server,
                                                                             tmp_path: Path) -> None:
    code, err = run(tmp_path, "--engine", "openai", "--base-url", strict_server.url, "--model", "qwen=oracle-qwen")
    assert code == 2 and "a probe request of qwen/ebnf (case mira-look-00) failed: model:http_400" in err


@pytest.mark.slow
def test_a_setup_that_works_passes_the_preflight_and_runs(oracle_server: Server, tmp_path: Path) -> None:
    code, err = run(tmp_path, "--engine", "openai", "--base-url", oracle_server.url, "--model", "qwen=oracle-qwen")
    assert code == 0, err
    log = (tmp_path / "r" / "run.log").read_text()
    assert "preflight:" in log and "took a probe request of each of 2 family x strategy lanes" in log


def _tokenizer(tokens: int | None) -> httpx.MockTransport:
    """A fake of one seam: vLLM's /tokenize answering ``tokens`` tokens (None: a server without it, 404)."""

    def answer(request: httpx.Request) -> httpx.Response:
        if tokens is None:
            return httpx.Response(404)
        return httpx.Response(200, json={"tokens": list(range(tokens)), "count": tokens})

    return httpx.MockTransport(answer)


@pytest.mark.parametrize(("tokens", "fits"), [(1, True), (6, False), (None, True)])
def test_a_model_whose_vocabulary_spells_the_call_tag_in_pieces_does_not_fit(tokens: int | None, fits: bool) -> None:
    endpoint = Endpoint("function_gemma", "http://h:1/v1", "Qwen3-0.6B")

    async def check() -> None:
        async with httpx.AsyncClient(transport=_tokenizer(tokens)) as http:
            await fits_family(endpoint, "<start_function_call>", http)

    if fits:
        asyncio.run(check())
    else:
        with pytest.raises(RunError, match=re.escape("'Qwen3-0.6B' does not fit function_gemma's format: its vocabulary spells "
                                             "'<start_function_call>' in 6 tokens")):
            asyncio.run(check())


DEEP = b"[" * 100_000 + b"]" * 100_000
"""JSON nested 100,000 deep (Python's json recursion fails near 1,000)."""


def _hostile(body: bytes) -> httpx.MockTransport:
    """A fake of one seam: a server answering every request with ``body`` (status 200)."""
    return httpx.MockTransport(lambda request: httpx.Response(200, content=body))


@pytest.mark.parametrize("body", [DEEP, b'{"data": ' + DEEP + b"}", b'{"tokens": 5}', b'{"tokens": {"a": 1}}', b"\xff"])
def test_a_hostile_models_or_tokenize_answer_is_a_named_error_never_a_crash(body: bytes) -> None:
    from harness.eval.run.preflight import reachable

    endpoint = Endpoint("function_gemma", "http://h:1/v1", "m")

    async def check() -> None:
        async with httpx.AsyncClient(transport=_hostile(body)) as http:
            await fits_family(endpoint, "<start_function_call>", http)  # not vLLM's answer: nothing to check
            await reachable(endpoint, http)

    with pytest.raises(RunError, match=r"/models is not an OpenAI-compatible model list"):
        asyncio.run(check())
