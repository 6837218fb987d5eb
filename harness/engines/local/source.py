"""The embedded engine's ``TokenSource`` for the shared decoding loop (harness.grammar.decode).

``propose()`` returns the model's next-token logits (a zero-copy view into llama.cpp's buffer);
``feed(token)`` records the token the loop chose. The chosen token is evaluated lazily, at the next
``propose()``, so the token that ends a generation is never run through the model.

It also does what the loop leaves to the source: text stop sequences (the output is cut before the
first one, as vLLM does, and the source then ends), cancellation, the time of the first token, and
streaming: ``on_text`` receives text deltas as tokens arrive, holding back an incomplete UTF-8
character and any tail that could still become a stop sequence, so a stop string never leaks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from harness.engines.local.runtime import LlamaRuntime
    from harness.grammar.tokenizers import FamilyTokenizer

TextCallback = Callable[[str], None]


class TextStops:
    """Incremental text of a token stream with stop sequences and safe streaming deltas."""

    def __init__(
        self,
        tokenizer: FamilyTokenizer,
        stop: Sequence[str] = (),
        on_text: TextCallback | None = None,
    ) -> None:
        self._tok = tokenizer
        self._stops = tuple(s for s in stop if s)
        self._on_text = on_text
        self.ids: list[int] = []
        self.text = ""
        self.stopped_by: str | None = None
        """The stop sequence that ended the text, if one did."""
        self._emitted = 0

    def add(self, token: int) -> None:
        if self.stopped_by is not None:
            return
        self.ids.append(token)
        text = self._tok.decode(self.ids)
        safe = len(text)
        if self._stops:
            start = max(0, len(self.text) - max(map(len, self._stops)))
            hits = [(i, s) for s in self._stops if (i := text.find(s, start)) >= 0]
            if hits:
                cut, self.stopped_by = min(hits)
                self.text = text[:cut]
                self._flush(cut)
                return
        self.text = text
        while safe > 0 and text[safe - 1] == "\ufffd":  # an incomplete UTF-8 character so far
            safe -= 1
        for s in self._stops:  # a tail that may still grow into a stop sequence
            for n in range(min(len(s) - 1, safe), 0, -1):
                if text.endswith(s[:n], 0, safe):
                    safe -= n
                    break
        self._flush(safe)

    def finish(self) -> str:
        """Flush what was held back; the final text."""
        self._flush(len(self.text))
        return self.text

    def _flush(self, upto: int) -> None:
        if self._on_text is not None and upto > self._emitted:
            self._on_text(self.text[self._emitted : upto])
        self._emitted = max(self._emitted, upto)


class LogitsSource:
    """Next-token logits from a :class:`LlamaRuntime` whose cache already holds the prompt."""

    def __init__(
        self,
        runtime: LlamaRuntime,
        text: TextStops,
        *,
        stop_ids: Sequence[int],
        cancel: threading.Event | None = None,
    ) -> None:
        self._rt = runtime
        self._text = text
        self._stop_ids = frozenset(stop_ids)
        self._cancel = cancel
        self._pending: int | None = None
        self.fed = 0
        """Tokens chosen by the loop (a final stop token included)."""
        self.first_token_ns: int | None = None
        self.forward_ns = 0
        """Time in llama.cpp's forward passes for generated tokens."""
        self.cancelled = False

    def propose(self) -> NDArray[np.floating[Any]] | None:
        if self._text.stopped_by is not None:
            return None
        if self._cancel is not None and self._cancel.is_set():
            self.cancelled = True
            return None
        if self._pending is not None:
            t0 = time.perf_counter_ns()
            self._rt.push(self._pending)
            self.forward_ns += time.perf_counter_ns() - t0
            self._pending = None
        return self._rt.logits()

    def feed(self, token_id: int) -> None:
        if self.first_token_ns is None:
            self.first_token_ns = time.perf_counter_ns()
        self.fed += 1
        if token_id in self._stop_ids:
            return
        self._pending = token_id
        self._text.add(token_id)
