"""Typed records of a run directory, defined once: what the runner writes and scoring, the summary,
the report, compare and the tests read.

- ``RunRecord``: ``run.json``, the run's spec, engine, versions and timings;
- ``SampleRecord``: one line of ``samples.jsonl``, a finished sample with its ``StepRecord``s;
- ``PromptRecord``: one line of ``prompts.jsonl``, a prompt the run sent (once, however often);
- ``ScoreRow``: one row of ``scores.parquet`` (long format: one per sample and metric);
- ``SummaryRow``: one row of ``summary.json``; ``ErrorCount``: one row of ``errors.json``.

Words: a *step* is one model call (and the tool calls it made); a *turn* is one user input of an
episode. Files written before these records (November 2026) still load: a sample's model calls were
called ``turns`` then and a step's user turn ``user_turn``, and summary.json named the rejection rate
``grammar_rejections``; the models read those names and write today's.

Every model forbids unknown fields, so a misspelt key is an error naming the field, never a silent
default. JSON values a tool or a model produced (arguments, outputs) stay plain JSON.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from harness.eval.store.base import OmitsAbsent, Record, renamed
from harness.eval.store.gate_records import KFigure, Repeats, SetupIdentity
from harness.eval.store.run_inputs import PromptRecord, RunInputs, Selection, Shard
from harness.run_options import RunOptions
from harness.vocabulary import SAMPLE_METRICS, Family, Metric, Strategy

METRICS: tuple[Metric, ...] = SAMPLE_METRICS
"""The per-sample metrics of scores.parquet; summary.json gives each one's rate under the same name."""
_OLD_TOP_LEVEL_OPTIONS = frozenset({
    "engine", "target", "vllm_args", "families", "strategies", "epochs", "limit", "selection", "concurrency",
    "sample_timeout_s", "max_steps_per_turn", "max_tokens", "temperature", "top_p", "seed"})
"""The fields of ``RunOptions`` that run.json held at the top level before ``RunRecord.options``."""
_OLD_METRIC_NAMES = {"grammar_rejections": "grammar_rejection"}
SampleKind = Literal["next_call", "episode", "single_turn"]
Status = Literal["ok", "error"]


# -- samples.jsonl ------------------------------------------------------------------------------------


class CallRecord(Record):
    """A tool call the model made (as parsed)."""

    name: str
    """The tool's name."""
    arguments: dict[str, Any]
    """The decoded arguments (a JSON object)."""


class ParseErrorRecord(Record):
    """Why (part of) a model answer did not yield a clean call."""

    kind: str
    """``parse:reason`` (``parse:no_call``, ``parse:bad_json``, ``parse:unknown_tool``...)."""
    message: str
    """What was wrong, in words."""


class ToolResultRecord(Record):
    """What one tool call returned in the sandbox during generation."""

    name: str
    """The tool that ran."""
    output: Any
    """Its output as the model saw it (JSON)."""
    is_error: bool
    """The call failed (unknown tool, bad arguments, script error, limit...)."""
    error_kind: str | None
    """``tool:reason`` when ``is_error``."""
    duration_us: float | None
    """Host-side time of the call (0.1 us resolution), when measured."""


class UsageRecord(OmitsAbsent):
    """Token counts of one model call."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("counted_by",)

    prompt_tokens: int
    """Tokens of the prompt."""
    completion_tokens: int
    """Tokens generated."""
    total_tokens: int
    """Both."""
    counted_by: str | None = None
    """``harness``: the server sent none, the harness counted the answer (``prompt_tokens`` 0: not counted)."""


class StepStats(Record):
    """What an engine that runs the grammar itself measured for one model call."""

    compile_ms: float | None
    """Time to compile the grammar (None: no grammar, or not measured)."""
    compile_cached: bool | None
    """The compile was a cache hit."""
    compile_found: str | None = None
    """``compiled`` (cold, for this call), ``memory`` (compiled earlier in the process) or ``disk`` (kept by
    an earlier run); None in older files."""
    grammar_backend: str | None = None
    """The grammar library that ran the constraint (``xgrammar``, ``guidance``); None in older files."""
    grammar_reason: str | None = None
    """Why the grammar refused the gold answer, in its library's words (with ``grammar_error``)."""
    mask_us: tuple[float, ...]
    """Each token-mask fill, microseconds (0.001 resolution)."""
    accept_us: tuple[float, ...]
    """Each ``accept_token``, microseconds."""
    generated_tokens: int
    """Tokens generated."""
    grammar_error: str | None
    """``grammar:rejected_gold`` when the grammar forbade a gold token (the oracle)."""
    target_steps: int | None = None
    """Oracle with ``--target vllm``: steps where vLLM's grammar and the harness's were compared."""
    target_mask_diff_steps: int | None = None
    """Of those, steps where vLLM's grammar allows other tokens than the harness's."""
    target_only_tokens: tuple[str, ...] = ()
    """A few tokens only vLLM's grammar allows there (special tokens as text, typically)."""
    forced_tokens: int | None = None
    """Of ``generated_tokens``, those the grammar forced and the engine appended without a model step
    (jump-forward; None: the engine does not jump)."""


class StepRecord(Record):
    """One model call of a sample: the raw answer, the calls it parsed to, their results, timings."""

    output: str | None
    """The model's raw text (None when it returned none)."""
    tool_calls: tuple[CallRecord, ...]
    """The calls parsed from it (only clean ones)."""
    parse_errors: tuple[ParseErrorRecord, ...]
    """What did not parse."""
    tool_results: tuple[ToolResultRecord, ...]
    """One per call, in call order."""
    latency_ms: float | None
    """Time of the model call as its client saw it."""
    ttft_ms: float | None
    """Time to first token (when streaming, or from an in-process engine)."""
    constraint_first: bool | None = None
    """The run's first call to its server with this constraint (compiled then, unless the server kept it)."""
    finish_reason: str | None = None
    """Why the answer ended, as the engine said (``stop``, ``length``...; None in older files)."""
    usage: UsageRecord | None
    """Token counts, when the engine reports them."""
    stats: StepStats | None
    """Grammar figures, from engines that run the grammar themselves (oracle, local)."""
    turn: int | None = None
    """Episodes: the user turn (0-based) this step answered; None for a next-call sample."""
    prompt_id: str | None = None
    """The prompt this call sent, rendered by the family's chat template: its id in the run's
    prompts.jsonl (``PromptRecord``; None in runs written before prompts were kept)."""

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed(data, "user_turn", "turn")


class SampleKey(Record):
    """Which sample: its ids and its place in the family x strategy x case x epoch matrix."""

    sample_id: str
    """``<case_id>/<family>/<strategy>/<epoch>``: unique in a run, stable across resumes."""
    case_id: str
    """The suite case."""
    family: Family
    """The model family."""
    strategy: Strategy
    """The constraint strategy."""
    epoch: int
    """Repetition number, from 1."""
    kind: SampleKind
    """The suite's kind."""


class SampleRecord(SampleKey, OmitsAbsent):
    """One line of samples.jsonl: a case on one family x strategy x epoch, finished."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("seed", "server_constraint")

    status: Status
    """``error`` when the sample ended early (``error_kind`` says why)."""
    error_kind: str | None
    """``checker:reason`` of the error that ended the sample (``model:timeout``, ``sample:timeout``...)."""
    error: str | None
    """That error in words."""
    steps: tuple[StepRecord, ...]
    """Every model call, in order."""
    attempts: int = 1
    """Tries (a sample whose model call timed out or lost its connection is run once more)."""
    max_steps_turns: tuple[int, ...] = ()
    """Episode user turns that ended because they reached the step bound, not by a text answer. The
    episode ends at such a turn (a force quit: ``state:force_terminated``), so since then it holds
    one turn at most; files written before may list several."""
    duration_ms: float
    """Wall time of the sample."""
    workspace_ms: float = 0.0
    """Of which building the sample's workspace (sandbox time; ``setup_ms`` in files written before
    27 November 2026)."""
    harness_ms: float
    """Of which the harness itself: the wall time less model, tool and workspace time."""
    seed: int | None = None
    """The seed its requests carried (a sampled run: derived from the run's seed, the case and the
    epoch); absent when the run was greedy."""
    server_constraint: str | None = None
    """Under ``required``/``strict``: what vLLM builds for the sample's first request
    (``structural_tag:hermes``, ``json_array``, ``none``); absent under the other strategies."""

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed(renamed(data, "turns", "steps"), "setup_ms", "workspace_ms")

    def tool_results(self) -> list[ToolResultRecord]:
        """Every tool result of every step, in order."""
        return [r for step in self.steps for r in step.tool_results]


# -- scores.parquet, summary.json, errors.json ----------------------------------------------------------


class ScoreRow(Record):
    """One row of scores.parquet: one metric of one sample."""

    sample_id: str
    """The sample."""
    case_id: str
    """Its case."""
    family: Family
    """Its model family."""
    strategy: Strategy
    """Its constraint strategy."""
    epoch: int
    """Its epoch."""
    metric: Metric
    """What was scored."""
    value: float | None
    """1 or 0; None when the metric does not apply (no file system to compare, not the oracle)."""
    error_kind: str | None
    """``checker:reason`` when the value is 0 (and for a rejected gold answer)."""


class SummaryRow(OmitsAbsent):
    """One row of summary.json: a rate or a timing per family and strategy. Its names are plain text,
    so a summary written by another version (a family, a metric this one does not know) still reads."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("cases", "repeats")

    family: str
    """The model family (a ``Family``)."""
    strategy: str
    """The constraint strategy (a ``Strategy``)."""
    metric: str
    """A ``Metric``: a rate (``validity``, ``exact_match``, ``state_match``, ``grammar_rejection``,
    ``truncated``, ``target_mask_diff``) or a timing (``ttft_ms_p50``, ``latency_ms_p50``,
    ``compile_ms``, ``mask_us_p50``...)."""
    value: float | None
    """The rate or the timing (None: not measured; such rows are normally left out)."""
    n: int | None = None
    """Scoring points (rates) or values (timings) it is computed from."""
    ci_low: float | None = None
    """Wilson 95% interval of a rate, low end."""
    ci_high: float | None = None
    """Wilson 95% interval of a rate, high end."""
    cases: int | None = None
    """Rates: the cases behind the ``n`` samples, the unit of the interval (with epochs > 1 the interval
    is Wilson's at the effective number of independent samples, ``harness.stats.clustered_wilson``);
    absent in files written before."""
    repeats: Repeats | None = None
    """Rates of runs with epochs > 1: pass@k, pass^k and the case classes."""

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("metric") in _OLD_METRIC_NAMES:
            data = {**data, "metric": _OLD_METRIC_NAMES[data["metric"]]}
        return data


class ErrorCount(Record):
    """One row of errors.json: how many samples of a family and strategy failed with one kind."""

    family: Family
    """The model family."""
    strategy: Strategy
    """The constraint strategy."""
    error_kind: str
    """``checker:reason`` (an ``ErrorKind``, or a server's ``model:http_<status>``)."""
    count: int
    """Samples (each counted once per kind, however many metrics it failed)."""


# -- run.json -------------------------------------------------------------------------------------------


class SuiteRef(Record):
    """The suite a run ran."""

    name: str
    """Its name."""
    version: str
    """Its version."""
    kind: SampleKind
    """``next_call`` or ``episode``."""
    path: str
    """Its folder (relative to the working directory when under it): ``harness score`` finds it there."""


class Versions(Record):
    """Versions of the harness and of what its figures depend on (None: not installed)."""

    harness: str | None
    """This package."""
    xgrammar: str | None
    """The grammar engine."""
    llguidance: str | None = None
    """The other grammar engine (``--grammar-backend guidance``)."""
    pydantic_monty: str | None
    """The sandbox."""
    python: str | None
    """The interpreter."""


class Machine(Record):
    """The machine a run was measured on: timings compare only between runs on the same one."""

    cpu: str | None
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    cores: int | None
    """Logical cores the process could use."""
    system: str
    """``platform.system()`` and release."""
    machine_id: str | None
    """A short hash of ``/etc/machine-id`` (two VMs of one type share cpu and cores, not this)."""


class RunTiming(Record):
    """Where a run's time went."""

    samples_s: float
    """Wall time of the samples run by this invocation."""
    samples: int
    """How many samples that was."""
    harness_ms_p50: float | None
    """Median harness time per sample (``harness.stats`` percentile)."""
    harness_ms_p99: float | None
    """Its 99th percentile."""
    harness_ms_mean: float | None
    """Its mean."""


class RunRecord(Record):
    """run.json: what was run, on which engine and versions, and when."""

    run_id: str
    """The run directory's name."""
    suite: SuiteRef
    """The suite."""
    bundle: str | None = None
    """The bundle's folder (runs written before November 2026 do not say)."""
    options: RunOptions
    """What the run asked for, every value settled (``harness.run_options``): the one model the command
    maps onto, recorded as-is. Files written before it held these fields at the top level."""
    engine_note: str
    """What the engine is, in words (the oracle measures grammars, not a model...)."""
    base_url: str | None = None
    """The server (several, comma-separated, for replicas), for a server engine."""
    model: str | None
    """The served model id the requests carried (one per family for ``vllm``, comma-separated)."""
    models: dict[str, str] | None = None
    """The served model id each family's requests carried (None in runs written before models per family)."""
    engine_details: dict[str, Any] | None = None
    """What the engine recorded once it ran: for ``vllm`` each server's version, full command line,
    start-up time, model and log; for replicas the requests each answered."""
    inputs: RunInputs | None = None
    """The copies of the suite and bundle this directory keeps (None in runs written before them)."""
    merged_from: list[str] = Field(default_factory=list)
    """``harness merge``: the run ids of the shards this run joins."""
    max_tokens_source: str | None = None
    """Where the bound came from: ``--max-tokens``, ``suite.yaml max_tokens``, or how it was derived
    from the suite's longest gold answer (``harness.eval.run.token_bound``)."""
    setup: SetupIdentity | None = None
    """What determines the scores (``SetupIdentity``); None in runs written before it was recorded."""
    server_constraints: dict[str, str] | None = None
    """``family/strategy`` -> what vLLM builds itself under ``required``/``strict`` for the suite's tools
    (``structural_tag:hermes``, ``json_array``, ``none``); None when the run has neither strategy."""
    answers_audited: bool = False
    """Each answer to a harness constraint was walked through it during the run (runs from December 2026
    on, every engine but the oracle): only such runs have a ``not_enforced`` rate."""
    not_enforced: list[str] = Field(default_factory=list)
    """Lanes (``family/strategy``) run with ``--allow-unenforced`` although the preflight showed the server
    does not enforce their constraint: labeled "not enforced" (their answers are not the strategy's)."""
    versions: Versions
    """Versions of what the figures depend on."""
    machine: Machine | None = None
    """Where the timings were measured (runs written before November 2026 do not say)."""
    git_commit: str | None = None
    """The harness's commit, when run from a git checkout."""
    started_at: str
    """UTC, ``YYYY-MM-DDTHH:MM:SSZ``."""
    finished_at: str | None = None
    """UTC; None while running (or killed)."""
    resumed_at: list[str] = Field(default_factory=list)
    """UTC times the run was continued with ``--resume``."""
    timing: RunTiming | None = None
    """Where the time went (written at the end)."""

    @model_validator(mode="before")
    @classmethod
    def _options_of_old_files(cls, data: Any) -> Any:
        """A run.json written before ``options``: its option fields, at the top level then, moved in."""
        if isinstance(data, dict) and "options" not in data and "engine" in data:
            moved = {k: v for k, v in data.items() if k in _OLD_TOP_LEVEL_OPTIONS}
            data = {**{k: v for k, v in data.items() if k not in moved}, "options": moved}
        return data


__all__ = [
    "METRICS",
    "CallRecord",
    "ErrorCount",
    "KFigure",
    "Machine",
    "Metric",
    "OmitsAbsent",
    "ParseErrorRecord",
    "PromptRecord",
    "Record",
    "Repeats",
    "RunInputs",
    "RunOptions",
    "RunRecord",
    "RunTiming",
    "SampleKey",
    "SampleKind",
    "SampleRecord",
    "ScoreRow",
    "Selection",
    "SetupIdentity",
    "Shard",
    "StepRecord",
    "StepStats",
    "SuiteRef",
    "SummaryRow",
    "ToolResultRecord",
    "UsageRecord",
    "Versions",
]
