"""The embedded engine's ``TokenSource`` for the shared decoding loop (harness.grammar.decode).

``propose()`` returns the model's next-token logits (a zero-copy view into llama.cpp's buffer);
``feed(token)`` records the token the loop chose. Chosen tokens are evaluated lazily, at the next
``propose()``, all in one batch: with jump-forward (``append``) the loop feeds a free token and then
the tokens the grammar forces after it, and one forward pass evaluates them all (and gives the logits
of the next free position). ``propose_draft(draft)`` (jump-forward ``verify``) evaluates the chosen
tokens and the drafted ones in one batch and returns the scores at every drafted position; drafted
tokens the loop does not feed back are dropped from the cache. The token that ends a generation is
never run through the model.

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
    from harness.grammar import FamilyTokenizer

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
        self._pending: list[int] = []
        """Chosen tokens not evaluated yet."""
        self._drafted: list[int] = []
        """Drafted tokens evaluated by ``propose_draft`` and not chosen yet (in the cache)."""
        self.fed = 0
        """Tokens chosen by the loop (a final stop token included)."""
        self.first_token_ns: int | None = None
        self.forward_ns = 0
        """Time in llama.cpp's forward passes for generated tokens."""
        self.forward_passes = 0
        """Forward passes for generated tokens (one per batch)."""
        self.cancelled = False

    def _ended(self) -> bool:
        if self._text.stopped_by is not None:
            return True
        if self._cancel is not None and self._cancel.is_set():
            self.cancelled = True
            return True
        return False

    def _evaluate(self, tokens: list[int], every_row: bool = False) -> None:
        self._rt.discard(len(self._drafted))  # drafts the loop did not take
        self._drafted = []
        t0 = time.perf_counter_ns()
        self._rt.push(tokens, every_row=every_row)
        self.forward_ns += time.perf_counter_ns() - t0
        self.forward_passes += 1

    def propose(self) -> NDArray[np.floating[Any]] | None:
        if self._ended():
            return None
        if self._drafted and not self._pending:
            raise RuntimeError("drafted tokens were left unchosen with nothing chosen after them")
        if self._pending:
            self._evaluate(self._pending)
            self._pending = []
        return self._rt.logits()

    def propose_draft(self, draft: Sequence[int]) -> list[NDArray[np.floating[Any]]] | None:
        """Evaluate the chosen tokens and ``draft`` in one batch: the logits before each drafted token
        and after the last (``len(draft) + 1`` rows). Drafted tokens stay in the cache only as far as
        the loop then feeds them back, in order."""
        import numpy as np

        if self._ended():
            return None
        # Nothing chosen since the last scores (right after the prompt): keep them, the batch overwrites.
        head = [] if self._pending else [np.array(self._rt.logits())]
        batch = [*self._pending, *draft]
        self._evaluate(batch, every_row=True)
        first = max(0, len(self._pending) - 1)
        self._pending = []
        self._drafted = list(draft)
        return head + [self._rt.logits(i) for i in range(first, len(batch))]

    def feed(self, token_id: int) -> None:
        if self._text.stopped_by is not None:
            return  # forced tokens after a stop sequence: the output already ended there
        if self.first_token_ns is None:
            self.first_token_ns = time.perf_counter_ns()
        self.fed += 1
        if token_id in self._stop_ids:
            return
        if self._drafted and self._drafted[0] == token_id:
            self._drafted.pop(0)  # already in the cache
        else:
            self._pending.append(token_id)
        self._text.add(token_id)
