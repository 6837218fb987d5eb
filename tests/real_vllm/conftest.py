"""Real vLLM servers (the CPU build) for the tests in this folder: started once, both at once (each
takes ~60-110 s on 2 cores), stopped when the folder's last test is done (with their engines they hold
~8 GB, which the BFCL walks after them on the same xdist worker need). Skipped with the reason when vLLM is not
installed; CI installs it, so there they run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

FAMILIES = ("function_gemma", "qwen")


def _vllm_missing() -> str | None:
    try:
        from harness.engines.vllm import check_environment

        check_environment()
    except Exception as exc:  # not installed, or a broken torchvision: the message says which
        return str(exc)
    return None


@pytest.fixture(scope="package")
def vllm_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """family -> a running VllmServer on the family's default model (Gemma 3 270M base weights in
    FunctionGemma's format; the random-weight Qwen3 format fixture)."""
    why = _vllm_missing()
    if why:
        pytest.skip(f"real vLLM not available: {why}")
    from harness.engines.vllm import VllmServer, default_model

    logs = Path(tmp_path_factory.mktemp("vllm-logs"))
    servers = {f: VllmServer(default_model(f), logs / f"{f}.log") for f in FAMILIES}
    try:
        for server in servers.values():
            server.launch()
        for server in servers.values():
            server.wait_ready()
        yield servers  # type: ignore[misc]
    finally:
        for server in servers.values():
            server.stop()
