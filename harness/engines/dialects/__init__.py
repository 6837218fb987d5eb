"""Server dialects: how each kind of OpenAI-compatible server is told the constraint, in ONE table.

The families build every constraint in vLLM's form (``structured_outputs: {grammar|json|structural_tag:
text}``, ``tool_choice``, ``tools[].function.strict``). A server that is not vLLM ignores fields it does
not know without a word, so the OpenAI-compatible client hands each request body to the run's dialect,
which writes the constraint where that server reads it, or refuses it by name (``NotExpressible``: the
request is never sent unconstrained). A new dialect is one module with a class of the ``Dialect`` shape
plus one ``DialectInfo`` line below; modules load on first use.

Today: ``vllm`` (the fields as they are), ``llama_cpp`` (llama-cpp-python's server: a GBNF ``grammar`` for
grammars and JSON schemas alike, since ``/completions`` ignores ``response_format``; the family's own
prompt on ``/completions``) and
``openai`` (the plain OpenAI API: ``response_format: {type: json_schema, json_schema: {..., strict}}``,
strict tools; no grammar). ``docs/servers.md`` has the table of servers x strategies.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class Dialect(Protocol):
    """How one kind of server takes a request."""

    name: str
    fields: Mapping[str, str]
    """Constraint kind (``grammar``, ``json``, ``structural_tag``) -> the request field that carries it,
    in words ("refused: why" where the server has none)."""

    def wire(self, family: str, request: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The path (``/chat/completions``...) and body that carry ``body`` (a vLLM-form chat body built
        from ``request``, a ``CompletionRequest`` of ``family``) to this server; ``NotExpressible``
        (harness.grammar) naming what the server cannot be told."""
        ...

    def describe(self, family: str) -> dict[str, str]:
        """What run.json records of the dialect for ``family`` (the prompt's template, the endpoint)."""
        ...


@dataclass(frozen=True, slots=True)
class DialectInfo:
    """One registered dialect."""

    name: str
    summary: str
    """One line for ``--help`` and the docs."""
    module: str
    """``module:Class`` of its ``Dialect`` (built with no arguments)."""


DIALECTS: dict[str, DialectInfo] = {
    info.name: info
    for info in (
        DialectInfo("vllm", "vLLM's structured_outputs, tool_choice and strict tools",
                    "harness.engines.dialects.vllm:VllmDialect"),
        DialectInfo("llama_cpp", "llama-cpp-python's server: a GBNF grammar (JSON schemas converted to one), "
                    "the family's own prompt on /completions", "harness.engines.dialects.llama_cpp:LlamaCppDialect"),
        DialectInfo("openai", "the plain OpenAI API: response_format json_schema (strict), strict tools; no grammar",
                    "harness.engines.dialects.openai:OpenAIDialect"),
    )
}
DIALECT_NAMES: tuple[str, ...] = tuple(DIALECTS)


def detect_dialect(base_url: str, api_key: str | None = None) -> tuple[str, str]:
    """``(dialect, what showed it)`` of the server at ``base_url`` (``detect.py``)."""
    from harness.engines.dialects.detect import detect_dialect as detect

    return detect(base_url, api_key)


def get_dialect(name: str) -> Dialect:
    """The dialect ``name``; ValueError naming the known ones otherwise."""
    info = DIALECTS.get(name)
    if info is None:
        raise ValueError(f"unknown dialect {name!r}: expected one of {', '.join(DIALECT_NAMES)}")
    module, _, attr = info.module.partition(":")
    return getattr(importlib.import_module(module), attr)()  # type: ignore[no-any-return]


__all__ = ["DIALECTS", "DIALECT_NAMES", "Dialect", "detect_dialect", "get_dialect"]
