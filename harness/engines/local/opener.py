"""``--engine local`` for a run: the embedded engine, one ``SharedClient`` for every sample (it has
weights for some families only)."""

from __future__ import annotations

from harness.engines.registry import refuse_server_options
from harness.engines.shapes import EngineContext, EngineError, SharedClient
from harness.run_options import RunOptions


def open_local(options: RunOptions, context: EngineContext) -> tuple[SharedClient, list[str] | None]:
    """The registry's opener: the families asked for must have weights here."""
    from harness.engines.local.engine import LocalEngine, NoWeightsError, check_family

    refuse_server_options("local", options)
    for family in options.families or ():
        try:
            check_family(family)
        except NoWeightsError as exc:
            raise EngineError(f"--engine local, --family {family}: {exc}") from None
    engine = LocalEngine(log=context.engine_log)
    opened = SharedClient("local", str(engine.note), None, str(engine.model_id), engine)
    return opened, (list(options.families) if options.families else None) or list(engine.families)


def local_unavailable() -> str | None:
    """None when the embedded engine can run here, else why not (llama-cpp-python missing...)."""
    import importlib.util

    install = ("install it with: CMAKE_ARGS=-DGGML_NATIVE=OFF pip install -e '.[local]' (or pick another "
               "--engine: vllm or openai serve a model; oracle replays the gold answers: it measures grammars, "
               "not a model)")
    if importlib.util.find_spec("llama_cpp") is None:
        return f"llama-cpp-python is not installed; {install}"
    try:
        import harness.engines.local.engine  # noqa: F401
    except ImportError as exc:
        return f"{exc}; {install}"
    return None


__all__ = ["local_unavailable", "open_local"]
