"""``harness compare``: the regression gate between two runs. ``policy``: what the gate decides with;
``setup_check``: what must hold before runs compare; ``paired``: rates case by case (exact McNemar,
paired bootstrap); ``gate``: ``compare_runs`` and the summary.json rules; ``console``, ``outputs``: the
tables, the JSON verdict, the Markdown step summary and the JUnit file; ``baseline``: replacing the
kept baseline atomically; ``side_by_side``: runs of setups that differ in columns, not a gate."""

from harness.eval.compare.baseline import BaselineError, check_baseline_update, update_baseline
from harness.eval.compare.console import print_comparison, sample_link
from harness.eval.compare.gate import (
    DEFAULT_MAX_DROP,
    DEFAULT_MAX_SLOWDOWN,
    DEFAULT_MIN_TIMING_N,
    TIMING_GATES,
    Comparison,
    Diff,
    TimingGate,
    compare_runs,
)
from harness.eval.compare.outputs import (
    Verdict,
    append_step_summary,
    step_summary_target,
    verdict,
    write_junit,
)
from harness.eval.compare.paired import (
    Flip,
    PairedMetric,
    exact_mcnemar,
    fewest_significant,
    min_detectable_effect,
)
from harness.eval.compare.policy import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_EFFECT,
    Policy,
    PolicyError,
    load_policy,
)
from harness.eval.compare.setup_check import CompareError, SetupCheck, recorded_fields
from harness.eval.compare.side_by_side import (
    print_side_by_side,
    runs_side_by_side,
    side_by_side_verdict,
)

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_MAX_DROP",
    "DEFAULT_MAX_SLOWDOWN",
    "DEFAULT_MIN_EFFECT",
    "DEFAULT_MIN_TIMING_N",
    "TIMING_GATES",
    "BaselineError",
    "CompareError",
    "Comparison",
    "Diff",
    "Flip",
    "PairedMetric",
    "Policy",
    "PolicyError",
    "SetupCheck",
    "TimingGate",
    "Verdict",
    "append_step_summary",
    "check_baseline_update",
    "compare_runs",
    "exact_mcnemar",
    "fewest_significant",
    "load_policy",
    "min_detectable_effect",
    "print_comparison",
    "print_side_by_side",
    "recorded_fields",
    "runs_side_by_side",
    "sample_link",
    "side_by_side_verdict",
    "step_summary_target",
    "update_baseline",
    "verdict",
    "write_junit",
]
