"""Running a suite: the options (``spec.RunSpec``) resolved once into a frozen ``spec.ResolvedRun``
(``resolve``), the token bound (``token_bound``), the runner and its pipeline (``runner``), one sample
through the kernel (``sample``) and the run's log (``run_log``)."""

from harness.eval.run.config import ConfigError, RunConfig, load_run_config, parse_models, split_vllm_args
from harness.eval.run.merge import MergeError, merge_runs
from harness.eval.run.resolve import MATRIX_FIELDS, EngineOpener, RunError, resolve_run
from harness.eval.run.run_log import LOG_FILE, RunLog
from harness.eval.run.runner import Progress, RunOutcome, run_suite
from harness.eval.run.sample import SampleOutcome, gold_answers
from harness.eval.run.spec import CaseSelection, EngineChoice, ResolvedRun, RunSpec, Sampling
from harness.eval.run.token_bound import TokenBound, choose_token_bound

__all__ = [
    "LOG_FILE",
    "MATRIX_FIELDS",
    "CaseSelection",
    "ConfigError",
    "EngineChoice",
    "EngineOpener",
    "MergeError",
    "Progress",
    "ResolvedRun",
    "RunConfig",
    "RunError",
    "RunLog",
    "RunOutcome",
    "RunSpec",
    "SampleOutcome",
    "Sampling",
    "TokenBound",
    "choose_token_bound",
    "gold_answers",
    "load_run_config",
    "merge_runs",
    "parse_models",
    "resolve_run",
    "run_suite",
    "split_vllm_args",
]
