"""The Gorilla file system's state on the host: a tree, a current directory, mutations, its node format.

The tree (``harness.sandbox.gorilla.tree``) is nested dicts. The scripts in ``bundles/shellper/tools``
get it as inputs (``here``, ``root``; paths under ``/fs/<root name>/...``) and return mutations;
``apply`` performs them, all or none, each within the tree's bounds. Equality compares the trees only
(names and contents, order-free), like ``GorillaFileSystem.__eq__``; the current directory is
not part of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.sandbox.gorilla.tree import (
    MOUNT,
    MutationError,
    Tree,
    TreeLimitError,
    TreeLimits,
    check_bound,
    copy_tree,
    count_entries,
    measure_tree,
    read_directory,
    scan_tree,
    tree_diff,
    tree_from_nodes,
    tree_height,
    tree_to_nodes,
)


class FileSystemState:
    """A GorillaFileSystem state: ``root_name``, the ``tree`` below it, and ``cwd`` (names below root).

    ``limits`` bound the tree (``TreeLimits``); a tree given that breaks them, holds a name no path can
    reach or a string that is not valid text is refused with ValueError naming where.
    """

    def __init__(
        self,
        root_name: str = "workspace",
        tree: Tree | None = None,
        cwd: Sequence[str] = (),
        *,
        limits: TreeLimits | None = None,
    ) -> None:
        if not root_name or "/" in root_name:
            raise ValueError(f"bad root directory name {root_name!r}")
        self.root_name = root_name
        self.tree: Tree = tree if tree is not None else {}
        self.cwd: tuple[str, ...] = tuple(cwd)
        self.limits = limits or TreeLimits()
        self._totals: tuple[int, int] | None = None
        scan_tree(self.tree, root_name, self.limits)
        if not isinstance(self._node(self.cwd), dict):
            raise ValueError(f"current directory {'/'.join(self.cwd)!r} is not a directory of the tree")

    # ------------------------------------------------------------ the node format
    @classmethod
    def from_nodes(cls, config: Mapping[str, Any]) -> FileSystemState:
        """From ``{"root": {NAME: {"type": "directory", "contents": {...}}}}`` (or an ``initial_config``
        holding it under ``"GorillaFileSystem"``). Files are ``{"type": "file", "content": "..."}``."""
        if "GorillaFileSystem" in config:
            config = config["GorillaFileSystem"]
        root = config.get("root")
        if not isinstance(root, Mapping) or not root:
            raise ValueError("a Gorilla file-system config needs a 'root' with one top-level directory")
        name, node = next(iter(root.items()))
        if not isinstance(node, Mapping) or node.get("type") != "directory":
            raise ValueError(f"the root {name!r} must be a directory")
        return cls(name, tree_from_nodes(node.get("contents") or {}, name))

    def to_nodes(self) -> dict[str, Any]:
        """The state as ``GorillaFileSystem``'s ``{"root": {NAME: {"type": "directory", "contents": ...}}}``."""
        return {"root": {self.root_name: {"type": "directory", "contents": tree_to_nodes(self.tree)}}}

    @classmethod
    def from_directory(
        cls,
        path: str | Path,
        *,
        limits: TreeLimits | None = None,
        on_skip: Callable[[Path, str], None] | None = None,
    ) -> FileSystemState:
        """A host directory read into memory (text files, utf-8 with replacement); the root is its name.

        Nothing outside ``path`` is read: symbolic links are never followed (a link to a host file or
        folder is skipped, as are sockets, pipes and devices; ``on_skip(path, why)`` hears of each).
        Raises ValueError naming the path for a directory that cannot be read or breaks ``limits``.
        """
        limits = limits or TreeLimits()
        name, root = read_directory(Path(path), limits, on_skip)
        return cls(name, root, limits=limits)

    # ------------------------------------------------------------ paths
    @property
    def root_path(self) -> str:
        """The root's virtual path: ``/fs/<root name>``."""
        return f"{MOUNT}/{self.root_name}"

    @property
    def cwd_path(self) -> str:
        """The current directory's virtual path, as the scripts get it (``/fs/alex/docs``)."""
        return "/".join((self.root_path, *self.cwd))

    @property
    def pwd(self) -> str:
        """The current directory as ``GorillaFileSystem``'s ``pwd`` reports it (``/alex/docs``)."""
        return "/" + "/".join((self.root_name, *self.cwd))

    def virtual_files(self) -> dict[str, Any]:
        """The tree as virtual files for a script (shared, not copied: scripts cannot write)."""
        return {self.root_path: self.tree}

    @property
    def here(self) -> Tree:
        """The current directory's entries (the tree's own dict: a script gets its copy)."""
        node = self._node(self.cwd)
        if not isinstance(node, dict):
            raise ValueError(f"current directory {self.pwd!r} is no longer a directory of the tree")
        return node

    def _split(self, virtual: str) -> tuple[str, ...]:
        """Virtual path -> names below the root; MutationError when outside the tree."""
        if not isinstance(virtual, str):
            raise MutationError(f"a path must be a string, got {type(virtual).__name__}")
        parts = [p for p in virtual.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise MutationError(f"path {virtual!r}: '..' is not allowed in a mutation")
        head = [p for p in MOUNT.split("/") if p] + [self.root_name]
        if parts[: len(head)] != head:
            raise MutationError(f"path {virtual!r} is outside the file system {self.root_path!r}")
        return tuple(parts[len(head) :])

    def _node(self, names: Iterable[str]) -> Any:
        node: Any = self.tree
        for name in names:
            if not isinstance(node, dict) or name not in node:
                return None
            node = node[name]
        return node

    def _parent(self, names: tuple[str, ...], op: str) -> Tree:
        if not names:
            raise MutationError(f"{op}: cannot act on the root directory itself")
        parent = self._node(names[:-1])
        if not isinstance(parent, dict):
            raise MutationError(f"{op}: no directory {'/'.join((self.root_name, *names[:-1]))!r}")
        return parent

    def get(self, path: str) -> Any:
        """The node at a path relative to the root (``"docs/a.txt"``): a str, a dict, or None."""
        return self._node(p for p in path.split("/") if p)

    # ------------------------------------------------------------ mutations
    def apply(self, mutations: Sequence[Mapping[str, Any]]) -> None:
        """Apply the mutations a tool returned, in order. Raises MutationError on a malformed or impossible one.

        Ops (paths are virtual, ``/fs/<root>/...``): ``mkdir path``; ``write path content`` (create or
        replace a file); ``append path content`` (create or extend); ``delete path`` (file or whole
        directory); ``move src dst``; ``copy src dst`` (deep); ``chdir path``. All or none: when one
        fails (TreeLimitError when it would break the tree's limits), the state is as it was before.
        """
        undo: list[Callable[[], None]] = []
        cwd = self.cwd
        self._totals = None  # (entries, characters), counted when first needed
        try:
            for m in mutations:
                if not isinstance(m, Mapping):
                    raise MutationError(f"a mutation must be an object, got {type(m).__name__}")
                op = m.get("op")
                handler = _OPS.get(op) if isinstance(op, str) else None
                if handler is None:
                    raise MutationError(f"unknown mutation op {op!r} (expected one of {', '.join(_OPS)})")
                handler(self, m, undo)
        except MutationError:
            for step in reversed(undo):
                step()
            self.cwd = cwd
            raise

    def _grow(self, entries: int, chars: int, where: str) -> None:
        """Count ``entries`` and ``chars`` more into the tree, or raise TreeLimitError (nothing changed)."""
        if self._totals is None:
            self._totals = measure_tree(self.tree)
        total_entries, total_chars = self._totals[0] + entries, self._totals[1] + chars
        limits = self.limits
        check_bound(total_entries, limits.max_entries, "tree_entries", f"{where}: the tree would hold more than {limits.max_entries} entries")
        check_bound(total_chars, limits.max_bytes, "tree_bytes", f"{where}: the tree would hold more than {limits.max_bytes} characters")
        self._totals = (total_entries, total_chars)

    def _deep(self, names: tuple[str, ...], height: int, where: str) -> None:
        check_bound(len(names) + height, self.limits.max_depth, "tree_depth", f"{where}: the tree would be more than {self.limits.max_depth} levels deep")

    def _arg(self, m: Mapping[str, Any], key: str) -> Any:
        if key not in m:
            raise MutationError(f"{m.get('op')}: missing {key!r}")
        return m[key]

    def _mkdir(self, m: Mapping[str, Any], undo: list[Callable[[], None]]) -> None:
        names = self._split(self._arg(m, "path"))
        parent = self._parent(names, "mkdir")
        if names[-1] in parent:
            raise MutationError(f"mkdir: {names[-1]!r} already exists")
        self._deep(names, 0, "mkdir")
        self._grow(1, 0, "mkdir")
        parent[names[-1]] = {}
        undo.append(lambda: parent.pop(names[-1]))

    def _write(self, m: Mapping[str, Any], undo: list[Callable[[], None]], append: bool = False) -> None:
        op = "append" if append else "write"
        names = self._split(self._arg(m, "path"))
        content = self._arg(m, "content")
        if not isinstance(content, str):
            raise MutationError(f"{op}: content must be a string")
        parent = self._parent(names, op)
        name = names[-1]
        existing = parent.get(name)
        if isinstance(existing, dict):
            raise MutationError(f"{op}: {name!r} is a directory")
        new = (existing or "") + content if append else content
        self._deep(names, 0, op)
        self._grow(existing is None, len(new) - len(existing or ""), op)
        parent[name] = new
        undo.append(lambda: parent.pop(name) if existing is None else parent.__setitem__(name, existing))

    def _delete(self, m: Mapping[str, Any], undo: list[Callable[[], None]]) -> None:
        names = self._split(self._arg(m, "path"))
        parent = self._parent(names, "delete")
        if names[-1] not in parent:
            raise MutationError(f"delete: no {names[-1]!r}")
        undo.append(_restorer(parent))
        node = parent.pop(names[-1])
        if self._totals is not None:
            gone = measure_tree(node) if isinstance(node, dict) else (0, len(node))
            self._totals = (self._totals[0] - gone[0] - 1, self._totals[1] - gone[1])
        if self.cwd[: len(names)] == names:  # the current directory went with it
            self.cwd = names[:-1]

    def _transfer(self, m: Mapping[str, Any], undo: list[Callable[[], None]], keep_source: bool) -> None:
        op = "copy" if keep_source else "move"
        src = self._split(self._arg(m, "src"))
        dst = self._split(self._arg(m, "dst"))
        src_parent = self._parent(src, op)
        if src[-1] not in src_parent:
            raise MutationError(f"{op}: no {src[-1]!r}")
        if dst[: len(src)] == src:
            raise MutationError(f"{op}: cannot put {'/'.join(src)!r} inside itself")
        dst_parent = self._parent(dst, op)
        if dst[-1] in dst_parent:
            raise MutationError(f"{op}: {'/'.join(dst)!r} already exists")
        node = src_parent[src[-1]]
        if len(dst) > len(src) or keep_source:
            self._deep(dst, tree_height(node), op)
        if keep_source:
            size = measure_tree(node) if isinstance(node, dict) else (0, len(node))
            self._grow(size[0] + 1, size[1], op)
            dst_parent[dst[-1]] = copy_tree(node) if isinstance(node, dict) else node
            undo.append(lambda: dst_parent.pop(dst[-1]))
        else:
            undo.append(_restorer(src_parent))
            undo.append(lambda: dst_parent.pop(dst[-1]))
            dst_parent[dst[-1]] = src_parent.pop(src[-1])
            if self.cwd[: len(src)] == src:
                self.cwd = dst + self.cwd[len(src) :]

    def _chdir(self, m: Mapping[str, Any], undo: list[Callable[[], None]]) -> None:
        names = self._split(self._arg(m, "path"))
        if not isinstance(self._node(names), dict):
            raise MutationError(f"chdir: {'/'.join((self.root_name, *names))!r} is not a directory")
        self.cwd = names

    # ------------------------------------------------------------ comparison
    def copy(self) -> FileSystemState:
        twin = object.__new__(FileSystemState)  # a checked state's copy needs no second check
        twin.root_name, twin.tree, twin.cwd, twin.limits = self.root_name, copy_tree(self.tree), self.cwd, self.limits
        return twin

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileSystemState):
            return NotImplemented
        return self.root_name == other.root_name and self.tree == other.tree

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FileSystemState(root={self.root_name!r}, cwd={self.pwd!r}, entries={count_entries(self.tree)})"

    def diff(self, other: FileSystemState) -> list[str]:
        """Readable differences between two trees (``+ path``, ``- path``, ``~ path``), for reports."""
        out: list[str] = []
        if self.root_name != other.root_name:
            out.append(f"~ root {self.root_name!r} != {other.root_name!r}")
        tree_diff(self.tree, other.tree, "", out)
        return out


_Op = Callable[[FileSystemState, Mapping[str, Any], list[Callable[[], None]]], None]
_OPS: dict[str, _Op] = {
    "mkdir": FileSystemState._mkdir,
    "write": FileSystemState._write,
    "append": lambda s, m, u: FileSystemState._write(s, m, u, append=True),
    "delete": FileSystemState._delete,
    "move": lambda s, m, u: FileSystemState._transfer(s, m, u, keep_source=False),
    "copy": lambda s, m, u: FileSystemState._transfer(s, m, u, keep_source=True),
    "chdir": FileSystemState._chdir,
}


def _restorer(folder: Tree) -> Callable[[], None]:
    """Puts ``folder``'s entries back as they are now, in this order (listing order is insertion order)."""
    items = list(folder.items())

    def restore() -> None:
        folder.clear()
        folder.update(items)

    return restore


__all__ = ["MOUNT", "FileSystemState", "MutationError", "TreeLimitError", "TreeLimits", "copy_tree"]
