"""ReplicaClient spreads requests over replicas by requests in flight and moves off a replica that
cannot be reached. The replicas here are in-process fakes (a test of this seam only); the client against
real servers is exercised by the runner tests and `harness bench client`."""

from __future__ import annotations

import asyncio

import pytest

from harness.agents.client import CompletionRequest, CompletionResponse, ModelCallError
from harness.agents.types import Message
from harness.engines.remote.replicas import ReplicaClient

REQUEST = CompletionRequest(model="m", messages=(Message("user", "hi"),))


class FakeReplica:
    """Answers after ``delay_s``; ``fail`` raises that error kind instead."""

    def __init__(self, name: str, delay_s: float = 0.01, fail: str | None = None) -> None:
        self.name, self.delay_s, self.fail = name, delay_s, fail
        self.calls = 0
        self.closed = False

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        self.calls += 1
        await asyncio.sleep(self.delay_s)
        if self.fail:
            raise ModelCallError(self.fail, f"{self.name} failed")
        return CompletionResponse(content=self.name)

    async def aclose(self) -> None:
        self.closed = True


def pool(*replicas: FakeReplica) -> ReplicaClient:
    return ReplicaClient(list(replicas), [f"http://r{i}" for i in range(len(replicas))])


async def test_concurrent_requests_spread_evenly() -> None:
    a, b = FakeReplica("a"), FakeReplica("b")
    client = pool(a, b)
    answers = await asyncio.gather(*(client.chat_completion(REQUEST) for _ in range(40)))
    assert (a.calls, b.calls) == (20, 20)
    assert sorted({r.content for r in answers}) == ["a", "b"]
    assert [d["answered"] for d in client.describe()] == [20, 20]


async def test_a_slow_replica_gets_fewer_requests() -> None:
    fast, slow = FakeReplica("fast", 0.005), FakeReplica("slow", 0.05)
    client = pool(fast, slow)
    sem = asyncio.Semaphore(4)

    async def one() -> None:
        async with sem:
            await client.chat_completion(REQUEST)

    await asyncio.gather(*(one() for _ in range(60)))
    assert fast.calls > 2 * slow.calls


async def test_unreachable_replica_is_skipped_and_counted() -> None:
    down, up = FakeReplica("down", fail="model:connection"), FakeReplica("up")
    client = pool(down, up)
    answers = [await client.chat_completion(REQUEST) for _ in range(5)]
    assert all(r.content == "up" for r in answers)
    assert down.calls == 1  # then left alone for the cooldown
    assert client.describe()[0] == {"base_url": "http://r0", "answered": 0, "failed": 1}


async def test_other_errors_are_the_answer_not_a_failover() -> None:
    bad, good = FakeReplica("bad", fail="model:http_400"), FakeReplica("good", delay_s=1.0)
    client = pool(bad, good)
    with pytest.raises(ModelCallError, match="http_400"):
        await client.chat_completion(REQUEST)
    assert good.calls == 0


async def test_all_replicas_down_raises_connection_error() -> None:
    client = pool(FakeReplica("a", fail="model:connection"), FakeReplica("b", fail="model:connection"))
    with pytest.raises(ModelCallError) as info:
        await client.chat_completion(REQUEST)
    assert info.value.kind == "model:connection"


async def test_close_closes_every_replica() -> None:
    a, b = FakeReplica("a"), FakeReplica("b")
    await pool(a, b).aclose()
    assert a.closed and b.closed


def test_needs_one_url_per_client() -> None:
    with pytest.raises(ValueError):
        ReplicaClient([FakeReplica("a")], [])
