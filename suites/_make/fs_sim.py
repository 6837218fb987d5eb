"""A small Gorilla-file-system simulator, used only by make_suites.py to check authored calls.

It follows the Gorilla semantics the suites are written for (one folder level per ``cd``; ``echo``
writes only to an existing file; ``mv``/``cp`` into an existing directory or to a new name, never
onto an existing file; ``rmdir`` only on an empty directory). It is deliberately strict: a call that
errors here is an authoring mistake unless the point is marked as an error case. The harness's own
sandbox (harness/sandbox) is what runs the suites; this file is not part of the package.
"""

from __future__ import annotations

import copy
from typing import Any

_BAD = set('|/\\?%*:"><')


class FsSim:
    def __init__(self, bfcl_tree: dict[str, Any]) -> None:
        self.tree = copy.deepcopy(bfcl_tree)
        root_name = next(iter(self.tree["root"]))
        self.root = self.tree["root"][root_name]
        self.path: list[str] = []

    def _dir(self, parts: list[str]) -> dict[str, Any] | None:
        node = self.root
        for p in parts:
            child = node["contents"].get(p)
            if not child or child["type"] != "directory":
                return None
            node = child
        return node

    @property
    def cwd(self) -> dict[str, Any]:
        node = self._dir(self.path)
        assert node is not None
        return node

    def _file(self, name: str) -> dict[str, Any] | None:
        item = self.cwd["contents"].get(name)
        return item if item and item["type"] == "file" else None

    def run(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return getattr(self, f"t_{name}")(**args)  # type: ignore[no-any-return]

    # navigation and listing
    def t_pwd(self) -> dict[str, Any]:
        return {"current_working_directory": "/" + "/".join(self.path)}

    def t_ls(self, a: bool = False) -> dict[str, Any]:
        names = [n for n in self.cwd["contents"] if a or not n.startswith(".")]
        return {"current_directory_content": names}

    def t_cd(self, folder: str) -> dict[str, Any]:
        folder = folder.rstrip("/") or "/"
        if folder == "..":
            if not self.path:
                return {"error": "already at the root"}
            self.path.pop()
            return {}
        if "/" in folder:
            return {"error": f"cd: {folder}: one level at a time"}
        if self._dir([*self.path, folder]) is None:
            return {"error": f"cd: {folder}: no such directory"}
        self.path.append(folder)
        return {"current_working_directory": folder}

    def t_find(self, path: str = ".", name: str | None = None) -> dict[str, Any]:
        parts = [p for p in path.split("/") if p not in ("", ".")]
        start = self._dir([*self.path, *parts])
        if start is None:
            return {"error": f"find: {path}: no such directory"}
        out: list[str] = []

        def walk(d: dict[str, Any], base: str) -> None:
            for n, item in d["contents"].items():
                if name is None or name in n:
                    out.append(f"{base}/{n}")
                if item["type"] == "directory":
                    walk(item, f"{base}/{n}")

        walk(start, path.rstrip("/"))
        return {"matches": out}

    def t_du(self, human_readable: bool = False) -> dict[str, Any]:
        def size(d: dict[str, Any]) -> int:
            if d["type"] == "file":
                return len(d["content"].encode())
            return sum(size(c) for c in d["contents"].values())

        return {"disk_usage": f"{size(self.cwd)} bytes"}

    # creating and writing
    def _new_name_error(self, tool: str, name: str) -> dict[str, Any] | None:
        if not name or any(c in _BAD for c in name):
            return {"error": f"{tool}: invalid name {name!r}"}
        if name in self.cwd["contents"]:
            return {"error": f"{tool}: {name}: exists"}
        return None

    def t_mkdir(self, dir_name: str) -> dict[str, Any]:
        err = self._new_name_error("mkdir", dir_name)
        if err:
            return err
        self.cwd["contents"][dir_name] = {"type": "directory", "contents": {}}
        return {}

    def t_touch(self, file_name: str) -> dict[str, Any]:
        err = self._new_name_error("touch", file_name)
        if err:
            return err
        self.cwd["contents"][file_name] = {"type": "file", "content": ""}
        return {}

    def t_echo(self, content: str, file_name: str | None = None) -> dict[str, Any]:
        if file_name is None:
            return {"terminal_output": content}
        f = self._file(file_name)
        if f is None:
            return {"error": f"echo: {file_name}: no such file"}
        f["content"] = content
        return {}

    # reading
    def _need(self, tool: str, name: str) -> dict[str, Any]:
        f = self._file(name)
        if f is None:
            raise LookupError(f"{tool}: {name}: no such file")
        return f

    def _read(self, tool: str, name: str) -> str | dict[str, Any]:
        try:
            return str(self._need(tool, name)["content"])
        except LookupError as exc:
            return {"error": str(exc)}

    def t_cat(self, file_name: str) -> dict[str, Any]:
        c = self._read("cat", file_name)
        return c if isinstance(c, dict) else {"file_content": c}

    def t_sort(self, file_name: str) -> dict[str, Any]:
        c = self._read("sort", file_name)
        return c if isinstance(c, dict) else {"sorted_content": "\n".join(sorted(c.splitlines()))}

    def t_tail(self, file_name: str, lines: int = 10) -> dict[str, Any]:
        c = self._read("tail", file_name)
        return c if isinstance(c, dict) else {"last_lines": "\n".join(c.splitlines()[-lines:])}

    def t_grep(self, file_name: str, pattern: str) -> dict[str, Any]:
        c = self._read("grep", file_name)
        return c if isinstance(c, dict) else {"matching_lines": [ln for ln in c.splitlines() if pattern in ln]}

    def t_wc(self, file_name: str, mode: str = "l") -> dict[str, Any]:
        c = self._read("wc", file_name)
        if isinstance(c, dict):
            return c
        n = {"l": len(c.splitlines()), "w": len(c.split()), "c": len(c)}[mode]
        return {"count": n}

    def t_diff(self, file_name1: str, file_name2: str) -> dict[str, Any]:
        a, b = self._read("diff", file_name1), self._read("diff", file_name2)
        if isinstance(a, dict):
            return a
        if isinstance(b, dict):
            return b
        return {"diff_lines": [f"- {x}\n+ {y}" for x, y in zip(a.splitlines(), b.splitlines(), strict=False) if x != y]}

    # moving and removing
    def _transfer(self, tool: str, source: str, destination: str, keep: bool) -> dict[str, Any]:
        contents = self.cwd["contents"]
        if source not in contents:
            return {"error": f"{tool}: {source}: no such file or directory"}
        if "/" in destination or not destination:
            return {"error": f"{tool}: no path allowed in destination"}
        item = contents[source]
        target = contents.get(destination)
        if target is not None:
            if target["type"] != "directory":
                return {"error": f"{tool}: {destination}: not a directory"}
            if source in target["contents"]:
                return {"error": f"{tool}: {destination}/{source}: exists"}
            target["contents"][source] = copy.deepcopy(item)
        else:
            if any(c in _BAD for c in destination):
                return {"error": f"{tool}: invalid name {destination!r}"}
            contents[destination] = copy.deepcopy(item)
        if not keep:
            del contents[source]
        return {"result": "ok"}

    def t_mv(self, source: str, destination: str) -> dict[str, Any]:
        return self._transfer("mv", source, destination, keep=False)

    def t_cp(self, source: str, destination: str) -> dict[str, Any]:
        return self._transfer("cp", source, destination, keep=True)

    def t_rm(self, file_name: str) -> dict[str, Any]:
        if file_name not in self.cwd["contents"]:
            return {"error": f"rm: {file_name}: no such file or directory"}
        del self.cwd["contents"][file_name]
        return {"result": "removed"}

    def t_rmdir(self, dir_name: str) -> dict[str, Any]:
        item = self.cwd["contents"].get(dir_name)
        if item is None or item["type"] != "directory":
            return {"error": f"rmdir: {dir_name}: not a directory"}
        if item["contents"]:
            return {"error": f"rmdir: {dir_name}: directory not empty"}
        del self.cwd["contents"][dir_name]
        return {"result": "removed"}
