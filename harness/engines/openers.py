"""How each registered engine is set up for a run (the openers ``harness.engines.registry`` names).

Two shapes cover today's engines: ``PerSampleClients`` builds a fresh client per sample (the oracle,
whose answers are the gold of the sample's ``SampleContext``) and ``SharedClient`` gives every sample the same one (an
OpenAI-compatible server, the embedded engine). ``GoldRelay`` puts each sample's gold answer into
its requests when the served model is an oracle (``harness serve --engine oracle``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.agents import CompletionRequest, CompletionResponse, LLMClient
from harness.engines.registry import Endpoint, EngineContext, EngineError, SampleContext
from harness.run_options import RunOptions
from harness.vocabulary import GrammarBackend

if TYPE_CHECKING:
    from harness.agents import ModelConfig

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
"""Where the openai engine looks when neither ``--base-url``, ``$OPENAI_BASE_URL`` nor the bundle's
``model.base_url`` says."""
BASE_URL_ENV = "OPENAI_BASE_URL"
"""The environment variable of the server, as the OpenAI SDK reads it."""
API_KEY_ENV = "OPENAI_API_KEY"
"""The environment variable of the key, as the OpenAI SDK reads it."""

SampleClient = Callable[[SampleContext], LLMClient]
"""The client of one sample, from what the engine may know of it."""


@dataclass
class PerSampleClients:
    """A fresh client per sample from ``factory`` (the oracle: each sample replays its own gold)."""

    name: str
    note: str
    factory: SampleClient
    warm: Callable[[list[str]], None] | None = None
    """Loads what samples need (tokenizers, compilers) before they are timed."""
    base_url: str | None = None
    model_id: str = ""
    stream: bool = False

    @property
    def audits_answers(self) -> bool:
        return False  # the oracle: each sample replays its gold through the grammar

    def model_for(self, family: str) -> str:
        return self.model_id

    def prepare(self, families: list[str]) -> None:
        if self.warm is not None:
            self.warm(families)

    def describe(self) -> dict[str, Any]:
        return {}

    def endpoints(self, families: list[str]) -> list[Endpoint]:
        return []

    def client_for(self, sample: SampleContext) -> LLMClient:
        return self.factory(sample)

    async def aclose(self) -> None:
        return None


class GoldRelay:
    """Per sample, around the run's shared client: each request carries the sample's next gold
    answer in the ``oracle`` field that ``harness serve --engine oracle`` reads. Used when the served
    model is an oracle (``oracle-<family>``): the whole HTTP path runs with answers known to be right."""

    def __init__(self, inner: Any, answers: Sequence[Sequence[Any]], strategy: str) -> None:
        self.inner, self.answers, self.strategy = inner, [list(a) for a in answers], strategy

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        calls = self.answers.pop(0) if self.answers else []
        gold = {"calls": [{"name": c.name, "arguments": c.arguments} for c in calls], "strategy": self.strategy}
        return await self.inner.chat_completion(
            dataclasses.replace(request, extra_body={**request.extra_body, "oracle": gold})
        )

    async def aclose(self) -> None:
        """The shared client is closed by the run."""


@dataclass
class SharedClient:
    """One client for every sample: an OpenAI-compatible server or the embedded engine."""

    name: str
    note: str
    base_url: str | None
    model_id: str
    client: Any
    relay_gold: bool = False
    stream: bool = False
    """Stream responses (a server: time to first token is then measured as a client sees it)."""

    models: dict[str, str] | None = None
    """Family -> the served model id its requests carry, when the families are served different models."""
    base_urls: tuple[str, ...] = ()
    """The servers a preflight checks (empty: an in-process engine)."""

    def model_for(self, family: str) -> str:
        return (self.models or {}).get(family, self.model_id)

    api_key: str | None = None
    """The key sent to the servers (None: none configured)."""
    dialect: dict[str, Any] | None = None
    """The servers' dialect as run.json records it (``harness.engines.dialects``; None: an in-process engine)."""

    def endpoints(self, families: list[str]) -> list[Endpoint]:
        """Every server (each replica) for every family ([] for an in-process engine)."""
        return [Endpoint(family, url, self.model_for(family), self.api_key)
                for family in families for url in self.base_urls]

    def prepare(self, families: list[str]) -> None:
        """Load an in-process engine's weights before samples are timed (a server needs nothing)."""
        load = getattr(self.client, "load", None)
        if callable(load):
            load()

    def describe(self) -> dict[str, Any]:
        """Per-replica request counts when the client spreads requests over several servers."""
        replicas = getattr(self.client, "describe", None)
        out: dict[str, Any] = {"replicas": replicas()} if callable(replicas) else {}
        return {**out, "dialect": self.dialect} if self.dialect else out

    @property
    def audits_answers(self) -> bool:
        return not self.relay_gold

    def client_for(self, sample: SampleContext) -> LLMClient:
        from harness.engines.dialects.audit import EnforcementAudit

        if self.relay_gold:  # a served oracle replays gold through the grammar itself, as the oracle does
            return GoldRelay(self.client, sample.gold, sample.constraint.strategy)
        return EnforcementAudit(self.client, sample.family)

    async def aclose(self) -> None:
        await self.client.aclose()


def served_models(base_url: str, api_key: str | None = None, timeout_s: float = 10.0) -> list[str]:
    """The model ids an OpenAI-compatible server lists (``GET {base_url}/models``, with the key)."""
    import openai

    from harness.engines.remote.client import NO_KEY

    client = openai.OpenAI(base_url=base_url, api_key=api_key or NO_KEY, timeout=timeout_s, max_retries=0)
    try:
        return [m.id for m in client.models.list()]
    except openai.OpenAIError as exc:
        raise EngineError(
            f"cannot list the models of {base_url.rstrip('/')}/models: {exc}; is the server running? (or pass --model)"
        ) from exc
    finally:
        client.close()


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Where the openai engine's server and key come from: flags, then the environment, then the bundle."""

    base_urls: tuple[str, ...]
    """One server, or replicas."""
    source: str
    """Which gave them: ``--base-url``, ``$OPENAI_BASE_URL``, ``the bundle's model.base_url`` or ``the default``."""
    api_key: str | None
    """``$OPENAI_API_KEY``, else the variable the bundle's ``model.api_key_env`` names (None: no key)."""


def server_settings(options: RunOptions, bundle: ModelConfig | None, environ: Mapping[str, str] | None = None) -> ServerSettings:
    """The openai engine's server and key, flags > environment > bundle (see ``ServerSettings``)."""
    env = os.environ if environ is None else environ
    if options.base_urls:
        urls, source = options.base_urls, "--base-url"
    elif env.get(BASE_URL_ENV):
        urls, source = (env[BASE_URL_ENV],), f"${BASE_URL_ENV}"
    elif bundle is not None and bundle.base_url:
        urls, source = (bundle.base_url,), "the bundle's model.base_url"
    else:
        urls, source = (DEFAULT_BASE_URL,), "the default"
    key = env.get(API_KEY_ENV) or (env.get(bundle.api_key_env) if bundle is not None else None) or None
    return ServerSettings(tuple(urls), source, key)


def _no_server_options(name: str, options: RunOptions) -> None:
    if options.dialect is not None:
        raise EngineError(f"--dialect is for --engine openai (a server the harness speaks to), not {name}")
    if options.base_urls or options.model or options.models:
        raise EngineError(f"--base-url and --model are for a server engine (openai, vllm), not {name}")
    if options.target is not None and name != "oracle":
        raise EngineError("--target is for --engine oracle (whose grammar compiler the gold is replayed through)")
    if (options.grammar_backend or "xgrammar") != "xgrammar" and name != "oracle":
        raise EngineError(f"--grammar-backend is for --engine oracle or vllm, not {name}")


def open_oracle(options: RunOptions, context: EngineContext) -> tuple[PerSampleClients, list[str] | None]:
    """A fresh OracleEngine per sample; compiled grammars shared by the whole run. With ``target`` vllm,
    each grammar is compiled by vLLM's own backend and the steps where it differs are counted."""
    from harness.engines.oracle.engine import NOTE, OracleEngine

    _no_server_options("oracle", options)
    if options.target not in (None, "vllm"):
        raise EngineError(f"unknown --target {options.target!r}: expected vllm")
    note = NOTE
    backend = _oracle_backend(options)
    if backend == "guidance":
        note = f"{NOTE}; grammars run by llguidance (vLLM's guidance backend), converted from the artifacts"
    if options.target == "vllm":
        from harness.engines.vllm.backend import TARGET_NOTE
        from harness.engines.vllm.launch import vllm_unavailable

        why = vllm_unavailable()
        if why:
            raise EngineError(f"--target vllm: {why}")
        note = f"{NOTE}; {TARGET_NOTE}"
    grammar_cache: dict[Any, Any] = {}
    targets: dict[str, Any] = {}

    def client(sample: SampleContext) -> LLMClient:
        return OracleEngine(sample.family, answers=sample.gold, constraint=sample.constraint,
                            grammar_cache=grammar_cache, target=targets.get(sample.family), backend=backend)

    def warm(families: list[str]) -> None:
        # Seconds of loading tokenizers, xgrammar and torch are not a grammar's cost; compiling stays in samples.
        from harness.grammar import get_compiler, get_tokenizer

        for family in families:
            get_tokenizer(family)
            get_compiler(family)
            if backend == "guidance":
                from harness.grammar import get_llg_tokenizer

                get_llg_tokenizer(family)
            if options.target == "vllm":
                from harness.engines.vllm.backend import VllmGrammarTarget
                from harness.engines.vllm.models import default_model

                targets[family] = VllmGrammarTarget(default_model(family))
                targets[family].load()

    return PerSampleClients("oracle", note, client, warm, model_id="oracle"), _listed(options.families)


def _oracle_backend(options: RunOptions) -> GrammarBackend:
    """The oracle's grammar library; llguidance must be installed for ``guidance``."""
    backend = GrammarBackend(options.grammar_backend or "xgrammar")
    if backend == GrammarBackend.guidance:
        from harness.grammar import guidance_available

        why = guidance_available()
        if why:
            raise EngineError(f"--grammar-backend guidance: {why}")
        if options.target is not None:
            raise EngineError("--target vllm replays gold through vLLM's xgrammar backend: not with --grammar-backend guidance")
    return backend


def _served_model(base_url: str, api_key: str | None, options: RunOptions, bundle: ModelConfig | None) -> str:
    if options.model:
        return options.model
    models = served_models(base_url, api_key, timeout_s=3.0)
    if len(models) == 1:
        return models[0]
    bundle_id = bundle.id if bundle else None
    if bundle_id in models:
        return str(bundle_id)
    raise EngineError(f"{base_url} serves {models or 'no models'}: choose one with --model")


def _family_of(model: str, options: RunOptions, bundle: ModelConfig | None) -> list[str]:
    from harness.grammar.families import FAMILIES, families_of_model

    families: list[str]
    if options.families:
        families = list(options.families)
    else:
        families = families_of_model(model)
        if len(families) != 1 and bundle is not None and bundle.id == model:
            families = [bundle.family]
        if len(families) != 1:
            raise EngineError(f"which model family is {model!r}? pass --family (one of {', '.join(FAMILIES)})")
    if len(families) != 1:
        raise EngineError(f"{model!r} is one model: pass one --family (its prompt and call format), not {families}")
    return list(families)


def open_openai(options: RunOptions, context: EngineContext) -> tuple[SharedClient, list[str] | None]:
    """One OpenAI-compatible client for every sample. The server and key: flags, then the environment,
    then the bundle (``server_settings``); the model: ``--model``, else the one the server lists (the
    bundle's ``model.id`` when it lists several); the family: ``--family``, else what the model id says
    (or the bundle's)."""
    from harness.engines.oracle.engine import SERVED_PREFIX
    from harness.engines.remote.client import NO_KEY, OpenAICompatibleClient
    from harness.engines.remote.replicas import ReplicaClient

    if options.target is not None:
        _no_server_options("openai", options)
    if (options.grammar_backend or "xgrammar") != "xgrammar":  # nothing here would act on it
        raise EngineError("--grammar-backend is for --engine oracle or vllm; for a vLLM server you run, "
                          "say --engine vllm --base-url URL --grammar-backend guidance")
    settings = server_settings(options, context.bundle_model)
    base_urls = list(settings.base_urls)
    by_family = _models_by_family(base_urls[0], settings.api_key, options, context.bundle_model)
    models = sorted(set(by_family.values()))
    for url in base_urls[1:]:
        missing = set(models) - set(served_models(url, settings.api_key, timeout_s=3.0))
        if missing:
            raise EngineError(f"replica {url} does not serve {sorted(missing)}: every --base-url must serve the same models")
    timeout = min(options.sample_timeout_s, 120.0)
    key = settings.api_key or NO_KEY
    dialect, dialect_record = _dialect(options, base_urls[0], settings.api_key, list(by_family))
    families = {model: family for family, model in by_family.items()}
    clients = [OpenAICompatibleClient(url, api_key=key, timeout_s=timeout, dialect=dialect, families=families)
               for url in base_urls]
    client: Any = clients[0] if len(clients) == 1 else ReplicaClient(clients, base_urls)
    where = base_urls[0] if len(base_urls) == 1 else f"{len(base_urls)} replicas ({', '.join(base_urls)})"
    served = ", ".join(f"{m} ({f})" for f, m in by_family.items()) if len(models) > 1 else models[0]
    note = (f"openai: an OpenAI-compatible server at {where} ({settings.source}) serving {served}; "
            "timings as its client sees them")
    relay = all(m.startswith(SERVED_PREFIX) for m in models)
    if relay:
        note += "; the served model is an oracle: each request carries its gold answer"
    opened = SharedClient("openai", note, ", ".join(base_urls), ", ".join(models), client, relay_gold=relay,
                         stream=True, models=by_family, base_urls=tuple(base_urls), api_key=settings.api_key,
                         dialect=dialect_record)
    return opened, list(by_family)


def _dialect(options: RunOptions, base_url: str, api_key: str | None, families: list[str]) -> tuple[Any, dict[str, Any]]:
    """The server's dialect (``--dialect``, else detected) and what run.json records of it."""
    from harness.engines.dialects import detect_dialect, get_dialect

    name, source = (options.dialect, "--dialect") if options.dialect else detect_dialect(base_url, api_key)
    dialect = get_dialect(name)
    return dialect, {"name": name, "source": source, "fields": dict(dialect.fields),
                     **{family: dialect.describe(family) for family in families}}


def _models_by_family(base_url: str, api_key: str | None, options: RunOptions,
                      bundle: ModelConfig | None) -> dict[str, str]:
    """The served model id of each family of the run: ``--model FAMILY=NAME`` for those it names (a bare
    ``--model`` for the others), else one model (``--model``, or the one the server lists) for the one
    family ``--family`` or the model's id says."""
    from harness.grammar.families import FAMILIES

    if options.models:
        families = [str(f) for f in options.families or ()] or [f for f in FAMILIES if f in options.models]
        missing = [f for f in families if not (options.models.get(f) or options.model)]
        if missing:
            raise EngineError(f"--family {missing[0]}: which model serves it? name it: --model {missing[0]}=NAME")
        return {f: options.models.get(f) or str(options.model) for f in families}
    model = _served_model(base_url, api_key, options, bundle)
    return {family: model for family in _family_of(model, options, bundle)}


def open_local(options: RunOptions, context: EngineContext) -> tuple[SharedClient, list[str] | None]:
    """The embedded engine, shared by every sample (it has weights for some families only)."""
    from harness.engines.local import LocalEngine, NoWeightsError, check_family

    _no_server_options("local", options)
    for family in options.families or ():
        try:
            check_family(family)
        except NoWeightsError as exc:
            raise EngineError(f"--engine local, --family {family}: {exc}") from None
    engine = LocalEngine(log=context.engine_log)
    opened = SharedClient("local", str(engine.note), None, str(engine.model_id), engine)
    return opened, _listed(options.families) or list(engine.families)


def _listed(families: tuple[str, ...] | None) -> list[str] | None:
    return list(families) if families else None


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


__all__ = [
    "DEFAULT_BASE_URL",
    "GoldRelay",
    "PerSampleClients",
    "ServerSettings",
    "SharedClient",
    "local_unavailable",
    "open_local",
    "open_openai",
    "open_oracle",
    "served_models",
    "server_settings",
]
