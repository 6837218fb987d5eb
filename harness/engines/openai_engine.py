"""``--engine openai`` for a run: any OpenAI-compatible server the user runs (or replicas of one), one
``SharedClient`` for every sample. Attaching to the servers is ``harness.engines.remote.attach``, which
``--engine vllm --base-url`` shares."""

from __future__ import annotations

from harness.engines.registry import refuse_server_options
from harness.engines.remote.attach import attach
from harness.engines.shapes import EngineContext, EngineError, SharedClient
from harness.run_options import RunOptions


def open_openai(options: RunOptions, context: EngineContext) -> tuple[SharedClient, list[str] | None]:
    """One OpenAI-compatible client for every sample. The server and key: flags, then the environment,
    then the bundle (``server_settings``); the model: ``--model``, else the one the server lists (the
    bundle's ``model.id`` when it lists several); the family: ``--family``, else what the model id says
    (or the bundle's)."""
    if options.target is not None:
        refuse_server_options("openai", options)
    if (options.grammar_backend or "xgrammar") != "xgrammar":  # nothing here would act on it
        raise EngineError("--grammar-backend is for --engine oracle or vllm; for a vLLM server you run, "
                          "say --engine vllm --base-url URL --grammar-backend guidance")
    servers = attach(options, context.bundle_model)
    base_urls = servers.settings.base_urls
    models = servers.models
    where = base_urls[0] if len(base_urls) == 1 else f"{len(base_urls)} replicas ({', '.join(base_urls)})"
    served = ", ".join(f"{m} ({f})" for f, m in servers.by_family.items()) if len(models) > 1 else models[0]
    note = (f"openai: an OpenAI-compatible server at {where} ({servers.settings.source}) serving {served}; "
            "timings as its client sees them")
    if servers.relay_gold:
        note += "; the served model is an oracle: each request carries its gold answer"
    opened = SharedClient("openai", note, ", ".join(base_urls), ", ".join(models), servers.client,
                          relay_gold=servers.relay_gold, stream=True, models=servers.by_family,
                          base_urls=tuple(base_urls), api_key=servers.settings.api_key, dialect=servers.dialect)
    return opened, list(servers.by_family)


__all__ = ["open_openai"]
