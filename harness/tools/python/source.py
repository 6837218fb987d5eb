"""Python classes as a tool source: each public method a tool, one instance the state, all in a worker.

``PythonClassSource`` (a ``harness.tools.ToolSource``) owns one worker (``harness.tools.python.client``)
for a bundle's classes. Its tools (``WorkerTool``, the kernel's ``Tool`` protocol) carry their class; a
sample opens a ``PythonSession`` (the case's classes, loaded from its initial configs) and passes it to
the kernel as the workspace, so the calls of the sample act on the sample's instances in the worker. A
call that the worker cannot answer (it died, hung or ran out of memory) ends as a ``tool:`` error
result, and the worker goes on with the state the session had. A snapshot is each instance's public
attributes; two are the same state when equal.
"""

from __future__ import annotations

import json
import keyword
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.agents import Tool, ToolCall, ToolContext, ToolResult, ToolSchema
from harness.tools.base import SessionSetup, StateKind
from harness.tools.python.client import WorkerClient, WorkerFailure, WorkerSettings
from harness.vocabulary import ErrorKind


def call_text(name: str, arguments: Mapping[str, Any]) -> str:
    """A call as Python source, the way a checker that reads call source takes a model's call: ``cd(folder='x')``. Values
    are JSON values, so each ``repr`` is a Python literal. ValueError unless the name and every key are
    identifiers that are not Python keywords: a key is never spliced into the text as it came (a model's
    key ``a=__import__('os')...,b`` would be code there; the worker reads the text with ``ast``)."""
    if not all(_usable(k) for k in (name, *arguments)):
        raise ValueError(f"not a Python call: {name!r} with argument keys {', '.join(map(repr, arguments)) or 'none'}")
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def _usable(name: Any) -> bool:
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


@dataclass(frozen=True)
class PythonSession:
    """One sample's instances in the worker (the workspace the kernel passes to ``WorkerTool``)."""

    source: PythonClassSource
    id: str
    classes: tuple[str, ...]

    @property
    def workspace(self) -> PythonSession:
        return self

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """One call as a tool result (a refused call: an error result of the worker's kind)."""
        started = time.perf_counter()
        output, kind, message = await self.run(name, arguments)
        duration = (time.perf_counter() - started) * 1e6
        if kind is not None:
            return ToolResult(name, name, message, is_error=True, error_kind=kind, duration_us=duration)
        return ToolResult(name, name, output, duration_us=duration)

    async def run(self, name: str, arguments: Mapping[str, Any]) -> tuple[Any, str | None, str | None]:
        """(output, error kind, error message) of one call."""
        request: dict[str, Any] = {"op": "call", "session": self.id, "name": name, "arguments": dict(arguments)}
        if self.source.settings.execution != "python":  # the mode runs the call from its source text
            try:
                request["text"] = call_text(name, arguments)
            except ValueError as exc:
                return None, ErrorKind.tool_bad_arguments, str(exc)
        try:
            answer = await self.source.client.arequest(request)
        except WorkerFailure as exc:
            return None, exc.kind, str(exc)
        if "error" in answer:
            return None, str(answer["error"]), str(answer.get("message"))
        return json.loads(answer["output_json"]), None, None

    async def snapshot(self) -> Any:
        return await self.source.client.snapshot(self.id)

    async def close(self) -> None:
        await self.source.client.close_session(self.id)


@dataclass(frozen=True, slots=True)
class WorkerTool:
    """One public method of one class, run in the worker on the session the kernel passes."""

    schema: ToolSchema
    owner: str
    """The class whose method this is."""
    source: PythonClassSource

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolResult:
        session = context.workspace
        if not isinstance(session, PythonSession):
            return ToolResult(call.id, call.name, "no Python session for this call", is_error=True,
                              error_kind=ErrorKind.tool_internal_error)
        started = time.perf_counter()
        output, kind, message = await session.run(call.name, call.arguments)
        duration = (time.perf_counter() - started) * 1e6
        if kind is not None:
            return ToolResult(call.id, call.name, message, is_error=True, error_kind=kind, duration_us=duration)
        return ToolResult(call.id, call.name, output, duration_us=duration)


class PythonClassSource:
    """A bundle's Python classes behind one worker: their tools, sessions, and their execution mode's checker (a
    ``harness.tools.ToolSource``)."""

    state_kind: StateKind = "instances"
    unwanted_calls_fail = True

    def __init__(self, settings: WorkerSettings, tools_json: Mapping[str, Sequence[Mapping[str, Any]]] | None = None):
        self.settings = settings
        self.client = WorkerClient(settings)
        described = tools_json
        if described is not None:  # the classes are imported now, as without a tools JSON: a class that
            self.client.start()    # does not import is a bundle error, not a tool:load_error per sample
        else:
            answer = self.client.request({"op": "describe"}, 60.0)
            if "error" in answer:  # a signature the worker cannot describe: a bundle error, not a traceback
                raise WorkerFailure(ErrorKind.tool_load_error, f"cannot describe the classes' methods: {answer.get('message')}")
            described = answer["tools"]
        missing = [name for name in settings.classes if name not in described]
        if missing:
            raise WorkerFailure(ErrorKind.tool_load_error, f"the tools JSON has no tools of {', '.join(missing)}")
        self.tools: tuple[WorkerTool, ...] = tuple(
            WorkerTool(ToolSchema.from_openai(_wrapped(entry)), owner, self)
            for owner in settings.classes for entry in described[owner]
        )

    async def open(self, setup: SessionSetup) -> PythonSession:
        """A session of the setup's classes (close it when the sample ends), its history replayed.
        WorkerFailure when it cannot be opened (no classes named, a class the bundle lacks, a config
        its loader refuses)."""
        if not setup.classes:
            raise WorkerFailure(ErrorKind.tool_unavailable, "the case names no classes but the bundle's tools are "
                                "Python classes")
        session = PythonSession(self, await self.client.open(setup.classes, setup.config,
                                                             long_context=setup.long_context, entry=setup.entry),
                                tuple(setup.classes))
        for call in setup.history:
            await session.run(call.name, call.arguments)
        return session

    def owner(self, tool: Tool) -> str | None:
        return tool.owner if isinstance(tool, WorkerTool) else None

    def difference(self, gold: Any, model: Any, *, cwd: bool = True) -> str | None:
        return None if gold == model else ErrorKind.state_instance_differs

    def lines(self, snapshot: Any) -> list[str]:
        """The instances' public attributes as indented JSON lines (keys sorted)."""
        return json.dumps(snapshot, indent=1, sort_keys=True, ensure_ascii=False, default=repr).splitlines()

    def holds(self, snapshot: Any, expected: Mapping[str, Mapping[str, Any]]) -> bool:
        return all(snapshot.get(cls, {}).get(attr) == value for cls, attrs in expected.items()
                   for attr, value in attrs.items())

    async def check(self, execution: str, entry: Mapping[str, Any], model: Sequence[Sequence[Sequence[str]]],
                    truth: Sequence[Sequence[str]]) -> tuple[bool, str | None]:
        """The checker of execution mode ``execution`` (a benchmark's, ``harness.benchmarks``) on a sample's
        calls, run in the worker: (valid, error type)."""
        request = {"op": "check", "execution": execution, "entry": dict(entry), "model": model, "truth": truth}
        answer = await self.client.arequest(request, self.settings.check_wall_clock)
        if "error" in answer:
            raise WorkerFailure(str(answer["error"]), str(answer.get("message")))
        return bool(answer["valid"]), answer.get("error_type")

    def close(self) -> None:
        self.client.close()


def _wrapped(entry: Mapping[str, Any]) -> dict[str, Any]:
    return dict(entry) if entry.get("type") == "function" else {"type": "function", "function": dict(entry)}


__all__ = ["PythonClassSource", "PythonSession", "WorkerTool", "call_text"]
