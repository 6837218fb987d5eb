"""BFCL's data as the installed ``bfcl-eval`` package holds it, and BFCL's long-context expansion.

``bfcl-eval`` (the Berkeley Function Calling Leaderboard's own package) ships its data files under
``bfcl_eval/data``: one file per category (one JSON object per line) and a ``possible_answer/`` file
with the same name. Install it without its dependencies (they pin numpy and pull model SDKs the
harness does not need): ``pip install --no-deps bfcl-eval==2026.3.23``. Only stdlib modules of the
package are imported here.

Single-turn categories (``load_entries``, ``distinct_tools``, ``bfcl_convert``): each entry's function
documents as OpenAI-style tools, converted the way BFCL converts them (BFCL's own ``convert_to_tool``
with ``GORILLA_TO_OPENAPI``, the OpenAI model style: ``.`` in names replaced by ``_``, ``float`` a
``number`` with ``"format": "float"``, unknown types ``string``). That function's module imports BFCL's
Java and JavaScript parsers (``tree_sitter``) and model SDKs, absent from a ``--no-deps`` install, so
its two functions are read from the installed file and compiled on their own with the only names they
use (BFCL's code, unchanged, without its imports). ``BfclEntry.gold_calls``: the first acceptable value
of every argument, at every level (a dict value maps its keys to acceptable values again; ``""``: left
out). Used by ``harness fuzz``'s BFCL corpus test, ``harness bench grammar --growth-tools bfcl``, and
meant for the single-turn suites.

Long-context entries: when BFCL loads the file system of an entry whose category names
``long_context`` (or ``composite``), every file not on a short list gets a fixed block of text
appended, and every directory without subdirectories gets 30 empty image files. ``expand_long_context``
does the same to a BFCL ``initial_config`` tree, with the text and names taken from the package.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.agents import ToolSchema

PACKAGE = "bfcl_eval"
INSTALL_HINT = "pip install --no-deps bfcl-eval==2026.3.23"
CATEGORIES: tuple[str, ...] = (
    "multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context",
)
"""BFCL's multi-turn categories (the ones with GorillaFileSystem entries)."""
FILE_PREFIX = "BFCL_v4_"


class BfclDataError(ValueError):
    """BFCL's package or one of its files is not where it should be; the message says what to do."""


def data_dir() -> Path:
    """``bfcl_eval/data`` of the installed package (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise BfclDataError(f"BFCL's package is not installed: {INSTALL_HINT}")
    return Path(spec.origin).parent / "data"


def category_name(name: str) -> str | None:
    """``"base"`` or ``"multi_turn_base"`` -> ``"multi_turn_base"``; None for anything else."""
    full = name if name.startswith("multi_turn_") else f"multi_turn_{name}"
    return full if full in CATEGORIES else None


def category_files(name: str) -> tuple[Path, Path]:
    """(entries, possible answers) of a category of the installed package."""
    full = category_name(name)
    if full is None:
        short = ", ".join(c.removeprefix("multi_turn_") for c in CATEGORIES)
        raise BfclDataError(f"unknown BFCL category {name!r}: expected one of {short} (or with multi_turn_)")
    data = data_dir()
    files = data / f"{FILE_PREFIX}{full}.json", data / "possible_answer" / f"{FILE_PREFIX}{full}.json"
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise BfclDataError(f"BFCL's package lacks {', '.join(missing)}: reinstall it ({INSTALL_HINT})")
    return files


def is_long_context(entry_id: str) -> bool:
    """BFCL's rule: the category is the id without its number; long context when it names
    ``long_context`` or ``composite``."""
    category = entry_id.rsplit("_", 1)[0]
    return "long_context" in category or "composite" in category


@dataclass(frozen=True)
class LongContextData:
    """What BFCL adds to a long-context file system."""

    content_extension: str
    """Appended to the content of every file whose name is not in ``tail_used``."""
    tail_used: frozenset[str]
    """File names whose end the tasks read (``tail``): left as they are."""
    populate: tuple[str, ...]
    """Empty files added, in order, to every directory that holds no directory."""


def long_context_data() -> LongContextData:
    """The expansion's text and names, from the installed package."""
    try:
        from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import long_context as lc
    except ImportError:
        raise BfclDataError(
            f"long-context entries need BFCL's expansion data from its package: {INSTALL_HINT}"
        ) from None
    return LongContextData(lc.FILE_CONTENT_EXTENSION, frozenset(lc.FILES_TAIL_USED), tuple(lc.POPULATE_FILE_EXTENSION))


def expand_long_context(config: Mapping[str, Any], data: LongContextData) -> dict[str, Any]:
    """A GorillaFileSystem config (``{"root": {NAME: directory}}``) expanded as BFCL loads it for a
    long-context entry; the input is not modified. Raises ValueError where BFCL would fail (an added
    file whose name is taken)."""
    (name, root), = config["root"].items()
    return {"root": {name: {**root, "contents": _expand(root.get("contents") or {}, data, name)}}}


def _expand(contents: Mapping[str, Any], data: LongContextData, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    bottommost = True
    for name, node in contents.items():
        if node.get("type") == "directory":
            bottommost = False
            out[name] = {**node, "contents": _expand(node.get("contents") or {}, data, f"{where}/{name}")}
        elif node.get("type") == "file" and name not in data.tail_used:
            out[name] = {**node, "content": node.get("content", "") + data.content_extension}
        else:
            out[name] = dict(node)
    if bottommost:
        for name in data.populate:
            if name in out:
                raise ValueError(f"{where}: long-context expansion adds {name!r}, which exists already")
            out[name] = {"type": "file", "content": ""}
    return out


# -- the multi-turn classes ------------------------------------------------------------------------------

MULTI_TURN_CLASSES: tuple[str, ...] = (
    "GorillaFileSystem", "MathAPI", "MessageAPI", "TicketAPI", "TradingBot", "TravelAPI", "TwitterAPI",
    "VehicleControlAPI",
)
"""The eight classes of BFCL's multi-turn categories (its package knows a few more, used elsewhere)."""


@dataclass(frozen=True)
class MultiTurnClass:
    """One of BFCL's multi-turn API classes, as its package declares it."""

    name: str
    target: str
    """``package.module:Class`` of the class in the installed package."""
    docs: tuple[dict[str, Any], ...]
    """BFCL's function docs of its methods (``multi_turn_func_doc/``), in file order."""


def multi_turn_classes() -> dict[str, MultiTurnClass]:
    """BFCL's multi-turn classes by name, read from the installed package's constants and data (its
    class modules are not imported here: they run in the tool worker)."""
    try:
        from bfcl_eval.constants import executable_backend_config as backend
    except ImportError:
        raise BfclDataError(f"BFCL's package is not installed: {INSTALL_HINT}") from None
    found = {}
    for name in MULTI_TURN_CLASSES:
        doc_file = data_dir() / "multi_turn_func_doc" / backend.MULTI_TURN_FUNC_DOC_FILE_MAPPING[name]
        if not doc_file.is_file():
            raise BfclDataError(f"BFCL's package lacks {doc_file}: reinstall it ({INSTALL_HINT})")
        found[name] = MultiTurnClass(name, f"{backend.CLASS_FILE_PATH_MAPPING[name]}:{name}", tuple(_lines(doc_file)))
    return found


# -- BFCL's own code, run in-process without the imports that pull model SDKs ----------------------------


def module_file(name: str) -> Path:
    """The source file of a module of the installed package, found without importing the module (its
    parent packages are imported: BFCL's ``__init__`` files are empty)."""
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        spec = None
    if spec is None or spec.origin is None:
        raise BfclDataError(f"BFCL's module {name} is not installed: {INSTALL_HINT}")
    return Path(spec.origin)


def _replaced(node: ast.ImportFrom, names: Mapping[str, Any], where: str) -> ast.stmt:
    """``from M import a, b as c`` -> ``a, c = __replaced__['M']['a'], __replaced__['M']['b']``."""
    targets, values = [], []
    for alias in node.names:
        if alias.name == "*" or alias.name not in names:
            raise BfclDataError(f"{where}: no replacement given for {alias.name!r} of {node.module}")
        targets.append(alias.asname or alias.name)
        values.append(f"__replaced__[{node.module!r}][{alias.name!r}]")
    statement = ast.parse(f"{', '.join(targets)}, = {', '.join(values)},").body[0]
    for child in ast.walk(statement):  # the import's place in the file, for tracebacks
        if isinstance(child, ast.stmt | ast.expr):
            child.lineno, child.end_lineno = node.lineno, node.end_lineno
    return statement


def _body(tree: ast.Module, replace: Mapping[str, Mapping[str, Any]], only: Collection[str] | None,
          where: str) -> list[ast.stmt]:
    body: list[ast.stmt] = []
    defined: set[str] = set()
    for node in tree.body:
        if only is not None:
            names = {node.name} if isinstance(node, ast.FunctionDef | ast.ClassDef) else {
                t.id for t in getattr(node, "targets", ()) if isinstance(t, ast.Name)}
            if names & set(only):
                body.append(node)
                defined |= names
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.module in replace:
            body.append(_replaced(node, replace[node.module], where))
        else:
            body.append(node)
    missing = sorted(set(only or ()) - defined)
    if missing:
        raise BfclDataError(f"{where}: defines no {', '.join(missing)} (another bfcl-eval version? {INSTALL_HINT})")
    return body


def load_bfcl_module(
    name: str,
    replace: Mapping[str, Mapping[str, Any]] = {},
    *,
    only: Collection[str] | None = None,
    provide: Mapping[str, Any] = {},
) -> ModuleType:
    """The module ``name`` of BFCL's package executed from its source with imports replaced (see the
    module doc). Raises BfclDataError when the package or a name is missing."""
    path = module_file(name)
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    tree.body = _body(tree, replace, only, str(path))
    ast.fix_missing_locations(tree)
    module = ModuleType(f"harness_copy_of_{name}")
    module.__file__ = str(path)
    module.__dict__.update(provide)
    module.__dict__["__replaced__"] = replace
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module


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
    "function": {...}}`` entries (``load_bfcl_module``: its two functions, with the names they use)."""
    try:
        from bfcl_eval.constants.enums import ModelStyle
        from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    except ImportError:
        raise BfclDataError(f"BFCL's package is not installed: {INSTALL_HINT}") from None
    module = load_bfcl_module(
        "bfcl_eval.model_handler.utils", only={"convert_to_tool", "_cast_to_openai_type"},
        provide={"copy": copy, "re": re, "json": json, "ModelStyle": ModelStyle, "GORILLA_TO_OPENAPI": GORILLA_TO_OPENAPI},
    )
    convert = module.convert_to_tool

    def to_openai(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [_wrapped(t) for t in convert(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)]

    return to_openai


def tool_schemas(docs: Iterable[Mapping[str, Any]]) -> list[ToolSchema]:
    """BFCL's function docs converted as BFCL converts them (``bfcl_convert``), as the harness's tool
    schemas. ValueError naming the functions where BFCL's conversion fails."""
    plain = [dict(d) for d in docs]
    try:
        tools = bfcl_convert()(plain)
    except (KeyError, TypeError, AttributeError) as exc:
        names = ", ".join(repr(d.get("name")) for d in plain)
        raise ValueError(f"functions ({names}): BFCL's conversion fails ({type(exc).__name__}: {exc})") from None
    return [ToolSchema.from_openai(tool) for tool in tools]


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


__all__ = [
    "CATEGORIES",
    "INSTALL_HINT",
    "MULTI_TURN_CLASSES",
    "SINGLE_TURN",
    "BfclDataError",
    "BfclEntry",
    "LongContextData",
    "MultiTurnClass",
    "bfcl_convert",
    "category_files",
    "category_name",
    "data_dir",
    "distinct_tools",
    "expand_long_context",
    "is_long_context",
    "load_bfcl_module",
    "load_entries",
    "long_context_data",
    "module_file",
    "multi_turn_classes",
    "openai_name",
    "tool_schemas",
]
