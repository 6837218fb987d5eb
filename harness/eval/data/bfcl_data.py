"""BFCL's data as the installed ``bfcl-eval`` package holds it, and BFCL's long-context expansion.

``bfcl-eval`` (the Berkeley Function Calling Leaderboard's own package) ships its data files under
``bfcl_eval/data``: one file per category (one JSON object per line) and a ``possible_answer/`` file
with the same name. Install it without its dependencies (they pin numpy and pull model SDKs the
harness does not need): ``pip install --no-deps bfcl-eval==2026.3.23``. Only stdlib modules of the
package are imported here.

Long-context entries: when BFCL loads the file system of an entry whose category names
``long_context`` (or ``composite``), every file not on a short list gets a fixed block of text
appended, and every directory without subdirectories gets 30 empty image files. ``expand_long_context``
does the same to a BFCL ``initial_config`` tree, with the text and names taken from the package.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


__all__ = [
    "CATEGORIES",
    "INSTALL_HINT",
    "BfclDataError",
    "LongContextData",
    "category_files",
    "category_name",
    "data_dir",
    "expand_long_context",
    "is_long_context",
    "long_context_data",
]
