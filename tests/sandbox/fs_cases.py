"""The table of Gorilla file-system tool cases used by test_fs_tools.py (data, no tests).

The sample tree (sandbox_helpers.BASE_TREE) is ``alex/{notes.txt, other.txt, .hidden, docs/{x.md, sub/}}``.
Expected values follow BFCL's ``GorillaFileSystem`` (bfcl_eval/.../gorilla_file_system.py); the few
deliberate differences are marked "differs from BFCL" and documented in the tools' scripts.
"""

from __future__ import annotations

import copy
from typing import Any

from sandbox_helpers import BASE_TREE

SAME = object()  # the tree is unchanged


def tree_with(**changes: Any) -> dict[str, Any]:
    """BASE_TREE with top-level entries replaced (None deletes)."""
    tree = copy.deepcopy(BASE_TREE)
    for name, value in changes.items():
        name = name.replace("__", ".")
        if value is None:
            tree.pop(name, None)
        else:
            tree[name] = value
    return tree


DOCS = BASE_TREE["docs"]

# (id, cwd below root, tool, arguments, expected output, expected tree or SAME, expected cwd or None = unchanged)
# (id, cwd below root, tool, arguments, expected output, expected tree or SAME, expected cwd or None)
READ_CASES: list[tuple[str, tuple[str, ...], str, dict[str, Any], Any, Any, tuple[str, ...] | None]] = [
    ("pwd-root", (), "pwd", {}, {"current_working_directory": "/alex"}, SAME, None),
    ("pwd-nested", ("docs", "sub"), "pwd", {}, {"current_working_directory": "/alex/docs/sub"}, SAME, None),
    ("ls", (), "ls", {}, {"current_directory_content": ["notes.txt", "other.txt", "docs"]}, SAME, None),
    (
        "ls-a",
        (),
        "ls",
        {"a": True},
        {"current_directory_content": ["notes.txt", "other.txt", ".hidden", "docs"]},
        SAME,
        None,
    ),
    ("ls-empty", ("docs", "sub"), "ls", {}, {"current_directory_content": []}, SAME, None),
    ("cat", (), "cat", {"file_name": "notes.txt"}, {"file_content": "b line\na line\nc line"}, SAME, None),
    ("cat-dir", (), "cat", {"file_name": "docs"}, {"error": "cat: 'docs': Is a directory"}, SAME, None),
    (
        "cat-missing",
        (),
        "cat",
        {"file_name": "nope.txt"},
        {"error": "cat: 'nope.txt': No such file or directory"},
        SAME,
        None,
    ),
    (
        "cat-path",
        (),
        "cat",
        {"file_name": "docs/x.md"},
        {"error": "cat: 'docs/x.md': Invalid character"},
        SAME,
        None,
    ),
    (
        "cat-parent",
        ("docs",),
        "cat",
        {"file_name": ".."},
        {"error": "cat: '..': No such file or directory"},
        SAME,
        None,
    ),
    ("cat-nested", ("docs",), "cat", {"file_name": "x.md"}, {"file_content": "1\n2\n3"}, SAME, None),
    (
        "diff",
        (),
        "diff",
        {"file_name1": "notes.txt", "file_name2": "other.txt"},
        {"diff_lines": "- a line\n+ z line"},
        SAME,
        None,
    ),
    (
        "diff-same",
        (),
        "diff",
        {"file_name1": "notes.txt", "file_name2": "notes.txt"},
        {"diff_lines": ""},
        SAME,
        None,
    ),
    (
        "diff-missing",
        (),
        "diff",
        {"file_name1": "notes.txt", "file_name2": "nope"},
        {"error": "diff: notes.txt or nope: No such file or directory"},
        SAME,
        None,
    ),
    (
        "grep",
        (),
        "grep",
        {"file_name": "notes.txt", "pattern": "a l"},
        {"matching_lines": ["a line"]},
        SAME,
        None,
    ),
    (
        "grep-none",
        (),
        "grep",
        {"file_name": "notes.txt", "pattern": "zzz"},
        {"matching_lines": []},
        SAME,
        None,
    ),
    (
        "grep-dir",
        (),
        "grep",
        {"file_name": "docs", "pattern": "x"},
        {"error": "grep: docs: No such file or directory"},
        SAME,
        None,
    ),
    (
        "tail",
        (),
        "tail",
        {"file_name": "notes.txt", "lines": 2},
        {"last_lines": "a line\nc line"},
        SAME,
        None,
    ),
    (
        "tail-default",
        (),
        "tail",
        {"file_name": "notes.txt"},
        {"last_lines": "b line\na line\nc line"},
        SAME,
        None,
    ),
    (
        "tail-missing",
        (),
        "tail",
        {"file_name": "nope"},
        {"error": "tail: nope: No such file or directory"},
        SAME,
        None,
    ),
    ("wc-lines", (), "wc", {"file_name": "notes.txt"}, {"count": 3, "type": "lines"}, SAME, None),
    (
        "wc-words",
        (),
        "wc",
        {"file_name": "notes.txt", "mode": "w"},
        {"count": 6, "type": "words"},
        SAME,
        None,
    ),
    (
        "wc-chars",
        (),
        "wc",
        {"file_name": "notes.txt", "mode": "c"},
        {"count": 20, "type": "characters"},
        SAME,
        None,
    ),
    (
        "wc-missing",
        (),
        "wc",
        {"file_name": "nope"},
        {"error": "wc: nope: No such file or directory"},
        SAME,
        None,
    ),
    (
        "sort",
        (),
        "sort",
        {"file_name": "notes.txt"},
        {"sorted_content": "a line\nb line\nc line"},
        SAME,
        None,
    ),
    (
        "sort-missing",
        (),
        "sort",
        {"file_name": "nope"},
        {"error": "sort: nope: No such file or directory"},
        SAME,
        None,
    ),
    (
        "find-all",
        (),
        "find",
        {},
        {"matches": ["./notes.txt", "./other.txt", "./.hidden", "./docs", "./docs/x.md", "./docs/sub"]},
        SAME,
        None,
    ),
    ("find-name", (), "find", {"name": ".md"}, {"matches": ["./docs/x.md"]}, SAME, None),
    (
        "find-substring",
        (),
        "find",
        {"name": "x"},
        {"matches": ["./notes.txt", "./other.txt", "./docs/x.md"]},
        SAME,
        None,
    ),
    ("find-path", (), "find", {"path": "docs/", "name": "s"}, {"matches": ["docs/sub"]}, SAME, None),
    ("find-dot-path", (), "find", {"path": "./docs"}, {"matches": ["./docs/x.md", "./docs/sub"]}, SAME, None),
    ("find-absolute", ("docs",), "find", {"path": "/docs", "name": "x"}, {"matches": ["/docs/x.md"]}, SAME, None),
    ("find-root", ("docs",), "find", {"path": "/", "name": "x.md"}, {"matches": ["/docs/x.md"]}, SAME, None),
    (
        "find-missing-path",
        ("docs",),
        "find",
        {"path": "docs"},
        {"error": "find: 'docs': No such file or directory"},
        SAME,
        None,
    ),
    ("find-parent-path", ("docs",), "find", {"path": ".."}, {"error": "find: '..': No such file or directory"}, SAME, None),
    ("find-file-path", (), "find", {"path": "notes.txt"}, {"error": "find: 'notes.txt': No such file or directory"}, SAME, None),
    ("find-nothing", (), "find", {"name": "zzz"}, {"matches": []}, SAME, None),
    ("du", (), "du", {}, {"disk_usage": "46 bytes"}, SAME, None),
    ("du-human", (), "du", {"human_readable": True}, {"disk_usage": "46.00 B"}, SAME, None),
    ("du-nested", ("docs",), "du", {}, {"disk_usage": "5 bytes"}, SAME, None),
]
