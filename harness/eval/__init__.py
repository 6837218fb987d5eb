"""Suites, importers and (later) the runner, scoring and reports.

Importing this package is cheap: pydantic and PyYAML only.
"""

from harness.eval.checks import (
    ToolSet,
    bundle_tools,
    check_arguments,
    check_calls,
    describe_suite,
    validate_suite,
)
from harness.eval.compare import Comparison, compare_runs
from harness.eval.fs_tools import FS_TOOL_NAMES, PARAM_ORDER, builtin_fs_schemas
from harness.eval.importers import (
    ImportFailure,
    ImportReport,
    import_bfcl,
    import_shellper,
    parse_python_call,
)
from harness.eval.report import write_report
from harness.eval.results import SampleWriter, load_samples, make_sample_id, repair_samples
from harness.eval.rundir import RunDirError, load_run_dir
from harness.eval.runner import RunError, RunOutcome, RunSpec, run_suite
from harness.eval.score_run import score_run
from harness.eval.scoring import Scorer
from harness.eval.suite import (
    EMPTY_WORKSPACE,
    CallSpec,
    Case,
    ChatMessage,
    DirNode,
    EpisodeCase,
    FileNode,
    FsTree,
    NextCallCase,
    Suite,
    SuiteError,
    SuiteSpec,
    load_suite,
    resolve_bundle,
    write_suite,
)
from harness.eval.summary import summarize, wilson

__all__ = [
    "EMPTY_WORKSPACE",
    "FS_TOOL_NAMES",
    "PARAM_ORDER",
    "CallSpec",
    "Case",
    "ChatMessage",
    "Comparison",
    "DirNode",
    "EpisodeCase",
    "FileNode",
    "FsTree",
    "ImportFailure",
    "ImportReport",
    "NextCallCase",
    "RunDirError",
    "RunError",
    "RunOutcome",
    "RunSpec",
    "SampleWriter",
    "Scorer",
    "Suite",
    "SuiteError",
    "SuiteSpec",
    "ToolSet",
    "builtin_fs_schemas",
    "bundle_tools",
    "check_arguments",
    "check_calls",
    "compare_runs",
    "describe_suite",
    "import_bfcl",
    "import_shellper",
    "load_run_dir",
    "load_samples",
    "load_suite",
    "make_sample_id",
    "parse_python_call",
    "repair_samples",
    "resolve_bundle",
    "run_suite",
    "score_run",
    "summarize",
    "validate_suite",
    "wilson",
    "write_report",
    "write_suite",
]
