"""BFCL's single-turn function documents as OpenAI-style tools, converted the way BFCL converts them,
and their gold answers as calls.

The conversion is BFCL's own ``convert_to_tool`` (``bfcl_eval/model_handler/utils.py``) with its
``GORILLA_TO_OPENAPI`` type mapping and the OpenAI model style (``.`` in names replaced by ``_``; a
``float`` type becomes ``number`` with ``"format": "float"``; unknown types become ``string``). That
module imports BFCL's Java and JavaScript parsers (``tree_sitter``) and its model SDKs, which a
``--no-deps`` install of ``bfcl-eval`` lacks, so its two conversion functions are read from the
installed file and compiled on their own with the only names they use (``copy``, ``re``, ``json``,
``ModelStyle``, ``GORILLA_TO_OPENAPI``, from BFCL's stdlib-only constants modules): BFCL's code,
unchanged, without its imports.

Gold: BFCL's possible answers list acceptable values per argument (``""`` among them: the argument
may be left out; a dict value maps its keys to acceptable values again); ``gold_calls`` takes the
first acceptable value of each argument, at every level, leaving out those whose first value is ``""``. Used by ``harness fuzz``'s BFCL corpus test and by the BFCL single-turn
suites (issue 25). The integrator moves this module into ``harness/eval/data/``.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from harness.eval.bfcl_data import FILE_PREFIX, INSTALL_HINT, BfclDataError, data_dir

SINGLE_TURN: tuple[str, ...] = (
    "simple_python", "multiple", "parallel", "parallel_multiple",
    "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
    "irrelevance", "live_irrelevance",
)
"""BFCL's single-turn categories with Python function documents (the irrelevance ones have no
possible answers: no call is right)."""


@cache
def bfcl_convert() -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """BFCL's ``convert_to_tool`` for OpenAI-style tools: function docs -> ``{"type": "function",
    "function": {...}}`` entries."""
    try:
        from bfcl_eval.constants.enums import ModelStyle
        from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    except ImportError:
        raise BfclDataError(f"BFCL's package is not installed: {INSTALL_HINT}") from None
    source = data_dir().parent / "model_handler" / "utils.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    wanted: list[ast.stmt] = [n for n in tree.body if isinstance(n, ast.FunctionDef)
                              and n.name in ("_cast_to_openai_type", "convert_to_tool")]
    if len(wanted) != 2:
        raise BfclDataError(f"{source}: convert_to_tool or _cast_to_openai_type not found: reinstall ({INSTALL_HINT})")
    names: dict[str, Any] = {"copy": copy, "re": re, "json": json, "ModelStyle": ModelStyle,
                             "GORILLA_TO_OPENAPI": GORILLA_TO_OPENAPI}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), str(source), "exec"), names)
    convert = names["convert_to_tool"]

    def to_openai(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [_wrapped(t) for t in convert(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)]

    return to_openai


def _wrapped(tool: dict[str, Any]) -> dict[str, Any]:
    return tool if tool.get("type") == "function" and "function" in tool else {"type": "function", "function": tool}


def openai_name(name: str) -> str:
    """A BFCL function name as the converted tool names it."""
    return re.sub(r"\.", "_", name)


@dataclass(frozen=True)
class BfclEntry:
    """One single-turn entry: its converted tools and its gold calls (none for irrelevance)."""

    id: str
    category: str
    tools: list[dict[str, Any]]
    """OpenAI-style tools, converted as BFCL converts them."""
    possible: list[dict[str, dict[str, list[Any]]]]
    """BFCL's ``ground_truth``: per call, ``{name: {argument: [acceptable values]}}`` (original names)."""

    def gold_calls(self) -> list[dict[str, Any]]:
        """The first acceptable answer as calls ``{"name", "arguments"}`` (names converted)."""
        return [{"name": openai_name(name), "arguments": _first(args)}
                for item in self.possible for name, args in item.items()]


def _first(options: dict[str, Any]) -> dict[str, Any]:
    """``{argument: [acceptable values]}`` -> ``{argument: first value}``, ``""`` (left out) dropped."""
    return {k: _chosen(v[0]) for k, v in options.items() if isinstance(v, list) and v and v[0] != ""}


def _chosen(value: Any) -> Any:
    """An acceptable value: a dict in it maps its keys to acceptable values again (BFCL's nesting); a
    list is a value whose dict items nest so."""
    if isinstance(value, dict):
        return _first(value)
    if isinstance(value, list):
        return [_chosen(v) for v in value]
    return value


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
    """Every converted tool of ``categories`` once (by name and schema; the first of a name kept when two
    differ, as one tool set cannot hold two tools of one name)."""
    seen: dict[str, dict[str, Any]] = {}
    for category in categories:
        for entry in load_entries(category):
            for tool in entry.tools:
                seen.setdefault(tool["function"]["name"], tool)
    return list(seen.values())


__all__ = ["SINGLE_TURN", "BfclEntry", "bfcl_convert", "distinct_tools", "load_entries", "openai_name"]
