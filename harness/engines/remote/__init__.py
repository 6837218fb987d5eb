"""Engines reached over HTTP: the OpenAI-compatible client (``client.py``), its strict reading of a
server's answers (``wire.py``: what breaks the protocol is ``model:bad_response``), and one client over
several replicas (``replicas.py``). Names load on first use: importing this package does not import
``openai``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.engines.remote.client import (
        TOO_LARGE,
        BoundedTransport,
        OpenAICompatibleClient,
        ResponseTooLarge,
    )
    from harness.engines.remote.replicas import ReplicaClient
    from harness.engines.remote.wire import BAD_RESPONSE, StreamAnswer, bad_response, read_completion

__getattr__, __dir__ = lazy_exports(__name__, {
    **{name: "client" for name in ("TOO_LARGE", "BoundedTransport", "OpenAICompatibleClient", "ResponseTooLarge")},
    "ReplicaClient": "replicas",
    **{name: "wire" for name in ("BAD_RESPONSE", "StreamAnswer", "bad_response", "read_completion")},
})

__all__ = [
    "BAD_RESPONSE",
    "TOO_LARGE",
    "BoundedTransport",
    "OpenAICompatibleClient",
    "ReplicaClient",
    "ResponseTooLarge",
    "StreamAnswer",
    "bad_response",
    "read_completion",
]
