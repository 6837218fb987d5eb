"""Agent bundles: ``bundle.yaml`` (validated with pydantic) plus a folder of ``.pym`` tools.

Unknown fields are errors, so a typo never silently falls back to a default. Every error names the
file and the field path, e.g. ``bundles/x/bundle.yaml: model.family: unknown model family 'gemma':
expected one of function_gemma, qwen``. The served model id (``model.id``) is its own field, never derived from the family.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.agents.adapter import ModelAdapter
from harness.agents.client import LLMClient
from harness.agents.constraint import DecodingConstraint, Strategy
from harness.agents.events import Observer
from harness.agents.kernel import AgentKernel
from harness.agents.tools import Tool
from harness.agents.types import Message, RunResult

BUNDLE_FILE = "bundle.yaml"
LimitsPreset = Literal["strict", "default", "permissive"]
LimitsSpec = LimitsPreset | dict[str, float | int | str | None]
"""A sandbox preset name, or a mapping of limit keys (checked by the sandbox when tools load)."""


class BundleError(ValueError):
    """A bundle that cannot be loaded; the message names the file and the field."""

    def __init__(self, path: Path | str, problems: Sequence[str]) -> None:
        self.path = str(path)
        self.problems = tuple(problems)
        super().__init__("\n".join(f"{self.path}: {p}" for p in self.problems))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Strict):
    family: str
    """A registered model family (``harness.agents.families.FAMILIES``)."""
    id: str = Field(min_length=1)
    """The served model id sent in requests (e.g. ``google/functiongemma-270m-it``)."""
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"

    @field_validator("family")
    @classmethod
    def _registered(cls, value: str) -> str:
        from harness.agents.families import check_family  # the family registry

        return check_family(value)


class ConstraintConfig(_Strict):
    strategy: Strategy = "ebnf"
    allow_parallel_calls: bool = False
    send_tools_to_api: bool = True
    allow_text_answer: bool = False

    def build(self, strategy: str | None = None) -> DecodingConstraint:
        return DecodingConstraint(
            strategy=strategy or self.strategy,  # type: ignore[arg-type]  # validated by DecodingConstraint
            allow_parallel_calls=self.allow_parallel_calls,
            send_tools_to_api=self.send_tools_to_api,
            allow_text_answer=self.allow_text_answer,
        )


class ToolOverride(_Strict):
    name: str = Field(min_length=1)
    limits: LimitsSpec | None = None


class KernelConfig(_Strict):
    max_steps: int = Field(default=8, ge=1, validation_alias=AliasChoices("max_steps", "max_turns"))
    """Most model calls answering one user turn (bundles written before this name say ``max_turns``)."""
    max_concurrency: int = Field(default=1, ge=1)
    max_history_messages: int | None = Field(default=None, ge=1)


class BundleConfig(_Strict):
    name: str = Field(min_length=1)
    description: str = ""
    system_prompt: str | None = None
    model: ModelConfig
    constraint: ConstraintConfig = ConstraintConfig()
    limits: LimitsSpec = "default"
    tools_dir: str = "tools"
    tools: tuple[ToolOverride, ...] = ()
    kernel: KernelConfig = KernelConfig()

    @field_validator("tools")
    @classmethod
    def _unique_overrides(cls, value: tuple[ToolOverride, ...]) -> tuple[ToolOverride, ...]:
        names = [t.name for t in value]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"tool overrides repeat {', '.join(dup)}")
        return value


def _loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _bundle_file(path: str | Path) -> Path:
    p = Path(path)
    return p / BUNDLE_FILE if p.is_dir() else p


def load_bundle_config(path: str | Path) -> BundleConfig:
    """Read and validate ``bundle.yaml`` (``path`` is the file or the bundle folder)."""
    file = _bundle_file(path)
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BundleError(file, [f"cannot read: {exc.strerror or exc}"]) from exc
    except yaml.YAMLError as exc:
        raise BundleError(file, [f"invalid YAML: {exc}"]) from exc
    if not isinstance(raw, dict):
        raise BundleError(file, [f"expected a mapping at the top level, got {type(raw).__name__}"])
    try:
        config = BundleConfig.model_validate(raw)
    except ValidationError as exc:
        raise BundleError(file, _problems(exc)) from exc
    _check_limits(file, config)
    return config


def _problems(exc: ValidationError, prefix: Sequence[int | str] = ()) -> list[str]:
    return [
        f"{_loc([*prefix, *e['loc']])}: {str(e['msg']).removeprefix('Value error, ')}"
        for e in exc.errors(include_url=False)
    ]


def _check_limits(file: Path, config: BundleConfig) -> None:
    """Limit mappings are checked by the sandbox's own ``Limits`` model, so a typo in a limit key is
    reported with its field path at load time (presets are checked by the schema above)."""
    specs: list[tuple[tuple[int | str, ...], Any]] = [(("limits",), config.limits)]
    specs += [(("tools", n, "limits"), o.limits) for n, o in enumerate(config.tools)]
    mappings = [(loc, spec) for loc, spec in specs if isinstance(spec, dict)]
    if not mappings:
        return
    from harness.sandbox.limits import Limits  # lazy: only for limit mappings

    problems: list[str] = []
    for loc, spec in mappings:
        try:
            Limits.coerce(spec)
        except ValidationError as exc:
            problems += _problems(exc, loc)
        except (ValueError, TypeError) as exc:
            problems.append(f"{_loc(loc)}: {exc}")
    if problems:
        raise BundleError(file, problems)


def _discover(folder: Path, config: BundleConfig, limits: Any, file: Path) -> list[Tool]:
    """The bundle's tools, through the sandbox; per-tool limit overrides applied."""
    if not folder.is_dir():
        if config.tools:
            raise BundleError(file, [f"tools: overrides given but tools_dir {str(folder)!r} does not exist"])
        return []
    from harness.sandbox import SandboxError, discover_tools  # lazy: the sandbox runs pydantic-monty

    try:
        tools: list[Tool] = list(discover_tools(folder, limits=limits))
    except SandboxError as exc:  # a script that does not load or check: a broken tool set is not run
        raise BundleError(file, [f"tools_dir: {exc}"]) from exc
    except (ValueError, TypeError) as exc:
        raise BundleError(file, [f"limits: {exc}"]) from exc
    by_name = {t.schema.name: i for i, t in enumerate(tools)}
    problems = [
        f"tools[{n}].name: no tool named {o.name!r} in {folder}"
        for n, o in enumerate(config.tools)
        if o.name not in by_name
    ]
    if problems:
        raise BundleError(file, problems)
    # Only ``discover_tools(folder, limits=...)`` is relied on: one more discovery per distinct
    # override, from which the overridden tools are taken.
    loaded: dict[str, dict[str, Tool]] = {}
    for n, override in enumerate(config.tools):
        if override.limits is None:
            continue
        key = json.dumps(override.limits, sort_keys=True)
        if key not in loaded:
            try:
                loaded[key] = {t.schema.name: t for t in discover_tools(folder, limits=override.limits)}
            except (SandboxError, ValueError, TypeError) as exc:
                raise BundleError(file, [f"tools[{n}].limits: {exc}"]) from exc
        tools[by_name[override.name]] = loaded[key][override.name]
    return tools


@dataclass
class Agent:
    """A bundle wired up: config, tools, adapter, client and kernel. ``run`` answers one user input."""

    config: BundleConfig
    kernel: AgentKernel
    tools: list[Tool]
    path: Path
    observers: list[Observer] = field(default_factory=list)

    @property
    def adapter(self) -> ModelAdapter:
        return self.kernel.adapter

    @property
    def client(self) -> LLMClient:
        return self.kernel.client

    @classmethod
    def from_bundle(
        cls,
        path: str | Path,
        client: LLMClient | None = None,
        family: str | None = None,
        strategy: str | None = None,
        *,
        limits: LimitsSpec | None = None,
        model_id: str | None = None,
        observers: Sequence[Observer] = (),
    ) -> Agent:
        """Load ``bundle.yaml``, discover the tools, build adapter, client and kernel.

        ``family``, ``strategy``, ``limits`` and ``model_id`` override the bundle (the harness runs a
        matrix of families and strategies over one bundle). Without ``client``, an
        OpenAICompatibleClient on ``model.base_url`` is built.
        """
        file = _bundle_file(path)
        config = load_bundle_config(file)
        from harness.agents.constraint import ConstraintError
        from harness.agents.families import get_adapter  # lazy: families import grammar helpers

        try:
            constraint = config.constraint.build(strategy)
        except ConstraintError as exc:
            raise BundleError(file, [f"constraint.strategy: {exc}"]) from exc
        try:
            adapter = get_adapter(family or config.model.family)
        except (KeyError, ValueError) as exc:
            raise BundleError(file, [f"model.family: {exc}"]) from exc
        tools = _discover(file.parent / config.tools_dir, config, limits or config.limits, file)
        if client is None:
            if not config.model.base_url:
                raise BundleError(file, ["model.base_url: required when no client is given"])
            from harness.engines.openai_client import OpenAICompatibleClient

            client = OpenAICompatibleClient(config.model.base_url, api_key_env=config.model.api_key_env)
        kernel = AgentKernel(
            client,
            adapter,
            model=model_id or config.model.id,
            constraint=constraint,
            observers=list(observers),
            max_concurrency=config.kernel.max_concurrency,
            max_history_messages=config.kernel.max_history_messages,
            agent_id=config.name,
        )
        return cls(config=config, kernel=kernel, tools=tools, path=file.parent, observers=list(observers))

    def messages_for(self, user_input: str) -> list[Message]:
        """The opening messages of a run: the bundle's system prompt (if any) and the user input."""
        opening = (
            [Message(role="system", content=self.config.system_prompt)] if self.config.system_prompt else []
        )
        return [*opening, Message(role="user", content=user_input)]

    async def run(self, user_input: str, workspace: Any = None, max_steps: int | None = None) -> RunResult:
        """Run the agent loop on one user input; ``workspace`` reaches the tools untouched."""
        return await self.kernel.run(
            self.messages_for(user_input),
            self.tools,
            max_steps or self.config.kernel.max_steps,
            workspace=workspace,
        )

    async def aclose(self) -> None:
        await self.kernel.client.aclose()


__all__ = [
    "Agent",
    "BundleConfig",
    "BundleError",
    "ConstraintConfig",
    "KernelConfig",
    "ModelConfig",
    "ToolOverride",
    "load_bundle_config",
]
