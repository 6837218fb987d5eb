"""``PymTool``: a loaded ``.pym`` script behind the kernel's Tool protocol; ``discover_tools``.

Per call: the model's arguments are checked against the tool's schema with jsonschema (unknown,
missing or wrong-typed, or a string that is not valid text -> ``tool:bad_arguments``, the script never
runs); the workspace supplies the hidden inputs and virtual files; the script runs in a fresh sandbox
session; a value of the form ``{"output": X, "mutations": [...]}`` shows ``X`` to the model and hands
the mutations to the workspace's ResultHandler. Failures come back as error results, never as
exceptions: ``tool:script_error`` (the script raised, or an external did), ``tool:limit`` (the
sandbox's limits and the host's: more than ``max_mutations``, a tree past its ``TreeLimits``, ...),
``tool:bad_output`` (output model, not JSON, malformed or impossible mutations), ``tool:load_error``,
``tool:unavailable`` (no sandbox worker free in time: the call never started).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.agents import ToolCall, ToolContext, ToolResult, ToolSchema
from harness.sandbox.errors import LimitError, OutputError, SandboxError
from harness.sandbox.gorilla.tree import TreeLimitError
from harness.sandbox.pym.script import Script, load_script
from harness.sandbox.runtime.script_limits import Limits
from harness.sandbox.validation import first_problem
from harness.sandbox.values import lone_surrogate
from harness.sandbox.workspace import Workspace
from harness.vocabulary import ErrorKind

if TYPE_CHECKING:
    from pydantic import BaseModel

_ENVELOPE = frozenset({"output", "mutations"})


def split_envelope(value: Any, fname: str) -> tuple[Any, list[dict[str, Any]] | None]:
    """``(output, mutations)`` of a ``{"output", "mutations"}`` value; ``(value, None)`` for any other value."""
    if not (isinstance(value, dict) and "mutations" in value and set(value) <= _ENVELOPE):
        return value, None
    mutations = value["mutations"]
    if not isinstance(mutations, list) or not all(isinstance(m, dict) for m in mutations):
        raise OutputError(f"{fname}: 'mutations' must be a list of objects", script=fname)
    return value.get("output"), mutations


class PymTool:
    """A ``.pym`` script as a kernel Tool. ``execute`` never raises."""

    def __init__(
        self,
        script: Script,
        *,
        name: str | None = None,
        limits: Limits | str | dict[str, Any] | None = None,
        output_model: type[BaseModel] | None = None,
        externals: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        self.script = script
        self._schema = script.tool_schema(name)
        self.limits = Limits.coerce(limits)
        self.output_model = output_model
        # externals may be shared by several tools: keep the ones this script declares
        self.externals = {k: v for k, v in (externals or {}).items() if k in script.externals}
        self._validator = script.validator(include_hidden=False)
        self._hidden = frozenset(s.name for s in script.inputs.values() if s.hidden)

    @classmethod
    def from_path(cls, path: str | Path, **kwargs: Any) -> PymTool:
        """Load and check ``path`` (raises ParseError/CheckError) and wrap it."""
        return cls(load_script(path), **kwargs)

    @property
    def schema(self) -> ToolSchema:
        return self._schema

    @property
    def name(self) -> str:
        return self._schema.name

    def __repr__(self) -> str:
        return f"PymTool({self.name!r}, {self.script.path})"

    def _result(self, call: ToolCall, output: Any, started: float, kind: str | None = None) -> ToolResult:
        return ToolResult(
            call_id=call.id,
            name=self.name,
            output=output,
            is_error=kind is not None,
            error_kind=kind,
            duration_us=(time.perf_counter() - started) * 1e6,
        )

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolResult:
        started = time.perf_counter()
        arguments = call.arguments
        if not isinstance(arguments, dict):
            return self._result(
                call, f"{self.name}: arguments must be an object", started, ErrorKind.tool_bad_arguments
            )
        problem = first_problem(self._validator, arguments)
        if problem is not None:
            return self._result(call, f"{self.name}: {problem[0]}", started, ErrorKind.tool_bad_arguments)
        where = lone_surrogate(arguments)
        if where is not None:
            message = f"{self.name}: argument {where!r} is not valid text (it holds a lone surrogate)"
            return self._result(call, message, started, ErrorKind.tool_bad_arguments)
        workspace = context.workspace if isinstance(context.workspace, Workspace) else None
        try:
            if workspace is None:
                output = await self._run(arguments, None, context)
            else:
                async with workspace.lock:  # one call at a time per workspace, in call order
                    output = await self._run(arguments, workspace, context)
        except SandboxError as e:
            return self._result(call, f"{e.kind}: {e}", started, e.error_kind)
        except Exception as e:  # a provider or handler bug: still an error result, never an exception
            return self._result(call, f"{type(e).__name__}: {e}", started, ErrorKind.tool_internal_error)
        return self._result(call, output, started)

    async def _run(self, arguments: dict[str, Any], workspace: Workspace | None, context: ToolContext) -> Any:
        host: Mapping[str, Any] = {}
        files: Mapping[str, Any] | None = None
        environ: Mapping[str, str] | None = None
        if workspace is not None:
            if self._hidden:
                host = {k: v for k, v in workspace.data.host_inputs(self.name).items() if k in self._hidden}
            files = workspace.data.load_files(self.name, arguments)
            environ = workspace.environ
        from harness.sandbox.runtime.execute import (
            run_script,  # pydantic-monty: imported when a tool first runs
        )

        value = await run_script(
            self.script,
            arguments,
            host_inputs=host,
            files=files,
            externals=self.externals,
            limits=self.limits,
            output_model=self.output_model,
            environ=environ,
            emit=context.emit,
            tool_name=self.name,
            arguments_checked=True,
        )
        fname = self.script.filename
        output, mutations = split_envelope(value, fname)
        output = cut_output(output, self.limits.max_output)
        if mutations:
            cap = self.limits.max_mutations
            if cap is not None and len(mutations) > cap:
                raise LimitError(f"{fname}: returned {len(mutations)} mutations (limit {cap})", limit="mutations", script=fname)
            if workspace is None:
                return value  # nobody applies them: show them rather than drop them
            try:
                workspace.results.handle(self.name, mutations)
            except TreeLimitError as e:
                raise LimitError(f"{fname}: cannot apply its mutations: {e}", limit=e.limit, script=fname) from e
            except ValueError as e:
                raise OutputError(f"{fname}: cannot apply its mutations: {e}", script=fname) from e
        return output


def cut_output(output: Any, max_bytes: int | None) -> Any:
    """``output``, or, when its JSON text is over ``max_bytes``, that text cut to ``max_bytes`` with a note
    (what the model is shown is bounded; the call's mutations are applied whole)."""
    if max_bytes is None or (isinstance(output, str) and len(output) * 4 <= max_bytes):
        return output
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return output
    kept = data[:max_bytes].decode("utf-8", "ignore")
    return f"{kept}... [output cut: {len(data) - max_bytes} more bytes; limit max_output={max_bytes}]"


def discover_tools(
    folder: str | Path,
    *,
    limits: Limits | str | dict[str, Any] | None = None,
    externals: Mapping[str, Callable[..., Any]] | None = None,
    output_models: Mapping[str, type[BaseModel]] | None = None,
) -> list[PymTool]:
    """Every ``*.pym`` in ``folder`` (not recursive), loaded, checked and sorted by name.

    A script that fails to load raises its ParseError/CheckError: a broken tool set is not run.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no tool folder {folder}")
    models = output_models or {}
    tools = [
        PymTool(load_script(path), limits=limits, externals=externals, output_model=models.get(path.stem))
        for path in sorted(folder.glob("*.pym"))
    ]
    return tools
