"""The virtual files a script sees: a read-only in-memory tree served to the sandbox.

``files`` maps absolute virtual paths to nodes: a ``str``/``bytes`` is a file's content, a ``dict`` a
directory (name -> node, nested; insertion order is listing order, empty dicts are empty
directories). Mounted dicts are shared, not copied, so handing a large tree to a call costs nothing.

Scripts are pure functions: writes, deletions and renames raise ``PermissionError`` (read-only file
system); a script returns the mutations it wants and the host applies them after the run.

One convention differs from a disk: a directory's ``stat().st_size`` is the total size in bytes
(utf-8) of the files below it, so a ``du`` is one host round trip (~0.1 ms) instead of one per file.
This module imports pydantic-monty; import it only where a script runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

import pydantic_monty as pm

Node = dict[str, Any] | str | bytes


def build_tree(files: Mapping[str, Any] | None) -> dict[str, Any]:
    """Mount every ``path -> node`` of ``files`` into one root directory (provided dicts are not modified)."""
    root: dict[str, Any] = {}
    if not files:
        return root
    owned = {id(root)}
    for path in sorted(files, key=lambda p: p.count("/")):
        node = files[path]
        if not isinstance(node, dict | str | bytes):
            raise TypeError(f"virtual file {path!r}: content must be str, bytes or a dict (a directory)")
        parts = _parts(path)
        if not parts:
            raise ValueError(f"cannot mount over the virtual root: {path!r}")
        parent = root
        for part in parts[:-1]:
            child = parent.get(part)
            if child is None:
                child = {}
                owned.add(id(child))
            elif not isinstance(child, dict):
                raise ValueError(f"virtual file {path!r} lies below the file {part!r}")
            elif id(child) not in owned:  # a shared (mounted) dict: copy before adding to it
                child = dict(child)
                owned.add(id(child))
            parent[part] = child
            parent = child
        if isinstance(parent.get(parts[-1]), dict) and isinstance(node, dict):
            merged = dict(parent[parts[-1]])
            merged.update(node)
            node = merged
        parent[parts[-1]] = node
    return root


def _parts(path: str | PurePosixPath) -> list[str]:
    out: list[str] = []
    for part in str(path).split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
            continue
        out.append(part)
    return out


def _size(content: str | bytes) -> int:
    return len(content.encode("utf-8")) if isinstance(content, str) else len(content)


def _tree_size(tree: dict[str, Any]) -> int:
    return sum(_tree_size(n) if isinstance(n, dict) else _size(n) for n in tree.values())


def _enoent(path: object) -> FileNotFoundError:
    return FileNotFoundError(2, "No such file or directory", str(path))


def _read_only(path: object) -> PermissionError:
    return PermissionError(30, "Read-only file system (return mutations instead of writing)", str(path))


class TreeOS(pm.AbstractOS):
    """pydantic-monty's OS handler over a tree of dicts: reads, listings, stat, walk; no writes."""

    def __init__(self, root: dict[str, Any], environ: Mapping[str, str] | None = None) -> None:
        self._root: dict[str, Any] | None = root
        self._files: Mapping[str, Any] | None = None
        self.environ = dict(environ or {})

    @classmethod
    def mounting(cls, files: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> TreeOS:
        """A handler over ``files`` (see ``build_tree``), mounted on first use: a script that reads no
        file never pays for it. Raises TypeError/ValueError now for contents that are not files or
        folders, or a mount over the root; clashes between mounts are found when they are mounted."""
        handler = cls({}, environ)
        if files:
            for path, node in files.items():
                if not isinstance(node, dict | str | bytes):
                    raise TypeError(f"virtual file {path!r}: content must be str, bytes or a dict (a directory)")
                if not _parts(path):
                    raise ValueError(f"cannot mount over the virtual root: {path!r}")
            handler._root, handler._files = None, files
        return handler

    @property
    def root(self) -> dict[str, Any]:
        if self._root is None:
            self._root = build_tree(self._files)
        return self._root

    def _get(self, path: Any) -> Any:
        node: Any = self.root
        for part in _parts(pm.os_access.path_from_arg(path)):
            if not isinstance(node, dict):
                return None
            node = node.get(part)
            if node is None:
                return None
        return node

    def _file(self, path: Any) -> str | bytes:
        node = self._get(path)
        if node is None:
            raise _enoent(pm.os_access.path_from_arg(path))
        if isinstance(node, dict):
            raise IsADirectoryError(21, "Is a directory", str(pm.os_access.path_from_arg(path)))
        return node  # type: ignore[no-any-return]

    def _dir(self, path: PurePosixPath) -> dict[str, Any]:
        node = self._get(path)
        if node is None:
            raise _enoent(path)
        if not isinstance(node, dict):
            raise NotADirectoryError(20, "Not a directory", str(path))
        return node

    def path_exists(self, path: PurePosixPath) -> bool:
        return self._get(path) is not None

    def path_is_file(self, path: PurePosixPath) -> bool:
        return isinstance(self._get(path), str | bytes)

    def path_is_dir(self, path: PurePosixPath) -> bool:
        return isinstance(self._get(path), dict)

    def path_is_symlink(self, path: PurePosixPath) -> bool:
        return False

    def path_open(self, path: PurePosixPath, mode: str) -> pm.MontyFileHandle:
        if any(c in mode for c in "wax+"):
            raise _read_only(path)
        self._file(path)
        return pm.MontyFileHandle(str(path), mode)

    def path_read_text(self, path: Any) -> str:
        content = self._file(path)
        return content.decode("utf-8", errors="replace") if isinstance(content, bytes) else content

    def path_read_bytes(self, path: Any) -> bytes:
        content = self._file(path)
        return content.encode("utf-8") if isinstance(content, str) else content

    def path_write_text(self, path: Any, data: str) -> int:
        raise _read_only(pm.os_access.path_from_arg(path))

    def path_write_bytes(self, path: Any, data: bytes) -> int:
        raise _read_only(pm.os_access.path_from_arg(path))

    def path_append_text(self, path: Any, data: str) -> int:
        raise _read_only(pm.os_access.path_from_arg(path))

    def path_append_bytes(self, path: Any, data: bytes) -> int:
        raise _read_only(pm.os_access.path_from_arg(path))

    def path_mkdir(self, path: PurePosixPath, parents: bool, exist_ok: bool) -> None:
        raise _read_only(path)

    def path_unlink(self, path: PurePosixPath) -> None:
        raise _read_only(path)

    def path_rmdir(self, path: PurePosixPath) -> None:
        raise _read_only(path)

    def path_rename(self, path: PurePosixPath, target: PurePosixPath) -> None:
        raise _read_only(path)

    def path_iterdir(self, path: PurePosixPath) -> list[PurePosixPath]:
        return [path / name for name in self._dir(path)]

    def path_scan(
        self,
        path: PurePosixPath,
        *,
        max_depth: int | None,
        follow_symlinks: bool,
        pattern: list[str] | None = None,
        case_sensitive: bool | None = None,
        recurse_symlinks: bool = False,
    ) -> list[pm.ScanEntry]:
        node = self._get(path)
        if node is None:
            raise _enoent(path)
        entries = [pm.ScanEntry("", isinstance(node, dict), not isinstance(node, dict), False)]
        stack: list[tuple[dict[str, Any], str, int]] = [(node, "", 0)] if isinstance(node, dict) else []
        while stack:
            directory, relative, depth = stack.pop()
            if max_depth is not None and depth >= max_depth:
                continue
            for name, child in directory.items():
                rel = f"{relative}/{name}" if relative else name
                is_dir = isinstance(child, dict)
                entries.append(pm.ScanEntry(rel, is_dir, not is_dir, False))
                if is_dir:
                    stack.append((child, rel, depth + 1))
        return entries

    def path_stat(self, path: PurePosixPath) -> pm.StatResult:
        node = self._get(path)
        if node is None:
            raise _enoent(path)
        if isinstance(node, dict):
            stat = pm.StatResult.dir_stat(mtime=0.0)
            return stat._replace(st_size=_tree_size(node))
        return pm.StatResult.file_stat(_size(node), mtime=0.0)

    def path_resolve(self, path: PurePosixPath) -> str:
        return "/" + "/".join(_parts(path))

    def path_absolute(self, path: PurePosixPath) -> str:
        return str(path)

    def getenv(self, key: str, default: str | None = None) -> str | None:
        return self.environ.get(key, default)

    def get_environ(self) -> dict[str, str]:
        return dict(self.environ)
