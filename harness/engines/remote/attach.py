"""Attaching to OpenAI-compatible servers a run does not start: where they are (flags, then the
environment, then the bundle), which model each family's requests carry, the servers' dialect, and one
client over them (replicas: ``ReplicaClient``).

Shared by the engines that talk to such a server: ``openai`` (any server, or replicas) and ``vllm``
attached to a vLLM server you run. Each builds its own ``SharedClient`` from the ``Attached`` record, so
neither opener imports the other.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.engines.registry import families_named, model_asked
from harness.engines.shapes import SERVED_PREFIX, EngineError
from harness.run_options import RunOptions

if TYPE_CHECKING:
    from harness.agents import ModelConfig

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
"""Where the openai engine looks when neither ``--base-url``, ``$OPENAI_BASE_URL`` nor the bundle's
``model.base_url`` says."""
BASE_URL_ENV = "OPENAI_BASE_URL"
"""The environment variable of the server, as the OpenAI SDK reads it."""
API_KEY_ENV = "OPENAI_API_KEY"
"""The environment variable of the key, as the OpenAI SDK reads it."""

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
        families = [str(f) for f in options.families]
    else:
        families = families_of_model(model)
        if len(families) != 1 and bundle is not None and bundle.id == model:
            families = [bundle.family]
        if len(families) != 1:
            raise EngineError(f"which model family is {model!r}? pass --family (one of {', '.join(FAMILIES)})")
    if len(families) != 1:
        raise EngineError(f"{model!r} is one model: pass one --family (its prompt and call format), not {families}")
    return list(families)


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
    if options.models:
        families = families_named(options)
        missing = [f for f in families if not model_asked(f, options.models, options.model)]
        if missing:
            raise EngineError(f"--family {missing[0]}: which model serves it? name it: --model {missing[0]}=NAME")
        return {f: str(model_asked(f, options.models, options.model)) for f in families}
    model = _served_model(base_url, api_key, options, bundle)
    return {family: model for family in _family_of(model, options, bundle)}


@dataclass(frozen=True, slots=True)
class Attached:
    """The servers of a run, attached: what an opener builds its ``SharedClient`` from."""

    settings: ServerSettings
    """Where the servers and the key came from."""
    by_family: dict[str, str]
    """Family -> the served model id its requests carry."""
    client: Any
    """One ``OpenAICompatibleClient``, or a ``ReplicaClient`` over several."""
    dialect: dict[str, Any]
    """The servers' dialect as run.json records it."""

    @property
    def models(self) -> list[str]:
        """The distinct served model ids, sorted."""
        return sorted(set(self.by_family.values()))

    @property
    def relay_gold(self) -> bool:
        """Every served model is an oracle (``harness serve --engine oracle``): requests carry their gold."""
        return all(m.startswith(SERVED_PREFIX) for m in self.models)


def attach(options: RunOptions, bundle: ModelConfig | None) -> Attached:
    """The servers ``options`` name (``server_settings``), each family's model (``model_asked``, else the
    one model the server lists: ``_models_by_family``), every replica checked to serve the same models,
    and the servers' dialect (``--dialect``, else detected)."""
    from harness.engines.remote.client import NO_KEY, OpenAICompatibleClient
    from harness.engines.remote.replicas import ReplicaClient

    settings = server_settings(options, bundle)
    base_urls = list(settings.base_urls)
    by_family = _models_by_family(base_urls[0], settings.api_key, options, bundle)
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
    return Attached(settings, by_family, client, dialect_record)


__all__ = ["API_KEY_ENV", "BASE_URL_ENV", "DEFAULT_BASE_URL", "Attached", "ServerSettings", "attach",
           "served_models", "server_settings"]
