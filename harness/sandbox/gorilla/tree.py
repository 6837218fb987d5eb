"""The Gorilla file system's tree: nested dicts, bounded, walked without recursion, in GorillaFileSystem's node format.

A directory is ``{name: node}`` (insertion order = listing order, as in GorillaFileSystem's ``Directory.contents``),
a file is its content string. A tree is bounded (``TreeLimits``: depth, entries, characters), when a
state is built and before each mutation is applied, so that no script can grow the host's memory
without bound (a copy into a sibling doubles a tree: 74 such copies took a host to +256 MB before
these bounds) and every walk of the tree stays shallow. Walks here are iterative.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.sandbox.values import valid_text

Tree = dict[str, Any]
MOUNT = "/fs"
"""Where the tree appears in the sandbox: the root directory ``alex`` is ``/fs/alex``."""


class MutationError(ValueError):
    """A mutation a script returned cannot be applied (its message says which and why)."""


class TreeLimitError(MutationError):
    """A tree would break one of its ``TreeLimits``: ``limit`` is ``tree_depth``, ``tree_entries`` or
    ``tree_bytes`` (a tool call that causes it is ``tool:limit``)."""

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


@dataclass(frozen=True, slots=True)
class TreeLimits:
    """Bounds on a file-system tree, checked when a state is built and before each mutation applies."""

    max_depth: int = 64
    """Names below the root on the longest path (``docs/a.txt`` is 2 deep)."""
    max_entries: int = 10_000
    """Files and folders in the whole tree."""
    max_bytes: int = 4 * 1024**2
    """Characters of all the files' contents together. Each tool call hands the tree to the sandbox,
    whose memory limit must hold it (8 MB under the strict preset)."""


def check_bound(value: int, limit: int, name: str, message: str) -> None:
    if value > limit:
        raise TreeLimitError(message, limit=name)


def read_directory(
    base: Path, limits: TreeLimits, on_skip: Callable[[Path, str], None] | None = None
) -> tuple[str, Tree]:
    """A host directory read into a tree (text files, utf-8 with replacement) and its name: see
    ``FileSystemState.from_directory``. Raises ValueError naming the path."""
    try:
        if not stat.S_ISDIR(base.lstat().st_mode):
            raise ValueError(f"not a directory (links are not followed): {base}")
    except OSError as e:
        raise ValueError(f"cannot read {base}: {e.strerror or e}") from e
    root: Tree = {}
    entries = chars = 0
    stack: list[tuple[Path, Tree, int]] = [(base, root, 0)]
    while stack:
        folder, out, depth = stack.pop()
        try:
            children = sorted(folder.iterdir())
        except OSError as e:
            raise ValueError(f"cannot read {folder}: {e.strerror or e}") from e
        for entry in children:
            try:
                mode = entry.lstat().st_mode
            except OSError as e:
                raise ValueError(f"cannot read {entry}: {e.strerror or e}") from e
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                if on_skip is not None:
                    on_skip(entry, "a symbolic link" if stat.S_ISLNK(mode) else "not a file or folder")
                continue
            entries += 1
            check_bound(entries, limits.max_entries, "tree_entries", f"{base}: more than {limits.max_entries} entries")
            check_bound(depth + 1, limits.max_depth, "tree_depth", f"{entry}: deeper than {limits.max_depth} levels")
            if stat.S_ISDIR(mode):
                child: Tree = {}
                out[entry.name] = child
                stack.append((entry, child, depth + 1))
                continue
            try:
                with entry.open("rb") as handle:  # read no more than the bound allows
                    data = handle.read(limits.max_bytes - chars + 1)
            except OSError as e:
                raise ValueError(f"cannot read {entry}: {e.strerror or e}") from e
            out[entry.name] = text = data.decode("utf-8", errors="replace")
            chars += len(text)
            check_bound(chars, limits.max_bytes, "tree_bytes", f"{base}: more than {limits.max_bytes} characters of files")
    return base.resolve().name or "root", root


def scan_tree(tree: Tree, where: str, limits: TreeLimits) -> None:
    """Every name must be addressable as one path part: not empty, not ``.`` or ``..``, no ``/`` (the
    tools' virtual paths could not reach such an entry, and a path walk would leave the tree); names and
    contents must be valid text; the tree must keep within ``limits``."""
    entries = chars = 0
    stack: list[tuple[Tree, str, int]] = [(tree, where, 1)]
    while stack:
        folder, path, depth = stack.pop()
        for name, node in folder.items():
            if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or not valid_text(name):
                raise ValueError(f"{path}: invalid file or directory name {name!r} (not '', '.', '..', no '/')")
            entries += 1
            check_bound(entries, limits.max_entries, "tree_entries", f"{where}: more than {limits.max_entries} entries")
            check_bound(depth, limits.max_depth, "tree_depth", f"{path}/{name}: deeper than {limits.max_depth} levels")
            if isinstance(node, dict):
                stack.append((node, f"{path}/{name}", depth + 1))
            elif not isinstance(node, str):
                raise ValueError(f"{path}/{name}: a file's content must be a string, got {type(node).__name__}")
            elif not valid_text(node):
                raise ValueError(f"{path}/{name}: the content is not valid text (a lone surrogate)")
            else:
                chars += len(node)
    check_bound(chars, limits.max_bytes, "tree_bytes", f"{where}: more than {limits.max_bytes} characters of files")


def measure_tree(tree: Tree) -> tuple[int, int]:
    """(entries, characters of contents) below ``tree``."""
    entries = chars = 0
    stack = [tree]
    while stack:
        for node in stack.pop().values():
            entries += 1
            if isinstance(node, dict):
                stack.append(node)
            else:
                chars += len(node)
    return entries, chars


def tree_height(node: Any) -> int:
    """How many levels a node adds below its own name: 0 for a file or an empty folder."""
    height = 0
    stack = [(node, 0)]
    while stack:
        folder, depth = stack.pop()
        if isinstance(folder, dict):
            for child in folder.values():
                height = max(height, depth + 1)
                stack.append((child, depth + 1))
    return height


def copy_tree(tree: Tree) -> Tree:
    """A deep copy of a tree (iterative; strings are shared, they are immutable)."""
    root: Tree = {}
    stack = [(tree, root)]
    while stack:
        source, target = stack.pop()
        for name, node in source.items():
            if isinstance(node, dict):
                child: Tree = {}
                target[name] = child
                stack.append((node, child))
            else:
                target[name] = node
    return root


def tree_from_nodes(contents: Mapping[str, Any], where: str) -> Tree:
    out: Tree = {}
    for name, node in contents.items():
        kind = node.get("type") if isinstance(node, Mapping) else None
        if kind == "directory":
            out[name] = tree_from_nodes(node.get("contents") or {}, f"{where}/{name}")
        elif kind == "file":
            content = node.get("content", "")
            if not isinstance(content, str):
                raise ValueError(f"{where}/{name}: file content must be a string")
            out[name] = content
        else:
            raise ValueError(f"{where}/{name}: expected type 'directory' or 'file', got {kind!r}")
    return out


def tree_to_nodes(tree: Tree) -> dict[str, Any]:
    return {
        name: {"type": "directory", "contents": tree_to_nodes(node)}
        if isinstance(node, dict)
        else {"type": "file", "content": node}
        for name, node in tree.items()
    }


def count_entries(tree: Tree) -> int:
    return sum(1 + (count_entries(n) if isinstance(n, dict) else 0) for n in tree.values())


def tree_diff(a: Tree, b: Tree, prefix: str, out: list[str]) -> None:
    for name in a.keys() | b.keys():
        path = f"{prefix}/{name}"
        x, y = a.get(name), b.get(name)
        if y is None:
            out.append(f"- {path}")
        elif x is None:
            out.append(f"+ {path}")
        elif isinstance(x, dict) and isinstance(y, dict):
            tree_diff(x, y, path, out)
        elif x != y:
            out.append(f"~ {path}")
    out.sort()


__all__ = [
    "MOUNT",
    "MutationError",
    "Tree",
    "TreeLimitError",
    "TreeLimits",
    "check_bound",
    "copy_tree",
    "count_entries",
    "measure_tree",
    "read_directory",
    "scan_tree",
    "tree_diff",
    "tree_from_nodes",
    "tree_height",
    "tree_to_nodes",
]
