"""The gate's policy: a small YAML (or JSON) file saying how sure a regression must be and how large
(``harness compare --policy FILE``; every field has a default, so no file is needed).

    alpha: 0.05            # significance level of the paired tests
    min_effect: 0.05       # smallest change of a rate that counts (absolute: 0.05 = 5 points)
    metrics: [validity, exact_match, state_match, grammar_rejection, truncated]   # rates gated
    correction: holm       # holm | none: p values adjusted for the number of gated rates
    max_worse_cases: 0     # also fail when more cases got worse (default: 0 for two oracle runs, else none)
    max_missing_cases: 0   # fail when more of the baseline's cases are missing from the candidate
    timings: auto          # auto | gate | info (see harness.eval.compare.gate)
    max_slowdown: 3.0      # a timing over this ratio to the baseline is a regression...
    timing_ratios:         # ...unless its own ratio is given here
      mask_us_p50: 2.0
    min_timing_n: 20       # values a timing needs before it is gated
    max_drop: 0.02         # runs without per-case scores (summary.json only): the rule before paired tests

A rate of ``metrics`` regresses when the paired test says the change is significant (p < alpha) AND
it is at least ``min_effect`` in the worse direction; rates not listed are shown, not gated. Unknown
keys and metric names are errors naming the file and the field, with the nearest known name.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.files import InputFileError, read_yaml
from harness.vocabulary import ACCURACY_METRICS, SAMPLE_METRICS, TIMING_METRICS, Metric

TimingGate = Literal["auto", "gate", "info"]
TIMING_GATES: tuple[TimingGate, ...] = ("auto", "gate", "info")
RATE_METRICS: tuple[str, ...] = tuple(str(m) for m in (*SAMPLE_METRICS, Metric.target_mask_diff))
"""Rates the paired comparison can gate (per case: pass or fail)."""
DEFAULT_ALPHA = 0.05
DEFAULT_MIN_EFFECT = 0.05
DEFAULT_MAX_DROP = 0.02
DEFAULT_MAX_SLOWDOWN = 3.0
DEFAULT_MIN_TIMING_N = 20


class PolicyError(Exception):
    """A policy file the gate cannot use; the message names the file and the field."""


def did_you_mean(name: str, known: list[str] | tuple[str, ...]) -> str:
    """`` (did you mean 'x'?)`` for the nearest of ``known``, or ``""``."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _known_metric(name: str, known: tuple[str, ...], what: str) -> str:
    if name not in known:
        raise ValueError(f"unknown {what} {name!r}{did_you_mean(name, known)}; known: {', '.join(known)}")
    return name


class Policy(BaseModel):
    """How the gate decides (see the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alpha: float = Field(default=DEFAULT_ALPHA, gt=0, lt=1)
    """Significance level of the paired tests (exact McNemar; paired bootstrap and sign test)."""
    min_effect: float = Field(default=DEFAULT_MIN_EFFECT, ge=0, le=1)
    """Smallest absolute change of a rate that can be a regression (a significant 1-point drop on
    thousands of cases is real, and still not worth failing a build for)."""
    metrics: tuple[str, ...] = RATE_METRICS
    """The rates gated; others are shown only."""
    max_worse_cases: int | None = Field(default=None, ge=0)
    """Also a regression, significant or not: more than this many cases got worse on a gated rate.
    For setups without noise, where one case that got worse is a change and not luck: None (default)
    means 0 between two runs of the oracle (it replays gold), no such limit otherwise."""
    max_missing_cases: int = Field(default=0, ge=0)
    """A regression when more of the baseline's cases than this are missing from the candidate (per family
    and strategy): a candidate that ran half the cases has not shown the other half still pass."""
    correction: Literal["holm", "none"] = "holm"
    """How the p values of the gated rates are adjusted for their number: ``holm`` keeps the chance
    of any false alarm in one comparison at ``alpha``; ``none`` tests each rate at ``alpha``."""
    timings: TimingGate = "auto"
    """Gate timings: ``auto`` only between runs measured on the same machine, ``gate`` always,
    ``info`` never."""
    max_slowdown: float = Field(default=DEFAULT_MAX_SLOWDOWN, ge=1)
    """Largest allowed candidate/baseline ratio of a timing (CI machines are noisy: keep it loose)."""
    timing_ratios: dict[str, float] = Field(default_factory=dict)
    """Per-timing overrides of ``max_slowdown``."""
    min_timing_n: int = Field(default=DEFAULT_MIN_TIMING_N, ge=1)
    """Values a timing needs on both sides before it is gated."""
    max_drop: float = Field(default=DEFAULT_MAX_DROP, ge=0, le=1)
    """Runs without per-case scores (only summary.json): the largest allowed drop of a rate."""

    @field_validator("metrics", mode="before")
    @classmethod
    def _metrics(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return tuple(_known_metric(str(m), RATE_METRICS, "metric") for m in value)
        return value

    @field_validator("timing_ratios")
    @classmethod
    def _ratios(cls, value: dict[str, float]) -> dict[str, float]:
        for name, ratio in value.items():
            _known_metric(name, tuple(str(m) for m in TIMING_METRICS), "timing")
            if not ratio >= 1:
                raise ValueError(f"{name}: a ratio must be >= 1, got {ratio}")
        return value

    def worse_cases_allowed(self, engines: tuple[str, str]) -> int | None:
        """``max_worse_cases``, or its default for runs on ``engines`` (baseline, candidate)."""
        if self.max_worse_cases is not None:
            return self.max_worse_cases
        return 0 if all(e.split()[0] == "oracle" for e in engines) else None

    def ratio_for(self, metric: str) -> float:
        """The largest allowed slowdown of ``metric``."""
        return self.timing_ratios.get(metric, self.max_slowdown)

    @staticmethod
    def higher_is_better(metric: str) -> bool:
        """Accuracy rates rise when better; rejections, truncations and vLLM mask differences fall."""
        return metric in ACCURACY_METRICS


def _problem(error: Any, path: Path) -> str:
    where = ".".join(str(p) for p in error["loc"]) or "(top level)"
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        name = str(error["loc"][-1])
        message = f"unknown key{did_you_mean(name, tuple(Policy.model_fields))}; known: {', '.join(Policy.model_fields)}"
    return f"{path}: {where}: {message}"


def load_policy(path: Path) -> Policy:
    """The policy in ``path``; PolicyError naming the file and the field for anything wrong."""
    try:
        raw = read_yaml(path)
    except InputFileError as exc:
        raise PolicyError(str(exc)) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise PolicyError(f"{path}: expected a mapping of policy fields, got {type(raw).__name__}")
    try:
        return Policy.model_validate(raw)
    except ValidationError as exc:
        raise PolicyError("; ".join(_problem(e, path) for e in exc.errors(include_url=False))) from None


__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_MAX_DROP",
    "DEFAULT_MAX_SLOWDOWN",
    "DEFAULT_MIN_EFFECT",
    "DEFAULT_MIN_TIMING_N",
    "RATE_METRICS",
    "TIMING_GATES",
    "Policy",
    "PolicyError",
    "TimingGate",
    "did_you_mean",
    "load_policy",
]
