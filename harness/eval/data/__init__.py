"""Where a run's data comes from: suites (``suite``: suite.yaml; ``cases``: the typed cases), their
validation against a bundle's tools (``validate``), the Gorilla file-system tools as suites know them
(``fs_tools``), and the importers of upstream data (``shellper_import``, ``bfcl_import`` with BFCL's
package data and code in ``bfcl_data``, ``bfcl_single`` for BFCL's single-turn categories with the
answers the oracle replays in ``bfcl_answers``; ``importing``: what they share)."""

from harness.eval.data.bfcl_data import BfclDataError, tool_schemas
from harness.eval.data.bfcl_import import (
    BFCL_ADDED_TOOLS_PROMPT,
    CallSyntaxError,
    bfcl_sources,
    import_bfcl,
    parse_python_call,
)
from harness.eval.data.bfcl_single import import_all_single_turn, import_bfcl_single_turn
from harness.eval.data.cases import (
    EMPTY_WORKSPACE,
    CallSpec,
    Case,
    ChatMessage,
    DirNode,
    EpisodeCase,
    FileNode,
    FsTree,
    NextCallCase,
    SingleTurnCase,
)
from harness.eval.data.fs_tools import FS_TOOL_NAMES, PARAM_ORDER, builtin_fs_schemas
from harness.eval.data.importing import ImportFailure, ImportReport
from harness.eval.data.shellper_import import import_shellper
from harness.eval.data.suite import (
    EchoMode,
    Suite,
    SuiteError,
    SuiteKind,
    SuiteSpec,
    dump_case,
    load_suite,
    resolve_bundle,
    write_suite,
)
from harness.eval.data.validate import (
    ToolSet,
    bundle_tools,
    check_arguments,
    check_calls,
    describe_suite,
    validate_suite,
)

__all__ = [
    "BFCL_ADDED_TOOLS_PROMPT",
    "EMPTY_WORKSPACE",
    "FS_TOOL_NAMES",
    "PARAM_ORDER",
    "BfclDataError",
    "CallSpec",
    "CallSyntaxError",
    "Case",
    "ChatMessage",
    "DirNode",
    "EchoMode",
    "EpisodeCase",
    "FileNode",
    "FsTree",
    "ImportFailure",
    "ImportReport",
    "NextCallCase",
    "SingleTurnCase",
    "Suite",
    "SuiteError",
    "SuiteKind",
    "SuiteSpec",
    "ToolSet",
    "bfcl_sources",
    "builtin_fs_schemas",
    "bundle_tools",
    "check_arguments",
    "check_calls",
    "describe_suite",
    "dump_case",
    "import_all_single_turn",
    "import_bfcl",
    "import_bfcl_single_turn",
    "import_shellper",
    "load_suite",
    "parse_python_call",
    "resolve_bundle",
    "tool_schemas",
    "validate_suite",
    "write_suite",
]
