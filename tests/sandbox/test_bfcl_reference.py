"""The 18 ``.pym`` tools against BFCL's own GorillaFileSystem (the ``bfcl-eval`` package).

Each call runs on both sides from the same state; outputs, trees (insertion order included) and the
current directory must be equal, unless the difference is one of the deliberate ones the tools'
README lists (its table is read here: a difference no row names fails, and every row needs an example
that shows it). Calls: every ground-truth call of BFCL's GorillaFileSystem-only multi-turn entries,
and a few thousand seeded random calls over random trees.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip(
    "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.gorilla_file_system",
    reason="BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23",
)

from bfcl_reference import (
    Outcome,
    bfcl_outcome,
    directories,
    documented_ids,
    our_outcome,
    random_call,
    random_tree,
)
from bfcl_side import bfcl_from_state, fs_only_entries

from harness.bfcl import parse_python_call
from harness.sandbox import FileSystemState

RANDOM_CALLS = 3000
SEED = 11
CALLS_PER_TREE = 20

Call = tuple[str, dict[str, Any]]
Classifier = Callable[[FileSystemState, str, dict[str, Any]], bool]


def _here(state: FileSystemState, name: Any) -> Any:
    """The entry ``name`` of the current directory (None when absent or not a plain name)."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name:
        return None
    return (state.get("/".join(state.cwd)) or {}).get(name)


def _into_itself(tool: str) -> Classifier:
    return lambda s, name, a: name == tool and a["source"] == a["destination"] and isinstance(_here(s, a["source"]), dict)


def _cp_onto_existing(s: FileSystemState, name: str, a: dict[str, Any]) -> bool:
    target = _here(s, a.get("destination"))
    return name == "cp" and _here(s, a["source"]) is not None and isinstance(target, dict) and a["source"] in target


def _special_name(s: FileSystemState, name: str, a: dict[str, Any]) -> bool:
    special = ("", ".", "..")
    if name in ("mkdir", "touch"):
        return a.get("dir_name", a.get("file_name")) in special
    return name in ("mv", "cp") and a["destination"] in special and _here(s, a["source"]) is not None


CLASSIFIERS: dict[str, Classifier] = {
    "echo-into-directory": lambda s, name, a: name == "echo" and isinstance(_here(s, a.get("file_name")), dict),
    "mv-into-itself": _into_itself("mv"),
    "cp-into-itself": _into_itself("cp"),
    "cp-onto-existing": _cp_onto_existing,
    "special-names": _special_name,
    "wc-mode-enum": lambda s, name, a: name == "wc" and a.get("mode", "l") not in ("l", "w", "c"),
    "echo-file-name-none": lambda s, name, a: name == "echo" and a.get("file_name") == "None",
}
"""README row -> whether a call, from the state before it, is that case (rows one call can show)."""

DOCS = {"docs": {"a.txt": "x", "sub": {}}, "a.txt": "y"}
EXAMPLES: dict[str, tuple[dict[str, Any], tuple[str, ...], list[Call]]] = {
    "echo-into-directory": (DOCS, (), [("echo", {"content": "x", "file_name": "docs"})]),
    "mv-into-itself": (DOCS, (), [("mv", {"source": "docs", "destination": "docs"})]),
    "cp-into-itself": (DOCS, (), [("cp", {"source": "docs", "destination": "docs"})]),
    "cp-onto-existing": (DOCS, (), [("cp", {"source": "a.txt", "destination": "docs"})]),
    "cp-shallow": (DOCS, (), [
        ("cp", {"source": "docs", "destination": "copy"}),
        ("cd", {"folder": "copy"}),
        ("echo", {"content": "changed", "file_name": "a.txt"}),
        ("cd", {"folder": ".."}),
        ("cd", {"folder": "docs"}),
        ("cat", {"file_name": "a.txt"}),
    ]),
    "special-names": (DOCS, (), [("mkdir", {"dir_name": ".."})]),
    "wc-mode-enum": (DOCS, (), [("wc", {"file_name": "a.txt", "mode": "x"})]),
    "echo-file-name-none": (DOCS, (), [("echo", {"content": "x", "file_name": "None"})]),
}
"""README row -> a tree, a current directory and calls (run in turn on each side) whose last outcome differs."""


def documented(state: FileSystemState, name: str, args: dict[str, Any]) -> list[str]:
    return [row for row, applies in CLASSIFIERS.items() if applies(state, name, args)]


async def compare(fs_tools: dict[str, Any], state: FileSystemState, name: str, args: dict[str, Any]) -> tuple[Outcome, Outcome]:
    """(ours, BFCL's) for one call from ``state``; ``state`` itself is left as the tools leave it."""
    theirs = bfcl_outcome(bfcl_from_state(state), name, args)
    ours = await our_outcome(fs_tools, state, name, args)
    return ours, theirs


def check_same(where: str, ours: Outcome, theirs: Outcome) -> None:
    assert ours == theirs, f"{where}: the tools and BFCL differ:\n  here: {ours}\n  BFCL: {theirs}"


def test_table_rows_and_examples_agree() -> None:
    rows = documented_ids()
    assert rows, "the README's table of deliberate differences was not found"
    assert sorted(rows) == sorted(EXAMPLES), "every README row needs an example here, and only those"
    assert set(CLASSIFIERS) <= set(rows)


@pytest.mark.parametrize("row", sorted(EXAMPLES))
async def test_each_documented_difference_is_real(fs_tools, row: str) -> None:
    tree, cwd, calls = EXAMPLES[row]
    state = FileSystemState("alex", copy.deepcopy(tree), cwd)
    reference = bfcl_from_state(state)
    for name, args in calls:
        before = state.copy()
        theirs = bfcl_outcome(reference, name, args)
        ours = await our_outcome(fs_tools, state, name, args)
    assert ours != theirs, f"{row}: no difference left: drop the README row"
    if row in CLASSIFIERS:
        assert documented(before, name, args) == [row]


async def test_every_ground_truth_call_matches_bfcl(fs_tools) -> None:
    """342 calls of 52 entries (base, miss_param, long_context expanded by BFCL's loader, miss_func)."""
    entries = fs_only_entries()
    calls = 0
    for entry in entries:
        state = entry.state.copy()
        for t, turn in enumerate(entry.ground_truth):
            for text in turn:
                call = parse_python_call(text)
                ours, theirs = await compare(fs_tools, state, call.name, call.arguments)
                check_same(f"{entry.id} turn {t} {text}", ours, theirs)
                calls += 1
    assert len(entries) == 52
    assert calls == 342


async def test_random_calls_match_bfcl_but_for_the_documented_cases(fs_tools) -> None:
    rng = random.Random(SEED)
    undocumented: list[str] = []
    seen: Counter[str] = Counter()
    state = FileSystemState("alex")
    for i in range(RANDOM_CALLS):
        if i % CALLS_PER_TREE == 0:
            tree = random_tree(rng)
            state = FileSystemState("alex", tree, rng.choice(directories(tree)))
        name, args = random_call(rng, state)
        before = state.copy()
        ours, theirs = await compare(fs_tools, state, name, args)
        if ours == theirs:
            continue
        rows = documented(before, name, args)
        seen.update(rows)
        if not rows:
            undocumented.append(f"call {i}: cwd={before.cwd} {name}({args}):\n  here: {ours}\n  BFCL: {theirs}")
    assert not undocumented, f"{len(undocumented)} undocumented differences, e.g.\n" + "\n".join(undocumented[:5])
    # The generator must reach the documented cases too, or this test would not notice them changing.
    assert set(seen) == set(CLASSIFIERS), f"never generated: {set(CLASSIFIERS) - set(seen)}"
