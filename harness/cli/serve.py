"""``harness serve``: the local or oracle engine behind an OpenAI/vLLM-compatible HTTP server."""

from __future__ import annotations

import typer


def serve(
    engine: str = typer.Option("local", "--engine", help="local (Gemma 3 270M base on the CPU) | oracle (gold replay)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind."),
    port: int = typer.Option(8000, "--port", help="Port to bind (0: any free port; the URL is printed)."),
    mask_policy: str = typer.Option("lazy", "--mask-policy", help="local engine: lazy | always."),
    n_ctx: int = typer.Option(8192, "--n-ctx", help="local engine: context window in tokens."),
) -> None:
    """Serve /v1/models and /v1/chat/completions (vLLM's request fields and response shape)."""
    from harness.engines.registry import SERVED_ENGINE_NAMES
    from harness.engines.server import run_server

    if engine not in SERVED_ENGINE_NAMES:
        raise typer.BadParameter(f"expected one of {', '.join(SERVED_ENGINE_NAMES)}", param_hint="--engine")
    run_server(engine, host, port, mask_policy=mask_policy, n_ctx=n_ctx)
