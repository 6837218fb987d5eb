"""``harness serve``: the local or oracle engine behind an OpenAI/vLLM-compatible HTTP server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.errors import fail

_CONFIG_HELP = (
    "YAML file of the server's bounds (ServeLimits: max_body_bytes, max_constraint_bytes, compile_timeout_s, "
    "compile_memory_mb, ...); each may also be set as HARNESS_SERVE_<NAME> in the environment."
)


def serve(
    engine: str = typer.Option("local", "--engine", help="local (Gemma 3 270M base on the CPU) | oracle (gold replay)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind."),
    port: int = typer.Option(8000, "--port", help="Port to bind (0: any free port; the URL is printed)."),
    mask_policy: str = typer.Option("lazy", "--mask-policy", help="local engine: lazy | always."),
    n_ctx: int = typer.Option(8192, "--n-ctx", help="local engine: context window in tokens."),
    config: Annotated[Path | None, typer.Option("--config", help=_CONFIG_HELP)] = None,
) -> None:
    """Serve /v1/models and /v1/chat/completions (vLLM's request fields and response shape)."""
    from pydantic import ValidationError

    from harness.agents.bundle import validation_problems
    from harness.engines.registry import ENGINE_NAMES, SERVED_ENGINE_NAMES
    from harness.engines.serve_limits import ServeLimits
    from harness.engines.server import ServeError, run_server
    from harness.files import InputError

    if engine not in SERVED_ENGINE_NAMES:
        why = "cannot be served" if engine in ENGINE_NAMES else "is not an engine"
        raise typer.BadParameter(f"{engine!r} {why}: expected one of {', '.join(SERVED_ENGINE_NAMES)}", param_hint="--engine")
    try:
        limits = ServeLimits.load(config)
    except InputError as exc:
        fail(str(exc))
    except ValidationError as exc:
        fail(f"{config or 'HARNESS_SERVE_* environment'}: {'; '.join(validation_problems(exc))}")
    try:
        run_server(engine, host, port, limits=limits, mask_policy=mask_policy, n_ctx=n_ctx)
    except ServeError as exc:
        fail(str(exc))
