"""A run's config file (``harness run SUITE --config FILE``): the models and the vLLM servers of a run,
kept beside the suite instead of on every command line. Flags override it; it overrides the suite's
``models``.

::

    models:                           # per family: a model folder, a hub id, or a served model id
      function_gemma: /models/gemma-3-270m-functiongemma
      qwen: Qwen/Qwen3-0.6B
    server:                           # --engine vllm: the servers the harness starts
      vllm_args: ["--max-model-len 8192", "--tensor-parallel-size 2"]
      keep: true                      # leave them up for the next run (harness vllm down stops them)

Unknown keys are errors with a did-you-mean; every problem names the file and the field.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.files import InputFileError, read_yaml
from harness.vocabulary import FAMILIES


class ConfigError(ValueError):
    """A config file or a server argument that cannot be used; the message names the file and field or flag."""


def split_vllm_args(given: Iterable[str], where: str = "--vllm-arg") -> list[str]:
    """``--vllm-arg`` values as vLLM's argv: each value split like a shell line (``"--max-model-len
    8192"`` is two words). A value vLLM's parser would read as setting a flag the harness owns (its
    host, port, model and served name, chat template, tool parser, structured-outputs backend: every
    spelling vLLM takes, prefixes and ``_`` for ``-`` included; ``harness.engines.vllm.flags``) is a
    ConfigError naming the value and the flag."""
    values: list[tuple[str, list[str]]] = []
    for value in given:
        try:
            values.append((value, shlex.split(value)))
        except ValueError as exc:
            raise ConfigError(f"{where} {value!r}: {exc}") from None
    if values:
        from harness.engines.vllm import owned_flag

        found = owned_flag(values)
        if found is not None:
            raise ConfigError(f"{where} {found[0]!r}: {found[1]}")
    return [word for _, words in values for word in words]


class ServerConfig(BaseModel):
    """The vLLM servers a run starts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    vllm_args: list[str] = Field(default_factory=list)
    """Added to each server's command line (as ``--vllm-arg``; each entry split like a shell line)."""
    keep: bool = False
    """Leave the servers up for later runs (as ``--keep-server``)."""


class ConfigFile(BaseModel):
    """The contents of a run's config file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: dict[str, str] = Field(default_factory=dict)
    """Family -> model (a folder, a hub id, or the id a running server serves)."""
    server: ServerConfig = ServerConfig()

    @field_validator("models")
    @classmethod
    def _families(cls, value: dict[str, str]) -> dict[str, str]:
        from harness.schema_errors import did_you_mean

        for family in value:
            if family not in FAMILIES:
                guess = did_you_mean(family, FAMILIES)
                hint = f"did you mean {guess!r}?" if guess else f"expected one of {', '.join(FAMILIES)}"
                raise ValueError(f"unknown family {family!r}: {hint}")
        return value


def load_config_file(path: Path) -> ConfigFile:
    """The config file at ``path``; ConfigError naming the file and each field that is wrong."""
    from harness.agents import validation_problems

    try:
        raw = read_yaml(path)
    except InputFileError as exc:
        raise ConfigError(f"--config: {exc}") from None
    if raw is None:
        return ConfigFile()
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        config = ConfigFile.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError("; ".join(f"{path}: {p}" for p in validation_problems(exc, model=ConfigFile))) from None
    split_vllm_args(config.server.vllm_args, f"{path}: server.vllm_args")
    return config


def parse_models(given: Iterable[str]) -> tuple[str | None, dict[str, str]]:
    """``--model`` values: ``NAME`` (every family) or ``FAMILY=NAME`` (one family), given once each;
    ConfigError naming the value otherwise."""
    from harness.schema_errors import did_you_mean

    bare: str | None = None
    per_family: dict[str, str] = {}
    for value in given:
        family, sep, name = value.partition("=")
        if not sep:
            if bare is not None:
                raise ConfigError(f"--model {value!r}: a second model for every family (the first: {bare!r}); "
                                  "name each family's: --model FAMILY=NAME")
            bare = value
            continue
        if family not in FAMILIES:
            guess = did_you_mean(family, FAMILIES)
            hint = f"did you mean {guess!r}?" if guess else f"expected one of {', '.join(FAMILIES)}"
            raise ConfigError(f"--model {value!r}: unknown family {family!r}: {hint}")
        if not name:
            raise ConfigError(f"--model {value!r}: no model after '='")
        if family in per_family:
            raise ConfigError(f"--model {value!r}: {family} is given twice")
        per_family[family] = name
    return bare, per_family


__all__ = [
    "ConfigError",
    "ConfigFile",
    "ServerConfig",
    "load_config_file",
    "parse_models",
    "split_vllm_args",
]
