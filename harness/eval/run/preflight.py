"""Checks before the first sample, so a setup that cannot work stops the run in seconds with the cause
named (exit 2), instead of filing every sample as ``model:connection`` and exiting 0.

For each server the run's requests go to (``RunEngine.endpoints``; in-process engines have none):

1. ``reachable``: ``GET /models`` answers within ``CONNECT_TIMEOUT_S`` (no retries): a server that is
   down, a wrong URL or a rejected key is named at once; and it lists the model the family's requests
   carry (else: the ids it does serve).
2. ``fits_family``: on a vLLM server (``POST /tokenize``; other servers skip this), the family's call
   tag (``<start_function_call>``, ``<tool_call>``) is one token of the served model's vocabulary, as
   in every model of that format; a Qwen model run as function_gemma spells it in pieces.
3. ``serves_strict_tools``: for ``required``/``strict``, a vLLM server is at least 0.32 (older ones
   ignore ``strict``); a server without ``--enable-auto-tool-choice`` fails the probe, which says so.
5. ``enforces``: for each lane whose constraint the harness sends (ebnf, structural_tag, json_schema),
   one request whose constraint of that kind admits one known short answer (``yes``, ``{"answer":"yes"}``),
   in the run's dialect; an answer that is not it means the server ignores the field: the lane is refused
   (RunError, naming the field and the dialect the server seems to speak), or with ``--allow-unenforced``
   it runs labeled "not enforced" (``preflight`` returns those lanes; run.json's ``not_enforced``).
4. ``probe``: one request per family and strategy, through the real kernel, the family's template and
   the strategy's constraint, on the first selected case's prompt, cut at ``PROBE_TOKENS``: the server
   takes the grammar, the template renders. Nothing of it is recorded (it warms the server's prefix
   cache, as the first sample would).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from harness.agents import (
    Agent,
    CompletionRequest,
    CompletionResponse,
    LLMClient,
    Message,
    ModelCallError,
    Tool,
)
from harness.engines import SERVED_PREFIX, Endpoint, RunEngine, SampleContext
from harness.eval.data import Case, NextCallCase, SingleTurnCase
from harness.eval.run.resolved import RunError
from harness.eval.run.sample import gold_answers, schema_only_tools
from harness.files import load_json
from harness.vocabulary import Strategy

CONNECT_TIMEOUT_S = 3.0
"""A server that does not answer ``/models`` within this is down (or the URL is wrong)."""
PROBE_TOKENS = 2
"""Tokens a probe asks for: enough to start the constrained answer, little enough to be quick."""
PROBE_TIMEOUT_S = 120.0
STRICT_TOOLS_VERSION = (0, 32)
"""The vLLM that builds tool-call constraints itself for strict tools (``--tool-strict-level``, structural tags)."""
SERVER_BUILT_HINT = (
    " (required and strict use vLLM's own tool calling: the server must run with --enable-auto-tool-choice and "
    "a --tool-call-parser for the family, vLLM >= 0.32)"
)


class _Probed(Exception):
    """Raised by the probe's client once the answer came: the kernel goes no further (no tool runs)."""


class _ProbeClient:
    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        await self.inner.chat_completion(dataclasses.replace(request, max_tokens=PROBE_TOKENS))
        raise _Probed

    async def aclose(self) -> None:
        """The inner client belongs to the run."""


def _headers(endpoint: Endpoint) -> dict[str, str]:
    return {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}


async def reachable(endpoint: Endpoint, http: httpx.AsyncClient) -> None:
    """The server answers ``/models`` and lists the model; RunError naming the problem otherwise."""
    url = endpoint.base_url.rstrip("/")
    try:
        response = await http.get(f"{url}/models", headers=_headers(endpoint), timeout=CONNECT_TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise RunError(f"preflight: the server at {url} does not answer ({type(exc).__name__}: {exc or 'no answer'} "
                       f"within {CONNECT_TIMEOUT_S:g} s): is it running, and is the URL right?") from None
    if response.status_code in (401, 403):
        raise RunError(f"preflight: the server at {url} refuses the API key (HTTP {response.status_code}): set "
                       "$OPENAI_API_KEY, or the variable the bundle's model.api_key_env names")
    try:
        response.raise_for_status()
        served = [str(m["id"]) for m in load_json(response.content, f"{url}/models")["data"]]  # depth-bounded
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise RunError(f"preflight: {url}/models is not an OpenAI-compatible model list: {exc}") from None
    if endpoint.model not in served:
        raise RunError(f"preflight: the server at {url} serves {', '.join(map(repr, served)) or 'no model'}, not "
                       f"{endpoint.model!r} ({endpoint.family}): pass --model {endpoint.family}=ONE_IT_SERVES")


async def fits_family(endpoint: Endpoint, call_start: str, http: httpx.AsyncClient) -> None:
    """On a vLLM server, the family's call tag is one token of the served model (else RunError)."""
    root = endpoint.base_url.rstrip("/").removesuffix("/v1")
    body = {"model": endpoint.model, "prompt": call_start, "add_special_tokens": False}
    try:
        response = await http.post(f"{root}/tokenize", json=body, headers=_headers(endpoint), timeout=30.0)
        tokens = load_json(response.content, f"{root}/tokenize")["tokens"] if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError):  # InputFileError (too deep, not JSON) is a ValueError
        tokens = None  # not a vLLM server: nothing to check here
    if not isinstance(tokens, list):
        tokens = None
    if tokens is not None and len(tokens) != 1:
        raise RunError(
            f"preflight: the model {endpoint.model!r} does not fit {endpoint.family}'s format: its vocabulary spells "
            f"{call_start!r} in {len(tokens)} tokens, where a model of that format has it as one. Run it as the "
            f"family it speaks (--family), or give {endpoint.family} its own model: --model {endpoint.family}=NAME")


def _first_prompt(agent: Agent, case: Case) -> list[Message]:
    if isinstance(case, NextCallCase | SingleTurnCase):
        return agent.opening(case.history())
    return agent.opening([Message(role=m.role, content=m.content) for m in case.turns[0]])


def _tools(agent: Agent, case: Case) -> Sequence[Tool]:
    """The tools the case's samples offer: a single-turn case brings its own."""
    if isinstance(case, SingleTurnCase):
        return schema_only_tools(case)
    return agent.tools


async def probe(agent: Agent, engine: RunEngine, case: Case, timeout_s: float) -> None:
    """One request of ``agent``'s family and strategy on ``case``'s prompt; RunError when it fails."""
    constraint = agent.constraint
    gold = tuple(tuple(a) for a in gold_answers(case, constraint.allow_parallel_calls))
    client = engine.client_for(SampleContext(f"{case.id}/preflight", agent.family, constraint, gold))
    kernel = agent.make_kernel(_ProbeClient(client))
    try:
        await asyncio.wait_for(kernel.step(_first_prompt(agent, case), _tools(agent, case)), timeout_s)
    except _Probed:
        return
    except ModelCallError as exc:
        hint = SERVER_BUILT_HINT if constraint.strategy.server_built else ""
        raise RunError(f"preflight: a probe request of {agent.family}/{constraint.strategy} (case {case.id}) "
                       f"failed: {exc}{hint}") from None
    except TimeoutError:
        raise RunError(f"preflight: a probe request of {agent.family}/{constraint.strategy} got no answer within "
                       f"{timeout_s:g} s") from None


KNOWN_ANSWERS: dict[str, tuple[str, Any, str]] = {
    Strategy.ebnf: ("grammar", 'root ::= "yes"', "yes"),
    Strategy.structural_tag: ("structural_tag", json.dumps(
        {"type": "structural_tag", "format": {"type": "grammar", "grammar": 'root ::= "yes"'}}), "yes"),
    Strategy.json_schema: ("json", json.dumps({"type": "object", "properties": {"answer": {"const": "yes"}},
                                               "required": ["answer"], "additionalProperties": False}),
                           '{"answer":"yes"}'),
}
"""Per strategy the harness sends: (constraint kind, a constraint admitting one answer, that answer)."""
ENFORCE_TOKENS = 16


def _same(kind: str, answer: str, expected: str) -> bool:
    if kind != "json":
        return answer.strip() == expected
    try:
        return bool(json.loads(answer) == json.loads(expected))
    except ValueError:
        return False


async def enforces(agent: Agent, engine: RunEngine, endpoint: Endpoint, timeout_s: float) -> str | None:
    """None when the server answers a constraint admitting one answer with that answer; else why not, in
    words (the field it ignored, the dialect it seems to speak)."""
    from harness.engines import detect_dialect

    strategy = agent.constraint.strategy
    if strategy not in KNOWN_ANSWERS or endpoint.model.startswith(SERVED_PREFIX):
        return None  # a served oracle replays gold answers: it answers no probe of its own
    kind, value, expected = KNOWN_ANSWERS[strategy]
    request = CompletionRequest(
        model=endpoint.model, messages=(Message(role="user", content="Answer yes."),),
        extra_body={"structured_outputs": {kind: value}}, max_tokens=ENFORCE_TOKENS, stream=engine.stream)
    client = engine.client_for(SampleContext(f"preflight/{strategy}", agent.family, agent.constraint))
    try:
        answer = await asyncio.wait_for(client.chat_completion(request), timeout_s)
    except ModelCallError as exc:
        return f"a request carrying only a {kind} constraint failed: {exc}"
    except TimeoutError:
        return f"a request carrying only a {kind} constraint got no answer within {timeout_s:g} s"
    if _same(kind, answer.content or "", expected):
        return None
    dialect = (engine.describe() or {}).get("dialect") or {}
    field = (dialect.get("fields") or {}).get(kind, f"structured_outputs.{kind}")
    seen, evidence = await asyncio.to_thread(detect_dialect, endpoint.base_url, endpoint.api_key)
    return (f"the server at {endpoint.base_url} does not enforce {field} (dialect {dialect.get('name', 'vllm')}): "
            f"asked for a constraint admitting only {expected!r}, it answered {(answer.content or '')[:80]!r}. "
            f"The server seems to speak {seen} ({evidence})")


async def serves_strict_tools(endpoint: Endpoint, strategies: Sequence[str], http: httpx.AsyncClient) -> None:
    """``required``/``strict`` need vLLM's own tool-call constraint: a vLLM server (``GET /version``)
    at least ``STRICT_TOOLS_VERSION``; RunError naming the strategy and why. A server that is not vLLM
    (no ``/version``) is left to the probe."""
    wanted = [s for s in strategies if Strategy(s).server_built]
    if not wanted:
        return
    root = endpoint.base_url.rstrip("/").removesuffix("/v1")
    try:
        answer = await http.get(f"{root}/version", headers=_headers(endpoint), timeout=CONNECT_TIMEOUT_S)
        version = str(answer.json()["version"]) if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        version = None
    if version is None:
        return
    parts = tuple(int(p) for p in version.split("+")[0].split(".")[:2] if p.isdigit())
    if parts < STRICT_TOOLS_VERSION:
        raise RunError(f"preflight: strategy {', '.join(wanted)} needs vLLM >= "
                       f"{'.'.join(map(str, STRICT_TOOLS_VERSION))} (its own strict tool calling); the server "
                       f"of {endpoint.family} at {endpoint.base_url} is vLLM {version}")


async def check_reachable(endpoints: Sequence[Endpoint]) -> None:
    """Step 1 for every endpoint at once (what a run checks before anything slow)."""
    async with httpx.AsyncClient() as http:
        await asyncio.gather(*(reachable(e, http) for e in endpoints))


async def check_enforced(engine: RunEngine, agents: Sequence[Agent], endpoints: Sequence[Endpoint], timeout_s: float,
                         allow_unenforced: bool, log: Callable[[str], None]) -> list[str]:
    """Step 5 for every lane the harness constrains: the lanes (``family/strategy``) that run "not
    enforced" (``allow_unenforced``); RunError for the first one otherwise."""
    lanes: list[str] = []
    for agent in agents:
        for endpoint in (e for e in endpoints if e.family == agent.family):
            why = await enforces(agent, engine, endpoint, timeout_s)
            if why is None:
                continue
            lane = f"{agent.family}/{agent.constraint.strategy}"
            if not allow_unenforced:
                raise RunError(f"preflight: lane {lane} refused: {why}. Pass --dialect with the one it speaks, or "
                               "--allow-unenforced to run the lane labeled 'not enforced'")
            log(f"preflight: lane {lane} runs labeled 'not enforced' (--allow-unenforced): {why}")
            lanes.append(lane)
            break
    return lanes


async def preflight(engine: RunEngine, agents: Sequence[Agent], case: Case | None, timeout_s: float,
                    log: Callable[[str], None], allow_unenforced: bool = False) -> list[str]:
    """Every check of the module doc, for every family and strategy of the run (nothing for in-process
    engines); RunError naming the first problem. Returns the lanes that run "not enforced"."""
    from harness.grammar.families import get_adapter

    families = list(dict.fromkeys(a.family for a in agents))
    endpoints = engine.endpoints(families)
    if not endpoints:
        return []
    await check_reachable(endpoints)
    async with httpx.AsyncClient() as http:
        for endpoint in endpoints:
            await fits_family(endpoint, get_adapter(endpoint.family).native_call_start, http)
            await serves_strict_tools(endpoint, [a.constraint.strategy for a in agents if a.family == endpoint.family],
                                      http)
    if case is not None and agents:
        # The first probe alone prefills the shared prompt into the server's prefix cache; the others then
        # go at once (each is the cached prompt and its lane's grammar). The first lane's problem is named.
        bound = min(timeout_s, PROBE_TIMEOUT_S)
        await probe(agents[0], engine, case, bound)
        probed = await asyncio.gather(*(probe(a, engine, case, bound) for a in agents[1:]), return_exceptions=True)
        for failed in probed:
            if isinstance(failed, BaseException):
                raise failed
    unenforced = await check_enforced(engine, agents, endpoints, min(timeout_s, PROBE_TIMEOUT_S), allow_unenforced, log)
    servers = sorted({e.base_url for e in endpoints})
    log(f"preflight: {', '.join(servers)} answer, serve the run's models, took a probe request of each of "
        f"{len(agents)} family x strategy lanes, and enforce the constraints of "
        f"{sum(a.constraint.strategy in KNOWN_ANSWERS for a in agents) - len(unenforced)} of them")
    return unenforced


__all__ = [
    "CONNECT_TIMEOUT_S", "KNOWN_ANSWERS", "PROBE_TOKENS", "check_enforced", "check_reachable", "enforces", "fits_family", "preflight", "probe", "reachable",
    "serves_strict_tools",
]
