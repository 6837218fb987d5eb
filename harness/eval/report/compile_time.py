"""Where a user waits for a grammar: time to first token split into compile and the rest, per run,
family and strategy; and the gold answers the two grammar backends judge differently.

- In-process engines (oracle, local, ``harness serve``) time the compile itself (``stats.compile_ms``)
  and say where the grammar came from (``stats.compile_found``: compiled for the call, found in
  memory, or kept on disk by an earlier run). The split is the compile against the rest of the call's
  time to first token (the oracle, which has no model, counts its whole call).
- A server (vLLM) does not say: the client marks each call that is the run's first with its
  constraint (``constraint_first``); the compile is then the difference of the medians of time to
  first token between first calls and repeats (the server compiles on the first, unless it kept the
  grammar from an earlier run).
- Backends: runs of the same engine and suite with different ``--grammar-backend`` are compared
  sample by sample; a call whose gold one backend takes and the other refuses is a row, with the
  refusing backend's reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.eval.report.data import Run
from harness.vocabulary import Strategy

TTFT_HEADERS = ["run", "engine", "family", "strategy", "calls", "compiled for the call", "ttft p50, first calls (ms)",
                "ttft p50, repeats (ms)", "compile p50 (ms)", "rest p50 (ms)"]
TTFT_NOTE = (
    "Per call: in-process engines time their compile (\"compiled for the call\": cold; the others found the "
    "grammar compiled, in memory or kept on disk by an earlier run); the oracle has no model, so its time to "
    "first token is its whole call. Against a server, the compile is the median time to first token of the "
    "run's first calls with a constraint less that of repeats (the run's preflight probe is a call too: it pays "
    "the compile of the tool set it probes)."
)
DISAGREEMENT_HEADERS = ["refused by", "taken by", "sample", "call", "why"]


def _fmt(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def _median(frame: Any, column: str) -> float | None:
    values = frame.get_column(column).drop_nulls()
    return None if values.is_empty() else float(values.median())


def ttft_rows(runs: Sequence[Run], family_names: Sequence[str], strategy_names: Sequence[str]) -> list[list[str]]:
    """One row per run, family and constrained strategy with calls (headers ``TTFT_HEADERS``)."""
    import polars as pl

    rows = []
    for run in runs:
        steps = run.steps
        if steps is None or steps.is_empty():
            continue
        for family in family_names:
            for strategy in strategy_names:
                if strategy == Strategy.none:
                    continue
                lane = steps.filter((pl.col("family") == family) & (pl.col("strategy") == strategy))
                if lane.is_empty():
                    continue
                rows.append([run.label, run.engine, family, strategy, *_split(lane)])
    return rows


def _split(lane: Any) -> list[str]:
    """calls, compiled for the call, ttft first, ttft repeat, compile, rest."""
    import polars as pl

    ttft = pl.coalesce(pl.col("ttft_ms"), pl.col("latency_ms"))
    lane = lane.with_columns(ttft.alias("wait_ms"))
    n = lane.height
    measured = lane.filter(pl.col("compile_ms").is_not_null())
    if not measured.is_empty():  # the engine timed its compile (older files: compile_cached only)
        cached = pl.when(pl.col("compile_cached").fill_null(False)).then(pl.lit("memory")).otherwise(pl.lit("compiled"))
        measured = measured.with_columns(pl.col("compile_found").fill_null(cached).alias("found"),
                                          (pl.col("wait_ms") - pl.col("compile_ms")).alias("rest_ms"))
        cold = measured.filter(pl.col("found") == "compiled")
        repeat = measured.filter(pl.col("found") != "compiled")
        return [str(n), f"{cold.height} of {measured.height}", _fmt(_median(cold, "wait_ms")),
                _fmt(_median(repeat, "wait_ms")), _fmt(_median(cold, "compile_ms")), _fmt(_median(measured, "rest_ms"))]
    first = lane.filter(pl.col("constraint_first").fill_null(False))
    repeat = lane.filter(~pl.col("constraint_first").fill_null(True))
    t_first, t_repeat = _median(first, "wait_ms"), _median(repeat, "wait_ms")
    compile_ms = None if t_first is None or t_repeat is None else max(0.0, t_first - t_repeat)
    return [str(n), f"{first.height} of {n} (first with its tools)", _fmt(t_first), _fmt(t_repeat),
            _fmt(compile_ms) + (" (first − repeat)" if compile_ms is not None else ""), _fmt(t_repeat)]


def backend_disagreements(runs: Sequence[Run]) -> list[list[str]]:
    """Rows (headers ``DISAGREEMENT_HEADERS``) where runs that differ only in grammar backend judge a
    call's gold differently: one refused it (``grammar:rejected_gold``), the other took it."""
    rows: list[list[str]] = []
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            ra, rb = a.data.run, b.data.run
            backend_a, backend_b = ra.options.grammar_backend or "xgrammar", rb.options.grammar_backend or "xgrammar"
            if backend_a == backend_b or (ra.options.engine, ra.suite.name) != (rb.options.engine, rb.suite.name):
                continue
            by_id = {s.sample_id: s for s in b.samples}
            for sample in a.samples:
                other = by_id.get(sample.sample_id)
                if other is None:
                    continue
                rows += _differing_calls(sample, other, backend_a, backend_b)
    return rows


def _differing_calls(a: Any, b: Any, backend_a: str, backend_b: str) -> list[list[str]]:
    rows = []
    for index in range(max(len(a.steps), len(b.steps))):
        sa = a.steps[index].stats if index < len(a.steps) else None
        sb = b.steps[index].stats if index < len(b.steps) else None
        ea = sa.grammar_error if sa is not None else None
        eb = sb.grammar_error if sb is not None else None
        if (ea is None) == (eb is None):
            continue
        refused, took, stats = (backend_a, backend_b, sa) if ea is not None else (backend_b, backend_a, sb)
        why = (stats.grammar_reason if stats is not None else None) or (ea or eb or "")
        rows.append([refused, took, a.sample_id, str(index + 1), why])
        break  # a sample ends at its first refusal: later calls were never made by that run
    return rows


__all__ = ["DISAGREEMENT_HEADERS", "TTFT_HEADERS", "TTFT_NOTE", "backend_disagreements", "ttft_rows"]
