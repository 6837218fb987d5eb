"""Scoring a run from its saved samples alone, never an engine: each sample against its case
(``scoring``: validity, exact_match, state_match, grammar_rejection, truncated; ``verdicts``: what every
scorer shares; a single-turn case's verdict and a benchmark's own episode checker are asked of the
table ``harness.benchmarks``), calls executed on the bundle's tool source (``harness.tools``), the one
episode verdict (``episodes``), the gold side of the state checks once per case and what
details.jsonl keeps of it (``golds``), summary.json and errors.json (``summary``), and a whole run directory scored
or re-scored (``score_dir``: ``harness score`` and the end of every run)."""

from harness.eval.score.score_dir import run_suite_of, score_run, score_samples
from harness.eval.score.scoring import CUT, Scorer, Verdict
from harness.eval.score.summary import (
    RATE_METRICS,
    TARGET_METRIC,
    TIMING_METRICS,
    error_counts,
    per_token,
    steps_frame,
    summarize,
    wilson,
)
from harness.eval.score.verdicts import (
    NOT_APPLICABLE,
    PASS,
    Call,
    call_difference,
    fail,
    steps_validity,
    unparsed,
    was_cut,
)

__all__ = [
    "CUT",
    "NOT_APPLICABLE",
    "PASS",
    "RATE_METRICS",
    "TARGET_METRIC",
    "TIMING_METRICS",
    "Call",
    "Scorer",
    "Verdict",
    "call_difference",
    "error_counts",
    "fail",
    "per_token",
    "run_suite_of",
    "score_run",
    "score_samples",
    "steps_frame",
    "steps_validity",
    "summarize",
    "unparsed",
    "was_cut",
    "wilson",
]
