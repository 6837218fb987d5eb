"""Model families: each module keeps a family's prompt format, its call format (a ``CallFormat``
record, from which ``harness.grammar.formats`` builds every strategy's constraint and gold output) and
its parser side by side, because a grammar and the parser of the same format must agree and are
tested together.

The registry below is the one list of families' modules. Adding a family is its name in
``harness.vocabulary.Family``, one module that defines ``FORMAT`` (a ``CallFormat``) and ``ADAPTER``
(a ``ModelAdapter``) plus one ``FamilyInfo`` line here (and, to compile its grammars, a tokenizer
recipe in ``harness.grammar.tokenizer_files``). ``get_adapter(family)`` imports the module on first
use; the agent kernel (``harness.agents``) imports no family: whoever builds an agent hands it the
adapter. Nothing here imports xgrammar: grammars are EBNF text and structural tags JSON text
(xgrammar 0.2.8's format schema).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from harness import vocabulary
from harness.agents import ModelAdapter
from harness.grammar.families.chat_templates import chat_template_path
from harness.grammar.formats import (
    MAX_JSON_WS,
    canonical_keys,
    canonical_schema,
    canonical_value,
    ebnf_literal,
    json_calls_text,
    strict_schema,
)
from harness.grammar.schema import builder_of, enforces, keywords_used, refused_keyword, support
from harness.vocabulary import Family


@dataclass(frozen=True, slots=True)
class FamilyInfo:
    """One registered model family."""

    name: Family
    """What suites, bundles, records and ``--family`` call it."""
    module: str
    """The module that defines the family's ``ADAPTER``."""
    model_hint: str
    """A lowercase fragment of served model ids of this family (``--family`` guessed from ``--model``)."""


REGISTRY: dict[str, FamilyInfo] = {
    info.name: info
    for info in (
        FamilyInfo(Family.function_gemma, "harness.grammar.families.function_gemma", model_hint="gemma"),
        FamilyInfo(Family.qwen, "harness.grammar.families.qwen", model_hint="qwen"),
    )
}
"""Every family of ``harness.vocabulary.Family``, in its order (keyed by the ``Family`` members)."""
FAMILIES: tuple[str, ...] = vocabulary.FAMILIES
"""Every registered family, in registry order (``harness.vocabulary.FAMILIES``)."""


def check_family(family: str) -> str:
    """``family`` (as its ``Family``) when it is registered; ValueError naming the known ones otherwise."""
    if family not in REGISTRY:
        raise ValueError(f"unknown model family {family!r}: expected one of {', '.join(FAMILIES)}")
    return Family(family)


def get_adapter(family: str) -> ModelAdapter:
    """The adapter of a registered ``family``."""
    adapter = importlib.import_module(REGISTRY[check_family(family)].module).ADAPTER
    if not isinstance(adapter, ModelAdapter):
        raise TypeError(f"{REGISTRY[family].module}.ADAPTER is not a ModelAdapter")
    return adapter


def families_of_model(model_id: str) -> list[str]:
    """The families whose ``model_hint`` occurs in ``model_id`` (ideally exactly one)."""
    lowered = model_id.lower()
    return [info.name for info in REGISTRY.values() if info.model_hint in lowered]


__all__ = [
    "FAMILIES",
    "MAX_JSON_WS",
    "REGISTRY",
    "Family",
    "FamilyInfo",
    "builder_of",
    "canonical_keys",
    "canonical_schema",
    "canonical_value",
    "chat_template_path",
    "check_family",
    "ebnf_literal",
    "enforces",
    "families_of_model",
    "get_adapter",
    "json_calls_text",
    "keywords_used",
    "refused_keyword",
    "strict_schema",
    "support",
]
