"""Where a run's data comes from: suites (``suite``: suite.yaml; ``cases``: the typed cases), their
validation against a bundle's tools (``validate``), the Gorilla file-system tools as suites know them
(``fs_tools``), and the importers of upstream data (``shellper_import``, ``bfcl_import`` with BFCL's
package data and code in ``bfcl_data``, ``bfcl_single`` for BFCL's single-turn categories with the
answers the oracle replays in ``bfcl_answers``; ``importing``: what they share)."""

from harness.eval.data.bfcl_data import (
    BfclDataError,
    category_files,
    distinct_tools,
    load_bfcl_module,
    multi_turn_classes,
    tool_schemas,
)
from harness.eval.data.bfcl_import import (
    BFCL_ADDED_TOOLS_PROMPT,
    MULTI_TURN,
    CallSyntaxError,
    bfcl_sources,
    import_bfcl,
    import_bfcl_multi_turn,
    parse_python_call,
)
from harness.eval.data.bfcl_single import ALL, SINGLE_TURN, import_bfcl_single_turn, is_single_turn
from harness.eval.data.cases import (
    BAD_ENTRY,
    EMPTY_WORKSPACE,
    CallSpec,
    Case,
    ChatMessage,
    DirNode,
    EpisodeCase,
    FileNode,
    FsCase,
    FsTree,
    NextCallCase,
    SingleTurnCase,
    session_setup,
)
from harness.eval.data.fs_tools import FS_TOOL_NAMES, PARAM_ORDER, builtin_fs_schemas
from harness.eval.data.importing import ImportFailure, ImportReport
from harness.eval.data.shellper_import import import_shellper
from harness.eval.data.snapshot import Snapshot, SnapshotError, copy_inputs, digests, load_inputs
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
    validate_loaded,
    validate_suite,
)

__all__ = [
    "ALL",
    "BAD_ENTRY",
    "BFCL_ADDED_TOOLS_PROMPT",
    "EMPTY_WORKSPACE",
    "FS_TOOL_NAMES",
    "MULTI_TURN",
    "PARAM_ORDER",
    "SINGLE_TURN",
    "BfclDataError",
    "CallSpec",
    "CallSyntaxError",
    "Case",
    "ChatMessage",
    "DirNode",
    "EchoMode",
    "EpisodeCase",
    "FileNode",
    "FsCase",
    "FsTree",
    "ImportFailure",
    "ImportReport",
    "NextCallCase",
    "SingleTurnCase",
    "Snapshot",
    "SnapshotError",
    "Suite",
    "SuiteError",
    "SuiteKind",
    "SuiteSpec",
    "ToolSet",
    "bfcl_sources",
    "builtin_fs_schemas",
    "bundle_tools",
    "category_files",
    "check_arguments",
    "check_calls",
    "copy_inputs",
    "describe_suite",
    "digests",
    "distinct_tools",
    "dump_case",
    "import_bfcl",
    "import_bfcl_multi_turn",
    "import_bfcl_single_turn",
    "import_shellper",
    "is_single_turn",
    "load_bfcl_module",
    "load_inputs",
    "load_suite",
    "multi_turn_classes",
    "parse_python_call",
    "resolve_bundle",
    "session_setup",
    "tool_schemas",
    "validate_loaded",
    "validate_suite",
    "write_suite",
]
