"""BFCL's single-turn function docs as the tools a model is sent, converted by BFCL's own code.

BFCL's entries describe each function with its own type names (``dict``, ``float``, ``tuple``,
``any``, ...). Before sending them to a model that takes tools in the request, BFCL converts them with
``convert_to_tool(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)``
(``bfcl_eval/model_handler/utils.py``): ``.`` in a name becomes ``_`` (OpenAI's name pattern; its
checker maps the expected name the same way), ``parameters.type`` becomes ``object``, each property's
type is mapped by the table (``dict`` -> object, ``float`` -> number with ``format: float`` and a note
in its description, ``tuple`` -> array, ``any`` -> string; missing or unknown -> string), and so on
inside arrays and objects, as far as BFCL goes.

``bfcl_convert`` is that function, BFCL's code unchanged: the module it lives in imports BFCL's Java
and JavaScript parsers (tree-sitter) and, through ``bfcl_eval.utils``, creates folders inside the
package when imported, so the two conversion functions are executed from the installed file on their
own with the few names they use (``harness.eval.bfcl_code``). The same module serves ``harness fuzz``'s
corpus of BFCL tools (``load_entries``, ``distinct_tools``) and the single-turn suites (``tool_schemas``).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from harness.agents.types import ToolSchema
from harness.eval.bfcl_answers import answer_arguments, openai_name
from harness.eval.bfcl_data import FILE_PREFIX, INSTALL_HINT, BfclDataError, data_dir

SINGLE_TURN: tuple[str, ...] = (
    "simple_python", "multiple", "parallel", "parallel_multiple",
    "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
    "irrelevance", "live_irrelevance",
)
"""BFCL's single-turn categories with Python function docs (the irrelevance ones have no possible
answers: no call is right)."""
UTILS_MODULE = "bfcl_eval.model_handler.utils"


@cache
def bfcl_convert() -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """BFCL's ``convert_to_tool`` for OpenAI-style tools: function docs -> ``{"type": "function",
    "function": {...}}`` entries (the input is not changed: BFCL copies it). BfclDataError when the
    package is missing."""
    from harness.eval.bfcl_code import load_bfcl_module

    try:
        from bfcl_eval.constants.enums import ModelStyle
        from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    except ImportError:
        raise BfclDataError(f"BFCL's package is not installed: {INSTALL_HINT}") from None
    module = load_bfcl_module(
        UTILS_MODULE, only={"convert_to_tool", "_cast_to_openai_type"},
        provide={"copy": copy, "re": re, "json": json, "ModelStyle": ModelStyle, "GORILLA_TO_OPENAPI": GORILLA_TO_OPENAPI},
    )
    convert = module.convert_to_tool

    def to_openai(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(convert(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS))

    return to_openai


def tool_schemas(docs: Iterable[Mapping[str, Any]]) -> list[ToolSchema]:
    """BFCL's function docs converted as BFCL converts them, as the harness's tool schemas (what
    prompts, grammars and validity use). ValueError naming the function where BFCL's conversion fails."""
    plain = [dict(d) for d in docs]
    try:
        tools = bfcl_convert()(plain)
    except (KeyError, TypeError, AttributeError) as exc:
        names = ", ".join(repr(d.get("name")) for d in plain)
        raise ValueError(f"functions ({names}): BFCL's conversion fails ({type(exc).__name__}: {exc})") from None
    return [ToolSchema.from_openai(tool) for tool in tools]


@dataclass(frozen=True)
class BfclEntry:
    """One single-turn entry: its converted tools and its possible answers (none for irrelevance)."""

    id: str
    category: str
    tools: list[dict[str, Any]]
    """OpenAI-style tools, converted as BFCL converts them."""
    possible: list[dict[str, dict[str, list[Any]]]]
    """BFCL's ``ground_truth``: per call, ``{name: {argument: [acceptable values]}}`` (original names)."""

    def gold_calls(self) -> list[dict[str, Any]]:
        """BFCL's first acceptable answer as calls ``{"name", "arguments"}`` (names converted): the first
        listed value of each argument, left out where that is ``""`` unless the function requires it,
        a dict argument's ``{key: [values]}`` resolved the same way (``bfcl_answers``)."""
        schemas = {t.name: t for t in (ToolSchema.from_openai(tool) for tool in self.tools)}
        return [{"name": n, "arguments": a} for n, a in answer_arguments(self.possible, schemas, strict=False)]


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def load_entries(category: str) -> list[BfclEntry]:
    """The entries of a single-turn category of the installed package."""
    if category not in SINGLE_TURN:
        raise BfclDataError(f"unknown BFCL single-turn category {category!r}: expected one of {', '.join(SINGLE_TURN)}")
    data = data_dir()
    entries_file = data / f"{FILE_PREFIX}{category}.json"
    if not entries_file.is_file():
        raise BfclDataError(f"BFCL's package lacks {entries_file}: reinstall it ({INSTALL_HINT})")
    answers_file = data / "possible_answer" / f"{FILE_PREFIX}{category}.json"
    answers = {a["id"]: a["ground_truth"] for a in _lines(answers_file)} if answers_file.is_file() else {}
    convert = bfcl_convert()
    return [BfclEntry(e["id"], category, convert(e["function"]), answers.get(e["id"], [])) for e in _lines(entries_file)]


def distinct_tools(categories: tuple[str, ...] = SINGLE_TURN) -> list[dict[str, Any]]:
    """Every converted tool of ``categories`` once (by name; the first of a name kept when two differ,
    as one tool set cannot hold two tools of one name)."""
    seen: dict[str, dict[str, Any]] = {}
    for category in categories:
        for entry in load_entries(category):
            for tool in entry.tools:
                seen.setdefault(tool["function"]["name"], tool)
    return list(seen.values())


__all__ = [
    "SINGLE_TURN",
    "BfclEntry",
    "bfcl_convert",
    "distinct_tools",
    "load_entries",
    "openai_name",
    "tool_schemas",
]
