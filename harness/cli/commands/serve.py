"""``harness serve``: the local or oracle engine behind an OpenAI/vLLM-compatible HTTP server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.errors import fail
from harness.cli.options import GrammarBackendOpt, MaskPolicy, ServedEngine
from harness.vocabulary import GrammarBackend

_CONFIG_HELP = (
    "YAML file of the server's bounds (ServeLimits: max_body_bytes, max_constraint_bytes, compile_timeout_s, "
    "compile_memory_mb, ...); each may also be set as HARNESS_SERVE_<NAME> in the environment."
)


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
    config: Annotated[Path | None, typer.Option("--config", metavar="FILE", help=_CONFIG_HELP)] = None,
    grammar_backend: GrammarBackendOpt = None,
) -> None:
    """Serve /v1/models and /v1/chat/completions (vLLM's request fields and response shape), within the
    bounds of ServeLimits (README: harness serve)."""
    from pydantic import ValidationError

    from harness.agents import validation_problems
    from harness.engines import ServeError, ServeLimits, get_engine, run_server
    from harness.files import InputFileError

    try:
        limits = ServeLimits.load(config)
    except InputFileError as exc:
        fail(str(exc))
    except ValidationError as exc:
        fail(f"{config or 'HARNESS_SERVE_* environment'}: {'; '.join(validation_problems(exc))}")
    grammar_backend = grammar_backend or GrammarBackend.xgrammar
    takes = get_engine(engine.value).serve_options  # what the engine takes, from its registry line
    if grammar_backend != GrammarBackend.xgrammar and "grammar_backend" not in takes:
        fail(f"--grammar-backend {grammar_backend} is for --engine oracle (the local engine decodes with xgrammar)")
    options = {"mask_policy": mask_policy.value, "n_ctx": n_ctx, "grammar_backend": grammar_backend.value}
    try:
        run_server(engine.value, host, port, limits=limits, **options)
    except ServeError as exc:
        fail(str(exc))
