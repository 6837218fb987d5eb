"""The Gorilla file system's one home (``harness.sandbox.gorilla``): the tools' signature table agrees
with the ``.pym`` tools, and a session runs calls through those tools, each on the state the last left."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from sandbox_helpers import BASE_TREE

from harness.sandbox import FileSystemState
from harness.sandbox.gorilla import (
    FS_TOOL_NAMES,
    PARAM_ORDER,
    TOOL_DEFAULTS,
    GorillaSession,
    builtin_fs_schemas,
)

SIGNATURE_KEYS = ("type", "enum", "default")


def _signature(schema: dict[str, Any]) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    props = schema["properties"]
    return [(name, {k: v for k, v in p.items() if k in SIGNATURE_KEYS}) for name, p in props.items()], schema["required"]


def test_the_table_is_the_tools_signatures(fs_tools: dict[str, Any]) -> None:
    assert set(FS_TOOL_NAMES) == set(fs_tools)
    table = builtin_fs_schemas()
    for name in FS_TOOL_NAMES:
        (ours, our_required), (theirs, their_required) = (
            _signature(table[name].parameters), _signature(fs_tools[name].schema.parameters)
        )
        assert [p for p, _ in ours] == [p for p, _ in theirs] == list(PARAM_ORDER[name]), name
        assert our_required == their_required, name
        for (param, mine), (_, tool) in zip(ours, theirs, strict=True):
            assert mine["type"] == tool["type"] and mine.get("enum") == tool.get("enum"), (name, param)
            if "default" in mine:
                assert mine["default"] == tool.get("default") == TOOL_DEFAULTS[name][param], (name, param)


def test_the_defaults_are_those_of_the_optional_parameters() -> None:
    assert TOOL_DEFAULTS == {
        "du": {"human_readable": False}, "find": {"path": "."}, "ls": {"a": False}, "tail": {"lines": 10},
        "wc": {"mode": "l"},
    }


CALLS: list[tuple[str, dict[str, Any], str | None]] = [
    ("mkdir", {"dir_name": "new"}, None),
    ("cd", {"folder": "new"}, None),
    ("touch", {"file_name": "a.txt"}, None),
    ("touch", {"file_name": "a.txt"}, "touch"),  # exists now: the tool's own error
    ("cd", {"folder": ".."}, None),
    ("rmdir", {"dir_name": "new"}, "rmdir"),  # not empty
    ("cat", {"file_name": 5}, "tool:bad_arguments"),  # refused before it runs
]


def test_a_session_runs_calls_in_order_on_the_state(fs_tools: dict[str, Any]) -> None:
    state = FileSystemState("alex", copy.deepcopy(BASE_TREE))
    with GorillaSession(list(fs_tools.values()), state) as fs:
        for name, args, error in CALLS:
            why = fs.failed(fs.call(name, args))
            assert (why is None) == (error is None), (name, args, why)
            assert error is None or error in str(why)
        assert state.get("new/a.txt") == "" and state.cwd == ()
        with pytest.raises(KeyError, match="no tool 'chmod'"):
            fs.call("chmod", {})
