"""AgentKernel: event order, termination, error paths, concurrency, usage, observers.

Test doubles: ScriptedClient (the model), line_adapter (a trivial ``CALL name {json}`` format) and
FunctionTool (tiny async tools), all from harness.agents.testing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.agents import (
    AgentKernel,
    DecodingConstraint,
    KernelEndEvent,
    KernelStartEvent,
    Message,
    ModelCallError,
    ModelRequestEvent,
    ModelResponseEvent,
    ObserverErrorEvent,
    RecordingObserver,
    StepCompleteEvent,
    TokenUsage,
    ToolCall,
    ToolCallEvent,
    ToolContext,
    ToolResultEvent,
)
from harness.agents.testing import FunctionTool, ScriptedClient, ScriptExhaustedError, line_adapter

reply = ScriptedClient.reply
USER = [Message(role="system", content="sys"), Message(role="user", content="do it")]


async def _echo(args: dict[str, Any], ctx: ToolContext) -> Any:
    return {"echo": args}


def echo_tool(name: str = "echo") -> FunctionTool:
    return FunctionTool(name, _echo)


def make_kernel(client: ScriptedClient, **kw: Any) -> tuple[AgentKernel, RecordingObserver]:
    rec = RecordingObserver()
    observers = kw.pop("observers", [])
    kernel = AgentKernel(
        client, line_adapter(), model="org/served-model-7b", observers=[*observers, rec], **kw
    )
    return kernel, rec


def names(rec: RecordingObserver) -> list[str]:
    return [type(e).__name__.removesuffix("Event") for e in rec.events]


async def test_event_order_and_no_tool_calls_termination() -> None:
    client = ScriptedClient([reply('CALL echo {"a": 1}\nCALL echo {"a": 2}'), reply("all done")])
    kernel, rec = make_kernel(client)
    result = await kernel.run(USER, [echo_tool()], max_steps=5)
    assert names(rec) == [
        "KernelStart",
        "ModelRequest", "ModelResponse", "ToolCall", "ToolResult", "ToolCall", "ToolResult", "StepComplete",
        "ModelRequest", "ModelResponse", "StepComplete",
        "KernelEnd",
    ]  # fmt: skip
    assert result.termination_reason == "no_tool_calls"
    assert result.step_count == 2
    assert result.final_message == Message(role="assistant", content="all done")
    end = rec.events[-1]
    assert (
        isinstance(end, KernelEndEvent) and end.termination_reason == "no_tool_calls" and end.step_count == 2
    )
    # history: the input, assistant with 2 calls, 2 tool messages, the final answer
    roles = [m.role for m in result.history]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant"]
    calls = result.history[2].tool_calls
    assert [m.tool_call_id for m in result.history[3:5]] == [c.id for c in calls]
    assert result.history[3].content == '{"echo": {"a": 1}}'


async def test_max_steps_termination() -> None:
    client = ScriptedClient([reply('CALL echo {"n": 1}'), reply('CALL echo {"n": 2}'), reply("unused")])
    kernel, rec = make_kernel(client)
    result = await kernel.run(USER, [echo_tool()], max_steps=2)
    assert result.termination_reason == "max_steps"
    assert result.step_count == 2
    assert len(client.requests) == 2
    assert isinstance(rec.events[0], KernelStartEvent) and rec.events[0].max_steps == 2
    end = rec.events[-1]
    assert isinstance(end, KernelEndEvent) and end.termination_reason == "max_steps"
    # the second request saw the first call's result
    assert [m.role for m in client.requests[1].messages] == ["system", "user", "assistant", "tool"]


async def test_one_model_request_event_per_request() -> None:
    client = ScriptedClient([reply("CALL echo {}"), reply("CALL echo {}"), reply("done")])
    kernel, rec = make_kernel(client)
    await kernel.run(USER, [echo_tool()], max_steps=5)
    assert len(rec.of_type(ModelRequestEvent)) == len(client.requests) == 3
    assert len(rec.of_type(ModelResponseEvent)) == 3


async def test_request_carries_served_model_id_payload_and_tools() -> None:
    client = ScriptedClient([reply("hi")])
    kernel, rec = make_kernel(client, constraint=DecodingConstraint("ebnf", send_tools_to_api=False))
    await kernel.step(USER, [echo_tool(), echo_tool("other")])
    (request,) = client.requests
    assert request.model == "org/served-model-7b"  # never the family name
    assert request.extra_body["structured_outputs"]["grammar"].startswith("root ::=")
    assert request.extra_body["skip_special_tokens"] is False
    assert request.stop == ("<end>",)
    assert [t.name for t in request.tools] == ["echo", "other"]
    assert request.send_tools is False
    (event,) = rec.of_type(ModelRequestEvent)
    assert isinstance(event, ModelRequestEvent)
    assert event.model == "org/served-model-7b" and event.tools_count == 2
    assert event.extra_body == request.extra_body


async def test_kernel_end_emitted_when_model_call_raises() -> None:
    client = ScriptedClient([reply("CALL echo {}"), ModelCallError("model:timeout", "no answer in 60 s")])
    kernel, rec = make_kernel(client)
    with pytest.raises(ModelCallError) as info:
        await kernel.run(USER, [echo_tool()], max_steps=5)
    assert info.value.kind == "model:timeout"
    end = rec.events[-1]
    assert isinstance(end, KernelEndEvent)
    assert end.termination_reason == "model_error"
    assert end.step_count == 1
    assert end.error is not None and "model:timeout" in end.error
    assert len(rec.of_type(ModelRequestEvent)) == 2 and len(rec.of_type(ModelResponseEvent)) == 1


async def test_kernel_end_emitted_when_something_else_raises() -> None:
    client = ScriptedClient([])  # exhausted at once: the test double raises
    kernel, rec = make_kernel(client)
    with pytest.raises(ScriptExhaustedError):
        await kernel.run(USER, [], max_steps=1)
    end = rec.events[-1]
    assert isinstance(end, KernelEndEvent) and end.termination_reason == "error"


async def test_unknown_tool_gives_error_result_and_both_events() -> None:
    client = ScriptedClient([reply('CALL nosuch {"x": 1}'), reply("ok")])
    kernel, rec = make_kernel(client)
    result = await kernel.run(USER, [echo_tool()], max_steps=3)
    (tr,) = result.steps[0].tool_results
    assert tr.is_error and tr.error_kind == "tool:unknown" and tr.name == "nosuch"
    assert "echo" in tr.output  # tells the model what exists
    (call_ev,) = rec.of_type(ToolCallEvent)
    (result_ev,) = rec.of_type(ToolResultEvent)
    assert isinstance(call_ev, ToolCallEvent) and call_ev.call.name == "nosuch"
    assert isinstance(result_ev, ToolResultEvent) and result_ev.result == tr
    done = rec.of_type(StepCompleteEvent)[0]
    assert isinstance(done, StepCompleteEvent) and done.errors_count == 1
    assert result.history[3].role == "tool" and result.history[3].tool_call_id == tr.call_id


async def test_tool_that_raises_becomes_tool_exception() -> None:
    async def boom(args: dict[str, Any], ctx: ToolContext) -> Any:
        raise RuntimeError("disk on fire")

    client = ScriptedClient([reply("CALL boom {}"), reply("ok")])
    kernel, rec = make_kernel(client)
    result = await kernel.run(USER, [FunctionTool("boom", boom, raise_errors=True)], max_steps=3)
    (tr,) = result.steps[0].tool_results
    assert tr.is_error and tr.error_kind == "tool:exception"
    assert "disk on fire" in tr.output
    assert len(rec.of_type(ToolResultEvent)) == 1
    assert result.termination_reason == "no_tool_calls"


async def test_parse_errors_reported_in_step_and_event() -> None:
    client = ScriptedClient(
        [
            reply(
                'CALL echo {"a": \nCALL echo [1]',
                malformed_tool_calls=['{"name": "echo", "arguments": "{oops"}'],
            )
        ]
    )
    kernel, rec = make_kernel(client)
    step = await kernel.step(USER, [echo_tool()])
    kinds = [e.kind for e in step.parse_errors]
    assert kinds == ["parse:bad_json", "parse:bad_arguments", "parse:bad_arguments"]
    assert step.parse_errors[2].text == '{"name": "echo", "arguments": "{oops"}'
    assert "'echo'" in step.parse_errors[2].message
    assert step.tool_calls == ()
    assert step.response_message.content == 'CALL echo {"a": \nCALL echo [1]'  # the text is kept
    (ev,) = rec.of_type(ModelResponseEvent)
    assert isinstance(ev, ModelResponseEvent)
    assert [p.split(":")[0] + ":" + p.split(":")[1] for p in ev.parse_errors] == kinds


async def test_malformed_server_calls_are_bad_arguments_not_no_call() -> None:
    """A server's tool call whose arguments are not an object: the answer held a call, a bad one."""
    client = ScriptedClient([reply(None, malformed_tool_calls=['{"function": {"name": "echo", "arguments": "{oops"}}'])])
    kernel, _ = make_kernel(client)
    step = await kernel.step(USER, [echo_tool()])
    assert [e.kind for e in step.parse_errors] == ["parse:bad_arguments"]


async def test_native_tool_calls_are_executed() -> None:
    call = ToolCall(id="srv_1", name="echo", arguments={"q": "x"})
    client = ScriptedClient([reply(None, tool_calls=[call]), reply("done")])
    kernel, _ = make_kernel(client)
    result = await kernel.run(USER, [echo_tool()], max_steps=3)
    assert result.steps[0].tool_results[0].call_id == "srv_1"
    assert result.steps[0].tool_results[0].output == {"echo": {"q": "x"}}


async def test_usage_totalled() -> None:
    client = ScriptedClient(
        [
            reply("CALL echo {}", usage=TokenUsage(10, 5, 15)),
            reply("CALL echo {}"),  # a server that sent no usage
            reply("done", usage=TokenUsage(20, 7, 27)),
        ]
    )
    kernel, _ = make_kernel(client)
    result = await kernel.run(USER, [echo_tool()], max_steps=5)
    assert result.total_usage == TokenUsage(30, 12, 42)
    assert [s.usage for s in result.steps] == [TokenUsage(10, 5, 15), None, TokenUsage(20, 7, 27)]


async def test_tool_calls_overlap_when_concurrency_above_one() -> None:
    """Each tool waits for the other to start: only real overlap lets both finish."""
    started = {"a": asyncio.Event(), "b": asyncio.Event()}

    def waiter(me: str, other: str) -> FunctionTool:
        async def fn(args: dict[str, Any], ctx: ToolContext) -> Any:
            started[me].set()
            await asyncio.wait_for(started[other].wait(), timeout=5)
            return "met"

        return FunctionTool(me, fn)

    client = ScriptedClient([reply("CALL a {}\nCALL b {}")])
    kernel, rec = make_kernel(client, max_concurrency=2)
    step = await kernel.step(USER, [waiter("a", "b"), waiter("b", "a")])
    assert [r.output for r in step.tool_results] == ["met", "met"]
    assert [r.name for r in step.tool_results] == ["a", "b"]  # results in call order
    assert names(rec)[2:4] == ["ToolCall", "ToolCall"]  # both started before either finished


async def test_concurrency_limit_is_respected() -> None:
    running = 0
    peak = 0

    async def fn(args: dict[str, Any], ctx: ToolContext) -> Any:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return "ok"

    client = ScriptedClient([reply("\n".join("CALL t {}" for _ in range(5)))])
    kernel, _ = make_kernel(client, max_concurrency=2)
    step = await kernel.step(USER, [FunctionTool("t", fn)])
    assert len(step.tool_results) == 5
    assert peak == 2


async def test_sequential_when_concurrency_is_one() -> None:
    client = ScriptedClient([reply("CALL echo {}\nCALL echo {}")])
    kernel, rec = make_kernel(client)
    await kernel.step(USER, [echo_tool()])
    assert names(rec)[2:] == ["ToolCall", "ToolResult", "ToolCall", "ToolResult", "StepComplete"]


class RaisingObserver:
    name = "raiser"

    def __init__(self, on: type, is_async: bool) -> None:
        self.on = on
        self.is_async = is_async

    def emit(self, event: Any) -> Any:
        if not isinstance(event, self.on):
            return None
        if self.is_async:

            async def fail() -> None:
                raise ValueError("observer bug")

            return fail()
        raise ValueError("observer bug")


@pytest.mark.parametrize("is_async", [False, True])
async def test_observer_failure_is_reported_not_a_model_failure(is_async: bool) -> None:
    client = ScriptedClient([reply("CALL echo {}"), reply("done")])
    kernel, rec = make_kernel(client, observers=[RaisingObserver(ModelRequestEvent, is_async)])
    result = await kernel.run(USER, [echo_tool()], max_steps=3)
    assert result.termination_reason == "no_tool_calls"  # the run went on
    errors = rec.of_type(ObserverErrorEvent)
    assert len(errors) == 2  # one per ModelRequest
    err = errors[0]
    assert isinstance(err, ObserverErrorEvent)
    assert err.observer == "raiser" and err.event_type == "ModelRequestEvent" and "observer bug" in err.error
    assert kernel.observer_errors == errors
    end = rec.events[-1]
    assert isinstance(end, KernelEndEvent) and end.termination_reason == "no_tool_calls" and end.error is None
    # the other observer still got every ordinary event
    assert names(rec).count("ModelRequest") == 2


async def test_observers_are_called_concurrently_and_events_stay_in_order() -> None:
    class Handshake:
        """Two async observers that each wait for the other per event: needs concurrent delivery."""

        def __init__(self, mine: dict[int, asyncio.Event], theirs: dict[int, asyncio.Event]) -> None:
            self.mine, self.theirs, self.seen = mine, theirs, []  # type: ignore[var-annotated]

        async def emit(self, event: Any) -> None:
            key = len(self.seen)
            self.mine.setdefault(key, asyncio.Event()).set()
            await asyncio.wait_for(self.theirs.setdefault(key, asyncio.Event()).wait(), timeout=5)
            self.seen.append(type(event).__name__)

    a: dict[int, asyncio.Event] = {}
    b: dict[int, asyncio.Event] = {}
    one, two = Handshake(a, b), Handshake(b, a)
    client = ScriptedClient([reply("CALL echo {}\nCALL echo {}"), reply("done")])
    kernel, rec = make_kernel(client, observers=[one, two], max_concurrency=2)
    await kernel.run(USER, [echo_tool()], max_steps=3)
    assert one.seen == two.seen == [type(e).__name__ for e in rec.events]
    assert not rec.of_type(ObserverErrorEvent)


async def test_history_limit_applies_to_requests_but_run_history_is_complete() -> None:
    client = ScriptedClient([reply("CALL echo {}\nCALL echo {}"), reply("CALL echo {}"), reply("done")])
    kernel, _ = make_kernel(client, max_history_messages=4)
    result = await kernel.run(USER, [echo_tool()], max_steps=5)
    third = client.requests[2].messages
    # system + first user pinned; the latest assistant+tool group kept whole; the older group dropped
    assert [m.role for m in third] == ["system", "user", "assistant", "tool"]
    assert third[3].tool_call_id == third[2].tool_calls[0].id
    assert len(result.history) == 2 + 3 + 2 + 1


async def test_tools_get_context_with_step_workspace_and_emit() -> None:
    # Checked outside the tool: an AssertionError inside it would become an error result, and pass.
    seen: list[tuple[int, Any, bool]] = []

    async def fn(args: dict[str, Any], ctx: ToolContext) -> Any:
        seen.append((ctx.step, ctx.workspace, ctx.emit is not None))
        return "ok"

    client = ScriptedClient([reply("CALL t {}"), reply("CALL t {}"), reply("done")])
    kernel, _ = make_kernel(client)
    ws = object()
    await kernel.run(USER, [FunctionTool("t", fn)], max_steps=5, workspace=ws)
    assert seen == [(1, ws, True), (2, ws, True)]


async def test_bad_configuration_is_rejected() -> None:
    client = ScriptedClient([])
    with pytest.raises(ValueError, match="max_concurrency"):
        AgentKernel(client, line_adapter(), model="m", max_concurrency=0)
    with pytest.raises(ValueError, match="model"):
        AgentKernel(client, line_adapter(), model="")
    kernel, _ = make_kernel(client)
    with pytest.raises(ValueError, match="two tools"):
        await kernel.run(USER, [echo_tool(), echo_tool()], max_steps=1)
    with pytest.raises(ValueError, match="max_steps"):
        await kernel.run(USER, [], max_steps=0)
