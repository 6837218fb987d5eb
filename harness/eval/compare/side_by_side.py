"""``harness compare --side-by-side RUN RUN [RUN...]``: runs of one suite in columns, not a gate.

The gate refuses runs whose setups differ (``setup_check``): their scores measure the setups, not a
change. A comparison *of* setups (the same cases on llama.cpp's server, vLLM and the local engine) wants
exactly those runs side by side, so this view takes them, names every setup field that differs, and
decides nothing (exit 0). What still refuses: an unfinished run and runs of different suites (their
case ids are not the same cases). Per run it also lists the answers its engine let through that the
harness's own grammar rejects (``constraint:not_enforced``: a server's grammar engine that accepts
what xgrammar does not), and says when the tokens were counted by the harness (a server whose streams
carry no usage). The reverse, an answer xgrammar allows that a server's grammar forbade, never shows in
answers (the server steered the model elsewhere), so it is not listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.eval.compare.setup_check import CompareError, finished, recorded_fields
from harness.eval.store import (
    RunDirError,
    RunRecord,
    SummaryRow,
    UnenforcedAnswer,
    counted_by,
    read_run,
    read_samples,
    read_summary,
    unenforced_answers,
)
from harness.vocabulary import Metric

SHOWN: tuple[Metric, ...] = (
    Metric.validity, Metric.exact_match, Metric.state_match, Metric.not_enforced, Metric.grammar_rejection,
    Metric.truncated, Metric.ttft_ms_p50, Metric.latency_ms_p50, Metric.tokens_per_s_p50, Metric.tokens_p50,
)
"""The metrics shown, in order (a metric no run measured is left out)."""


@dataclass(slots=True)
class SideRun:
    """One run as the view shows it."""

    path: Path
    label: str
    """The directory's name and what answered (engine, dialect)."""
    run: RunRecord
    summary: dict[tuple[str, str, str], SummaryRow]
    unenforced: list[UnenforcedAnswer]
    tokens_counted_by: str | None


@dataclass(slots=True)
class SideBySide:
    runs: list[SideRun]
    differences: list[str] = field(default_factory=list)
    """``field: label1 X; label2 Y; ...`` per setup field whose value is not the same in every run."""
    rows: list[tuple[str, str, str, list[SummaryRow | None]]] = field(default_factory=list)
    """(family, strategy, metric, each run's row) for every lane some run has."""


def label(path: Path, run: RunRecord) -> str:
    """``DIR (engine)``, with the dialect a server was spoken to in."""
    dialect = ((run.engine_details or {}).get("dialect") or {}).get("name")
    engine = str(recorded_fields(run).get("engine") or run.options.engine)
    return f"{path.name} ({engine}" + (f", dialect {dialect})" if dialect else ")")


def _differences(runs: Sequence[SideRun]) -> list[str]:
    fields = [recorded_fields(r.run) for r in runs]
    names = list(dict.fromkeys(name for f in fields for name in f))
    out = []
    for name in names:
        values = [f.get(name) for f in fields]
        if len({repr(v) for v in values}) > 1:
            out.append(f"{name}: " + "; ".join(f"{r.label} {v!r}" for r, v in zip(runs, values, strict=True)))
    return out


def _load(path: Path) -> SideRun:
    if not path.is_dir():
        raise RunDirError(path, "not a directory")
    run = read_run(path)
    finished(path, run)
    samples = read_samples(path)
    records = list(samples.samples.values()) if samples is not None else []
    summary = {(r.family, r.strategy, r.metric): r for r in read_summary(path) if r.value is not None}
    return SideRun(path, label(path, run), run, summary, unenforced_answers(records), counted_by(records))


def runs_side_by_side(run_dirs: Sequence[Path]) -> SideBySide:
    """The runs in columns (module doc); CompareError naming the file and field when they cannot stand
    side by side, RunDirError on unreadable input."""
    if len(run_dirs) < 2:
        raise CompareError("--side-by-side needs at least two run directories")
    runs = [_load(Path(d)) for d in run_dirs]
    first = runs[0]
    for other in runs[1:]:
        if other.run.suite.name != first.run.suite.name:
            raise CompareError(f"{other.path}: suite.name: {other.run.suite.name!r}, but {first.path} ran "
                               f"{first.run.suite.name!r}: runs of different suites do not compare")
    view = SideBySide(runs, _differences(runs))
    lanes = list(dict.fromkeys((f, s) for r in runs for (f, s, _) in r.summary))
    for family, strategy in lanes:
        for metric in SHOWN:
            cells = [r.summary.get((family, strategy, metric)) for r in runs]
            if any(c is not None for c in cells):
                view.rows.append((family, strategy, metric, cells))
    return view


def _cell(row: SummaryRow | None) -> str:
    if row is None or row.value is None:
        return "-"
    if row.metric.endswith(("_ms_p50", "_s_p50", "tokens_p50")):
        value = f"{row.value:.0f}" if row.value >= 100 else f"{row.value:.1f}"
    else:
        value = f"{row.value:.2f}"
    return f"{value} (n {row.n})" if row.n is not None else value


def print_side_by_side(view: SideBySide, console: Any) -> None:
    """The table, the setup differences, then per run its token counting and its unenforced answers."""
    from rich.table import Table

    table = Table(title="side by side (not a gate: nothing is decided)", title_justify="left")
    for col in ("family", "strategy", "metric"):
        table.add_column(col)
    for r in view.runs:
        table.add_column(r.label, justify="right")
    for family, strategy, metric, cells in view.rows:
        table.add_row(family, strategy, metric, *(_cell(c) for c in cells))
    console.print(table)
    if view.differences:
        console.print("[yellow]the setups differ[/] (what these columns compare):", highlight=False)
        for line in view.differences:
            console.print(f"  {line}", markup=False, highlight=False)
    for r in view.runs:
        if r.tokens_counted_by:
            console.print(f"{r.label}: tokens counted by the {r.tokens_counted_by} with the family's tokenizer "
                          "(the server sent no usage): tokens/s is the harness's count over the stream's time",
                          markup=False, highlight=False)
        if r.run.answers_audited:  # an older run, or the oracle's gold replay: no answer was walked
            console.print(f"{r.label}: {len(r.unenforced)} answer(s) its engine let through that the harness's "
                          "grammar (xgrammar) rejects" + (":" if r.unenforced else ""), markup=False, highlight=False)
        for a in r.unenforced:
            console.print(f"  {a.sample_id}: {a.reason}; answer {a.answer!r}", markup=False, highlight=False)
    if any(r.run.answers_audited for r in view.runs):
        console.print("(the reverse, an answer xgrammar allows that a server's grammar forbade, does not show in "
                      "answers: the server steered the model elsewhere)", markup=False, highlight=False)


def side_by_side_verdict(view: SideBySide) -> dict[str, Any]:
    """The JSON line printed last: the runs, the differences, each run's unenforced sample ids."""
    return {"verdict": "side_by_side", "exit_code": 0, "runs": [str(r.path) for r in view.runs],
            "setup_differences": view.differences,
            "not_enforced": {str(r.path): [a.sample_id for a in r.unenforced] for r in view.runs},
            "tokens_counted_by": {str(r.path): r.tokens_counted_by for r in view.runs}}


__all__ = ["SideBySide", "SideRun", "print_side_by_side", "runs_side_by_side", "side_by_side_verdict"]
