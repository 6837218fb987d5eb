"""FileSystemState: BFCL's initial_config tree in and out, equality, mutations and their errors."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

import pytest
from sandbox_helpers import BASE_TREE

from harness.sandbox import FileSystemState, MutationError, TreeLimitError, TreeLimits, Workspace

DATA = Path(__file__).resolve().parents[1] / "data" / "bfcl_fs_sample.json"


def bfcl_configs() -> list[dict]:
    entries = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    return [e["initial_config"] for e in entries]


@pytest.mark.parametrize("config", bfcl_configs(), ids=lambda c: next(iter(c["GorillaFileSystem"]["root"])))
def test_bfcl_round_trip(config: dict) -> None:
    state = FileSystemState.from_nodes(config)
    assert state.to_nodes() == config["GorillaFileSystem"]
    assert FileSystemState.from_nodes(state.to_nodes()) == state
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
    state = FileSystemState.from_nodes(config)
    assert state.root_name == "alex"
    assert state.tree == {"a.txt": "hi", "d": {"e": {}}}
    assert state.to_nodes() == config


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
        FileSystemState.from_nodes(config)


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
    inputs = ws.data.host_inputs("ls")
    assert inputs == {"cwd": "/fs/alex/docs", "echo_mode": "append", "here": s.tree["docs"], "root": s.tree}
    assert inputs["here"] is s.tree["docs"] and inputs["root"] is s.tree  # shared: a call copies them
    assert ws.data.load_files("ls", {}) == {"/fs/alex": s.tree}
    with pytest.raises(ValueError):
        Workspace.filesystem(s, echo_mode="prepend")  # type: ignore[arg-type]


def _deep(depth: int) -> dict:
    tree: dict = {}
    node = tree
    for _ in range(depth):
        node["d"] = {}
        node = node["d"]
    node["f"] = "x"
    return tree


OVER_THE_BOUNDS = [
    # (id, tree, limits, the bound named)
    ("1500-deep", _deep(1500), TreeLimits(), "tree_depth"),
    ("65-deep", _deep(64), TreeLimits(), "tree_depth"),
    ("too-many-entries", {f"f{i}": "" for i in range(11)}, TreeLimits(max_entries=10), "tree_entries"),
    ("too-many-characters", {"a": "x" * 600, "d": {"b": "y" * 500}}, TreeLimits(max_bytes=1000), "tree_bytes"),
]


@pytest.mark.parametrize(("tree", "limits", "bound"), [c[1:] for c in OVER_THE_BOUNDS], ids=[c[0] for c in OVER_THE_BOUNDS])
def test_a_tree_past_its_bounds_is_refused_by_name(tree: dict, limits: TreeLimits, bound: str) -> None:
    with pytest.raises(TreeLimitError) as err:  # never a RecursionError, however deep
        FileSystemState("alex", tree, limits=limits)
    assert err.value.limit == bound


def test_the_deepest_allowed_tree_is_copied_compared_and_listed() -> None:
    s = FileSystemState("alex", _deep(63))
    twin = s.copy()
    assert twin == s and twin.tree is not s.tree
    assert FileSystemState.from_nodes(s.to_nodes()) == s
    very = FileSystemState("alex", _deep(1500), limits=TreeLimits(max_depth=2000))
    assert very.copy().get("/".join(["d"] * 1500) + "/f") == "x"  # iterative copy: no RecursionError


@pytest.mark.parametrize(
    "tree",
    [{"a\ud800": "x"}, {"d": {"f": "bad \udfff text"}}],
    ids=["name", "content"],
)
def test_a_lone_surrogate_in_the_tree_is_refused(tree: dict) -> None:
    with pytest.raises(ValueError, match=r"not valid text|invalid file or directory name"):
        FileSystemState("alex", tree)


ALL_OR_NOTHING = [
    # (id, mutations whose last one fails, the bound or error)
    ("delete-then-fail", [{"op": "delete", "path": "/fs/alex/notes.txt"}, {"op": "delete", "path": "/fs/alex/nope"}], None),
    (
        "move-then-fail",
        [{"op": "move", "src": "/fs/alex/notes.txt", "dst": "/fs/alex/docs/n.txt"}, {"op": "chdir", "path": "/fs/alex/x"}],
        None,
    ),
    (
        "writes-then-bytes",
        [{"op": "write", "path": "/fs/alex/notes.txt", "content": "new"}, {"op": "append", "path": "/fs/alex/big", "content": "x" * 2000}],
        "tree_bytes",
    ),
    ("mkdirs-then-entries", [{"op": "mkdir", "path": f"/fs/alex/m{i}"} for i in range(10)], "tree_entries"),
    (
        "copy-then-depth",
        [
            {"op": "mkdir", "path": "/fs/alex/e"},
            {"op": "chdir", "path": "/fs/alex/e"},
            {"op": "copy", "src": "/fs/alex/docs", "dst": "/fs/alex/e/c"},  # e/c/sub: 3 deep, the bound
            {"op": "copy", "src": "/fs/alex/e", "dst": "/fs/alex/docs/sub/e"},  # 5 deep
        ],
        "tree_depth",
    ),
]


@pytest.mark.parametrize(("mutations", "bound"), [c[1:] for c in ALL_OR_NOTHING], ids=[c[0] for c in ALL_OR_NOTHING])
def test_mutations_apply_all_or_nothing(mutations: list, bound: str | None) -> None:
    s = FileSystemState("alex", copy.deepcopy(BASE_TREE), ("docs",), limits=TreeLimits(max_depth=3, max_entries=12, max_bytes=1000))
    before = json.dumps(s.tree)  # insertion order included
    with pytest.raises(MutationError) as err:
        s.apply(mutations)
    assert json.dumps(s.tree) == before and s.cwd == ("docs",)
    if bound is not None:
        assert isinstance(err.value, TreeLimitError) and err.value.limit == bound


def test_from_directory_never_follows_links_out_of_it(tmp_path: Path) -> None:
    outside = tmp_path / "host"
    outside.mkdir()
    (outside / "secret.txt").write_text("host secret")
    root = tmp_path / "proj"
    (root / "d").mkdir(parents=True)
    (root / "a.txt").write_text("mine")
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "d" / "hostdir").symlink_to(outside, target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "inside.txt").symlink_to(root / "a.txt")  # even a link that stays inside: links are not read
    os.mkfifo(root / "pipe")  # reading it would block
    skipped: list[tuple[str, str]] = []
    s = FileSystemState.from_directory(root, on_skip=lambda p, why: skipped.append((p.name, why)))
    assert s.tree == {"a.txt": "mine", "d": {}}
    assert sorted(skipped) == [
        ("hostdir", "a symbolic link"),
        ("inside.txt", "a symbolic link"),
        ("link.txt", "a symbolic link"),
        ("loop", "a symbolic link"),
        ("pipe", "not a file or folder"),
    ]
    with pytest.raises(ValueError, match="links are not followed"):
        FileSystemState.from_directory(root / "loop")


def test_from_directory_keeps_within_the_bounds(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "big.txt").write_text("x" * 5000)
    with pytest.raises(TreeLimitError) as err:
        FileSystemState.from_directory(root, limits=TreeLimits(max_bytes=1000))
    assert err.value.limit == "tree_bytes" and str(root) in str(err.value)
    deep = root / "/".join(["d"] * 10)
    deep.mkdir(parents=True)
    with pytest.raises(TreeLimitError) as err:
        FileSystemState.from_directory(root, limits=TreeLimits(max_depth=5))
    assert err.value.limit == "tree_depth"
    with pytest.raises(ValueError, match="cannot read"):
        FileSystemState.from_directory(tmp_path / "missing")
