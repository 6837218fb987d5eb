"""The engines a run can use, set up once per run: ``oracle``, ``openai`` and ``local``."""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from harness.agents.client import CompletionRequest, CompletionResponse, LLMClient
from harness.agents.constraint import DecodingConstraint
from harness.agents.types import ToolCall
from harness.eval.runner import RunError, RunSpec

ORACLE_NOTE = (
    "oracle: replays gold answers through the grammar with the real tokenizer; "
    "it measures grammars, not a model"
)
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
ORACLE_MODEL_PREFIX = "oracle-"
"""Model ids of ``harness serve --engine oracle`` (``oracle-qwen``, ``oracle-function_gemma``)."""


@dataclass
class OracleSetup:
    """A fresh OracleEngine per sample (its answers are that sample's gold); compiled grammars shared."""

    name: str = "oracle"
    note: str = ORACLE_NOTE
    base_url: str | None = None
    model_id: str = "oracle"
    grammar_cache: dict[Any, Any] = field(default_factory=dict)

    def prepare(self, families: list[str]) -> None:
        """Load the tokenizers and grammar compilers (and with them xgrammar and torch) before samples
        are timed: seconds of loading are not a grammar's cost. Compiling stays in the samples."""
        from harness.grammar.compile import get_compiler
        from harness.grammar.tokenizers import get_tokenizer

        for family in families:
            get_tokenizer(family)
            get_compiler(family)

    def client_for(self, family: str, constraint: DecodingConstraint, gold: list[list[ToolCall]]) -> LLMClient:
        from harness.engines.oracle import OracleEngine

        return OracleEngine(family, answers=gold, constraint=constraint, grammar_cache=self.grammar_cache)

    async def aclose(self) -> None:
        return None


class GoldRelay:
    """Per sample, around the run's shared client: each request carries the sample's next gold
    answer in the ``oracle`` field that ``harness serve --engine oracle`` reads. Used when the served
    model is an oracle (``oracle-<family>``): the whole HTTP path runs with answers known to be right."""

    def __init__(self, inner: Any, answers: list[list[Any]], strategy: str) -> None:
        self.inner, self.answers, self.strategy = inner, answers, strategy

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        calls = self.answers.pop(0) if self.answers else []
        gold = {"calls": [{"name": c.name, "arguments": c.arguments} for c in calls], "strategy": self.strategy}
        return await self.inner.chat_completion(
            dataclasses.replace(request, extra_body={**request.extra_body, "oracle": gold})
        )

    async def aclose(self) -> None:
        """The shared client is closed by the run."""


@dataclass
class SharedSetup:
    """One client for every sample: an OpenAI-compatible server or the embedded engine."""

    name: str
    note: str
    base_url: str | None
    model_id: str
    client: Any
    relay_gold: bool = False

    def prepare(self, families: list[str]) -> None:
        """Load an in-process engine's weights before samples are timed (a server needs nothing)."""
        load = getattr(self.client, "load", None)
        if callable(load):
            load()

    def client_for(self, family: str, constraint: DecodingConstraint, gold: list[list[ToolCall]]) -> LLMClient:
        if self.relay_gold:
            return GoldRelay(self.client, gold, constraint.strategy)
        return self.client  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        await self.client.aclose()


def served_models(base_url: str, timeout_s: float = 10.0) -> list[str]:
    """The model ids an OpenAI-compatible server lists at ``GET {base_url}/models``."""
    url = base_url.rstrip("/") + "/models"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            body = json.loads(resp.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise RunError(f"cannot list the models of {url}: {exc}; is the server running? (or pass --model)") from exc
    return [str(m.get("id")) for m in body.get("data", []) if isinstance(m, dict)]


def _openai(spec: RunSpec, families: list[str] | None) -> tuple[SharedSetup, list[str] | None]:
    from harness.engines.openai_client import OpenAICompatibleClient

    base_url = spec.base_url or DEFAULT_BASE_URL
    model = spec.model
    if not model:
        models = served_models(base_url)
        if len(models) != 1:
            raise RunError(f"{base_url} serves {models or 'no models'}: choose one with --model")
        model = models[0]
    if not families:
        guessed = [f for f, hint in (("qwen", "qwen"), ("function_gemma", "gemma")) if hint in model.lower()]
        if len(guessed) != 1:
            raise RunError(f"which model family is {model!r}? pass --family function_gemma or --family qwen")
        families = guessed
    if len(families) != 1:
        raise RunError(f"{model!r} is one model: pass one --family (its prompt and call format), not {families}")
    client = OpenAICompatibleClient(base_url, timeout_s=min(spec.sample_timeout_s, 120.0))
    note = f"openai: an OpenAI-compatible server at {base_url} serving {model}; timings as its client sees them"
    relay = model.startswith(ORACLE_MODEL_PREFIX)
    if relay:
        note += "; the served model is an oracle: each request carries its gold answer"
    return SharedSetup("openai", note, base_url, model, client, relay_gold=relay), families


def _local(spec: RunSpec, families: list[str] | None) -> tuple[SharedSetup, list[str] | None]:
    from harness.engines.local import LocalEngine, NoWeightsError, check_family

    for family in families or ():
        try:
            check_family(family)
        except NoWeightsError as exc:
            raise RunError(f"--engine local, --family {family}: {exc}") from None
    engine = LocalEngine()
    setup = SharedSetup("local", str(engine.note), None, str(engine.model_id), engine)
    return setup, families or list(engine.families)


def make_engine(spec: RunSpec, families: list[str] | None) -> tuple[Any, list[str] | None]:
    """The engine for ``spec.engine`` and the families to run (None = the suite's)."""
    if spec.engine == "oracle":
        if spec.base_url or spec.model:
            raise RunError("--base-url and --model are for --engine openai")
        return OracleSetup(), families
    if spec.engine == "openai":
        return _openai(spec, families)
    if spec.engine == "local":
        return _local(spec, families)
    raise RunError(f"unknown engine {spec.engine!r}: expected oracle, openai or local")


def local_available() -> str | None:
    """None when the embedded engine can run here, else why not (llama-cpp-python missing...)."""
    import importlib.util

    try:
        import harness.engines.local.engine  # noqa: F401
    except ImportError as exc:
        return str(exc)
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install -e '.[local]')"
    return None


__all__ = ["ORACLE_NOTE", "GoldRelay", "OracleSetup", "SharedSetup", "local_available", "make_engine", "served_models"]
