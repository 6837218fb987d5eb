"""Agent bundles: ``bundle.yaml`` read into a validated ``BundleConfig`` (pydantic).

Unknown fields are errors, so a typo never silently falls back to a default. Every error names the
file and the field path, e.g. ``bundles/x/bundle.yaml: model.family: unknown model family 'gemma':
expected one of function_gemma, qwen``. The served model id (``model.id``) is its own field, never
derived from the family.

This module checks the schema only. Limits are the sandbox's business: ``limits`` and per-tool
``tools[n].limits`` are checked, with their field paths, when the tools load
(``harness.sandbox.load_bundle_tools``; ``harness.bundles.load_bundle`` does both at once).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from harness import vocabulary
from harness.agents.constraint import DecodingConstraint, Strategy
from harness.files import InputFileError, read_yaml
from harness.vocabulary import Family

BUNDLE_FILE = "bundle.yaml"
API_KEY_ENV_PATTERN = re.compile(r"[A-Z][A-Z0-9_]*_API_KEY")
"""The names ``model.api_key_env`` may take: API-key variables only (``OPENAI_API_KEY``, ``VLLM_API_KEY``)."""
LimitsSpec = str | dict[str, float | int | str | None]
"""A sandbox limits preset name, or a mapping of limit keys: both checked by the sandbox's ``Limits``
(``harness.sandbox.bundle_limits``), which knows the presets and the keys."""


class BundleError(ValueError):
    """A bundle that cannot be loaded; the message names the file and the field."""

    def __init__(self, path: Path | str, problems: Sequence[str]) -> None:
        self.path = str(path)
        self.problems = tuple(problems)
        super().__init__("\n".join(f"{self.path}: {p}" for p in self.problems))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Strict):
    """Which model the agent talks to."""

    family: str
    """A registered model family (``harness.vocabulary.Family``): the prompt and call format."""
    id: str = Field(min_length=1)
    """The served model id sent in requests (e.g. ``google/functiongemma-270m-it``)."""
    base_url: str | None = None
    """An OpenAI-compatible server (``http://host:port/v1``): where the agent's default client goes."""
    api_key_env: str = "OPENAI_API_KEY"
    """The environment variable holding that server's API key (``EMPTY`` is sent when it is unset). Only a
    name ending in ``_API_KEY`` (``API_KEY_ENV_PATTERN``): a bundle someone downloads must not be able to
    send another secret (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``HOME``...) to its ``base_url``."""

    @field_validator("api_key_env")
    @classmethod
    def _an_api_key(cls, value: str) -> str:
        if not API_KEY_ENV_PATTERN.fullmatch(value):
            raise ValueError(f"{value!r} is not the name of an API key variable: a bundle may only name a "
                             "variable like OPENAI_API_KEY (capitals, digits and _, ending in _API_KEY), so that it "
                             "cannot send another secret of the environment to a server")
        return value

    @field_validator("family")
    @classmethod
    def _registered(cls, value: str) -> str:
        if value not in vocabulary.FAMILIES:  # the family registry's names (a test keeps them equal)
            raise ValueError(f"unknown model family {value!r}: expected one of {', '.join(vocabulary.FAMILIES)}")
        return Family(value)


class ConstraintConfig(_Strict):
    """How the model's output is constrained (see ``DecodingConstraint``)."""

    strategy: Strategy = Strategy.ebnf
    """none, ebnf, structural_tag or json_schema."""
    allow_parallel_calls: bool = False
    """Several calls in one answer."""
    send_tools_to_api: bool = True
    """Send the tools in the request's ``tools`` field (the server's chat template declares them)."""
    allow_text_answer: bool = False
    """Let the grammar allow a plain-text answer instead of calls (a way to end a turn)."""
    close_objects: bool = True
    """Close a tool's arguments, and objects listing properties without ``additionalProperties``, to
    the listed properties (stricter than JSON Schema, which leaves them open; see docs/schemas.md)."""

    def build(self, strategy: str | None = None, allow_text_answer: bool | None = None) -> DecodingConstraint:
        """The constraint, with ``strategy`` and ``allow_text_answer`` overridden when given."""
        return DecodingConstraint(
            strategy=strategy or self.strategy,
            allow_parallel_calls=self.allow_parallel_calls,
            send_tools_to_api=self.send_tools_to_api,
            allow_text_answer=self.allow_text_answer if allow_text_answer is None else allow_text_answer,
            close_objects=self.close_objects,
        )


class ToolOverride(_Strict):
    """Settings of one tool that differ from the bundle's."""

    name: str = Field(min_length=1)
    """The tool (its ``.pym`` file's stem)."""
    limits: LimitsSpec | None = None
    """A preset name (replaces the bundle's limits), or limit keys set over the bundle's limits."""


CLASS_TARGET = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
"""``package.module:Class``."""


class PythonToolsConfig(_Strict):
    """Python classes as the bundle's tools (``python:`` in bundle.yaml): each public method a tool, one
    instance per class the state of a sample. They run in a worker process with the user's privileges
    (``harness.tools.python``); ``.pym`` tools are the sandboxed option. ``python: mymodule:MyClass`` is short
    for one class named as it is called."""

    classes: dict[str, str] = Field(min_length=1)
    """The name a case uses for a class (BFCL's ``involved_classes``) -> ``package.module:Class``,
    imported in the worker with the bundle's folder first on ``sys.path``."""
    tools_json: str | None = None
    """A JSON file beside bundle.yaml: ``{class name: [OpenAI-style tools]}``. Without it, each public
    method's schema comes from its signature and docstring."""
    execution: str = Field(default="python", pattern="^(python|bfcl)$")
    """``python``: a method's result must be JSON (else ``tool:bad_output``), an exception is a
    ``tool:exception`` error. ``bfcl``: calls run as BFCL's own ``execute_multi_turn_func_call`` runs them
    (its result strings and error texts; BFCL's classes only), read with ``ast``, never ``eval``'d."""
    memory: str | int = "2gb"
    """The worker's address-space limit (``RLIMIT_AS``): a Python interpreter maps a few hundred MB
    before it runs a line, so the sandbox's heap budgets do not apply here."""

    @field_validator("classes")
    @classmethod
    def _targets(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [f"{name}: {target!r}" for name, target in value.items() if not CLASS_TARGET.fullmatch(target)]
        if bad:
            raise ValueError(f"expected package.module:Class, got {'; '.join(bad)}")
        return value


def _python_short_form(value: Any) -> Any:
    if isinstance(value, str):
        return {"classes": {value.rpartition(":")[2]: value}}
    return value


class McpStateCall(_Strict):
    """A call whose result is part of a sample's state (``mcp.state_calls``)."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class McpConfig(_Strict):
    """An MCP server as the bundle's tools (``mcp:`` in bundle.yaml, with ``source: mcp``): a stdio server
    the harness starts per sample (``command``, ``args``, ``env``, ``cwd``; ``{workdir}`` in them is the
    sample's working folder) or the ``url`` of a server someone else runs (streamable HTTP, shared by
    every sample: only its calls and results are scored). See docs/guides/mcp.md."""

    command: str | None = Field(default=None, min_length=1)
    """The server's executable: a name on ``PATH``, or a path (relative: to the bundle's folder)."""
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    """Set over the few variables the MCP SDK passes on (``HOME``, ``PATH``, ``USER``...)."""
    cwd: str = "{workdir}"
    """The server's current folder."""
    url: str | None = Field(default=None, pattern=r"^https?://")
    start_timeout: float = Field(default=30.0, gt=0)
    """Seconds a server may take to start and answer ``initialize``."""
    prepare: tuple[str, ...] = ()
    """A command run in the sample's fresh folder before its server starts (``{workdir}`` substituted),
    e.g. a script the case's files hold that builds a git repository; bounded by ``start_timeout``."""
    ignore: tuple[str, ...] = ()
    """Names of files and folders left out of the compared tree, at any depth (``.git``)."""
    state_calls: tuple[McpStateCall, ...] = ()
    """Calls run on the sample's server after each turn whose results are part of its state (a
    repository's ``git_status``, ``git_branch``, ``git_log``)."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("needs exactly one of command (a stdio server) and url (a server at a URL)")
        if self.url is not None and (self.args or self.env or self.prepare):
            raise ValueError("args, env and prepare belong to a stdio server (command), not to a url")
        return self


class KernelConfig(_Strict):
    """The agent loop's bounds."""

    max_steps: int = Field(default=8, ge=1, validation_alias=AliasChoices("max_steps", "max_turns"))
    """Most model calls answering one user turn (bundles written before this name say ``max_turns``)."""
    max_concurrency: int = Field(default=1, ge=1)
    """Tool calls of one step that run at once."""
    max_history_messages: int | None = Field(default=None, ge=1)
    """Messages sent per request (older ones are dropped whole; see ``trim_history``); None: all."""


class BundleConfig(_Strict):
    """The contents of ``bundle.yaml``."""

    name: str = Field(min_length=1)
    """The agent's name (the kernel's ``agent_id``)."""
    description: str = ""
    """For people: what the agent is for."""
    system_prompt: str | None = None
    """Sent first in every conversation (unless the conversation brings its own system message)."""
    model: ModelConfig
    constraint: ConstraintConfig = ConstraintConfig()
    limits: LimitsSpec = "default"
    """The sandbox limits of every tool: a preset name or limit keys over the ``default`` preset."""
    tools_dir: str = "tools"
    """The folder of ``.pym`` tools, relative to the bundle."""
    tools: tuple[ToolOverride, ...] = ()
    """Per-tool settings (at most one entry per tool)."""
    python: PythonToolsConfig | None = None
    """Python classes as the tools instead of ``tools_dir`` (see ``PythonToolsConfig``)."""
    source: str | None = Field(default=None, min_length=1)
    """The tool source, a name of ``harness.tools.SOURCES`` (checked when the tools load). Unset:
    ``python`` when ``python`` is given, else ``pym`` (the ``.pym`` scripts of ``tools_dir``)."""
    mcp: McpConfig | None = None
    """An MCP server as the tools (``source: mcp``; see ``McpConfig``)."""
    kernel: KernelConfig = KernelConfig()

    @field_validator("python", mode="before")
    @classmethod
    def _short_python(cls, value: Any) -> Any:
        return _python_short_form(value)

    @field_validator("tools")
    @classmethod
    def _unique_overrides(cls, value: tuple[ToolOverride, ...]) -> tuple[ToolOverride, ...]:
        names = [t.name for t in value]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"tool overrides repeat {', '.join(dup)}")
        return value


def field_path(loc: Sequence[int | str]) -> str:
    """``("tools", 0, "limits")`` -> ``tools[0].limits``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def validation_problems(exc: ValidationError, prefix: Sequence[int | str] = (), model: Any = None) -> list[str]:
    """One ``field.path: message`` line per mistake, under ``prefix``: a misspelt key of ``model`` is one
    line with a did-you-mean, not an unknown key plus a missing one (``harness.schema_errors``)."""
    from harness.schema_errors import friendly_errors

    return [f"{field_path([*prefix, *loc])}: {message}" for loc, message in friendly_errors(exc, model)]


def bundle_file(path: str | Path) -> Path:
    """``bundle.yaml`` of a bundle folder, or ``path`` itself when it is the file."""
    p = Path(path)
    return p / BUNDLE_FILE if p.is_dir() else p


def load_bundle_config(path: str | Path) -> BundleConfig:
    """Read and validate ``bundle.yaml`` (``path`` is the file or the bundle folder): the schema only."""
    file = bundle_file(path)
    try:
        raw: Any = read_yaml(file)
    except InputFileError as exc:
        raise BundleError(file, [exc.reason]) from None
    if not isinstance(raw, dict):
        raise BundleError(file, [f"expected a mapping at the top level, got {type(raw).__name__}"])
    try:
        return BundleConfig.model_validate(raw)
    except ValidationError as exc:
        raise BundleError(file, validation_problems(exc, model=BundleConfig)) from exc


__all__ = [
    "BUNDLE_FILE",
    "BundleConfig",
    "BundleError",
    "ConstraintConfig",
    "KernelConfig",
    "LimitsSpec",
    "McpConfig",
    "McpStateCall",
    "ModelConfig",
    "PythonToolsConfig",
    "ToolOverride",
    "bundle_file",
    "field_path",
    "load_bundle_config",
    "validation_problems",
]
