"""AgentKernel: ask the model, parse its answer, run the tools it called, repeat.

Words: a *step* is one model call and the tool calls it makes; a *turn* is one user input, which
``run`` answers with as many steps as the model keeps calling tools. ``step`` makes exactly one
request and runs the calls it yields; ``run`` loops ``step`` until the model stops calling tools or
``max_steps`` is reached. Every request is announced by exactly one ModelRequestEvent; KernelEndEvent
is emitted on every exit of ``run``, including a model call that raises; an unknown tool or a tool that
raises becomes an error ToolResult with both tool events; an observer that raises is reported as an
ObserverErrorEvent to the other observers and never stops the run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

from harness.agents.adapter import ModelAdapter
from harness.agents.client import CompletionRequest, LLMClient, ModelCallError
from harness.agents.constraint import DecodingConstraint
from harness.agents.events import (
    Event,
    KernelEndEvent,
    KernelStartEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    Observer,
    ObserverErrorEvent,
    StepCompleteEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harness.agents.tools import Tool, ToolContext
from harness.agents.types import (
    Message,
    ParseFailure,
    RunResult,
    StepResult,
    TerminationReason,
    TokenUsage,
    ToolCall,
    ToolResult,
    ToolSchema,
)
from harness.vocabulary import ErrorKind

log = logging.getLogger(__name__)

_PINNED_ROLES = frozenset({"system", "developer"})


def trim_history(messages: Sequence[Message], max_messages: int | None) -> tuple[Message, ...]:
    """The messages to send when at most ``max_messages`` are allowed.

    System/developer messages and the first user message are always kept. The rest is split into
    groups (an assistant message with tool calls plus the tool messages that follow it, or a single
    message) and the most recent groups that fit are kept whole, so a tool call is never separated from
    its results. The most recent group is kept even when it alone exceeds the limit. Order is preserved.
    """
    if max_messages is None or len(messages) <= max_messages:
        return tuple(messages)
    pinned: set[int] = {i for i, m in enumerate(messages) if m.role in _PINNED_ROLES}
    first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
    if first_user is not None:
        pinned.add(first_user)
    groups: list[list[int]] = []
    for i, m in enumerate(messages):
        if i in pinned:
            continue
        if m.role == "tool" and groups and _opens_tool_group(messages[groups[-1][0]]):
            groups[-1].append(i)
        else:
            groups.append([i])
    budget = max_messages - len(pinned)
    kept: set[int] = set(pinned)
    for n, group in enumerate(reversed(groups)):
        if n > 0 and len(group) > budget:
            break
        kept.update(group)
        budget -= len(group)
    return tuple(messages[i] for i in sorted(kept))


def _opens_tool_group(message: Message) -> bool:
    return message.role == "assistant" and bool(message.tool_calls)


def _observer_name(observer: Observer) -> str:
    return getattr(observer, "name", None) or type(observer).__name__


class AgentKernel:
    """The agent loop over one client, one model adapter and a list of observers.

    ``model`` is the served model id sent in every request (never the family name). Tools are
    passed per call. ``max_concurrency`` bounds the tool calls of one step that run at once.
    ``max_history_messages`` bounds the messages sent per request (see ``trim_history``); the
    history returned by ``run`` is always complete.
    """

    def __init__(
        self,
        client: LLMClient,
        adapter: ModelAdapter,
        *,
        model: str,
        constraint: DecodingConstraint | None = None,
        observers: Sequence[Observer] = (),
        max_concurrency: int = 1,
        max_history_messages: int | None = None,
        workspace: Any = None,
        agent_id: str = "agent",
        max_tokens: int | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        stream: bool = False,
        top_p: float = 1.0,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if max_history_messages is not None and max_history_messages < 1:
            raise ValueError(f"max_history_messages must be >= 1 or None, got {max_history_messages}")
        if not model:
            raise ValueError("model (the served model id) must not be empty")
        self.client = client
        self.adapter = adapter
        self.model = model
        self.constraint = constraint if constraint is not None else DecodingConstraint()
        self.observers: list[Observer] = list(observers)
        self.max_concurrency = max_concurrency
        self.max_history_messages = max_history_messages
        self.workspace = workspace
        self.agent_id = agent_id
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.top_p = top_p
        self.stream = stream
        self.observer_errors: list[ObserverErrorEvent] = []
        """Every observer failure seen by this kernel (also emitted to the other observers)."""
        self._emit_lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    # -- events ---------------------------------------------------------------------------------

    async def emit(self, event: Event) -> None:
        """Send ``event`` to every observer at once; events reach each observer in order."""
        async with self._lock():
            failures = await self._deliver(event, self.observers)
            for observer, error in failures:
                report = ObserverErrorEvent(
                    observer=_observer_name(observer), event_type=type(event).__name__, error=error
                )
                self.observer_errors.append(report)
                log.warning("observer %s failed on %s: %s", report.observer, report.event_type, error)
                others = [o for o in self.observers if o is not observer]
                for failed, nested in await self._deliver(report, others):
                    # A failure while handling a failure report is recorded, never re-reported.
                    self.observer_errors.append(
                        ObserverErrorEvent(_observer_name(failed), type(report).__name__, nested)
                    )

    def _lock(self) -> asyncio.Lock:
        # One lock per event loop, so a kernel can be reused across ``asyncio.run`` calls.
        loop = asyncio.get_running_loop()
        if self._emit_lock is None or self._emit_lock[0] is not loop:
            self._emit_lock = (loop, asyncio.Lock())
        return self._emit_lock[1]

    @staticmethod
    async def _deliver(event: Event, observers: Sequence[Observer]) -> list[tuple[Observer, str]]:
        async def one(observer: Observer) -> str | None:
            try:
                outcome = observer.emit(event)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:  # an observer must never break the run
                return f"{type(exc).__name__}: {exc}"
            return None

        errors = await asyncio.gather(*(one(o) for o in observers))
        return [(o, e) for o, e in zip(observers, errors, strict=True) if e is not None]

    # -- one step -------------------------------------------------------------------------------

    async def step(
        self, messages: Sequence[Message], tools: Sequence[Tool], *, index: int = 1, workspace: Any = None
    ) -> StepResult:
        """Send one request, parse the answer, run the calls. ``index`` numbers the step in its run (from
        1; events and tool contexts carry it). Raises ModelCallError if the model cannot be called;
        parse failures and tool failures are returned, never raised."""
        tool_map = _tool_map(tools)
        schemas: list[ToolSchema] = [t.schema for t in tool_map.values()]
        sent = self.adapter.format_messages(trim_history(messages, self.max_history_messages))
        payload = self.adapter.build_payload(schemas, self.constraint)
        request = CompletionRequest(
            model=self.model,
            messages=tuple(sent),
            tools=tuple(self.adapter.request_tool(s) for s in schemas),
            send_tools=self.constraint.send_tools_to_api,
            tool_choice=payload.tool_choice,
            strict_tools=payload.strict_tools,
            parallel_tool_calls=payload.parallel_tool_calls,
            extra_body=payload.extra_body,
            stop=payload.stop,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            seed=self.seed,
            stream=self.stream,
        )
        await self.emit(
            ModelRequestEvent(
                step=index,
                messages_count=len(request.messages),
                tools_count=len(schemas),
                model=self.model,
                extra_body=payload.extra_body,
                request=request,
            )
        )
        response = await self.client.chat_completion(request)
        parsed = self.adapter.parse_response(response.content, response.tool_calls, schemas)
        errors = parsed.errors
        if response.malformed_tool_calls:  # the answer did hold calls: they are bad, not missing
            errors = tuple(e for e in errors if e.kind != ErrorKind.parse_no_call)
            errors += tuple(_malformed_failure(raw) for raw in response.malformed_tool_calls)
        await self.emit(
            ModelResponseEvent(
                step=index,
                content=response.content,
                tool_calls_count=len(parsed.tool_calls),
                usage=response.usage,
                latency_ms=response.latency_ms,
                ttft_ms=response.ttft_ms,
                parse_errors=tuple(f"{e.kind}: {e.message}" for e in errors),
                response=response,
            )
        )
        # The text outside the calls, as the parser found it; with no calls, the whole answer.
        content = parsed.content if parsed.tool_calls or parsed.content else response.content
        message = Message(role="assistant", content=content, tool_calls=parsed.tool_calls)
        ws = workspace if workspace is not None else self.workspace
        results = await self._execute_all(parsed.tool_calls, tool_map, index, ws)
        result = StepResult(
            response_message=message,
            tool_calls=parsed.tool_calls,
            tool_results=results,
            usage=response.usage,
            parse_errors=errors,
        )
        await self.emit(
            StepCompleteEvent(
                step=index,
                tool_calls_count=len(result.tool_calls),
                errors_count=len(errors) + sum(r.is_error for r in results),
                message=message,
                result=result,
            )
        )
        return result

    async def _execute_all(
        self, calls: Sequence[ToolCall], tool_map: dict[str, Tool], index: int, workspace: Any
    ) -> tuple[ToolResult, ...]:
        if self.max_concurrency == 1 or len(calls) <= 1:
            return tuple([await self._execute(c, tool_map, index, workspace) for c in calls])
        limit = asyncio.Semaphore(self.max_concurrency)

        async def bounded(call: ToolCall) -> ToolResult:
            async with limit:
                return await self._execute(call, tool_map, index, workspace)

        return tuple(await asyncio.gather(*(bounded(c) for c in calls)))

    async def _execute(
        self, call: ToolCall, tool_map: dict[str, Tool], index: int, workspace: Any
    ) -> ToolResult:
        await self.emit(ToolCallEvent(step=index, call=call))
        tool = tool_map.get(call.name)
        started = time.perf_counter()
        if tool is None:
            result = ToolResult(
                call_id=call.id,
                name=call.name,
                output=f"unknown tool {call.name!r}; available: {', '.join(sorted(tool_map)) or 'none'}",
                is_error=True,
                error_kind=ErrorKind.tool_unknown,
            )
        else:
            context = ToolContext(
                call_id=call.id, step=index, agent_id=self.agent_id, emit=self.emit, workspace=workspace
            )
            try:
                result = await tool.execute(call, context)
            except Exception as exc:  # the protocol says never raise; count it when a tool does
                result = ToolResult(
                    call_id=call.id,
                    name=call.name,
                    output=f"tool raised {type(exc).__name__}: {exc}",
                    is_error=True,
                    error_kind=ErrorKind.tool_exception,
                )
        if result.duration_us is None:
            result = dataclasses.replace(result, duration_us=(time.perf_counter() - started) * 1e6)
        await self.emit(ToolResultEvent(step=index, result=result))
        return result

    # -- the loop -------------------------------------------------------------------------------

    async def run(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        max_steps: int = 10,
        *,
        workspace: Any = None,
    ) -> RunResult:
        """Loop ``step`` until the model makes no tool call or ``max_steps`` steps were made.

        KernelEndEvent is always emitted. When the model call raises ModelCallError, KernelEnd carries
        reason ``model_error`` and the error text, and the error is re-raised.
        """
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        _tool_map(tools)  # fail on duplicate names before anything is emitted
        await self.emit(KernelStartEvent(max_steps=max_steps, initial_messages=len(messages)))
        history = list(messages)
        steps: list[StepResult] = []
        usage = TokenUsage()
        reason: TerminationReason = "max_steps"
        try:
            for index in range(1, max_steps + 1):
                step = await self.step(history, tools, index=index, workspace=workspace)
                steps.append(step)
                history.append(step.response_message)
                history.extend(Message.tool(r) for r in step.tool_results)
                if step.usage is not None:
                    usage = usage + step.usage
                if not step.tool_calls:
                    reason = "no_tool_calls"
                    break
        except ModelCallError as exc:
            await self.emit(
                KernelEndEvent(step_count=len(steps), termination_reason="model_error", error=str(exc))
            )
            raise
        except (Exception, asyncio.CancelledError) as exc:
            kind = "cancelled" if isinstance(exc, asyncio.CancelledError) else "error"
            await self.emit(
                KernelEndEvent(
                    step_count=len(steps), termination_reason=kind, error=f"{type(exc).__name__}: {exc}"
                )
            )
            raise
        await self.emit(KernelEndEvent(step_count=len(steps), termination_reason=reason))
        return RunResult(
            final_message=steps[-1].response_message,
            history=tuple(history),
            step_count=len(steps),
            termination_reason=reason,
            total_usage=usage,
            steps=tuple(steps),
        )


def _tool_map(tools: Sequence[Tool]) -> dict[str, Tool]:
    out: dict[str, Tool] = {}
    for tool in tools:
        name = tool.schema.name
        if name in out:
            raise ValueError(f"two tools are named {name!r}")
        out[name] = tool
    return out


def _malformed_failure(raw: str) -> ParseFailure:
    name = "?"
    try:
        decoded = json.loads(raw)
        if isinstance(decoded, dict):
            name = str(decoded.get("name") or "?")
    except ValueError:
        pass
    return ParseFailure(
        kind=ErrorKind.parse_bad_arguments,
        message=f"tool call {name!r}: arguments are not a JSON object",
        text=raw,
    )


__all__ = ["AgentKernel", "trim_history"]
