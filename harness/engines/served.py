"""What ``harness serve`` puts behind its HTTP endpoints: an engine that answers one request at a time.

A :class:`ServedEngine` lists its model ids, maps a model id to its family (raising ModelCallError
for one it does not serve), and answers a CompletionRequest synchronously, optionally streaming text
through ``on_text``. The server runs ``complete`` in a worker thread.

- ``local``: :class:`~harness.engines.local.LocalEngine` (Gemma 3 270M base in FunctionGemma's format).
- ``oracle``: :class:`OracleBackend`, which replays the gold answer the request carries in its
  ``oracle`` field (``{"calls": [{"name": ..., "arguments": {...}}, ...], "strategy": optional,
  "allow_parallel_calls": optional}``) through the request's constraint with
  :class:`~harness.engines.oracle.OracleEngine` (the shared decoding loop, gold source). The strategy
  the calls are rendered for defaults to the one the constraint's kind implies (grammar -> ebnf,
  structural_tag, json -> json_schema, none).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from harness.agents.client import CompletionRequest, CompletionResponse, ModelCallError

ENGINES: tuple[str, ...] = ("local", "oracle")
ORACLE_PREFIX = "oracle-"


class ServedEngine(Protocol):
    model_ids: tuple[str, ...]

    def family_of(self, model: str) -> str: ...

    def load(self) -> Any: ...

    def complete(
        self,
        request: CompletionRequest,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> CompletionResponse: ...


class OracleBackend:
    """Serves ``oracle-function_gemma`` and ``oracle-qwen``: gold replay through the constraint."""

    def __init__(self) -> None:
        from harness.agents.families import FAMILIES

        self.families = FAMILIES
        self.model_ids = tuple(f"{ORACLE_PREFIX}{f}" for f in FAMILIES)
        self._grammar_cache: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def family_of(self, model: str) -> str:
        family = model.removeprefix(ORACLE_PREFIX)
        if family not in self.families:
            raise ModelCallError(
                "model:not_found", f"model {model!r} is not served here; models: {', '.join(self.model_ids)}"
            )
        return family

    def load(self) -> None:
        from harness.grammar import get_tokenizer

        for family in self.families:
            get_tokenizer(family)

    def complete(
        self,
        request: CompletionRequest,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> CompletionResponse:
        from harness.engines.oracle import OracleEngine

        family = self.family_of(request.model)
        calls, constraint = _read_oracle(request.extra_body.get("oracle"))
        engine = OracleEngine(family, [calls], constraint=constraint, grammar_cache=self._grammar_cache)
        with self._lock:
            response = engine.complete(request)
        if on_text is not None and response.content:
            on_text(response.content)
        return response


def _read_oracle(raw: Any) -> tuple[list[Any], Any]:
    """The gold calls (and optional strategy) of an ``oracle`` request field."""
    from harness.agents.constraint import ConstraintError, DecodingConstraint
    from harness.agents.types import ToolCall

    if not isinstance(raw, dict) or not isinstance(raw.get("calls"), list):
        raise ModelCallError(
            "model:bad_request",
            'the oracle engine needs the gold answer: {"oracle": {"calls": [{"name": ..., "arguments": {...}}]}}',
        )
    calls = []
    for i, c in enumerate(raw["calls"]):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not isinstance(c.get("arguments", {}), dict):
            raise ModelCallError("model:bad_request", f"oracle.calls[{i}] needs a name and an arguments object")
        calls.append(ToolCall.create(c["name"], c.get("arguments") or {}))
    constraint = None
    if raw.get("strategy") is not None or raw.get("allow_parallel_calls") is not None:
        try:
            constraint = DecodingConstraint(
                strategy=raw.get("strategy") or "ebnf",
                allow_parallel_calls=bool(raw.get("allow_parallel_calls", len(calls) > 1)),
            )
        except ConstraintError as exc:
            raise ModelCallError("model:bad_request", f"oracle: {exc}") from exc
    return calls, constraint


def build_engine(name: str, **options: Any) -> ServedEngine:
    """The engine ``harness serve --engine NAME`` runs (not loaded yet)."""
    if name == "local":
        from harness.engines.local import LocalEngine

        return LocalEngine(**options)  # type: ignore[no-any-return]
    if name == "oracle":
        return OracleBackend()
    raise ValueError(f"unknown engine {name!r}: expected one of {', '.join(ENGINES)}")
