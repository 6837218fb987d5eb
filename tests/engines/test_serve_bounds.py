"""``harness serve``'s bounds (``ServeLimits``): every malformed or oversized request is a 4xx naming the
bound or the field, and grammars compile first in a worker that is stopped at its time or memory bound.

The app runs in process (Starlette's test client) on the served oracle; the compile worker is a real
process. Figures (memory, time) are recorded by ``harness bench serve``, never asserted here."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from harness.bench.serve import doubling_schema, nested_schema, rules_grammar
from harness.engines.oracle import ServedOracle
from harness.engines.serve.compile_guard import CompileGuard
from harness.engines.serve.limits import ServeLimits
from harness.engines.serve.server import create_app

ENGINE = ServedOracle()
TINY = ServeLimits(max_body_bytes=64 * 1024, max_json_depth=16, max_constraint_bytes=8 * 1024)


def body(**fields: Any) -> dict[str, Any]:
    return {"model": "oracle-qwen", "messages": [{"role": "user", "content": "hi"}], "oracle": {"calls": []}, **fields}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    """The app under TINY limits, compiling in process (no worker)."""
    with TestClient(create_app(ENGINE, TINY)) as test_client:
        yield test_client


def check_refused(response: Any, status: int, needle: str) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert needle in error["message"], error
    assert error["code"] == status


def _raw(text: str | bytes, **headers: str) -> dict[str, Any]:
    return {"content": text, "headers": {"content-type": "application/json", **headers}}


BOUNDS: list[tuple[str, dict[str, Any], int, str]] = [
    ("body over max_body_bytes", _raw(json.dumps(body(messages=[{"role": "user", "content": "x" * 70_000}]))),
     413, "max_body_bytes=65536"),
    ("body nested 10,000 deep", _raw(b'{"a": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"), 400,
     "nested deeper than 16 levels (the bound max_json_depth=16)"),
    ("schema nested 200 deep", _raw(json.dumps(body(structured_outputs={"json": "S"})).replace(
        '"S"', nested_schema(200))), 400, "max_json_depth=16"),
    ("grammar over max_constraint_bytes", {"json": body(structured_outputs={"grammar": rules_grammar(400)})}, 400,
     "over the bound max_constraint_bytes=8192"),
    ("choice of 100,000 strings", {"json": body(structured_outputs={"choice": [str(i) for i in range(100_000)]})},
     413, "max_body_bytes"),
    ("choice under the body bound, over the constraint bound",
     {"json": body(structured_outputs={"choice": [str(i) for i in range(3000)]})}, 400, "max_constraint_bytes=8192"),
    ("not JSON", _raw(b"{nope"), 400, "the request body: invalid JSON"),
    ("not UTF-8", _raw(b'{"model": "\xff"}'), 400, "the request body"),
]


@pytest.mark.parametrize(("label", "request_kw", "status", "needle"), BOUNDS, ids=[b[0] for b in BOUNDS])
def test_a_request_over_a_bound_is_refused_naming_it(client: TestClient, label: str, request_kw: dict[str, Any],
                                                     status: int, needle: str) -> None:
    check_refused(client.post("/v1/chat/completions", **request_kw), status, needle)


def _tool(parameters: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "ls", "parameters": parameters}}


MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("stop a number", body(stop=5), "stop"),
    ("stop an object", body(stop={}), "stop"),
    ("tool_calls a number", body(messages=[{"role": "assistant", "tool_calls": 5}]), "messages[0].tool_calls"),
    ("stream_options a string", body(stream_options="x"), "stream_options"),
    ("max_tokens true", body(max_tokens=True), "max_tokens"),
    ("seed true", body(seed=True), "seed"),
    ("stream yes", body(stream="yes"), "stream"),
    ("temperature 3", body(temperature=3), "temperature"),
    ("tool parameters a string", body(tools=[_tool("x")]), "function.parameters must be a JSON schema object"),
    ("tool properties a number", body(tools=[_tool({"type": "object", "properties": 5})]), "properties must be an object"),
    ("tool_choice a number", body(tool_choice=5), "tool_choice"),
    ("skip_special_tokens no", body(skip_special_tokens="no"), "skip_special_tokens"),
    ("messages empty", body(messages=[]), "messages"),
    ("a list body", [1, 2], "the request body must be a JSON object"),
]


@pytest.mark.parametrize(("label", "payload", "needle"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_requests_are_400_never_500(client: TestClient, label: str, payload: Any, needle: str) -> None:
    check_refused(client.post("/v1/chat/completions", json=payload), 400, needle)


def test_nan_temperature_is_400(client: TestClient) -> None:
    check_refused(client.post("/v1/chat/completions", **_raw(json.dumps(body(temperature=float("nan"))))), 400,
                  "temperature: Input should be a finite number")


def test_the_oracle_honours_max_tokens_and_stop(client: TestClient) -> None:
    grammar = {"structured_outputs": {"grammar": 'root ::= "Done."'}}

    def answer(**fields: Any) -> dict[str, Any]:
        response = client.post("/v1/chat/completions", json=body(**grammar, **fields))
        assert response.status_code == 200, response.text
        return response.json()["choices"][0]  # type: ignore[no-any-return]

    whole = answer()
    assert (whole["message"]["content"], whole["finish_reason"]) == ("Done.", "stop")
    cut = answer(max_tokens=1)
    assert cut["finish_reason"] == "length" and "Done.".startswith(cut["message"]["content"])
    assert len(cut["message"]["content"]) < len("Done.")
    stopped = answer(stop=["ne"])
    assert (stopped["message"]["content"], stopped["finish_reason"]) == ("Do", "stop")


# -- the compile worker (a real process: slow to start) ----------------------------------------------------


@pytest.fixture(scope="module")
def guarded() -> Iterator[tuple[TestClient, CompileGuard]]:
    """The app with a compile worker bounded to 2 s and 24 MiB a grammar."""
    limits = ServeLimits(compile_timeout_s=2, compile_memory_mb=24)
    guard = CompileGuard(limits, ENGINE.families)
    guard.start()
    guard.wait_ready()
    with TestClient(create_app(ENGINE, limits, guard)) as test_client:
        yield test_client, guard
    guard.close()


def _constrained(grammar: dict[str, Any]) -> dict[str, Any]:
    return body(structured_outputs=grammar, max_tokens=4)


@pytest.mark.slow
def test_a_grammar_over_the_compile_bounds_is_stopped_and_the_server_goes_on(guarded) -> None:
    client, guard = guarded
    # grammars new to this process and to the on-disk store (other tests of the suite share both), so
    # the worker is what compiles them
    nonce = uuid.uuid4().hex
    healthy = _constrained({"grammar": f'root ::= "Done {nonce}."'})
    assert client.post("/v1/chat/completions", json=healthy).status_code == 200
    # A 190 KB schema (10-20 s and ~+25 MB to compile here) against a time bound no machine compiles it
    # within: its every grammar position is checked against the Qwen tokenizer's 152k tokens.
    slow = _constrained({"json": json.dumps(doubling_schema(11))})
    limits = guard.limits
    guard.limits = limits.model_copy(update={"compile_timeout_s": 0.05})
    try:
        first = client.post("/v1/chat/completions", json=slow)
    finally:
        guard.limits = limits
    check_refused(first, 400, "(a bound of this server): refused, the compile was stopped")
    assert "compile_timeout_s=0.05" in first.text or "compile_memory_mb=24" in first.text
    stopped = guard.stats.timeouts + guard.stats.memory_kills
    assert stopped == 1 and guard.stats.worker_starts == 2  # killed, and a new worker started
    again = client.post("/v1/chat/completions", json=slow)  # the verdict is remembered: no second compile
    assert again.json() == first.json()
    assert guard.stats.timeouts + guard.stats.memory_kills == stopped
    assert client.post("/v1/chat/completions", json=healthy).status_code == 200  # seen before: no wait
    fresh = _constrained({"grammar": f'root ::= "Done {nonce}." | "Ok."'})
    assert client.post("/v1/chat/completions", json=fresh).status_code == 200  # the new worker compiles it
    health = client.get("/health").json()["compile_guard"]
    assert health["worker_starts"] == 2 and health["compiled"] == 2


@pytest.mark.slow
def test_a_grammar_over_the_memory_bound_is_stopped(guarded) -> None:
    client, guard = guarded
    before = guard.stats.memory_kills
    limits = guard.limits
    guard.limits = limits.model_copy(update={"compile_timeout_s": 120.0})  # only memory can stop it now
    try:
        grammar = _constrained({"choice": [f"w{i}" for i in range(20_000)]})  # ~+40 MB to compile here
        check_refused(client.post("/v1/chat/completions", json=grammar), 400, "compile_memory_mb=24")
    finally:
        guard.limits = limits
    assert guard.stats.memory_kills == before + 1


@pytest.mark.slow
def test_bad_grammars_are_xgrammars_complaint(guarded) -> None:
    client, _ = guarded
    check_refused(client.post("/v1/chat/completions", json=_constrained({"grammar": 'root ::= "a" |'})), 400,
                  "xgrammar cannot compile the grammar artifact")


# -- inputs too deep for Python or xgrammar: a 400, never a 500 (issue 22, item 5) ------------------------

_ARRAYS = '{"type": "array", "items": ' * 31 + '{"type": "string"}' + "}" * 31
_ANY_OF = '{"anyOf": [' * 31 + '{"type": "string"}' + "]}" * 31

# (label, constraint fields, status, what the answer says). Before: the first four were 500 (a RecursionError
# parsing the schema text); a constraint within the bound compiles, or xgrammar's complaint is a 400.
DEEP: list[tuple[str, dict[str, Any], int, str]] = [
    ("json schema text nested 2,000 deep", {"structured_outputs": {"json": nested_schema(2000)}}, 400,
     "structured_outputs.json: nested deeper than 64 levels (the bound max_json_depth=64)"),
    ("json schema text nested 500 deep", {"structured_outputs": {"json": nested_schema(500)}}, 400, "max_json_depth=64"),
    ("json schema text nested 40 deep (80 levels)", {"structured_outputs": {"json": nested_schema(40)}}, 400,
     "max_json_depth=64"),
    ("structural tag text nested 2,000 deep", {"structured_outputs": {"structural_tag": nested_schema(2000)}}, 400,
     "structured_outputs.structural_tag: nested deeper than 64 levels"),
    ("json schema text nested 31 deep (62 levels: within the bound)", {"structured_outputs": {"json": nested_schema(31)}},
     200, "chat.completion"),
    ("arrays nested 31 deep", {"structured_outputs": {"json": _ARRAYS}}, 200, "chat.completion"),
    ("anyOf nested 31 deep", {"structured_outputs": {"json": _ANY_OF}}, 200, "chat.completion"),
    ("regex of 5,000 nested groups", {"structured_outputs": {"regex": "(" * 5000 + "a" + ")" * 5000}}, 400,
     "not a regex xgrammar accepts"),
    ("grammar of 5,000 nested groups", {"structured_outputs": {"grammar": "root ::= " + "(" * 5000 + '"a"' + ")" * 5000}},
     400, "xgrammar cannot compile"),
    ("json schema text that is not JSON", {"structured_outputs": {"json": '{"type": '}}, 400,
     "structured_outputs.json is not valid JSON"),
    ("response_format schema nested 2,000 deep", {"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": "S"}}}, 400, "max_json_depth=64"),
]


@pytest.fixture(scope="module")
def default_client() -> Iterator[TestClient]:
    """The app under the default limits, compiling in process; a server error comes back as a 500."""
    with TestClient(create_app(ENGINE, ServeLimits()), raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.mark.parametrize(("label", "fields", "status", "needle"), DEEP, ids=[d[0] for d in DEEP])
def test_a_constraint_too_deep_is_a_400_never_a_500(default_client: TestClient, label: str, fields: dict[str, Any],
                                                    status: int, needle: str) -> None:
    text = json.dumps(body(**fields)).replace('"schema": "S"', '"schema": ' + nested_schema(2000))
    response = default_client.post("/v1/chat/completions", **_raw(text))
    assert response.status_code == status, response.text
    assert needle in response.text
