"""The 18 Gorilla file-system tools as the suites know them: ``harness.sandbox.gorilla.tools`` (the one
home of the Gorilla file system's semantics), under the names eval has always imported."""

from __future__ import annotations

from harness.sandbox.gorilla import FS_TOOL_NAMES, PARAM_ORDER, builtin_fs_schemas

__all__ = ["FS_TOOL_NAMES", "PARAM_ORDER", "builtin_fs_schemas"]
