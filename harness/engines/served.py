"""What ``harness serve`` puts behind its HTTP endpoints: an engine that answers one request at a time.

A :class:`ServedEngine` lists its model ids, maps a model id to its family (raising ModelCallError
for one it does not serve), and answers a CompletionRequest synchronously, optionally streaming text
through ``on_text``. The server runs ``complete`` in a worker thread. Which engines can be served is
the engine registry's business (``harness.engines.registry``: ``local`` and ``oracle`` today).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from harness.agents import CompletionRequest, CompletionResponse


class ServedEngine(Protocol):
    model_ids: tuple[str, ...]
    """The model ids ``GET /v1/models`` lists."""

    def family_of(self, model: str) -> str: ...

    def load(self) -> Any: ...

    def complete(
        self,
        request: CompletionRequest,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> CompletionResponse: ...


__all__ = ["ServedEngine"]
