"""The Gorilla file system's state on the host: a tree, a current directory, mutations, BFCL's format.

The tree is nested dicts: a directory is ``{name: node}`` (insertion order = listing order, as in
BFCL's ``Directory.contents``), a file is its content string. The scripts in
``bundles/shellper/tools`` see it read-only as virtual files under ``/fs/<root name>/...`` and return
mutations; ``apply`` performs them. Equality compares the trees only (names and contents, order-free),
like BFCL's ``GorillaFileSystem.__eq__``; the current directory is not part of it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

Tree = dict[str, Any]
MOUNT = "/fs"
"""Where the tree appears in the sandbox: the root directory ``alex`` is ``/fs/alex``."""


class MutationError(ValueError):
    """A mutation a script returned cannot be applied (its message says which and why)."""


class FileSystemState:
    """A BFCL GorillaFileSystem state: ``root_name``, the ``tree`` below it, and ``cwd`` (names below root)."""

    def __init__(
        self, root_name: str = "workspace", tree: Tree | None = None, cwd: Sequence[str] = ()
    ) -> None:
        if not root_name or "/" in root_name:
            raise ValueError(f"bad root directory name {root_name!r}")
        self.root_name = root_name
        self.tree: Tree = tree if tree is not None else {}
        self.cwd: tuple[str, ...] = tuple(cwd)
        _check_names(self.tree, root_name)
        if not isinstance(self._node(self.cwd), dict):
            raise ValueError(f"current directory {'/'.join(self.cwd)!r} is not a directory of the tree")

    # ------------------------------------------------------------ BFCL's format
    @classmethod
    def from_bfcl(cls, config: Mapping[str, Any]) -> FileSystemState:
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
        return cls(name, _tree_from_bfcl(node.get("contents") or {}, name))

    def to_bfcl(self) -> dict[str, Any]:
        """The state as BFCL's ``{"root": {NAME: {"type": "directory", "contents": ...}}}``."""
        return {"root": {self.root_name: {"type": "directory", "contents": _tree_to_bfcl(self.tree)}}}

    @classmethod
    def from_directory(cls, path: str | Path) -> FileSystemState:
        """A host directory read into memory (text files, utf-8 with replacement); the root is its name."""
        base = Path(path)
        if not base.is_dir():
            raise ValueError(f"not a directory: {base}")

        def read(d: Path) -> Tree:
            out: Tree = {}
            for entry in sorted(d.iterdir()):
                if entry.is_dir():
                    out[entry.name] = read(entry)
                elif entry.is_file():
                    out[entry.name] = entry.read_text(encoding="utf-8", errors="replace")
            return out

        return cls(base.resolve().name or "root", read(base))

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
        """The current directory as BFCL's ``pwd`` reports it (``/alex/docs``)."""
        return "/" + "/".join((self.root_name, *self.cwd))

    def virtual_files(self) -> dict[str, Any]:
        """The tree as virtual files for a script (shared, not copied: scripts cannot write)."""
        return {self.root_path: self.tree}

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
        directory); ``move src dst``; ``copy src dst`` (deep); ``chdir path``.
        """
        for m in mutations:
            if not isinstance(m, Mapping):
                raise MutationError(f"a mutation must be an object, got {type(m).__name__}")
            op = m.get("op")
            handler = _OPS.get(op) if isinstance(op, str) else None
            if handler is None:
                raise MutationError(f"unknown mutation op {op!r} (expected one of {', '.join(_OPS)})")
            handler(self, m)

    def _arg(self, m: Mapping[str, Any], key: str) -> Any:
        if key not in m:
            raise MutationError(f"{m.get('op')}: missing {key!r}")
        return m[key]

    def _mkdir(self, m: Mapping[str, Any]) -> None:
        names = self._split(self._arg(m, "path"))
        parent = self._parent(names, "mkdir")
        if names[-1] in parent:
            raise MutationError(f"mkdir: {names[-1]!r} already exists")
        parent[names[-1]] = {}

    def _write(self, m: Mapping[str, Any], append: bool = False) -> None:
        op = "append" if append else "write"
        names = self._split(self._arg(m, "path"))
        content = self._arg(m, "content")
        if not isinstance(content, str):
            raise MutationError(f"{op}: content must be a string")
        parent = self._parent(names, op)
        existing = parent.get(names[-1])
        if isinstance(existing, dict):
            raise MutationError(f"{op}: {names[-1]!r} is a directory")
        parent[names[-1]] = (existing or "") + content if append else content

    def _delete(self, m: Mapping[str, Any]) -> None:
        names = self._split(self._arg(m, "path"))
        parent = self._parent(names, "delete")
        if names[-1] not in parent:
            raise MutationError(f"delete: no {names[-1]!r}")
        del parent[names[-1]]
        if self.cwd[: len(names)] == names:  # the current directory went with it
            self.cwd = names[:-1]

    def _transfer(self, m: Mapping[str, Any], keep_source: bool) -> None:
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
        if keep_source:
            dst_parent[dst[-1]] = copy.deepcopy(node)
        else:
            dst_parent[dst[-1]] = src_parent.pop(src[-1])
            if self.cwd[: len(src)] == src:
                self.cwd = dst + self.cwd[len(src) :]

    def _chdir(self, m: Mapping[str, Any]) -> None:
        names = self._split(self._arg(m, "path"))
        if not isinstance(self._node(names), dict):
            raise MutationError(f"chdir: {'/'.join((self.root_name, *names))!r} is not a directory")
        self.cwd = names

    # ------------------------------------------------------------ comparison
    def copy(self) -> FileSystemState:
        twin = object.__new__(FileSystemState)  # a checked state's copy needs no second check
        twin.root_name, twin.tree, twin.cwd = self.root_name, copy.deepcopy(self.tree), self.cwd
        return twin

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileSystemState):
            return NotImplemented
        return self.root_name == other.root_name and self.tree == other.tree

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FileSystemState(root={self.root_name!r}, cwd={self.pwd!r}, entries={_count(self.tree)})"

    def diff(self, other: FileSystemState) -> list[str]:
        """Readable differences between two trees (``+ path``, ``- path``, ``~ path``), for reports."""
        out: list[str] = []
        if self.root_name != other.root_name:
            out.append(f"~ root {self.root_name!r} != {other.root_name!r}")
        _diff(self.tree, other.tree, "", out)
        return out


_OPS = {
    "mkdir": FileSystemState._mkdir,
    "write": FileSystemState._write,
    "append": lambda s, m: FileSystemState._write(s, m, append=True),
    "delete": FileSystemState._delete,
    "move": lambda s, m: FileSystemState._transfer(s, m, keep_source=False),
    "copy": lambda s, m: FileSystemState._transfer(s, m, keep_source=True),
    "chdir": FileSystemState._chdir,
}


def _check_names(tree: Tree, where: str) -> None:
    """Every name must be addressable as one path part: not empty, not ``.`` or ``..``, no ``/``
    (the tools' virtual paths could not reach such an entry, and a path walk would leave the tree)."""
    for name, node in tree.items():
        if not isinstance(name, str) or name in ("", ".", "..") or "/" in name:
            raise ValueError(f"{where}: invalid file or directory name {name!r} (not '', '.', '..', no '/')")
        if isinstance(node, dict):
            _check_names(node, f"{where}/{name}")
        elif not isinstance(node, str):
            raise ValueError(f"{where}/{name}: a file's content must be a string, got {type(node).__name__}")


def _tree_from_bfcl(contents: Mapping[str, Any], where: str) -> Tree:
    out: Tree = {}
    for name, node in contents.items():
        kind = node.get("type") if isinstance(node, Mapping) else None
        if kind == "directory":
            out[name] = _tree_from_bfcl(node.get("contents") or {}, f"{where}/{name}")
        elif kind == "file":
            content = node.get("content", "")
            if not isinstance(content, str):
                raise ValueError(f"{where}/{name}: file content must be a string")
            out[name] = content
        else:
            raise ValueError(f"{where}/{name}: expected type 'directory' or 'file', got {kind!r}")
    return out


def _tree_to_bfcl(tree: Tree) -> dict[str, Any]:
    return {
        name: {"type": "directory", "contents": _tree_to_bfcl(node)}
        if isinstance(node, dict)
        else {"type": "file", "content": node}
        for name, node in tree.items()
    }


def _count(tree: Tree) -> int:
    return sum(1 + (_count(n) if isinstance(n, dict) else 0) for n in tree.values())


def _diff(a: Tree, b: Tree, prefix: str, out: list[str]) -> None:
    for name in a.keys() | b.keys():
        path = f"{prefix}/{name}"
        x, y = a.get(name), b.get(name)
        if y is None:
            out.append(f"- {path}")
        elif x is None:
            out.append(f"+ {path}")
        elif isinstance(x, dict) and isinstance(y, dict):
            _diff(x, y, path, out)
        elif x != y:
            out.append(f"~ {path}")
    out.sort()
