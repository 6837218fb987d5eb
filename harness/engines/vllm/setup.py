"""``--engine vllm``: real vLLM servers that a run starts, uses through the OpenAI client, and stops.

One server per family (a server serves one model), all launched at once and awaited together (each
takes ~60-110 s to start on 2 cores), each with its log in the run directory. The run's requests go
through :class:`~harness.engines.openai_client.OpenAICompatibleClient` with streaming on, so time to
first token is measured as a client sees it. ``aclose`` stops every server; so do interpreter exit and
the death of the harness process (see :mod:`harness.engines.vllm.launch`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.agents.client import LLMClient
from harness.engines.registry import EngineError, EngineOptions, SampleContext
from harness.engines.vllm.launch import VllmServer
from harness.engines.vllm.models import ModelFolder

STATUS_EVERY_S = 15.0
"""How often a line says the servers are still starting."""


def user_model(path_or_id: str, family: str) -> ModelFolder:
    """``--model``: an HF model folder (or an id the server can resolve itself) in ``family``'s format."""
    path = Path(path_or_id).expanduser()
    name = path.name if path.exists() else path_or_id
    return ModelFolder(
        path=path.resolve() if path.exists() else Path(path_or_id), family=family, served_name=name,
        note=f"{name}, given with --model, run in {family}'s format",
    )


@dataclass
class VllmSetup:
    """The engine setup of a run on vLLM: per family a model, a server and a client."""

    log_dir: Path
    model_arg: str | None = None
    """``--model``: an HF folder or id for every family of the run; None = each family's default model
    (built into the cache on first use)."""
    log: Callable[[str], None] = lambda _m: None
    request_timeout_s: float = 120.0
    name: str = "vllm"
    stream: bool = True
    """Requests stream, so time to first token is measured."""
    models: dict[str, ModelFolder] = field(default_factory=dict)
    """The model of each family in the run (known once ``prepare`` ran)."""
    servers: dict[str, VllmServer] = field(default_factory=dict)
    clients: dict[str, Any] = field(default_factory=dict)

    @property
    def note(self) -> str:
        parts = [f"{m.family}: {m.note}" for m in self.models.values()]
        return "; ".join(["vllm: a real vLLM server started by the harness, timings as its client sees them", *parts])

    @property
    def base_url(self) -> str | None:
        server = next(iter(self.servers.values()), None)
        return server.base_url if server is not None else None

    @property
    def model_id(self) -> str:
        return ", ".join(m.served_name for m in self.models.values()) or "(chosen per family)"

    def model_for(self, family: str) -> str:
        return self.resolve(family).served_name

    def resolve(self, family: str) -> ModelFolder:
        """The model ``family`` runs on (built into the cache on first use when it is a default)."""
        from harness.engines.vllm.models import default_model

        if family not in self.models:
            self.models[family] = user_model(self.model_arg, family) if self.model_arg else default_model(family)
        return self.models[family]

    def prepare(self, families: list[str]) -> None:
        """Start a server for each family (all at once), then wait until each answers ``/health``."""
        from harness.engines.openai_client import OpenAICompatibleClient

        for family in families:
            model = self.resolve(family)
            server = VllmServer(model, self.log_dir / f"vllm-{family}.log")
            self.servers[family] = server
            server.launch()
            self.log(f"vllm {server.version}: starting a server for {family} ({model.served_name}) on "
                     f"{server.base_url}; log {server.log_path}")
        started = time.monotonic()
        last = [started]

        def waiting(_elapsed: float) -> None:
            now = time.monotonic()
            if now - last[0] >= STATUS_EVERY_S:
                last[0] = now
                self.log(f"vllm: still starting ({now - started:.0f} s; typically 60-110 s on 2 cores)")

        for family, server in self.servers.items():
            server.wait_ready(waiting)
            self.log(f"vllm: {family} ready after {server.startup_s:.0f} s")
            self.clients[family] = OpenAICompatibleClient(server.base_url, timeout_s=self.request_timeout_s)

    def client_for(self, sample: SampleContext) -> LLMClient:
        return self.clients[sample.family]  # type: ignore[no-any-return]

    def describe(self) -> dict[str, Any]:
        """What run.json records: each server's version, full command line, start-up time and log."""
        return {"servers": [s.describe() for s in self.servers.values()]}

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.aclose()
        for server in self.servers.values():
            server.stop()


def open_vllm(options: EngineOptions) -> tuple[VllmSetup, list[str] | None]:
    """The registry's opener: servers are started in ``prepare`` (after run.json is written), one per
    family; without ``--family`` only function_gemma runs (the family with real weights here)."""
    from harness.engines.vllm.launch import vllm_unavailable

    if options.base_urls:
        raise EngineError("--base-url is for --engine openai: --engine vllm starts its own servers")
    if options.target is not None:
        raise EngineError("--target is for --engine oracle")
    why = vllm_unavailable()
    if why:
        raise EngineError(f"--engine vllm: {why}")
    families = options.families
    if options.model and (not families or len(families) != 1):
        raise EngineError("--model with --engine vllm serves one model: pass one --family (its prompt and call format)")
    if not families:
        # qwen runs on a random-weight format fixture, which checks the path but says nothing about a
        # model: it runs when asked for.
        options.log("--engine vllm: running function_gemma (Gemma 3 270M base weights); --family qwen adds "
                    "the Qwen3 format fixture (random weights: it checks the path, not a model)")
        families = ["function_gemma"]
    if options.run_dir is None:
        raise EngineError("--engine vllm needs the run directory for its server logs")
    setup = VllmSetup(log_dir=options.run_dir, model_arg=options.model, request_timeout_s=min(options.timeout_s, 120.0),
                      log=options.log)
    return setup, families


__all__ = ["VllmSetup", "open_vllm", "user_model"]
