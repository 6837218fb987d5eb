"""The 18 Gorilla file-system tools, each on a table of cases: BFCL's output shapes and messages, the
state they leave (tree and current directory), errors included.

The sample tree (conftest.BASE_TREE) is ``alex/{notes.txt, other.txt, .hidden, docs/{x.md, sub/}}``.
Expected values follow BFCL's ``GorillaFileSystem`` (bfcl_eval/.../gorilla_file_system.py); the few
deliberate differences are marked "differs from BFCL" and documented in the tools' scripts.
"""

from __future__ import annotations

import copy

import pytest
from fs_cases import READ_CASES, SAME
from fs_cases_write import WRITE_CASES
from sandbox_helpers import BASE_TREE, call_tool

from harness.sandbox import FileSystemState, Workspace

CASES = READ_CASES + WRITE_CASES


@pytest.mark.parametrize(
    ("cwd", "tool", "args", "output", "tree", "new_cwd"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_tool_case(fs_tools, cwd, tool, args, output, tree, new_cwd) -> None:
    state = FileSystemState("alex", copy.deepcopy(BASE_TREE), cwd)
    result = await call_tool(fs_tools[tool], args, Workspace.filesystem(state))
    assert not result.is_error, result.output
    assert result.output == output
    expected_tree = BASE_TREE if tree is SAME else tree
    assert state.tree == expected_tree
    assert state.cwd == (cwd if new_cwd is None else new_cwd)


def test_every_tool_has_cases(fs_tools) -> None:
    assert {c[2] for c in CASES} == set(fs_tools)


async def test_insertion_order_follows_bfcl(fs_tools, state) -> None:
    """New entries are listed last; a renamed entry moves to the end, as in BFCL's dict of contents."""
    ws = Workspace.filesystem(state)
    await call_tool(fs_tools["mkdir"], {"dir_name": "a_dir"}, ws)
    await call_tool(fs_tools["mv"], {"source": "notes.txt", "destination": "notes2.txt"}, ws)
    result = await call_tool(fs_tools["ls"], {}, ws)
    assert result.output == {"current_directory_content": ["other.txt", "docs", "a_dir", "notes2.txt"]}


async def test_copy_is_deep(fs_tools, state) -> None:
    ws = Workspace.filesystem(state)
    await call_tool(fs_tools["cp"], {"source": "docs", "destination": "docs2"}, ws)
    await call_tool(fs_tools["cd"], {"folder": "docs2"}, ws)
    await call_tool(fs_tools["echo"], {"content": "changed", "file_name": "x.md"}, ws)
    assert state.get("docs2/x.md") == "changed"
    assert state.get("docs/x.md") == "1\n2\n3"


async def test_echo_append_mode_is_bash_redirect(fs_tools, state) -> None:
    """SHELLper's mapping ``echo "..." >> file``: creates a missing file, appends the text and a newline."""
    ws = Workspace.filesystem(state, echo_mode="append")
    assert (await call_tool(fs_tools["echo"], {"content": "one", "file_name": "log.txt"}, ws)).output is None
    await call_tool(fs_tools["echo"], {"content": "two", "file_name": "log.txt"}, ws)
    await call_tool(fs_tools["echo"], {"content": "more", "file_name": "notes.txt"}, ws)
    assert state.get("log.txt") == "one\ntwo\n"
    assert state.get("notes.txt") == "b line\na line\nc line" + "more\n"
    result = await call_tool(fs_tools["echo"], {"content": "x", "file_name": "docs"}, ws)
    assert result.output == {"error": "echo: cannot write to 'docs': Is a directory"}


async def test_a_session_of_calls(fs_tools, state) -> None:
    """A BFCL-style turn: cd, mkdir, cd, touch, echo, cat, cd .., ls, pwd -> outputs and final tree."""
    ws = Workspace.filesystem(state)
    steps = [
        ("cd", {"folder": "docs"}, {"current_working_directory": "docs"}),
        ("mkdir", {"dir_name": "temp"}, None),
        ("cd", {"folder": "temp"}, {"current_working_directory": "temp"}),
        ("touch", {"file_name": "a.txt"}, None),
        ("echo", {"content": "hello", "file_name": "a.txt"}, None),
        ("cat", {"file_name": "a.txt"}, {"file_content": "hello"}),
        ("pwd", {}, {"current_working_directory": "/alex/docs/temp"}),
        ("cd", {"folder": ".."}, {}),
        ("ls", {}, {"current_directory_content": ["x.md", "sub", "temp"]}),
    ]
    for tool, args, expected in steps:
        result = await call_tool(fs_tools[tool], args, ws)
        assert result.output == expected, (tool, args)
    assert state.tree["docs"]["temp"] == {"a.txt": "hello"}
    assert state.pwd == "/alex/docs"


@pytest.mark.parametrize(
    ("tool", "args", "needle"),
    [
        ("cat", {}, "missing required argument 'file_name'"),
        ("ls", {"a": "yes"}, "argument 'a'"),
        ("wc", {"file_name": "x", "mode": "q"}, "must be one of 'l', 'w', 'c'"),
        ("ls", {"cwd": "/fs/other"}, "unknown argument 'cwd'"),  # hidden inputs are not the model's
        ("tail", {"file_name": "x", "lines": "3"}, "argument 'lines'"),
        ("pwd", {"x": 1}, "unknown argument 'x'"),
    ],
)
async def test_bad_arguments_never_run(fs_tools, state, tool, args, needle) -> None:
    result = await call_tool(fs_tools[tool], args, Workspace.filesystem(state))
    assert result.is_error and result.error_kind == "tool:bad_arguments"
    assert needle in result.output
    assert state.tree == BASE_TREE


async def test_concurrent_calls_on_one_workspace_run_in_call_order(fs_tools, state) -> None:
    """A step's calls may run concurrently in the kernel; on one workspace they apply in order."""
    import asyncio

    ws = Workspace.filesystem(state)
    results = await asyncio.gather(
        call_tool(fs_tools["mkdir"], {"dir_name": "a"}, ws),
        call_tool(fs_tools["cd"], {"folder": "a"}, ws),
        call_tool(fs_tools["touch"], {"file_name": "f.txt"}, ws),
        call_tool(fs_tools["ls"], {}, ws),
    )
    assert [r.output for r in results] == [
        None,
        {"current_working_directory": "a"},
        None,
        {"current_directory_content": ["f.txt"]},
    ]
    assert state.tree["a"] == {"f.txt": ""}
