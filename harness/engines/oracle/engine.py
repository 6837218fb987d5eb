"""OracleEngine: replays gold answers token by token through the request's own constraint.

An LLMClient with no model. Each request takes the next answer of its queue (a list of ToolCall; an
empty list is a closing plain message), renders it as the family emits it under the strategy
(``adapter.render_output``), encodes it with the family's real tokenizer, and walks the ids through the
grammar the request carries (``constraint_from_request`` -> ``compile_artifact`` -> the decode loop
with the gold source, the mask filled at every step). Compile time and per-token mask time go to
EngineStats. The answer is the walked ids decoded, as an engine's would be. Where the grammar forbids a
gold token the response carries ``stats.grammar_error = "grammar:rejected_gold"`` and the text up to
that token; any later request of the same engine raises ModelCallError of that kind, so the sample
ends there. With strategy ``none`` the request carries no constraint and the gold text passes
unconstrained.

It measures grammars, not a model: a grammar that rejects a valid answer shows up with no model at all.
``ServedOracle`` puts it behind ``harness serve`` (the gold answer then rides in each request).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from harness.agents import (
    STRATEGY_OF_ARTIFACT,
    CompletionRequest,
    CompletionResponse,
    ConstraintError,
    DecodingConstraint,
    EngineStats,
    ModelCallError,
    ToolCall,
)
from harness.engines.shapes import SERVED_PREFIX
from harness.grammar import GoldSource, compile_artifact, constraint_from_request, get_tokenizer
from harness.grammar import constrained_decode as decode
from harness.grammar.families import get_adapter
from harness.grammar.formats import ServerConstraint, ToolRequest, server_constraint
from harness.vocabulary import ErrorKind, GrammarBackend, Strategy

if TYPE_CHECKING:
    from harness.engines.shapes import GrammarTarget, MaskDifference

NOTE = "oracle: replays gold answers through the grammar with the real tokenizer; it measures grammars, not a model"
CLOSING_TEXT = "Done."
"""What the oracle answers when a turn's gold calls are all made: the plain answer that ends the turn."""

_STOP_IDS: dict[tuple[str, tuple[str, ...]], tuple[int, ...]] = {}
_STOP_IDS_KEPT = 64
GRAMMARS_KEPT = 256
"""Compiled grammars a run's shared ``grammar_cache`` keeps, the most recently used. A corpus whose every
case has its own tools (a single-turn corpus: ~28k grammars) held every one to the end of the run, 1-2 GB
a category, for hits that never came; a suite sharing its tools hits on the first few."""


def _kept(cache: dict[Any, Any], key: Any) -> Any:
    """The cache's value for ``key``, moved to the recent end (None: not kept)."""
    hit = cache.pop(key, None)
    if hit is not None:
        cache[key] = hit
    return hit


def _keep(cache: dict[Any, Any], key: Any, value: Any) -> None:
    """Keep ``value``, dropping the least recently used beyond ``GRAMMARS_KEPT`` (samples on other
    threads may race: a key dropped twice is already gone)."""
    cache[key] = value
    while len(cache) > GRAMMARS_KEPT:
        try:
            del cache[next(iter(cache))]
        except (KeyError, RuntimeError, StopIteration):
            break


class OracleEngine:
    """``OracleEngine(family, answers=[calls_1, calls_2, ...], constraint=...)``.

    ``constraint`` gives the strategy the answers are rendered for; without it the strategy is read
    from the request's constraint (none when it carries none). ``grammar_cache`` may be shared by many
    engines of one run so a grammar is compiled once per run (it maps the artifact to its compiled
    grammar, the ``GRAMMARS_KEPT`` most recently used; the per-process compiler cache of
    ``harness.grammar`` sits below it).
    """

    name = "oracle"
    note = NOTE

    def __init__(
        self,
        family: str,
        answers: Iterable[Sequence[ToolCall]] = (),
        constraint: DecodingConstraint | None = None,
        grammar_cache: dict[Any, Any] | None = None,
        target: GrammarTarget | None = None,
        backend: GrammarBackend = GrammarBackend.xgrammar,
    ) -> None:
        self.family = family
        self.backend = GrammarBackend(backend)
        """The grammar library the gold walks through: xgrammar (the decode loop) or llguidance
        (``harness.grammar.guidance``, as vLLM's ``guidance`` backend runs it)."""
        self.target = target
        """None: the harness's own grammars. Else another engine's grammar compiler (``--target``, asked
        of the registry: vLLM's xgrammar backend): gold is replayed through the target's
        compile path and the steps where its masks differ from the harness's are counted."""
        self.adapter = get_adapter(family)
        self.answers: list[list[ToolCall]] = [list(a) for a in answers]
        self.constraint = constraint
        self.grammar_cache = grammar_cache if grammar_cache is not None else {}
        self.requests = 0
        self.rejected: str | None = None

    async def aclose(self) -> None:
        return None

    def _strategy_constraint(self, artifact: Any) -> DecodingConstraint:
        if self.constraint is not None:
            return self.constraint
        return DecodingConstraint(strategy="none" if artifact is None else STRATEGY_OF_ARTIFACT[artifact.kind])

    def _server_constraint(self, request: CompletionRequest) -> DecodingConstraint:
        """The strategy a request vLLM builds the constraint for was made under (gold is rendered for it)."""
        if self.constraint is not None:
            return self.constraint
        strategy = Strategy.strict if request.strict_tools else Strategy.required
        return DecodingConstraint(strategy=strategy, allow_parallel_calls=request.parallel_tool_calls is not False)

    def _compiled(self, artifact: Any) -> tuple[Any, float, bool]:
        """(compiled grammar, compile ms, cached) for ``artifact``; compiled once per run."""
        compiled, ms, found = self._found(artifact)
        return compiled, ms, found != "compiled"

    def _found(self, artifact: Any) -> tuple[Any, float, str]:
        """(compiled grammar, compile ms, where it was found: compiled, memory or disk)."""
        key = (self.family, artifact.kind, artifact.value)
        started = time.perf_counter()
        hit = _kept(self.grammar_cache, key)
        if hit is not None:
            return hit.compiled, (time.perf_counter() - started) * 1000.0, "memory"
        try:
            compiled = compile_artifact(artifact, self.family, keep=True)
        except ConstraintError as exc:  # xgrammar refuses it, or it does not build within its bound
            raise ModelCallError(ErrorKind.constraint_refused, str(exc)) from exc
        _keep(self.grammar_cache, key, compiled)
        return compiled.compiled, float(compiled.compile_ms), compiled.found

    def _guidance(self, artifact: Any, ids: Sequence[int], walk: int, stop: Sequence[str]) -> Any:
        """The gold walked through llguidance (its grammar converted once per run, its matcher built
        per request as vLLM's guidance backend does)."""
        from harness.grammar import compile_guidance, walk_guidance

        key = ("guidance", self.family, artifact.kind, artifact.value)
        grammar = _kept(self.grammar_cache, key)
        try:
            if grammar is None:
                grammar = compile_guidance(artifact, self.family)
                _keep(self.grammar_cache, key, grammar)
            return walk_guidance(self.family, grammar, ids, walk, self._stop_ids(get_tokenizer(self.family), stop))
        except ConstraintError as exc:
            raise ModelCallError("model:bad_request", str(exc)) from exc

    def _stop_ids(self, tokenizer: Any, stop: Sequence[str]) -> tuple[int, ...]:
        """End-of-turn ids, plus the request's stop strings that are single tokens (as a server stops
        on them): after the gold text the grammar must allow one of these."""
        key = (self.family, tuple(stop))
        cached = _STOP_IDS.get(key)
        if cached is None:
            extra = [ids[0] for ids in (tokenizer.encode(s) for s in stop) if len(ids) == 1]
            cached = tuple(dict.fromkeys([*tokenizer.eos_ids, *extra]))
            if len(_STOP_IDS) < _STOP_IDS_KEPT:  # a server sees any stop lists: keep the first few
                _STOP_IDS[key] = cached
        return cached

    def _target_compiled(self, target: GrammarTarget, artifact: Any) -> tuple[Any, float, bool]:
        """The target's compiled grammar (cached by the target); a grammar it refuses ends the sample."""
        try:
            return target.compile(artifact)
        except ConstraintError as exc:
            raise ModelCallError("model:bad_request", f"the target refuses the constraint: {exc}") from exc

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        return self.complete(request)

    def complete(self, request: CompletionRequest) -> CompletionResponse:
        """Answer one request synchronously (the work is CPU-bound and takes a few milliseconds)."""
        started = time.perf_counter()
        self.requests += 1
        if self.rejected is not None:
            raise ModelCallError(self.rejected, "an earlier answer of this sample was rejected by the grammar")
        if not self.answers:
            raise ModelCallError(
                "model:oracle_exhausted", f"request {self.requests}: the oracle has no gold answer left"
            )
        calls = self.answers.pop(0)
        server = server_built(self.family, request)
        try:
            artifact = constraint_from_request(dict(request.extra_body), None) if server is None else server.artifact
        except ConstraintError as exc:
            raise ModelCallError("model:bad_request", str(exc)) from exc
        constraint = self._strategy_constraint(artifact) if server is None else self._server_constraint(request)
        text = (
            self.adapter.render_output(calls, constraint) if calls
            else self.adapter.render_text(CLOSING_TEXT, constraint)
        )
        tokenizer = get_tokenizer(self.family)
        ids = tokenizer.encode(text)
        walk, cut = answer_bounds(tokenizer, ids, request.stop, request.max_tokens)
        if artifact is not None and self.backend == GrammarBackend.guidance:
            return self._guidance_response(request, artifact, tokenizer, ids, walk, cut, started)
        diff: MaskDifference | None = None
        compile_ms: float | None = None
        cached: bool | None = None
        found: str | None = None
        compiled: Any = None
        if artifact is not None and self.target is not None:
            compiled, compile_ms, cached = self._target_compiled(self.target, artifact)
            diff = self.target.difference(compiled, self._compiled(artifact)[0], ids)
            result = decode(
                compiled, GoldSource(ids), tokenizer, max_tokens=walk, mask_policy="always",
                stop_ids=self.target.stop_ids, matcher_stop_ids=self.target.stop_ids,
            )
        else:
            if artifact is not None:
                compiled, compile_ms, found = self._found(artifact)
                cached = found != "compiled"
            result = decode(
                compiled, GoldSource(ids), tokenizer, max_tokens=walk, mask_policy="always",
                stop_ids=self._stop_ids(tokenizer, request.stop),
            )
        error = result.error
        if error is not None:
            self.rejected = error
        content = result.text  # what went through the grammar, decoded: all of the gold text unless rejected or cut
        finish = "grammar_error" if error else "stop"
        if error is None and cut is not None:
            content = content[:cut]  # a stop string: the text before it, as a server answers
        finish = "length" if error is None and cut is None and result.finish_reason == "length" else finish
        answer, tool_calls = _as_served(server, request, content) if error is None else (content, ())
        stats = EngineStats(
            compile_ms=compile_ms,
            compile_cached=cached,
            compile_found=found,
            grammar_backend=None if artifact is None else self.backend,
            grammar_reason=None if error is None else _xgrammar_reason(tokenizer, result, len(ids)),
            mask_us=tuple(result.mask_us),
            accept_us=tuple(result.accept_us),
            generated_tokens=len(result.token_ids),
            grammar_error=error,
            engine=self.name,
            target_steps=None if diff is None else diff.steps,
            target_mask_diff_steps=None if diff is None else diff.differing_steps,
            target_only_tokens=() if diff is None else tuple(tokenizer.token_text(i) for i in diff.target_only),
        )
        return CompletionResponse(
            content=answer,
            tool_calls=tool_calls,
            finish_reason=finish,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            model=request.model,
            stats=stats,
        )

    def _guidance_response(
        self, request: CompletionRequest, artifact: Any, tokenizer: Any, ids: list[int], walk: int, cut: int | None,
        started: float,
    ) -> CompletionResponse:
        """``complete`` under ``--grammar-backend guidance``."""
        found = self._guidance(artifact, ids, walk, request.stop)
        if found.error is not None:
            self.rejected = found.error
        content = tokenizer.decode(list(found.token_ids))
        finish = "grammar_error" if found.error else found.finish_reason
        if found.error is None and cut is not None:
            content, finish = content[:cut], "stop"
        stats = EngineStats(
            compile_ms=found.compile_ms, compile_cached=False, compile_found="compiled",
            grammar_backend=self.backend, grammar_reason=found.reason, mask_us=found.mask_us,
            accept_us=found.accept_us, generated_tokens=len(found.token_ids), grammar_error=found.error,
            engine=self.name,
        )
        return CompletionResponse(content=content, finish_reason=finish, model=request.model, stats=stats,
                                  latency_ms=(time.perf_counter() - started) * 1000.0)


def _xgrammar_reason(tokenizer: Any, result: Any, total: int) -> str:
    """Why xgrammar refused a gold answer, worded as the guidance walk words it."""
    if result.rejected_token is None:
        return f"no stop token allowed after the last token ({result.error})"
    shown = tokenizer.token_text(result.rejected_token)
    return f"token {result.rejected_at}/{total} {shown!r} (id {result.rejected_token}) not in the mask"


def server_built(family: str, request: CompletionRequest) -> ServerConstraint | None:
    """What vLLM builds for ``request`` when it asks for vLLM's own constraint (``tool_choice``
    required or named, or strict tools) and carries no ``structured_outputs``; None otherwise."""
    if request.extra_body.get("structured_outputs") is not None or not request.tools:
        return None
    if request.tool_choice in (None, "auto", "none") and not request.strict_tools:
        return None
    fields = ToolRequest(request.tool_choice, request.strict_tools, request.parallel_tool_calls)
    try:
        return server_constraint(family, request.tools, fields)
    except ConstraintError as exc:
        raise ModelCallError("model:bad_request", str(exc)) from exc


def _as_served(
    server: ServerConstraint | None, request: CompletionRequest, content: str
) -> tuple[str | None, tuple[ToolCall, ...]]:
    """(content, calls) as vLLM answers: under its JSON fallback it reads the calls out of the JSON."""
    if server is None or not server.built.startswith("json"):
        return content, ()
    from harness.engines.tool_choice import ToolChoice, calls_from_json

    choice = ToolChoice("required" if server.built == "json_array" else "named", name=_named(request))
    calls = tuple(calls_from_json(content, choice) or ())
    return (None if calls else content), calls


def _named(request: CompletionRequest) -> str | None:
    choice: Any = request.tool_choice
    return choice["function"]["name"] if isinstance(choice, dict) else None


def answer_bounds(
    tokenizer: Any, ids: Sequence[int], stop: Sequence[str], max_tokens: int | None
) -> tuple[int, int | None]:
    """How much of a gold answer a server would send under the request's ``stop`` strings and
    ``max_tokens``: (tokens to walk through the grammar, character index to cut the text at or None).

    Without either, every token and then the end of the grammar (``len(ids) + 1``). A stop string in
    the text ends the answer there (the walk stops with the token that starts it, the text is cut
    before it); ``max_tokens`` smaller than that ends it after ``max_tokens`` tokens (``length``)."""
    walk, cut = len(ids) + 1, None
    if any(stop):
        text = tokenizer.decode(list(ids))
        hits = [i for i in (text.find(s) for s in stop if s) if i >= 0]
        if hits:
            cut = min(hits)
            walk = next((k for k in range(1, len(ids) + 1) if len(tokenizer.decode(list(ids[:k]))) > cut), len(ids))
    if max_tokens is not None and max_tokens < walk:
        return max_tokens, None
    return walk, cut


class ServedOracle:
    """``harness serve --engine oracle``: serves ``oracle-<family>`` for every registered family and
    replays the gold answer each request carries in its ``oracle`` field (``{"calls": [{"name": ...,
    "arguments": {...}}, ...], "strategy": optional, "allow_parallel_calls": optional}``) through the
    request's constraint. The calls are rendered for the strategy the constraint's kind implies unless
    the field names one."""

    def __init__(self, grammar_backend: str = "xgrammar") -> None:
        from harness.grammar.families import FAMILIES

        self.grammar_backend = GrammarBackend(grammar_backend)
        """The grammar library the gold walks through (``--grammar-backend``)."""
        self.families = FAMILIES
        self.model_ids = tuple(f"{SERVED_PREFIX}{f}" for f in FAMILIES)
        self._lock = threading.Lock()

    def family_of(self, model: str) -> str:
        family = model.removeprefix(SERVED_PREFIX)
        if family not in self.families:
            raise ModelCallError(
                "model:not_found", f"model {model!r} is not served here; models: {', '.join(self.model_ids)}"
            )
        return family

    def load(self) -> None:
        from harness.grammar import get_tokenizer

        for family in self.families:
            get_tokenizer(family)
            if self.grammar_backend == GrammarBackend.guidance:
                from harness.grammar import get_llg_tokenizer

                get_llg_tokenizer(family)

    def complete(
        self,
        request: CompletionRequest,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> CompletionResponse:
        family = self.family_of(request.model)
        calls, constraint = _read_oracle(request.extra_body.get("oracle"))
        # No grammar cache of its own: xgrammar's (bounded in a server) answers a repeated grammar.
        engine = OracleEngine(family, [calls], constraint=constraint, backend=self.grammar_backend)
        with self._lock:
            response = engine.complete(request)
        if on_text is not None and response.content:
            on_text(response.content)
        return response


def _read_oracle(raw: Any) -> tuple[list[Any], Any]:
    """The gold calls (and optional strategy) of an ``oracle`` request field."""
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


__all__ = ["CLOSING_TEXT", "NOTE", "OracleEngine", "ServedOracle"]
