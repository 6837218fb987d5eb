"""The model runtime of the embedded engine: Gemma 3 270M (Q4_K_M GGUF) run by llama.cpp.

A thin layer over ``llama_cpp.Llama`` that the decoding loop drives one token at a time:
``prefill(ids)`` puts a prompt into the KV cache (reusing the prefix it shares with what is already
there), ``logits()`` is a zero-copy numpy view of the next-token scores, ``push(tokens)`` evaluates the
generated tokens since the last logits in one batch (with ``every_row``, the scores after each of them:
jump-forward's drafts are checked that way), ``discard(n)`` drops the last ``n`` again. ``Llama.scores``
is not used: llama-cpp-python 0.3.36 only fills it with
``logits_all=True`` (which computes 262k scores for every prompt token); ``llama_get_logits_ith``
read through ``numpy.ctypeslib`` costs a few microseconds and copies nothing.

Prefix reuse, and why it is block-aligned: llama.cpp's CPU kernels round differently depending on how
tokens are grouped into a batch, so a prompt whose prefix came from the cache can get logits that
differ (by up to ~1.0 here) from the same prompt evaluated from scratch, and greedy outputs would then
depend on which requests came before. Prompts are therefore always evaluated in blocks aligned to
multiples of :data:`BLOCK` positions, and only whole aligned blocks of an earlier prompt are reused:
a token's KV entry is computed in the same batch shape whether or not the cache was warm, and outputs
are bit-identical either way (tested). The price is re-evaluating fewer than :data:`BLOCK` tokens.

Flash attention is on: measured here with a 2,000-token prompt it decoded ~5% faster (40 vs 38
tokens/s, medians of 5 interleaved runs) and changes no result beyond rounding.

Not thread-safe: one request at a time (the engine holds a lock).
"""

from __future__ import annotations

import ctypes
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

_LOGGER = logging.getLogger("harness.engines")
_SINK: list[Callable[[str], None] | None] = [None]
"""Where llama.cpp's log lines go now (one slot: llama.cpp has one log callback per process)."""
_CALLBACK: list[Any] = []
"""The installed ctypes callback, kept alive for as long as llama.cpp may call it."""
_DEBUG, _CONTINUED = 1, 5
"""ggml's log levels (none 0, debug 1, info 2, warn 3, error 4, cont 5): debug lines (every tensor and
graph input) are dropped; a continued line keeps the level of the line it continues."""
_LAST_LEVEL = [0]


def send_llama_logs_to(sink: Callable[[str], None] | None) -> None:
    """llama.cpp's own log lines (context set-up, warnings) go to ``sink`` (a run's log file), or with
    None to Python's logging (logger ``harness.engines``, debug level), never to the terminal.
    llama-cpp-python's own callback prints them to stderr: its level table is older than llama.cpp's,
    so ``verbose=False`` lets warnings through."""
    import llama_cpp

    _SINK[0] = sink
    if _CALLBACK:
        return

    @llama_cpp.llama_log_callback  # type: ignore[misc]
    def forward(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        if level != _CONTINUED:
            _LAST_LEVEL[0] = level
        if _LAST_LEVEL[0] == _DEBUG:
            return
        line = text.decode("utf-8", errors="replace")
        target = _SINK[0]
        if target is not None:
            target(line)
        else:
            _LOGGER.debug("llama.cpp: %s", line.rstrip())

    _CALLBACK.append(forward)
    llama_cpp.llama_log_set(forward, ctypes.c_void_p(0))

BLOCK = 64
"""Prompt positions are evaluated in batches aligned to multiples of this (see the module doc)."""
DEFAULT_N_CTX = 8192


def default_threads() -> int:
    """llama.cpp threads: the cores this process may use, at most 4 (2 on this project's machines).

    Fixed per machine on purpose: the thread count changes how work is split, and so the rounding."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


@dataclass(frozen=True, slots=True)
class PrefillStats:
    """What one ``prefill`` did."""

    prompt_tokens: int
    reused_tokens: int
    """Tokens whose KV entries came from the cache."""
    evaluated_tokens: int
    prefill_ms: float


class ContextOverflow(ValueError):
    """The prompt plus the token budget does not fit in the context window."""


class LlamaRuntime:
    """One llama.cpp context with prefix reuse. ``model_path`` is a GGUF file."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        block: int = BLOCK,
        flash_attn: bool = True,
        log: Callable[[str], None] | None = None,
    ) -> None:
        from llama_cpp import Llama

        send_llama_logs_to(log)
        threads = n_threads or default_threads()
        started = time.perf_counter()
        self._llm = Llama(
            str(model_path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            n_batch=max(512, block),
            flash_attn=flash_attn,
            verbose=False,
        )
        self.load_ms = (time.perf_counter() - started) * 1e3
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.n_threads = threads
        self.block = block
        self.n_vocab = int(self._llm.n_vocab())
        self._ctx: Any = self._llm._ctx.ctx
        self._ids: list[int] = []
        """Tokens whose KV entries are in the cache, in position order."""
        self._aligned = 0
        """Positions [0, _aligned) were evaluated as whole aligned blocks (reusable)."""

    # -- the cache ------------------------------------------------------------------------
    @property
    def cached_ids(self) -> tuple[int, ...]:
        return tuple(self._ids)

    def reset(self) -> None:
        """Forget the KV cache."""
        self._llm.reset()
        self._ids = []
        self._aligned = 0

    def reusable_prefix(self, ids: list[int]) -> int:
        """How many leading tokens of ``ids`` ``prefill`` would take from the cache."""
        limit = min(len(ids) - 1, self._aligned, len(self._ids))
        k = 0
        while k < limit and self._ids[k] == ids[k]:
            k += 1
        return (k // self.block) * self.block

    def prefill(self, ids: list[int], *, reserve: int = 0) -> PrefillStats:
        """Make the cache hold exactly ``ids`` and the logits be those after its last token.

        ``reserve`` tokens must still fit after the prompt (the generation budget)."""
        if not ids:
            raise ValueError("prefill needs at least one token (the BOS)")
        if len(ids) + reserve > self.n_ctx:
            raise ContextOverflow(
                f"prompt of {len(ids)} tokens + {reserve} to generate exceeds the context of {self.n_ctx} tokens"
            )
        started = time.perf_counter()
        k = self.reusable_prefix(ids)
        self._truncate(k)
        i = k
        while i < len(ids):
            j = min(len(ids), (i // self.block + 1) * self.block)
            self._llm.eval(ids[i:j])
            self._ids.extend(ids[i:j])
            if j - i == self.block and self._aligned == i:
                self._aligned = j
            i = j
        return PrefillStats(len(ids), k, len(ids) - k, (time.perf_counter() - started) * 1e3)

    def _truncate(self, k: int) -> None:
        # Llama.eval drops KV entries at positions >= n_tokens before it decodes.
        self._llm.n_tokens = k
        del self._ids[k:]
        self._aligned = min(self._aligned, k)

    # -- decoding -------------------------------------------------------------------------
    def logits(self, row: int = -1) -> np.ndarray:
        """Next-token scores after the last evaluated token (``row`` -1), or after the ``row``-th
        token of the last ``push(..., every_row=True)``: a view into llama.cpp's buffer, valid until
        the next ``push``/``prefill`` (copy to keep; masking it in place is allowed)."""
        import llama_cpp

        ptr = llama_cpp.llama_get_logits_ith(self._ctx, row)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def push(self, tokens: list[int], *, every_row: bool = False) -> None:
        """Evaluate generated tokens, all in one batch (one forward pass). The logits are those after
        the last token; with ``every_row`` after each of them (``logits(i)``): a drafted stretch is
        checked against the model's choice at every position."""
        if len(self._ids) + len(tokens) > self.n_ctx:
            raise ContextOverflow(f"the context of {self.n_ctx} tokens is full")
        if every_row:
            llm = self._llm
            llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)  # as Llama.eval does before a decode
            llm._batch.set_batch(batch=tokens, n_past=llm.n_tokens, logits_all=True)
            llm._ctx.decode(llm._batch)
            llm.input_ids[llm.n_tokens : llm.n_tokens + len(tokens)] = tokens
            llm.n_tokens += len(tokens)
        else:
            self._llm.eval(tokens)
        self._ids.extend(tokens)

    def discard(self, n: int) -> None:
        """Forget the last ``n`` evaluated tokens (drafted tokens the model did not choose)."""
        if n > 0:
            self._truncate(len(self._ids) - n)

    def tokenize(self, text: str, *, special: bool = True) -> list[int]:
        """llama.cpp's own tokenization (no BOS), to cross-check the family tokenizer."""
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def close(self) -> None:
        self._llm.close()
