"""``--engine vllm``: real vLLM servers that a run starts, uses through the OpenAI client, and stops.

One server per family (a server serves one model: ``--model FAMILY=NAME`` names each), all launched at
once and awaited together (each takes ~60-110 s to start on 2 cores), each with its log in the run
directory. A server kept up by an earlier run or by ``harness vllm up`` (same model, same arguments) is
used as it is, with no start; ``--keep-server`` keeps the ones this run starts. With ``--base-url`` or
``$VLLM_BASE_URL`` the run uses a vLLM server you run and starts none. The run's requests go
through :class:`~harness.engines.remote.client.OpenAICompatibleClient` with streaming on, so time to
first token is measured as a client sees it. ``aclose`` stops every server; so do interpreter exit and
the death of the harness process (see :mod:`harness.engines.vllm.launch`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.agents import LLMClient
from harness.engines.registry import families_named, model_asked
from harness.engines.shapes import Endpoint, EngineContext, EngineError, SampleContext, SharedClient
from harness.engines.vllm.models import ModelFolder
from harness.run_options import RunOptions

STATUS_EVERY_S = 15.0
"""How often a line says the servers are still starting."""
START_KEPT_TIMEOUT_S = 600.0
"""How long a run waits for a kept server another run is still starting."""
BASE_URL_ENV = "VLLM_BASE_URL"
"""A vLLM server you run: ``--engine vllm`` uses it instead of starting one."""


def user_model(path_or_id: str, family: str) -> ModelFolder:
    """``--model``: an HF model folder (or an id the server can resolve itself) in ``family``'s format."""
    path = Path(path_or_id).expanduser()
    name = path.name if path.exists() else path_or_id
    return ModelFolder(
        path=path.resolve() if path.exists() else Path(path_or_id), family=family, served_name=name,
        note=f"{name}, given with --model, run in {family}'s format",
    )


@dataclass
class VllmServers:
    """The vLLM engine of a run: per family a model, a server and a client."""

    log_dir: Path
    model_arg: str | None = None
    """``--model NAME``: an HF folder or id for the run's one family (``model_args`` names one per family);
    None = each family's default model (built into the cache on first use)."""
    model_args: dict[str, str] = field(default_factory=dict)
    """``--model FAMILY=NAME``: the model of each family named."""
    extra_args: tuple[str, ...] = ()
    grammar_backend: str = "xgrammar"
    """``--grammar-backend``: the servers' structured-outputs backend (part of a kept server's key)."""
    """``--vllm-arg``: added to each server's command line."""
    keep: bool = False
    """Start kept servers (they stay up after the run: ``harness vllm down``)."""
    log: Callable[[str], None] = lambda _m: None
    request_timeout_s: float = 120.0
    name: str = "vllm"
    stream: bool = True
    """Requests stream, so time to first token is measured."""
    models: dict[str, ModelFolder] = field(default_factory=dict)
    """The model of each family in the run (known once ``prepare`` ran)."""
    servers: dict[str, Any] = field(default_factory=dict)
    """Family -> its ``VllmServer``, or the ``KeptServer`` an earlier run left up."""
    clients: dict[str, Any] = field(default_factory=dict)

    @property
    def note(self) -> str:
        parts = [f"{m.family}: {m.note}" for m in self.models.values()]
        return "; ".join([f"vllm: a real vLLM server started by the harness (structured outputs: {self.grammar_backend}), timings as its client sees them", *parts])

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
            given = model_asked(family, self.model_args, self.model_arg)
            try:
                self.models[family] = user_model(given, family) if given else default_model(family, self.log)
            except (ValueError, RuntimeError) as exc:
                raise EngineError(f"--engine vllm, {family}: {exc}") from None
        return self.models[family]

    def _launch(self, family: str) -> None:
        """Find the kept server this family's command asks for, or launch one."""
        from harness.engines.vllm.kept import find_kept, server_key, survey
        from harness.engines.vllm.launch import VllmServer, server_args, server_env

        model = self.resolve(family)
        key = server_key(server_args(model, 0, extra=self.extra_args, grammar_backend=self.grammar_backend), server_env())
        found = survey()  # the one answer to "which kept servers exist" (as vllm list and down)
        for line in found.stale:
            self.log(f"vllm: {line}")
        kept = find_kept(key, found)
        if kept is not None:
            self.servers[family] = kept
            self.log(f"vllm: using the kept server for {family} ({kept.model}) at {kept.base_url}, pid {kept.pid}; "
                     "stop it with: harness vllm down")
            return
        server = VllmServer(model, self.log_dir / f"vllm-{family}.log", extra_args=self.extra_args, keep=self.keep,
                            grammar_backend=self.grammar_backend)
        self.servers[family] = server
        server.launch()
        kept_note = " (kept after the run: harness vllm down stops it)" if self.keep else ""
        self.log(f"vllm {server.version}: starting a server for {family} ({model.served_name}) on "
                 f"{server.base_url}{kept_note}; log {server.log_path}")

    def _wait(self, family: str, server: Any, waiting: Callable[[float], None]) -> None:
        from harness.engines.vllm.launch import VllmError, VllmServer

        if not isinstance(server, VllmServer):
            if not server.wait_ready(START_KEPT_TIMEOUT_S, waiting):
                raise EngineError(f"the kept vLLM server for {family} (pid {server.pid}) is not serving; "
                                  f"log {server.log}. Stop it with: harness vllm down")
            return
        try:
            server.wait_ready(waiting)
        except VllmError as exc:
            refusal = server.refusal()
            if refusal is not None:
                raise EngineError(f"vLLM refused the server's command line for {family}: {refusal} "
                                  f"(--vllm-arg {' '.join(self.extra_args) or '(none)'}; log {server.log_path})") from None
            raise EngineError(str(exc)) from None
        self.log(f"vllm: {family} ready after {server.startup_s:.0f} s")

    def prepare(self, families: list[str]) -> None:
        """Start a server for each family (all at once; a kept one from an earlier run is used as it is),
        then wait until each answers ``/health``."""
        from harness.engines.remote.client import OpenAICompatibleClient
        from harness.engines.vllm.guidance_wire import GuidanceWireClient
        from harness.engines.vllm.launch import VllmError

        try:
            for family in families:
                self._launch(family)
        except VllmError as exc:
            raise EngineError(f"--engine vllm: {exc}") from None
        started = time.monotonic()
        last = [started]

        def waiting(_elapsed: float) -> None:
            now = time.monotonic()
            if now - last[0] >= STATUS_EVERY_S:
                last[0] = now
                self.log(f"vllm: still starting ({now - started:.0f} s; typically 60-110 s on 2 cores)")

        for family, server in self.servers.items():
            self._wait(family, server, waiting)
            client: LLMClient = OpenAICompatibleClient(server.base_url, timeout_s=self.request_timeout_s)
            if self.grammar_backend == "guidance":  # grammars written as llguidance reads them
                client = GuidanceWireClient(client, {self.model_for(family): family})
            self.clients[family] = client

    @property
    def audits_answers(self) -> bool:
        return True

    def client_for(self, sample: SampleContext) -> LLMClient:
        from harness.engines.dialects.audit import EnforcementAudit

        return EnforcementAudit(self.clients[sample.family], sample.family)

    def endpoints(self, families: list[str]) -> list[Endpoint]:
        """Each family's server: what the run's preflight checks."""
        return [Endpoint(family, self.servers[family].base_url, self.model_for(family)) for family in families
                if family in self.servers]

    def describe(self) -> dict[str, Any]:
        """What run.json records: each server's version, full command line, start-up time and log."""
        return {"servers": [s.describe() for s in self.servers.values()], "dialect": {"name": "vllm", "source": "--engine vllm"}}

    async def aclose(self) -> None:
        from harness.engines.vllm.launch import VllmServer

        for client in self.clients.values():
            await client.aclose()
        for server in self.servers.values():
            if isinstance(server, VllmServer) and not (server.keep and server.running):
                server.stop()


def _attach(options: RunOptions, context: EngineContext, url: str, source: str) -> tuple[SharedClient, list[str] | None]:
    """A vLLM server the user runs (``--base-url`` or ``$VLLM_BASE_URL``): attached as ``--engine openai``
    attaches (``harness.engines.remote.attach``), in vLLM's dialect, recorded as vllm."""
    from harness.engines.remote.attach import attach
    from harness.engines.vllm.guidance_wire import GuidanceWireClient

    servers = attach(options.model_copy(update={"base_urls": (url,), "grammar_backend": None, "dialect": "vllm"}),
                     context.bundle_model)
    client = servers.client
    if options.grammar_backend == "guidance":  # the user says the server runs llguidance: grammars as it reads them
        client = GuidanceWireClient(client, {model: family for family, model in servers.by_family.items()})
    model_id = ", ".join(servers.models)
    note = f"vllm: a vLLM server you run at {url} ({source}) serving {model_id}; timings as its client sees them"
    opened = SharedClient("vllm", note, url, model_id, client, relay_gold=servers.relay_gold, stream=True,
                          models=servers.by_family, base_urls=(url,), api_key=servers.settings.api_key,
                          dialect=servers.dialect)
    return opened, list(servers.by_family)


def open_vllm(options: RunOptions, context: EngineContext) -> tuple[Any, list[str] | None]:
    """The registry's opener: servers are started in ``prepare`` (after run.json is written), one per
    family; without ``--family`` only function_gemma runs (the family with real weights here), or the
    families ``--model FAMILY=NAME`` names. With ``--base-url`` or ``$VLLM_BASE_URL``, a server you run
    is used instead (none is started)."""
    from harness.engines.vllm.launch import VllmError, launch_plan_here, vllm_unavailable

    if options.target is not None:
        raise EngineError("--target is for --engine oracle")
    url = options.base_urls[0] if options.base_urls else os.environ.get(BASE_URL_ENV)
    if url:
        if len(options.base_urls) > 1:
            raise EngineError("--engine vllm takes one --base-url (replicas: --engine openai)")
        return _attach(options, context, url, "--base-url" if options.base_urls else f"${BASE_URL_ENV}")
    why = vllm_unavailable()
    if why:
        raise EngineError(f"--engine vllm: {why}")
    try:  # a GPU flag on a CPU (or the CUDA build without a GPU): one line, before anything starts
        launch_plan_here(tuple(options.vllm_args or ()))
    except VllmError as exc:
        raise EngineError(f"--engine vllm: {exc}") from None
    families = families_named(options) or None
    if options.model and (not families or len(families) != 1):
        raise EngineError("--model NAME with --engine vllm serves one model: pass one --family (its prompt and "
                          "call format), or name each family's model: --model FAMILY=NAME")
    if not families:
        # qwen runs on a random-weight format fixture, which checks the path but says nothing about a
        # model: it runs when asked for.
        context.log("--engine vllm: running function_gemma (Gemma 3 270M base weights); --family qwen adds "
                    "the Qwen3 format fixture (random weights: it checks the path, not a model)")
        families = ["function_gemma"]
    if context.run_dir is None:
        raise EngineError("--engine vllm needs the run directory for its server logs")
    opened = VllmServers(log_dir=context.run_dir, model_arg=options.model, model_args=dict(options.models),
                      extra_args=tuple(options.vllm_args or ()), keep=options.keep_server,
                      grammar_backend=options.grammar_backend or "xgrammar",
                      request_timeout_s=min(options.sample_timeout_s, 120.0), log=context.log)
    return opened, families


__all__ = ["BASE_URL_ENV", "VllmServers", "open_vllm", "user_model"]
