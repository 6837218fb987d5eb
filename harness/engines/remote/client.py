"""OpenAICompatibleClient: the LLMClient for any OpenAI-compatible server (vLLM first).

Built on the ``openai`` package with its own retries switched off; retries are done here with
tenacity (exponential backoff) on 429, 5xx, connection errors, timeouts and answers that break the
protocol (``model:bad_response``, read by ``wire.py``), never on other 4xx. ``extra_body`` goes on
the wire untouched. Latency is measured per request; with ``stream=True`` the time to the first content
or tool-call delta too, and usage is asked for with ``include_usage``. Native tool calls whose
arguments the model did not write as a JSON object are never decoded to ``{}``: they go to
``CompletionResponse.malformed_tool_calls`` as raw text.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import openai
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from harness.agents import CompletionRequest, CompletionResponse, ModelCallError
from harness.engines.remote.wire import BAD_RESPONSE, SNIPPET, StreamAnswer, bad_response, read_completion
from harness.grammar.formats import openai_tools

if TYPE_CHECKING:
    from harness.engines.dialects import Dialect

NO_KEY = "EMPTY"
"""Sent when no API key is configured (what vLLM's docs use; a server without --api-key accepts it)."""
TOO_LARGE = "model:response_too_large"
"""The error kind of an answer over ``max_response_bytes`` (never retried: the server would send it again)."""


class ClientLimits(BaseSettings):
    """Named bounds of the OpenAI-compatible client (environment: ``HARNESS_CLIENT_<NAME>``)."""

    model_config = SettingsConfigDict(env_prefix="HARNESS_CLIENT_", extra="forbid", frozen=True)

    max_response_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """Most bytes read of one answer (its whole body, streamed or not): beyond, reading stops and the
    model call fails with ``model:response_too_large`` (not retried), so a huge or endless answer
    costs at most this much memory and never reaches samples.jsonl. 4 MiB holds a streamed answer of
    well over 10,000 tokens."""


class ResponseTooLarge(Exception):
    """The server sent more than the client's bound; reading stopped there."""

    def __init__(self, limit: int, declared: int | None = None) -> None:
        said = f" (its Content-Length says {declared})" if declared is not None else ""
        super().__init__(f"the server's answer is over max_response_bytes={limit} (a bound of the client){said}: "
                         "reading stopped there")


http: Any = importlib.import_module(openai.DefaultAsyncHttpxClient.__mro__[1].__module__.partition(".")[0])
"""The HTTP library the openai package is built on (httpx; httpx2 from openai 3 on)."""


class _BoundedStream(http.AsyncByteStream):  # type: ignore[misc]
    """A response body that raises ResponseTooLarge once more than ``limit`` bytes came."""

    def __init__(self, inner: Any, limit: int) -> None:
        self._inner, self._limit = inner, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLarge(self._limit)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class BoundedTransport(http.AsyncBaseTransport):  # type: ignore[misc]
    """httpx's transport with every response body bounded to ``limit`` bytes (streamed or not), so a
    huge or endless answer costs at most that much memory."""

    def __init__(self, limit: int, inner: Any = None) -> None:
        self.limit = limit
        self._inner = inner or http.AsyncHTTPTransport(
            limits=http.Limits(max_connections=1000, max_keepalive_connections=100)  # the openai client's own
        )

    async def handle_async_request(self, request: Any) -> Any:
        response = await self._inner.handle_async_request(request)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.limit:
            await response.aclose()
            raise ResponseTooLarge(self.limit, int(declared))
        response.stream = _BoundedStream(response.stream, self.limit)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _too_large(exc: BaseException) -> ResponseTooLarge | None:
    """The ResponseTooLarge behind ``exc`` (the openai client wraps it), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ResponseTooLarge):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _retryable(exc: BaseException) -> bool:
    if not isinstance(exc, ModelCallError):
        return False
    if exc.kind in ("model:timeout", "model:connection", "model:http_429", BAD_RESPONSE):
        return True
    return exc.kind.startswith("model:http_5")


def _to_model_error(exc: Exception) -> ModelCallError:
    if isinstance(exc, ModelCallError):
        return exc
    too_large = _too_large(exc)
    if too_large is not None:
        return ModelCallError(TOO_LARGE, str(too_large))
    if isinstance(exc, openai.APITimeoutError):
        return ModelCallError("model:timeout", str(exc) or "request timed out")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return ModelCallError("model:connection", f"{exc}: {cause}")
    if isinstance(exc, openai.APIStatusError):
        body = exc.response.text[:300] if exc.response is not None else ""
        return ModelCallError(f"model:http_{exc.status_code}", body or str(exc))
    if isinstance(exc, openai.APIError):  # an ``error`` event in a stream: the server gave up mid-answer
        return bad_response(f"the stream carried an error event: {str(exc.message)[:SNIPPET]}")
    return bad_response(f"{type(exc).__name__}: {str(exc)[:SNIPPET]}")


class OpenAICompatibleClient:
    """Chat completions against ``base_url`` (e.g. ``http://127.0.0.1:8000/v1``).

    The API key is ``api_key`` if given, else the environment variable ``api_key_env``, else
    ``EMPTY``. ``max_retries`` is the number of retries after the first attempt; the wait before
    retry n is ``backoff_s * 2**(n-1)`` seconds, capped at ``max_backoff_s``. An answer over
    ``max_response_bytes`` (default ``ClientLimits``: ``HARNESS_CLIENT_MAX_RESPONSE_BYTES``) is
    ``model:response_too_large``, read no further.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        max_response_bytes: int | None = None,
        dialect: Dialect | None = None,
        families: Mapping[str, str] | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.max_response_bytes = max_response_bytes or ClientLimits().max_response_bytes
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        key = api_key if api_key is not None else os.environ.get(api_key_env) or NO_KEY
        http = openai.DefaultAsyncHttpxClient(transport=BoundedTransport(self.max_response_bytes))
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=key, timeout=timeout_s, max_retries=0, http_client=http
        )
        self.attempts = 0
        """HTTP attempts made, retries included (failures are counted, never hidden)."""
        self._constraints: set[str] = set()
        """Digests of the constraints sent so far: a server compiles each on its first request."""
        self.retries = 0
        self.dialect = dialect
        """How the server is told the constraint (``harness.engines.dialects``; None: the body as built, vLLM's)."""
        self.families = dict(families or {})
        """Served model id -> its family, for a dialect that renders the family's prompt."""

    async def aclose(self) -> None:
        await self._client.close()

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        first = self._first_with(request)
        response = await self._answer(request)
        return response if first is None else dataclasses.replace(response, constraint_first=first)

    def _first_with(self, request: CompletionRequest) -> bool | None:
        """Whether ``request`` is this client's first with its constraint (None: it has none)."""
        constraint = (request.extra_body or {}).get("structured_outputs")
        if not constraint:
            return None
        text = json.dumps([request.model, constraint], sort_keys=True, ensure_ascii=False)
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        first = digest not in self._constraints
        self._constraints.add(digest)
        return first

    async def _answer(self, request: CompletionRequest) -> CompletionResponse:
        attempts = 0
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_exponential(multiplier=self.backoff_s, max=self.max_backoff_s),
            retry=retry_if_exception(_retryable),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    self.attempts += 1
                    if attempts > 1:
                        self.retries += 1
                    try:
                        return await self._once(request)
                    except Exception as exc:
                        raise _to_model_error(exc) from exc
        except ModelCallError as exc:
            if attempts > 1:
                raise ModelCallError(exc.kind, f"{exc.detail} (after {attempts} attempts)") from exc
            raise
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    def _body(self, request: CompletionRequest) -> dict[str, Any]:
        """The request's JSON body; ``extra_body`` merged on top, as the SDK merges it."""
        body: dict[str, Any] = {
            "model": request.model,
            "messages": [m.to_openai() for m in request.messages],
            "temperature": request.temperature,
        }
        if request.send_tools and request.tools:
            body["tools"] = openai_tools(request.tools, strict=request.strict_tools)
            if request.tool_choice is not None:
                body["tool_choice"] = request.tool_choice
            if request.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = request.parallel_tool_calls
        if request.stop:
            body["stop"] = list(request.stop)
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.seed is not None:
            body["seed"] = request.seed
        if request.top_p != 1.0:
            body["top_p"] = request.top_p
        return {**body, **(request.extra_body or {})}

    # The body goes through the SDK's ``post`` (its documented road for any endpoint) rather than
    # ``chat.completions.create``: ``create`` first walks every parameter against its TypedDicts to
    # transform them (~2-9 ms of CPU per request with 18 tools, measured by ``harness bench client``),
    # for a body that is already plain JSON. Retries, timeouts, headers and errors are the client's.
    async def _once(self, request: CompletionRequest) -> CompletionResponse:
        path, body = self._wire(request)
        started = time.perf_counter()
        if request.stream:
            return await self._stream(path, body, started)
        text = await self._client.post(path, body=body, cast_to=str)
        return read_completion(text, (time.perf_counter() - started) * 1e3)

    def _wire(self, request: CompletionRequest) -> tuple[str, dict[str, Any]]:
        """The path and body of ``request`` in the server's dialect; a constraint the dialect cannot carry
        is ``model:bad_request`` naming it (never sent without it)."""
        body = self._body(request)
        if self.dialect is None:
            return "/chat/completions", body
        from harness.grammar import NotExpressible

        family = self.families.get(request.model) or next(iter(self.families.values()), "")
        try:
            return self.dialect.wire(family, request, body)
        except NotExpressible as exc:
            raise ModelCallError("model:bad_request", str(exc)) from None

    async def _stream(self, path: str, body: dict[str, Any], started: float) -> CompletionResponse:
        # Events come as plain JSON values (cast_to=object): StreamAnswer checks each against the protocol.
        stream = await self._client.post(
            path,
            body={**body, "stream": True, "stream_options": {"include_usage": True}},
            cast_to=object,
            stream=True,
            stream_cls=openai.AsyncStream[object],
        )
        answer = StreamAnswer()
        ttft_ms: float | None = None
        try:
            async for event in stream:
                if answer.feed(event) and ttft_ms is None:
                    ttft_ms = (time.perf_counter() - started) * 1e3
        except ValueError as exc:  # an event whose data is not JSON (the SDK decodes each one)
            doc = getattr(exc, "doc", "")
            raise bad_response(f"stream event {answer.events + 1} is not JSON: {doc[:SNIPPET]!r}") from None
        finally:
            await stream.close()
        latency_ms = (time.perf_counter() - started) * 1e3
        return answer.finish(latency_ms, ttft_ms, stream.response.headers.get("content-type", ""))


__all__ = ["TOO_LARGE", "BoundedTransport", "ClientLimits", "OpenAICompatibleClient", "ResponseTooLarge"]
