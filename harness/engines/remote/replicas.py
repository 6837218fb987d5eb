"""One client over several OpenAI-compatible servers that serve the same model (replicas).

Each request goes to the replica with the fewest requests in flight (ties go round the replicas in
turn), which keeps every server busy without a central queue and lets a slow replica take fewer
requests. A replica that cannot be reached (``model:connection`` after its own retries) is skipped for
``cooldown_s`` and the request goes to another one; any other error is the request's answer. The
number of requests each replica answered is kept for run.json.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.agents import CompletionRequest, CompletionResponse, LLMClient, ModelCallError
from harness.vocabulary import ErrorKind


@dataclass
class _Replica:
    client: LLMClient
    base_url: str
    in_flight: int = 0
    answered: int = 0
    failed: int = 0
    down_until: float = 0.0


@dataclass
class ReplicaClient:
    """An LLMClient that spreads requests over ``clients`` (one per replica)."""

    clients: Sequence[LLMClient]
    base_urls: Sequence[str]
    cooldown_s: float = 5.0
    _replicas: list[_Replica] = field(init=False, repr=False)
    _turn: itertools.count[int] = field(default_factory=itertools.count, repr=False)

    def __post_init__(self) -> None:
        if not self.clients or len(self.clients) != len(self.base_urls):
            raise ValueError("one client per base URL, and at least one")
        self._replicas = [_Replica(c, u) for c, u in zip(self.clients, self.base_urls, strict=True)]

    def _pick(self, exclude: set[int]) -> int | None:
        now = time.monotonic()
        ready = [i for i, r in enumerate(self._replicas) if i not in exclude and r.down_until <= now]
        if not ready:
            ready = [i for i in range(len(self._replicas)) if i not in exclude]
        if not ready:
            return None
        start = next(self._turn) % len(self._replicas)
        return min(ready, key=lambda i: (self._replicas[i].in_flight, (i - start) % len(self._replicas)))

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        tried: set[int] = set()
        last: ModelCallError | None = None
        while True:
            index = self._pick(tried)
            if index is None:  # every replica refused the connection
                assert last is not None
                raise last
            replica = self._replicas[index]
            replica.in_flight += 1
            try:
                response = await replica.client.chat_completion(request)
            except ModelCallError as exc:
                replica.failed += 1
                if exc.kind != ErrorKind.model_connection:
                    raise
                replica.down_until = time.monotonic() + self.cooldown_s
                tried.add(index)
                last = exc
                continue
            finally:
                replica.in_flight -= 1
            replica.answered += 1
            return response

    def describe(self) -> list[dict[str, object]]:
        """Per replica: its base URL and how many requests it answered and failed."""
        return [{"base_url": r.base_url, "answered": r.answered, "failed": r.failed} for r in self._replicas]

    async def aclose(self) -> None:
        for replica in self._replicas:
            await replica.client.aclose()


__all__ = ["ReplicaClient"]
