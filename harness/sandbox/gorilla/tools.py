"""The 18 Gorilla file-system tools' signatures: names, parameters in order, types and defaults.

The bundle's ``.pym`` tools (``bundles/shellper/tools``) are the tools; this table is what checks that
need no sandbox read (validating a suite before a bundle exists, the parameter order Gorilla's positional
ground-truth calls need, the defaults that make two spellings of a call equal). A test checks it
against the ``.pym`` tools' own schemas. Names, parameters, types and defaults follow the Gorilla file
system; the descriptions are our own.
"""

from __future__ import annotations

from typing import Any

from harness.agents import ToolSchema

# name -> (description, [(parameter, JSON type, required, extra schema keys)])
_TABLE: dict[str, tuple[str, list[tuple[str, str, bool, dict[str, Any]]]]] = {
    "cat": ("Print a file of the current directory.", [("file_name", "string", True, {})]),
    "cd": ("Change the working directory by one level ('..' goes up).", [("folder", "string", True, {})]),
    "cp": (
        "Copy a file or directory of the current directory, into a directory or to a new name.",
        [("source", "string", True, {}), ("destination", "string", True, {})],
    ),
    "diff": (
        "Compare two files of the current directory line by line.",
        [("file_name1", "string", True, {}), ("file_name2", "string", True, {})],
    ),
    "du": (
        "Disk usage of the current directory.",
        [("human_readable", "boolean", False, {"default": False})],
    ),
    "echo": (
        "Write text to a file of the current directory, or print it when no file is given.",
        [("content", "string", True, {}), ("file_name", "string", False, {})],
    ),
    "find": (
        "Find files and directories under a path whose name contains a string.",
        [("path", "string", False, {"default": "."}), ("name", "string", False, {})],
    ),
    "grep": (
        "Lines of a file of the current directory that contain a pattern.",
        [("file_name", "string", True, {}), ("pattern", "string", True, {})],
    ),
    "ls": ("List the current directory.", [("a", "boolean", False, {"default": False})]),
    "mkdir": ("Create a directory in the current directory.", [("dir_name", "string", True, {})]),
    "mv": (
        "Move a file or directory of the current directory into a directory, or rename it.",
        [("source", "string", True, {}), ("destination", "string", True, {})],
    ),
    "pwd": ("Print the working directory.", []),
    "rm": ("Remove a file or directory of the current directory.", [("file_name", "string", True, {})]),
    "rmdir": ("Remove an empty directory of the current directory.", [("dir_name", "string", True, {})]),
    "sort": ("Sort the lines of a file of the current directory.", [("file_name", "string", True, {})]),
    "tail": (
        "Last lines of a file of the current directory.",
        [("file_name", "string", True, {}), ("lines", "integer", False, {"default": 10})],
    ),
    "touch": ("Create an empty file in the current directory.", [("file_name", "string", True, {})]),
    "wc": (
        "Count lines, words or characters of a file of the current directory.",
        [("file_name", "string", True, {}), ("mode", "string", False, {"enum": ["l", "w", "c"], "default": "l"})],
    ),
}

FS_TOOL_NAMES: tuple[str, ...] = tuple(sorted(_TABLE))
"""The 18 tool names, sorted."""

PARAM_ORDER: dict[str, tuple[str, ...]] = {name: tuple(p[0] for p in params) for name, (_, params) in _TABLE.items()}
"""Each tool's parameters in declaration order (maps positional arguments to names)."""


def _schema(name: str) -> ToolSchema:
    description, params = _TABLE[name]
    properties = {p: {"type": t, **extra} for p, t, _, extra in params}
    required = [p for p, _, req, _ in params if req]
    return ToolSchema(
        name=name,
        description=description,
        parameters={"type": "object", "properties": properties, "required": required},
    )


TOOL_DEFAULTS: dict[str, dict[str, Any]] = {
    name: {p: extra["default"] for p, _, _, extra in params if "default" in extra} for name, (_, params) in _TABLE.items()
    if any("default" in extra for *_, extra in params)
}
"""Each tool's optional parameters with a default, and the default: a call that gives one equals the
call that leaves it out (``tail(lines=10)`` is ``tail()``)."""


def builtin_fs_schemas() -> dict[str, ToolSchema]:
    """The 18 tools as schemas, by name."""
    return {name: _schema(name) for name in FS_TOOL_NAMES}


__all__ = ["FS_TOOL_NAMES", "PARAM_ORDER", "TOOL_DEFAULTS", "builtin_fs_schemas"]
