"""A sample's record built from the kernel's own events (``harness.agents.events``): the runner's
observer, ``SampleRecorder``, and the user's observers, which see the same events.

The kernel announces every request (``ModelRequestEvent.request``), every response with its timings
and engine figures (``ModelResponseEvent.response``) and every finished step with its parsed calls,
parse failures and tool results (``StepCompleteEvent.result``); each ``kernel.run`` (one user turn
of an episode) starts with a ``KernelStartEvent``. ``SampleRecorder`` turns them into the sample's
``StepRecord``s: a step's response is the one the kernel announced under the same step number of the
same turn, never one matched by position, and no client wrapper is needed.

A user's observer (``harness run --observer module:Class``, or ``run_suite(..., observers=[Class])``)
is a factory called once per sample attempt with the sample's ``SampleKey`` (``Class(key)``); what it
returns receives every event of that attempt through ``emit(event)`` (sync or async), then
``close()`` once the attempt ended, when it has one. An observer that raises is reported in the
run's log and never stops a sample (the kernel's rule).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from harness.agents import (
    CompletionRequest,
    CompletionResponse,
    Event,
    KernelStartEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    Observer,
    StepCompleteEvent,
    StepResult,
)
from harness.eval.run.resolved import RunError
from harness.eval.store import (
    CallRecord,
    ParseErrorRecord,
    SampleKey,
    StepRecord,
    StepStats,
    ToolResultRecord,
    UsageRecord,
)

ObserverFactory = Callable[[SampleKey], Observer]
"""What ``--observer module:Class`` names: called with each sample attempt's key, returns its observer."""


def _stats(response: CompletionResponse) -> StepStats | None:
    s = response.stats
    if s is None:
        return None
    return StepStats(
        compile_ms=s.compile_ms,
        compile_cached=s.compile_cached,
        compile_found=s.compile_found,
        grammar_backend=s.grammar_backend,
        grammar_reason=s.grammar_reason,
        mask_us=tuple(round(v, 3) for v in s.mask_us),
        accept_us=tuple(round(v, 3) for v in s.accept_us),
        generated_tokens=s.generated_tokens,
        grammar_error=s.grammar_error,
        target_steps=s.target_steps,
        target_mask_diff_steps=s.target_mask_diff_steps,
        target_only_tokens=s.target_only_tokens,
        forced_tokens=s.forced_tokens,
    )


def step_record(step: StepResult, response: CompletionResponse, turn: int | None = None) -> StepRecord:
    """One model call of a sample (``turn``: the episode's user turn it answered)."""
    usage = response.usage
    return StepRecord(
        output=response.content,
        tool_calls=tuple(CallRecord(name=c.name, arguments=c.arguments) for c in step.tool_calls),
        parse_errors=tuple(ParseErrorRecord(kind=e.kind, message=e.message) for e in step.parse_errors),
        tool_results=tuple(
            ToolResultRecord(
                name=r.name, output=r.output, is_error=r.is_error, error_kind=r.error_kind,
                duration_us=None if r.duration_us is None else round(r.duration_us, 1),
            )
            for r in step.tool_results
        ),
        latency_ms=response.latency_ms,
        ttft_ms=response.ttft_ms,
        constraint_first=response.constraint_first,
        finish_reason=response.finish_reason,
        usage=None if usage is None else UsageRecord(
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
            counted_by=usage.counted_by,
        ),
        stats=_stats(response),
        turn=turn,
    )


class SampleRecorder:
    """The runner's observer of one sample attempt (see the module doc). ``episode``: steps name the
    user turn they answered (counted from the kernel's ``KernelStartEvent``s); else None."""

    def __init__(self, episode: bool = False) -> None:
        self.episode = episode
        self.turn = -1
        """The user turn under way (-1: none started: a lone step)."""
        self.steps: list[StepRecord] = []
        """Every finished step, in order."""
        self.responses: list[CompletionResponse] = []
        """The response of each finished step, in step order."""
        self.requests: list[CompletionRequest] = []
        """The request of each finished step, in step order (their prompts go to prompts.jsonl)."""
        self._sent: dict[int, CompletionRequest] = {}
        self._answered: dict[int, CompletionResponse] = {}

    def emit(self, event: Event) -> None:
        if isinstance(event, KernelStartEvent):
            self.turn += 1
            self._sent, self._answered = {}, {}
        elif isinstance(event, ModelRequestEvent) and event.request is not None:
            self._sent[event.step] = event.request
        elif isinstance(event, ModelResponseEvent) and event.response is not None:
            self._answered[event.step] = event.response
        elif isinstance(event, StepCompleteEvent) and event.result is not None:
            response, request = self._answered.pop(event.step), self._sent.pop(event.step)
            turn = max(self.turn, 0) if self.episode else None
            self.steps.append(step_record(event.result, response, turn))
            self.responses.append(response)
            self.requests.append(request)


def load_observer(name: str) -> ObserverFactory:
    """The observer factory ``module:Class`` names (imported now, so a typo stops the run before it
    starts); RunError naming what is wrong."""
    module_name, _, attr = name.partition(":")
    if not module_name or not attr:
        raise RunError(f"--observer {name!r}: expected module:Class (a class importable from the current "
                       "environment, called with each sample's key)")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import error of the user's module, whatever it is
        raise RunError(f"--observer {name!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise RunError(f"--observer {name!r}: {module_name!r} has no callable {attr!r}")
    return factory  # type: ignore[no-any-return]


async def close_observers(observers: list[Any], log: Callable[[str], None]) -> None:
    """``close()`` of each user observer that has one (sync or async); a failure is logged, never raised."""
    for observer in observers:
        close = getattr(observer, "close", None)
        if close is None:
            continue
        try:
            outcome = close()
            if inspect.isawaitable(outcome):
                await outcome
        except Exception as exc:  # a user's observer never breaks the run
            log(f"observer {type(observer).__name__}: close failed: {type(exc).__name__}: {exc}")


__all__ = ["ObserverFactory", "SampleRecorder", "close_observers", "load_observer", "step_record"]
