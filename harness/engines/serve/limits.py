"""Named bounds, as settings models with documented defaults.

``ServeLimits``: the bounds of ``harness serve``, read from ``HARNESS_SERVE_*`` environment variables
(``HARNESS_SERVE_COMPILE_TIMEOUT_S=5``) or a YAML file given to ``harness serve --config``. (The
OpenAI-compatible client's, ``HARNESS_CLIENT_*``, are ``harness.engines.remote.client.ClientLimits``.)

Every request that hits a bound is refused with a 4xx whose message names the bound and its value
(``request body is 5000000 bytes: over max_body_bytes=4194304``), so a client can tell a limit of this
server from a problem of its request. The defaults hold the server's memory within a documented bound
under hostile grammars (README, "harness serve"): a grammar is compiled first in a separate worker
process, bounded in time and memory and killed when it overruns, and only then in the server, whose
own grammar cache is bounded too.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from harness.files import InputFileError, read_yaml

MIB = 1024 * 1024


class ServeLimits(BaseSettings):
    """Named bounds of ``harness serve`` (environment: ``HARNESS_SERVE_<NAME>``)."""

    model_config = SettingsConfigDict(env_prefix="HARNESS_SERVE_", extra="forbid", frozen=True)

    max_body_bytes: int = Field(default=1 * MIB, ge=1024)
    """Largest request body, in bytes (HTTP 413 beyond; read no further)."""
    max_json_depth: int = Field(default=64, ge=8, le=512)
    """Deepest nesting of arrays and objects in a request body (HTTP 400 beyond)."""
    max_constraint_bytes: int = Field(default=256 * 1024, ge=1024)
    """Largest constraint, in bytes: each of ``structured_outputs`` and ``response_format`` as sent, and
    the grammar or schema built from it (``choice`` becomes a grammar, ``tool_choice: required`` a
    schema of the tools). HTTP 400 beyond."""
    compile_timeout_s: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    """Longest a new grammar may take to compile in the compile worker; it is killed beyond (HTTP 400)."""
    compile_memory_mb: int = Field(default=512, ge=16)
    """Most memory a grammar may add to the compile worker while it compiles, in MiB (measured as
    resident memory every ``compile_poll_s``; the worker is killed beyond: HTTP 400)."""
    compile_poll_s: float = Field(default=0.02, gt=0, le=1, allow_inf_nan=False)
    """How often the compile worker's time and memory are checked."""
    verdict_cache_entries: int = Field(default=1024, ge=0)
    """Grammars remembered as compiling fine or not (by digest), so a repeated one skips the worker."""
    grammar_cache_mb: int = Field(default=128, ge=16)
    """Memory of the server's own compiled-grammar cache, per model family, in MiB (xgrammar evicts
    beyond)."""
    max_requests: int = Field(default=32, ge=1)
    """Chat completions in flight at once (HTTP 503 beyond, the body unread); ``/health`` and
    ``/v1/models`` are never counted or refused."""
    max_connections: int = Field(default=256, ge=2)
    """Open connections. Beyond it, the connection that has waited longest for a request's headers is
    closed to make room (503 to the new one only when every other is sending or awaiting an answer):
    idle sockets cannot keep a request out."""
    header_timeout_s: float = Field(default=10.0, gt=0, le=3600, allow_inf_nan=False)
    """Longest from a connection's opening (or its previous response) to the end of a request's headers:
    closed beyond (HTTP 408 when part of a request came). Bounds idle and slowloris connections."""
    body_timeout_s: float = Field(default=30.0, gt=0, le=3600, allow_inf_nan=False)
    """Longest from a request's headers to the end of its body (HTTP 408 beyond): a ``Content-Length``
    larger than what is sent cannot hold a connection."""
    keepalive_timeout_s: int = Field(default=5, ge=1, le=3600)
    """How long a connection may stay idle after a response before it is closed (uvicorn's keep-alive)."""
    max_header_bytes: int = Field(default=32 * 1024, ge=1024, le=16 * MIB)
    """Largest request line and headers, in bytes (HTTP 431 beyond; read no further)."""
    shutdown_timeout_s: int = Field(default=2, ge=0, le=600)
    """How long a shutdown waits for requests in flight before it cancels them."""

    @classmethod
    def load(cls, path: str | Path | None = None) -> ServeLimits:
        """The limits from the environment, overridden by the YAML mapping in ``path`` when given.
        Raises InputFileError (file) or pydantic's ValidationError (a field) naming the problem."""
        if path is None:
            return cls()
        raw = read_yaml(path)
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise InputFileError(path, f"expected a mapping of limits, got {type(raw).__name__}")
        return cls(**raw)

    def describe(self, name: str) -> str:
        """``name=value`` of one bound, for error messages."""
        return f"{name}={getattr(self, name)!r}"


__all__ = ["MIB", "ServeLimits"]
