"""BFCL's own GorillaFileSystem and data from the ``bfcl-eval`` package, seen as the harness sees a
file system (helpers for the tests that compare against BFCL; no tests).

Importing this module needs ``bfcl_eval``: a test module skips first when it is missing.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.gorilla_file_system import (
    Directory,
    GorillaFileSystem,
)

from harness.sandbox import FileSystemState

CATEGORIES = ("base", "miss_param", "long_context", "miss_func")
"""BFCL's multi-turn categories with GorillaFileSystem-only entries."""
SKIP_REASON = "BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23"


# -- BFCL's class ----------------------------------------------------------------------------------------


def bfcl_from_state(state: FileSystemState) -> GorillaFileSystem:
    fs = GorillaFileSystem()
    fs._load_scenario(copy.deepcopy(state.to_nodes()))
    for name in state.cwd:
        fs._current_dir = fs._current_dir.contents[name]
    return fs


def tree_of(directory: Directory, seen: frozenset[int] = frozenset()) -> dict[str, Any]:
    """BFCL's tree as nested dicts; a directory that holds itself is shown as ``"<cycle>"``."""
    out: dict[str, Any] = {}
    for name, item in directory.contents.items():
        if isinstance(item, Directory):
            out[name] = "<cycle>" if id(item) in seen else tree_of(item, seen | {id(directory)})
        else:
            out[name] = item.content
    return out


def cwd_of(fs: GorillaFileSystem) -> tuple[str, ...]:
    names: list[str] = []
    folder = fs._current_dir
    while folder is not None and folder is not fs.root:
        names.append(folder.name)
        folder = folder.parent
    return tuple(reversed(names))


# -- BFCL's data ----------------------------------------------------------------------------------------


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass(frozen=True)
class FsEntry:
    """A GorillaFileSystem-only multi-turn entry as BFCL holds and loads it."""

    entry: dict[str, Any]
    """The entry's line, as in the package."""
    state: FileSystemState
    """Its file system as BFCL's own loader builds it (long-context entries expanded)."""
    ground_truth: list[list[str]]
    """Calls per turn, in Python syntax."""

    @property
    def id(self) -> str:
        return str(self.entry["id"])


def fs_only_entries() -> list[FsEntry]:
    """Every GorillaFileSystem-only entry of ``CATEGORIES``, in the package's order."""
    import bfcl_eval

    data = Path(bfcl_eval.__file__).parent / "data"
    out = []
    for category in CATEGORIES:
        truth = {a["id"]: a["ground_truth"] for a in _lines(data / "possible_answer" / f"BFCL_v4_multi_turn_{category}.json")}
        for entry in _lines(data / f"BFCL_v4_multi_turn_{category}.json"):
            if entry["involved_classes"] != ["GorillaFileSystem"]:
                continue
            fs = GorillaFileSystem()
            fs._load_scenario(copy.deepcopy(entry["initial_config"]["GorillaFileSystem"]),
                              long_context=category == "long_context")
            state = FileSystemState(fs.root.name, tree_of(fs.root))
            out.append(FsEntry(entry, state, truth[entry["id"]]))
    return out
