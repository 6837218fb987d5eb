"""FileSystemState: BFCL's initial_config tree in and out, equality, mutations and their errors."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from sandbox_helpers import BASE_TREE

from harness.sandbox import FileSystemState, MutationError, Workspace

DATA = Path(__file__).resolve().parents[1] / "data" / "bfcl_fs_sample.json"


def bfcl_configs() -> list[dict]:
    entries = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    return [e["initial_config"] for e in entries]


@pytest.mark.parametrize("config", bfcl_configs(), ids=lambda c: next(iter(c["GorillaFileSystem"]["root"])))
def test_bfcl_round_trip(config: dict) -> None:
    state = FileSystemState.from_bfcl(config)
    assert state.to_bfcl() == config["GorillaFileSystem"]
    assert FileSystemState.from_bfcl(state.to_bfcl()) == state
    assert state.cwd == () and state.pwd == f"/{state.root_name}"


def test_from_bfcl_reads_files_and_directories() -> None:
    config = {
        "root": {
            "alex": {
                "type": "directory",
                "contents": {
                    "a.txt": {"type": "file", "content": "hi"},
                    "d": {"type": "directory", "contents": {"e": {"type": "directory", "contents": {}}}},
                },
            }
        }
    }
    state = FileSystemState.from_bfcl(config)
    assert state.root_name == "alex"
    assert state.tree == {"a.txt": "hi", "d": {"e": {}}}
    assert state.to_bfcl() == config


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"root": {}},
        {"root": {"alex": {"type": "file", "content": "x"}}},
        {"root": {"alex": {"type": "directory", "contents": {"a": {"type": "link"}}}}},
        {"root": {"alex": {"type": "directory", "contents": {"a": {"type": "file", "content": 3}}}}},
    ],
)
def test_from_bfcl_rejects_malformed(config: dict) -> None:
    with pytest.raises(ValueError):
        FileSystemState.from_bfcl(config)


def test_equality_is_the_tree_like_bfcl() -> None:
    a = FileSystemState("alex", copy.deepcopy(BASE_TREE))
    b = FileSystemState("alex", dict(reversed(list(copy.deepcopy(BASE_TREE).items()))), cwd=("docs",))
    assert a == b  # order of entries and the current directory do not count
    assert a != FileSystemState("bob", copy.deepcopy(BASE_TREE))
    c = a.copy()
    c.tree["docs"]["x.md"] = "changed"
    assert a != c
    assert a.diff(c) == ["~ /docs/x.md"]
    c.tree["new"] = {}
    del c.tree["notes.txt"]
    assert a.diff(c) == ["+ /new", "- /notes.txt", "~ /docs/x.md"]


def test_copy_is_independent() -> None:
    a = FileSystemState("alex", copy.deepcopy(BASE_TREE))
    b = a.copy()
    b.apply([{"op": "write", "path": "/fs/alex/docs/x.md", "content": "z"}])
    assert a.get("docs/x.md") == "1\n2\n3"


def test_mutations() -> None:
    s = FileSystemState("alex", copy.deepcopy(BASE_TREE))
    s.apply(
        [
            {"op": "mkdir", "path": "/fs/alex/new"},
            {"op": "write", "path": "/fs/alex/new/a.txt", "content": "A"},
            {"op": "append", "path": "/fs/alex/new/a.txt", "content": "B"},
            {"op": "append", "path": "/fs/alex/new/b.txt", "content": "C"},
            {"op": "copy", "src": "/fs/alex/new", "dst": "/fs/alex/docs/new"},
            {"op": "move", "src": "/fs/alex/notes.txt", "dst": "/fs/alex/docs/n.txt"},
            {"op": "delete", "path": "/fs/alex/.hidden"},
            {"op": "chdir", "path": "/fs/alex/docs/new"},
        ]
    )
    assert s.get("new") == {"a.txt": "AB", "b.txt": "C"}
    assert s.get("docs/new") == {"a.txt": "AB", "b.txt": "C"}
    assert s.get("docs/n.txt") == "b line\na line\nc line"
    assert s.get("notes.txt") is None and s.get(".hidden") is None
    assert s.cwd_path == "/fs/alex/docs/new" and s.pwd == "/alex/docs/new"


def test_moving_the_current_directory_follows_it() -> None:
    s = FileSystemState("alex", copy.deepcopy(BASE_TREE), cwd=("docs", "sub"))
    s.apply([{"op": "move", "src": "/fs/alex/docs", "dst": "/fs/alex/papers"}])
    assert s.cwd == ("papers", "sub")


@pytest.mark.parametrize(
    ("mutation", "needle"),
    [
        ({"op": "write", "path": "/etc/passwd", "content": "x"}, "outside the file system"),
        ({"op": "write", "path": "/fs/bob/a", "content": "x"}, "outside the file system"),
        ({"op": "write", "path": "/fs/alex/../x", "content": "x"}, "'..' is not allowed"),
        ({"op": "write", "path": "/fs/alex/nope/a.txt", "content": "x"}, "no directory"),
        ({"op": "write", "path": "/fs/alex/docs", "content": "x"}, "is a directory"),
        ({"op": "write", "path": "/fs/alex/a", "content": 3}, "content must be a string"),
        ({"op": "mkdir", "path": "/fs/alex/docs"}, "already exists"),
        ({"op": "delete", "path": "/fs/alex/nope"}, "no 'nope'"),
        ({"op": "delete", "path": "/fs/alex"}, "root directory"),
        ({"op": "move", "src": "/fs/alex/docs", "dst": "/fs/alex/docs/sub/docs"}, "inside itself"),
        ({"op": "move", "src": "/fs/alex/notes.txt", "dst": "/fs/alex/other.txt"}, "already exists"),
        ({"op": "copy", "src": "/fs/alex/nope", "dst": "/fs/alex/x"}, "no 'nope'"),
        ({"op": "chdir", "path": "/fs/alex/notes.txt"}, "not a directory"),
        ({"op": "chmod", "path": "/fs/alex/notes.txt"}, "unknown mutation op"),
        ({"path": "/fs/alex/x"}, "unknown mutation op"),
        ({"op": "mkdir"}, "missing 'path'"),
    ],
)
def test_impossible_mutations_are_rejected(mutation: dict, needle: str) -> None:
    s = FileSystemState("alex", copy.deepcopy(BASE_TREE))
    with pytest.raises(MutationError, match=needle):
        s.apply([mutation])
    assert s.tree == BASE_TREE


def test_from_directory(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "README").write_text("hi")
    (root / "src" / "a.py").write_text("x = 1\n")
    s = FileSystemState.from_directory(root)
    assert s.root_name == "proj"
    assert s.tree == {"README": "hi", "empty": {}, "src": {"a.py": "x = 1\n"}}


BAD_NAME_TREES = [
    ({"..": {}}, "'..'"),
    ({"d": {".": "x"}}, "alex/d: invalid file or directory name '.'"),
    ({"": "x"}, "''"),
    ({"a/b": "x"}, "'a/b'"),
    ({"d": {"f": 3}}, "alex/d/f: a file's content must be a string"),
]


@pytest.mark.parametrize(("tree", "needle"), BAD_NAME_TREES)
def test_names_a_path_cannot_reach_are_rejected(tree: dict, needle: str) -> None:
    """A name such as '..' could not be addressed by the tools' paths (and made a directory walk leave
    the tree): the state refuses it with the place and the name."""
    with pytest.raises(ValueError, match=re.escape(needle)):
        FileSystemState("alex", tree)


def test_bad_current_directory() -> None:
    with pytest.raises(ValueError):
        FileSystemState("alex", copy.deepcopy(BASE_TREE), cwd=("notes.txt",))
    with pytest.raises(ValueError):
        FileSystemState("a/b")


def test_workspace_serves_the_state() -> None:
    s = FileSystemState("alex", copy.deepcopy(BASE_TREE), cwd=("docs",))
    ws = Workspace.filesystem(s, echo_mode="append")
    assert ws.fs is s
    assert ws.data.host_inputs("ls") == {"cwd": "/fs/alex/docs", "echo_mode": "append"}
    assert ws.data.load_files("ls", {}) == {"/fs/alex": s.tree}
    with pytest.raises(ValueError):
        Workspace.filesystem(s, echo_mode="prepend")  # type: ignore[arg-type]
