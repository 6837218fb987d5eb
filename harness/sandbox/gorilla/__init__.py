"""The Gorilla file system (``GorillaFileSystem``) on the host, defined once: its state and
mutations (``state``), its tree and its node format (``tree``), its 18 tools' signatures (``tools``) and
a session running calls through the real ``.pym`` tools (``session``). The tools themselves are the
bundle's ``.pym`` scripts; the sandbox runs them, a run scores with them, and the suite generator
(``suites/_make``) checks every call it writes with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports
from harness.sandbox.gorilla.state import FileSystemState
from harness.sandbox.gorilla.tools import FS_TOOL_NAMES, PARAM_ORDER, TOOL_DEFAULTS, builtin_fs_schemas
from harness.sandbox.gorilla.tree import MOUNT, MutationError, Tree, TreeLimitError, TreeLimits, copy_tree

if TYPE_CHECKING:
    from harness.sandbox.gorilla.session import GorillaSession

# The session runs tools on a workspace (harness.sandbox.workspace, which imports the state from here).
__getattr__, __dir__ = lazy_exports(__name__, {"GorillaSession": "session"})

__all__ = [
    "FS_TOOL_NAMES",
    "MOUNT",
    "PARAM_ORDER",
    "TOOL_DEFAULTS",
    "FileSystemState",
    "GorillaSession",
    "MutationError",
    "Tree",
    "TreeLimitError",
    "TreeLimits",
    "builtin_fs_schemas",
    "copy_tree",
]
