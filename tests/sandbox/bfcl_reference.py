"""BFCL's own GorillaFileSystem next to the 18 ``.pym`` tools (helpers of test_bfcl_reference.py, no tests).

Both sides start from the same ``FileSystemState`` (``bfcl_side.bfcl_from_state`` builds BFCL's
instance with its own loader, pointed at the state's current directory). An outcome is
what a call returned plus the tree (insertion order kept) and the current directory it left.
Importing this module needs ``bfcl_eval`` (the test module skips first when it is missing).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

from bfcl_side import cwd_of, tree_of
from sandbox_helpers import TOOLS_DIR, call_tool

from harness.sandbox import FileSystemState, Workspace

README = TOOLS_DIR / "README.md"


@dataclass(frozen=True)
class Outcome:
    """What one side did: the call's output (or the exception / tool error it ended in), the tree
    as JSON (insertion order is listing order, so it is compared too), the current directory."""

    output: Any
    tree: str
    cwd: tuple[str, ...]


def documented_ids() -> list[str]:
    """The ids of the README's table of deliberate differences, in order."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### Deliberate differences from BFCL", 1)[1]
    return re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.MULTILINE)


def bfcl_outcome(fs: Any, name: str, args: dict[str, Any]) -> Outcome:
    """Run one call on BFCL's instance (in place)."""
    try:
        output = getattr(fs, name)(**args)
    except Exception as exc:  # BFCL's crashes are outcomes too (some are documented differences)
        output = ("exception", type(exc).__name__)
    return Outcome(output, json.dumps(tree_of(fs.root)), cwd_of(fs))


# -- the project's side ---------------------------------------------------------------------------------


async def our_outcome(tools: dict[str, Any], state: FileSystemState, name: str, args: dict[str, Any]) -> Outcome:
    """Run one call on ``state`` (in place) through the tool, as the kernel runs it."""
    result = await call_tool(tools[name], args, Workspace.filesystem(state))
    output = ("tool_error", result.error_kind) if result.is_error else result.output
    return Outcome(output, json.dumps(state.tree), state.cwd)


# -- random trees and calls -----------------------------------------------------------------------------

NAMES = ("docs", "report.txt", "re", "a", "notes.md", ".hidden", "temp", "data.csv", "my file.txt", "café")
"""Few names, so calls often hit existing entries, and names that hold one another ("re" in "report")."""
ODD_NAMES = ("", ".", "..", "/", "a/b", "../a", "docs/", "x|y", "None")
LINES = ("alpha beta", "gamma", "beta delta", "", "zeta é", "  spaced  ")


def random_tree(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for _ in range(rng.randint(0, 4 if depth < 2 else 2)):
        name = rng.choice(NAMES)
        if name in tree:
            continue
        if depth < 3 and rng.random() < 0.35:
            tree[name] = random_tree(rng, depth + 1)
        else:
            tree[name] = "\n".join(rng.choice(LINES) for _ in range(rng.randint(0, 4))) + rng.choice(("", "\n"))
    return tree


def directories(tree: dict[str, Any], below: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [below]
    for name, node in tree.items():
        if isinstance(node, dict):
            found += directories(node, (*below, name))
    return found


def random_name(rng: random.Random, state: FileSystemState) -> str:
    here = list(state.get("/".join(state.cwd)) or {})
    roll = rng.random()
    if here and roll < 0.6:
        return rng.choice(here)
    return rng.choice(NAMES) if roll < 0.85 else rng.choice(ODD_NAMES)


def random_path(rng: random.Random, state: FileSystemState) -> str:
    """A ``find`` path: '.', a name, a nested path that may exist, an absolute one, or an odd one."""
    folders = ["/".join(d) for d in directories(state.tree) if d]
    roll = rng.random()
    if roll < 0.2:
        return "."
    if roll < 0.45:
        return random_name(rng, state)
    if roll < 0.65 and folders:
        return rng.choice(folders) + rng.choice(("", "/"))
    if roll < 0.8 and folders:
        return "/" + rng.choice(folders)
    return rng.choice(("/", "./docs", "docs//a", "..", "/" + state.root_name, ""))


def random_call(rng: random.Random, state: FileSystemState) -> tuple[str, dict[str, Any]]:
    """A plausible call of a random tool (names mostly of the current directory, some odd ones)."""

    def name() -> str:
        return random_name(rng, state)

    def maybe(key: str, value: Any, p: float = 0.6) -> dict[str, Any]:
        return {key: value} if rng.random() < p else {}

    makers = {
        "cat": lambda: {"file_name": name()},
        "cd": lambda: {"folder": rng.choice((name(), name(), "..", "/", ".", "../"))},
        "cp": lambda: {"source": name(), "destination": name()},
        "diff": lambda: {"file_name1": name(), "file_name2": name()},
        "du": lambda: maybe("human_readable", rng.random() < 0.5),
        "echo": lambda: {"content": rng.choice(("hi", "two\nlines", "")), **maybe("file_name", name(), 0.8)},
        "find": lambda: {**maybe("path", random_path(rng, state), 0.7),
                         **maybe("name", rng.choice(("re", "a", ".t", "zz", "")), 0.7)},
        "grep": lambda: {"file_name": name(), "pattern": rng.choice(("a", "beta", "", "q"))},
        "ls": lambda: maybe("a", rng.random() < 0.5, 0.5),
        "mkdir": lambda: {"dir_name": name()},
        "mv": lambda: {"source": name(), "destination": name()},
        "pwd": dict,
        "rm": lambda: {"file_name": name()},
        "rmdir": lambda: {"dir_name": name()},
        "sort": lambda: {"file_name": name()},
        "tail": lambda: {"file_name": name(), **maybe("lines", rng.randint(-2, 6), 0.5)},
        "touch": lambda: {"file_name": name()},
        "wc": lambda: {"file_name": name(), **maybe("mode", rng.choice("lwcx"), 0.5)},
    }
    tool = rng.choice(sorted(makers))
    return tool, makers[tool]()
