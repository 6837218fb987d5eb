"""Which dialect a server speaks, from what it answers (``--dialect`` unset): vLLM answers ``GET /version``
with its version; llama-cpp-python's server answers ``POST /extras/tokenize``. A server that answers
neither is spoken to in vLLM's fields, the harness's default (``harness serve`` takes them too): the
preflight's known-answer probe then shows whether it enforces them; the plain OpenAI API is chosen with
``--dialect openai``."""

from __future__ import annotations

import httpx

TIMEOUT_S = 3.0


def detect_dialect(base_url: str, api_key: str | None = None) -> tuple[str, str]:
    """``(dialect, what showed it)`` for the server at ``base_url`` (``http://host:port/v1``)."""
    root = base_url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(timeout=TIMEOUT_S, headers=headers) as http:
        try:
            answer = http.get(f"{root}/version")
            if answer.status_code == 200 and isinstance(version := answer.json().get("version"), str):
                return "vllm", f"GET /version answers vLLM {version}"
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
        try:
            answer = http.post(f"{root}/extras/tokenize", json={"input": "a"})
            if answer.status_code == 200 and isinstance(answer.json().get("tokens"), list):
                return "llama_cpp", "POST /extras/tokenize answers (llama-cpp-python's server)"
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
    return "vllm", "the default: neither vLLM's /version nor llama-cpp-python's /extras/tokenize answers"


__all__ = ["detect_dialect"]
