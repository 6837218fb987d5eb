"""``RunOptions``: what one run asks for, in one pydantic model (the pattern of inspect_ai's
``EvalConfig``), validated once when it is built and frozen after.

Every layer that needs a run's options reads this model: ``harness run``'s flags map onto it in one
place (``harness.cli.commands.run``), the engine openers take it (``harness.engines.registry``),
``harness.eval.run.resolve`` settles the values left out (``None``: the suite's, the engine's, the
recorded run's, or derived) into a copy of the same model, run.json records that copy as-is
(``RunRecord.options``), and resume, ``harness merge`` and the setup identity compare two of them
with ``differences``.

Each field says, in its ``json_schema_extra``, the flag that sets it (named in every error) and
whether the samples depend on it (``compared``: a resumed run and the shards of a merge must agree on
it; ``concurrency`` or the sample timeout may change between sessions). Adding a run option is one
field here (with its flag and whether it is compared) and one line of ``harness run``'s mapping:
docs/architecture.md, "Adding a run option".

It sits low in the layers (beside the agent kernel; it imports only the vocabulary) so that the
engines, below the evaluation layer, can read it too.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.vocabulary import Family, Strategy


def _option(default: Any, flag: str, compared: bool, **constraints: Any) -> Any:
    """A field of ``RunOptions``: its default, the flag that sets it, whether the samples depend on it."""
    return Field(default, json_schema_extra={"flag": flag, "compared": compared}, **constraints)


class Shard(BaseModel):
    """``--shard I/N``: this run holds the I-th of N deterministic shares of the selected cases."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=1)
    """I, from 1."""
    count: int = Field(ge=1)
    """N."""

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @model_validator(mode="after")
    def _within(self) -> Shard:
        if self.index > self.count:
            raise ValueError(f"--shard {self}: I must be between 1 and N")
        return self


class Selection(BaseModel):
    """Which of the suite's cases a run takes, beyond ``--limit`` (applied in this order: ids and tags,
    the random subset, the limit, the shard)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ids: tuple[str, ...] = ()
    """``--sample-id``: case ids, or sample ids (``case/family/strategy/epoch``), shell patterns allowed."""
    tags: tuple[str, ...] = ()
    """``--tag``: cases holding any of these tags."""
    sample: int | None = Field(default=None, ge=1)
    """``--sample N``: a random subset of N cases, across conversations (in the suite's order)."""
    seed: int | None = None
    """``--seed``: the subset's seed (recorded, so the same subset can be drawn again)."""
    shard: Shard | None = None
    """``--shard I/N`` (None: every selected case)."""


class RunOptions(BaseModel):
    """The options of one run (see the module doc). ``None``: not given; the resolved copy run.json
    records holds every value the run used (runs recorded before a field existed may hold None)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    engine: str = _option("oracle", "--engine", True)
    """The registered engine (``oracle``, ``local``, ``openai``, ``vllm``)."""
    target: str | None = _option(None, "--target", True)
    """Oracle only: whose grammar compiler the gold is replayed through (``vllm``; None: the harness's)."""
    grammar_backend: Literal["xgrammar", "guidance"] | None = _option(None, "--grammar-backend", True)
    """The grammar library that runs the constraints, as vLLM's two structured-outputs backends: in process
    for the oracle, the server's ``--structured-outputs-config.backend`` for ``vllm`` (None: xgrammar)."""
    base_urls: tuple[str, ...] = _option((), "--base-url", False)
    """OpenAI-compatible servers (openai engine); several = replicas serving the same model."""
    model: str | None = _option(None, "--model", False)
    """``--model NAME``: the model of every family of the run (checked on resume through the served id)."""
    models: dict[str, str] = _option({}, "--model", False)
    """``--model FAMILY=NAME``, a config file's ``models`` and (server engines) the suite's: a model folder,
    hub id or served id per family, as asked (the served ids are ``RunRecord.models``)."""
    dialect: Literal["vllm", "llama_cpp", "openai"] | None = _option(None, "--dialect", True)
    """How the openai engine's server is told the constraint (``harness.engines.dialects``; None: detected
    from the server). run.json records the one used, in ``engine_details``."""
    unenforceable: Literal["refuse", "check"] | None = _option(None, "--unenforceable", True)
    """A tool whose schema uses a keyword no grammar says (``uniqueItems``, a ``propertyNames`` that
    constrains): ``refuse`` it (None, the default: it is left out of the constraint, named) or ``check``:
    constrain it by the rest of its schema and check the keyword after decoding, a call breaking only it
    counted as ``validity:checked_after`` (docs/schemas.md)."""
    allow_unenforced: bool = _option(False, "--allow-unenforced", False)
    """Run a constrained lane whose preflight shows the server does not enforce its constraint, labeled
    "not enforced" (else: exit 2 before the first sample)."""
    vllm_args: tuple[str, ...] | None = _option(None, "--vllm-arg", True)
    """Arguments added to each vLLM server's command line (None: not given; recorded: () for none)."""
    keep_server: bool = _option(False, "--keep-server", False)
    """A vLLM server the run starts stays up for later runs (``harness vllm down``)."""
    families: tuple[Family, ...] | None = _option(None, "--family", True)
    """Model families, in run order (None: the suite's, or what the engine implies)."""
    strategies: tuple[Strategy, ...] | None = _option(None, "--strategy", True)
    """Constraint strategies, in run order (None: the suite's)."""
    limit: int | None = _option(None, "--limit", True)
    """Only the first N cases (None: all)."""
    selection: Selection | None = _option(None, "--sample-id/--tag/--sample/--shard", True)
    """Case ids, tags, a seeded random subset, a shard (None: every case)."""
    epochs: int | None = _option(None, "--epochs", True)
    """Repetitions of every case (None: 1)."""
    concurrency: int | None = _option(None, "--concurrency", False)
    """Samples in flight (None: the engine's default, its ``EngineInfo.concurrency``)."""
    sample_timeout_s: float = _option(300.0, "--sample-timeout", False)
    """Seconds one sample may take (positive and finite)."""
    max_steps_per_turn: int | None = _option(None, "--max-steps-per-turn", True)
    """Model calls per user turn of an episode (None: the bundle's ``kernel.max_steps``). When the last one
    still calls tools, the episode ends there and its state_match fails with ``state:force_terminated``."""
    max_tokens: int | None = _option(None, "--max-tokens", True)
    """Bound per model response (None: the suite's ``max_tokens``, else derived from its longest gold
    answer, ``harness.eval.run.token_bound``)."""
    temperature: float | None = _option(None, "--temperature", True)
    """Sampling temperature, 0..2 (None: the suite's, else 0, greedy)."""
    top_p: float | None = _option(None, "--top-p", True)
    """Nucleus sampling, above 0 and at most 1 (None: the suite's, else 1)."""
    seed: int | None = _option(None, "--seed", True)
    """The run's seed, from which each sample's is derived (None: the suite's, else a random one)."""

    @field_validator("limit", "epochs", "concurrency", "max_tokens", "max_steps_per_turn")
    @classmethod
    def _positive(cls, value: int | None, info: Any) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"{flag_of(info.field_name)} must be >= 1, got {value}")
        return value

    @field_validator("sample_timeout_s")
    @classmethod
    def _timeout(cls, value: float) -> float:
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"--sample-timeout must be a positive, finite number of seconds, got {value:g}")
        return value

    @field_validator("temperature")
    @classmethod
    def _temperature(cls, value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and 0.0 <= value <= 2.0):
            raise ValueError(f"--temperature must be within 0..2, got {value:g}")
        return value

    @field_validator("top_p")
    @classmethod
    def _top_p(cls, value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and 0.0 < value <= 1.0):
            raise ValueError(f"--top-p must be above 0 and at most 1, got {value:g}")
        return value

    @field_validator("seed")
    @classmethod
    def _seed(cls, value: int | None) -> int | None:
        if value is not None and not 0 <= value < 2**63:
            raise ValueError(f"--seed must be within 0..2**63-1, got {value}")
        return value

    @model_validator(mode="after")
    def _engine_options(self) -> RunOptions:
        if (self.vllm_args or self.keep_server) and self.engine != "vllm":
            raise ValueError(f"--vllm-arg and --keep-server are for --engine vllm (the servers it starts), "
                             f"not {self.engine}")
        return self


def flag_of(name: str) -> str:
    """The flag that sets the field ``name`` of ``RunOptions``."""
    extra = RunOptions.model_fields[name].json_schema_extra
    return str(extra["flag"]) if isinstance(extra, dict) else name


COMPARED: tuple[str, ...] = tuple(
    name for name, info in RunOptions.model_fields.items()
    if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("compared"))
"""The fields the samples depend on: a resumed run and the shards of a merge agree on each."""


def _shown(value: object) -> str:
    """A value as a difference names it: names as plain strings (``['ebnf']``)."""
    if isinstance(value, tuple | list):
        return repr([str(v) for v in value])
    return repr(value)


def differences(given: RunOptions, recorded: RunOptions, fields: tuple[str, ...] = COMPARED,
                skip_absent: bool = True, against: str = "recorded") -> list[str]:
    """Each compared field where ``given`` asks for other than ``recorded``, named with both values;
    with ``skip_absent`` a field ``given`` leaves out (None) is no difference (it takes the recorded
    value). Families and strategies compare as sets (their order is the recorded run's). ``against``
    names where ``recorded`` comes from in each difference."""
    found = []
    for name in fields:
        mine, theirs = getattr(given, name), getattr(recorded, name)
        if mine is None and skip_absent:
            continue
        same = set(mine or ()) == set(theirs or ()) if name in ("families", "strategies") else mine == theirs
        if not same:
            found.append(f"{name} {_shown(mine)} ({against}: {_shown(theirs)})")
    return found


def problems(exc: ValidationError) -> list[str]:
    """A ValidationError of ``RunOptions`` as one line per problem, each naming its flag."""
    lines = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        field = str(error["loc"][0]) if error["loc"] else ""
        where = flag_of(field) if field in RunOptions.model_fields else field
        lines.append(message if message.startswith("--") or not where else f"{where}: {message}")
    return lines


__all__ = ["COMPARED", "RunOptions", "Selection", "Shard", "differences", "flag_of", "problems"]
