"""A sample's working folder: seeded from the case's tree, read back as the state compared.

A case gives its files as the ``.pym`` tools' cases do (``initial_fs``: one top folder, GorillaFileSystem's nodes);
the top folder is created on disk with everything under it. A snapshot is the folder's tree read back:
``{name: {...}}`` per folder and ``{name: text}`` per file (a file that is not UTF-8 text: its size and
SHA-256), so two samples' folders are the same state when their snapshots are equal.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

Tree = dict[str, Any]


def top_folder(tree: Mapping[str, Any] | None) -> tuple[str, Mapping[str, Any]]:
    """The name and contents (GorillaFileSystem nodes) of a case tree's one top folder (``workspace``, empty, without one)."""
    nodes: Mapping[str, Any] = (tree or {}).get("root", tree or {})
    if not nodes:
        return "workspace", {}
    name, node = next(iter(nodes.items()))
    return name, node.get("contents", {})


def seed(folder: Path, contents: Mapping[str, Any]) -> None:
    """Write GorillaFileSystem nodes (``{"type": "file", "content": ...}`` / ``{"type": "directory", "contents": ...}``)
    under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, node in contents.items():
        if node.get("type") == "directory":
            seed(folder / name, node.get("contents", {}))
        else:
            (folder / name).write_text(str(node.get("content", "")), encoding="utf-8")


def snapshot(folder: Path, ignore: frozenset[str] = frozenset()) -> Tree:
    """The folder's tree and file contents now, without the names in ``ignore`` (links are named,
    never followed)."""
    out: Tree = {}
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            path = Path(entry.path)
            if entry.name in ignore:
                continue
            if entry.is_symlink():
                out[entry.name] = f"<link to {os.readlink(path)}>"
            elif entry.is_dir():
                out[entry.name] = snapshot(path, ignore)
            else:
                data = path.read_bytes()
                try:
                    out[entry.name] = data.decode("utf-8")
                except UnicodeDecodeError:
                    out[entry.name] = f"<{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}>"
    return out




def lookup(tree: Mapping[str, Any], path: str) -> Any:
    """The node at ``path`` ("a/b.txt", relative to the folder): text, a mapping, or None when absent."""
    node: Any = tree
    for part in [p for p in path.split("/") if p and p != "."]:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


__all__ = ["Tree", "lookup", "seed", "snapshot", "top_folder"]
