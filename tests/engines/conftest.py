"""Fixtures for the embedded engine and ``harness serve``: one loaded engine per session, servers as
real subprocesses on 127.0.0.1 with an ephemeral port."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from servers import Server

from harness.agents.client import CompletionRequest
from harness.agents.constraint import DecodingConstraint
from harness.agents.types import Message, ToolSchema

DATA = Path(__file__).resolve().parents[1] / "data"
SYSTEM = "You operate a file system for the user through the tools you are given."
USER = "Create a directory called reports, then list the files."


@pytest.fixture(scope="session")
def shellper_tools() -> tuple[ToolSchema, ...]:
    return tuple(ToolSchema.from_openai(t) for t in json.loads((DATA / "shellper_tools.json").read_text()))


@pytest.fixture(scope="session")
def local_engine():
    """The embedded engine, loaded once (Gemma 3 270M weights, ~1 s)."""
    from harness.engines.local import LocalEngine

    engine = LocalEngine()
    engine.load()
    return engine


@pytest.fixture(scope="session")
def make_request(shellper_tools) -> Callable[..., CompletionRequest]:
    """A SHELLper request for a strategy, with the FunctionGemma adapter's payload."""
    from harness.engines.local import LOCAL_MODEL_ID
    from harness.grammar.families import get_adapter

    adapter = get_adapter("function_gemma")

    def make(strategy: str = "ebnf", *, user: str = USER, parallel: bool = False, **kw) -> CompletionRequest:
        payload = adapter.build_payload(shellper_tools, DecodingConstraint(strategy=strategy, allow_parallel_calls=parallel))
        fields = dict(
            model=LOCAL_MODEL_ID,
            messages=(Message("developer", SYSTEM), Message("user", user)),
            tools=shellper_tools,
            extra_body=payload.extra_body,
            stop=payload.stop,
            max_tokens=48,
            temperature=0.0,
        )
        fields.update(kw)
        return CompletionRequest(**fields)

    return make


@pytest.fixture(scope="module")
def local_server() -> Iterator[Server]:
    server = Server("local")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def oracle_server() -> Iterator[Server]:
    server = Server("oracle")
    yield server
    server.stop()
