"""Running a suite: the options (``harness.run_options.RunOptions``) resolved once into a frozen
``resolved.ResolvedRun`` (``resolve``), the token bound (``token_bound``), the runner and its pipeline
(``runner``), one sample through the kernel (``sample``), recorded from the kernel's events
(``recorder``, whose observers a user may join), and the run's log (``run_log``)."""

from harness.eval.run.config_file import (
    ConfigError,
    ConfigFile,
    load_config_file,
    parse_models,
    split_vllm_args,
)
from harness.eval.run.merge import MergeError, merge_runs
from harness.eval.run.recorder import ObserverFactory, SampleRecorder, load_observer
from harness.eval.run.resolve import EngineOpener, RunError, RunPlace, resolve_run
from harness.eval.run.resolved import CaseSelection, ResolvedRun, Sampling
from harness.eval.run.run_log import LOG_FILE, RunLog
from harness.eval.run.runner import Progress, RunOutcome, run_suite
from harness.eval.run.sample import SampleOutcome, gold_answers
from harness.eval.run.token_bound import TokenBound, choose_token_bound
from harness.run_options import RunOptions

__all__ = [
    "LOG_FILE",
    "CaseSelection",
    "ConfigError",
    "ConfigFile",
    "EngineOpener",
    "MergeError",
    "ObserverFactory",
    "Progress",
    "ResolvedRun",
    "RunError",
    "RunLog",
    "RunOptions",
    "RunOutcome",
    "RunPlace",
    "SampleOutcome",
    "SampleRecorder",
    "Sampling",
    "TokenBound",
    "choose_token_bound",
    "gold_answers",
    "load_config_file",
    "load_observer",
    "merge_runs",
    "parse_models",
    "resolve_run",
    "run_suite",
    "split_vllm_args",
]
