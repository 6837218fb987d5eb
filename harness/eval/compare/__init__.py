"""``harness compare``: the regression gate between two runs' summary.json (``gate``: the rules and
``compare_runs``) and its output (``console``)."""

from harness.eval.compare.console import print_comparison
from harness.eval.compare.gate import (
    DEFAULT_MAX_DROP,
    DEFAULT_MAX_SLOWDOWN,
    DEFAULT_MIN_TIMING_N,
    TIMING_GATES,
    Comparison,
    Diff,
    TimingGate,
    compare_runs,
    metric_kind,
    timing_gate_note,
)

__all__ = [
    "DEFAULT_MAX_DROP",
    "DEFAULT_MAX_SLOWDOWN",
    "DEFAULT_MIN_TIMING_N",
    "TIMING_GATES",
    "Comparison",
    "Diff",
    "TimingGate",
    "compare_runs",
    "metric_kind",
    "print_comparison",
    "timing_gate_note",
]
