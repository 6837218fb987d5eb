"""``harness serve``: the local or oracle engine behind an OpenAI/vLLM-compatible HTTP server."""

from __future__ import annotations

from typing import Annotated

import typer

from harness.cli.options import MaskPolicy, ServedEngine


def serve(
    engine: Annotated[
        ServedEngine,
        typer.Option("--engine", help="local: Gemma 3 270M base on the CPU; oracle: gold replay (requests carry it)."),
    ] = ServedEngine.local,
    host: Annotated[str, typer.Option("--host", metavar="ADDRESS", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, metavar="PORT", help="Port to bind (0: any free port; the URL is printed).")] = 8000,
    mask_policy: Annotated[
        MaskPolicy, typer.Option("--mask-policy", help="local engine: fill the token mask only when the model's token is rejected (lazy) or at every token.")
    ] = MaskPolicy.lazy,
    n_ctx: Annotated[int, typer.Option("--n-ctx", min=1, metavar="TOKENS", help="local engine: context window in tokens.")] = 8192,
) -> None:
    """Serve /v1/models and /v1/chat/completions (vLLM's request fields and response shape)."""
    from harness.engines.server import run_server

    run_server(engine.value, host, port, mask_policy=mask_policy.value, n_ctx=n_ctx)
