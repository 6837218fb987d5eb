"""What must hold before two runs compare at all (``check_runs``); a failure is a ``CompareError``
naming the file and the field, which ``harness compare`` reports with exit 2.

- both runs finished (run.json's ``finished_at``): a run still in progress, or killed, has a partial
  matrix whose rates move as it fills;
- the same suite (``suite.name``): case ids of two suites are not the same cases;
- the same setup (run.json's ``setup``: engine, model and weights, server and its arguments, chat
  template, grammar library, token bound, suite digest, temperature, top_p), unless
  ``--allow-setup-change``: a difference in any is named. A run written before setups were recorded
  is checked on what its run.json says (engine, model, token bound, step bound, suite version,
  grammar library; greedy), and the comparison says which fields it could not check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.eval.store import RUN_FILE, RunRecord, grammar_library, setup_differences, setup_fields


class CompareError(Exception):
    """Two runs that cannot be compared, or a file the gate cannot use; the message names the file
    and the field."""


@dataclass(slots=True)
class SetupCheck:
    """What ``check_runs`` found."""

    differences: list[str] = field(default_factory=list)
    """``field: baseline X, candidate Y`` per setup field that differs."""
    allowed: bool = False
    """The differences were allowed (``--allow-setup-change``)."""
    unchecked: list[str] = field(default_factory=list)
    """Setup fields one side does not record (a run written before setup identities)."""
    baseline_digest: str | None = None
    candidate_digest: str | None = None


def recorded_fields(run: RunRecord) -> dict[str, Any]:
    """A run's setup as flat fields: its ``setup``, else what an older run.json says of it; and the
    digest of its suite (``RunInputs.suite_digest``) when it kept a copy of it."""
    fields = _setup_of(run)
    if run.inputs is not None:
        fields["suite_digest"] = run.inputs.suite_digest
    return fields


def _setup_of(run: RunRecord) -> dict[str, Any]:
    if run.setup is not None:
        return setup_fields(run.setup)
    options = run.options
    fields: dict[str, Any] = {
        "engine": f"{options.engine} --target {options.target}" if options.target else options.engine,
        "max_steps_per_turn": options.max_steps_per_turn if run.suite.kind == "episode" else None,
        "suite": f"{run.suite.name} v{run.suite.version}",
        "temperature": options.temperature if options.temperature is not None else 0.0,
        "top_p": options.top_p if options.top_p is not None else 1.0,
    }
    if run.model and "," not in run.model:
        fields.update({f"models[{family}]": run.model for family in options.families or ()})
    if options.max_tokens is not None:
        fields["max_tokens"] = options.max_tokens
    library = grammar_library(run)
    if library:
        fields["grammar_library"] = library
    return fields


def finished(path: Path, run: RunRecord) -> None:
    """CompareError unless ``run`` (read from ``path``) has finished."""
    if run.finished_at is None:
        raise CompareError(
            f"{path / RUN_FILE}: finished_at: the run has not finished (still running, or stopped before its "
            "end: continue it with `harness run SUITE --out DIR --resume`)"
        )


def check_runs(baseline: Path, base: RunRecord, candidate: Path, cand: RunRecord, allow_setup_change: bool) -> SetupCheck:
    """Refuse what cannot compare (module doc); the setup differences, allowed or not."""
    finished(baseline, base)
    finished(candidate, cand)
    if base.suite.name != cand.suite.name:
        raise CompareError(
            f"{candidate / RUN_FILE}: suite.name: {cand.suite.name!r}, but the baseline ({baseline / RUN_FILE}) ran "
            f"{base.suite.name!r}: runs of different suites do not compare"
        )
    b, c = recorded_fields(base), recorded_fields(cand)
    check = SetupCheck(
        differences=setup_differences(b, c), allowed=allow_setup_change,
        unchecked=sorted({k.partition("[")[0] for k in b} ^ {k.partition("[")[0] for k in c}),
        baseline_digest=base.setup.digest if base.setup else None,
        candidate_digest=cand.setup.digest if cand.setup else None,
    )
    if check.differences and not allow_setup_change:
        raise CompareError(
            f"{baseline / RUN_FILE} and {candidate / RUN_FILE}: the setups differ (setup.{'; setup.'.join(check.differences)}): "
            "scores of different setups measure the setups, not the change. Pass --allow-setup-change "
            "to compare them anyway."
        )
    return check


__all__ = ["CompareError", "SetupCheck", "check_runs", "recorded_fields"]
