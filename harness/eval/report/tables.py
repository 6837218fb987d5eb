"""The report's tables, built once (``build_report``) and rendered by report.md and report.html alike:
a run's facts, the summary per family and strategy, failures by error kind, where vLLM's grammar
differs, per-token overhead, the best strategy, runs side by side."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.eval.report.compile_time import backend_disagreements, ttft_rows
from harness.eval.report.data import (
    FIGURES,
    KNOWN_METRICS,
    RATES,
    Run,
    TargetLane,
    best_strategies,
    failure_list,
    failures,
    failures_by_checker,
    ordered,
    overheads,
    target_lanes,
    tradeoff,
)
from harness.eval.report.figures import Figure
from harness.eval.store import RunRecord, SampleRecord, SummaryRow, counted_by, unenforced_answers
from harness.vocabulary import ACCURACY_METRICS, Metric, Strategy

# ---------------------------------------------------------------- formatting


def number(v: float) -> str:
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def summary_cell(row: SummaryRow | None) -> str:
    """A summary value as the tables show it: rates with their interval, figures rounded."""
    if row is None or row.value is None:
        return ""
    fmt = (lambda x: f"{x:.3f}") if row.metric in RATES else number
    text = fmt(row.value)
    if row.ci_low is not None and row.ci_high is not None:
        text += f" [{fmt(row.ci_low)}, {fmt(row.ci_high)}]"
    return text


def run_facts(run: Run) -> list[tuple[str, str]]:
    """(what, value) lines of a run's header: engine, suite, model, bound, versions, counts."""
    r = run.data.run
    o = r.options
    facts = [
        ("engine", run.engine),
        ("what it is", r.engine_note),
        ("suite", f"{r.suite.name} {r.suite.version} ({r.suite.kind}), {r.suite.path}"
         + (f"; bundle {r.bundle}" if r.bundle else "")),
    ]
    if r.model or r.base_url:
        facts.append(("model", f"{r.model or '(not given)'}; base URL: {r.base_url or '(none)'}"))
    facts += [
        ("matrix", f"families {', '.join(o.families or ())}; strategies {', '.join(o.strategies or ())}; "
                   f"epochs {o.epochs}; limit {o.limit or 'none (every case)'}; concurrency {o.concurrency}"),
        ("bounds", f"at most {o.max_steps_per_turn} model calls per turn; "
                   + (f"{o.max_tokens} tokens per answer ({r.max_tokens_source or 'source not recorded'})"
                      if o.max_tokens is not None else "tokens per answer: the engine's own (not recorded)")),
        ("versions", ", ".join(f"{k} {v}" for k, v in r.versions.model_dump().items())),
        ("when", f"git commit {r.git_commit or '(unknown)'}; started {r.started_at}, finished {r.finished_at}"),
    ]
    samples = run.data.samples
    if samples is None:
        facts.append(("samples", "samples.jsonl absent (no distributions, failures or transcripts)"))
    else:
        rows = list(samples.samples.values())
        facts.append(("samples", f"{len(rows)} finished, {sum(s.status == 'error' for s in rows)} with status error"))
        if samples.torn_tail_at is not None:
            facts.append(("warning", f"samples.jsonl: a torn last line (from byte {samples.torn_tail_at}) was skipped"))
        if samples.duplicates:
            facts.append(("warning", f"samples.jsonl: {samples.duplicates} duplicate sample id(s); the last of each kept"))
        facts += _engine_facts(r, rows)
    if run.suite_problem:
        facts.append(("warning", run.suite_problem))
    if (url := shared_server(run)) is not None:
        facts.append(("tools", f"a shared MCP server at {url} (mcp.url): every sample calls the same server, so "
                               "only the calls and their results are scored; no state is compared"))
    if run.details is None and samples is not None:
        facts.append(("note", "details.jsonl absent (a run scored before scoring wrote it): report.html shows no "
                              "gold outputs and no state diffs (harness score RUN_DIR writes it)"))
    return facts


def shared_server(run: Run) -> str | None:
    """The URL of the MCP server the run's bundle names (``mcp.url``: one server every sample shares),
    read from the run's copy of its bundle; None for any other tool source."""
    import yaml

    if run.suite is None:
        return None
    try:
        config = yaml.safe_load((run.suite.bundle_dir / "bundle.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    mcp = config.get("mcp") if isinstance(config, dict) else None
    url = mcp.get("url") if isinstance(mcp, dict) else None
    return url if isinstance(url, str) else None


def _engine_facts(record: RunRecord, samples: list[SampleRecord]) -> list[tuple[str, str]]:
    """Who counted the tokens where the engine did not, and each answer the engine let through that the
    harness's grammar rejects (``constraint:not_enforced``: a server's grammar engine that is not xgrammar)."""
    facts = []
    if who := counted_by(samples):
        facts.append(("tokens", f"counted by the {who} with the family's tokenizer where the server sent no usage "
                                "(tokens/s: that count over the stream's time after the first token)"))
    unenforced = unenforced_answers(samples) if record.answers_audited else []
    if unenforced:  # none: the summary's not_enforced rate says 0 already
        facts.append(("not enforced", f"{len(unenforced)} answer(s) the engine let through that the harness's grammar "
                                      "(xgrammar) rejects:"))
        facts += [("not enforced", f"{a.sample_id}: {a.reason}; answer {a.answer!r}") for a in unenforced]
    return facts


def summary_columns(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """(metric, header) of the summary table: rates, figures, then metrics this report does not know."""
    extra = ordered((row.metric for r in runs for row in r.data.summary if row.metric not in KNOWN_METRICS), ())
    present = {row.metric for r in runs for row in r.data.summary}
    rates = [(m, m) for m in RATES if m in present]
    return [*rates, *((m, h) for m, h in FIGURES if m in present), *((m, m) for m in extra)]


def summary_rows(run: Run, family_names: Sequence[str], strategy_names: Sequence[str]) -> list[list[str]]:
    """One row per lane (family, strategy) the run has: family, strategy, n, then ``summary_columns``' cells."""
    columns = summary_columns([run])
    rows = []
    for family in family_names:
        for strategy in strategy_names:
            cells = [run.summary_row(family, strategy, m) for m, _ in columns]
            if all(c is None for c in cells):
                continue
            rate = next((c for c in cells if c is not None and c.metric in RATES and c.n is not None), None)
            n = "" if rate is None else str(rate.n)
            if rate is not None and rate.cases is not None and rate.cases != rate.n:
                n += f" ({rate.cases} cases)"
            rows.append([family, strategy, n, *(summary_cell(c) for c in cells)])
    return rows


def _k_cell(value: float, low: float, high: float) -> str:
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def repeat_rows(run: Run, family_names: Sequence[str], strategy_names: Sequence[str]) -> tuple[list[list[str]], list[list[str]]]:
    """Runs with epochs > 1: (pass@k and pass^k per family, strategy, metric and k; the case classes
    per family, strategy and metric). Empty for a run of one epoch."""
    estimates: list[list[str]] = []
    classes: list[list[str]] = []
    for family in family_names:
        for strategy in strategy_names:
            for metric in ACCURACY_METRICS:
                row = run.summary_row(family, strategy, metric)
                if row is None or row.repeats is None:
                    continue
                rep = row.repeats
                classes.append([family, strategy, metric, str(rep.cases), str(rep.epochs), str(rep.stable_pass),
                                str(rep.flaky), str(rep.stable_fail)])
                estimates += [[family, strategy, metric, str(at.k), _k_cell(at.value, at.ci_low, at.ci_high),
                               _k_cell(hat.value, hat.ci_low, hat.ci_high)]
                              for at, hat in zip(rep.pass_at_k, rep.pass_hat_k, strict=True)]
    return estimates, classes


REPEAT_HEADERS = ["family", "strategy", "metric", "k", "pass@k [95% CI]", "pass^k [95% CI]"]
CLASS_HEADERS = ["family", "strategy", "metric", "cases", "epochs", "stable pass", "flaky", "stable fail"]
REPEATS_NOTE = (
    "pass@k: the chance that at least one of k tries passes; pass^k: that all k pass (unbiased estimators "
    "from each case's tries, averaged over cases; intervals count cases, not tries). A case is stable-pass "
    "when every try passed, flaky when some did, stable-fail when none did."
)


def failure_rows(run: Run) -> tuple[list[list[Any]], str]:
    """error kind, family, strategy, failing samples, of, metrics failed (most frequent first), and
    where they come from: scores.parquet and samples.jsonl, else errors.json, else nothing."""
    if run.data.scores is None and run.data.samples is None:
        if run.data.errors:
            return [[e.error_kind, e.family, e.strategy, e.count, "", ""] for e in run.data.errors], "errors.json"
        return [], "no per-sample data (scores.parquet, samples.jsonl, errors.json) in this run directory"
    rows = [[f.error_kind, f.family, f.strategy, f.samples, "" if f.of is None else f.of, ", ".join(f.metrics)]
            for f in failure_list(run)]
    return rows, "scores.parquet and samples.jsonl"


FAILURE_HEADERS = ["error kind", "family", "strategy", "samples", "of", "metrics"]


def overhead_rows(runs: Sequence[Run], family_names: Sequence[str], strategy_names: Sequence[str]) -> list[list[str]]:
    body = []
    for r in runs:
        for f in family_names:
            for s in strategy_names:
                o = overheads(r, f, s) if s != Strategy.none else {}
                if o:
                    cells = {k: f"{number(v[0])} [{number(v[1])}, {number(v[2])}]" for k, v in o.items()}
                    body.append([r.label, r.engine, f, s, cells.get("ms_per_token", ""),
                                 cells.get("grammar_us_per_token", "")])
    return body


OVERHEAD_HEADERS = ["run", "engine", "family", "strategy", "Δ ms/token vs none", "Δ grammar µs/token vs none"]


def verdicts(runs: Sequence[Run], family_names: Sequence[str], strategy_names: Sequence[str]) -> list[tuple[Run, str]]:
    """(run, sentence) per run and family: the strategy to use, or for the oracle what its grammars cost."""
    out: list[tuple[Run, str]] = []
    for run in runs:
        if run.data.run.options.engine == "oracle":
            out += [(run, oracle_verdict(run, f, strategy_names)) for f in family_names if f in (run.data.run.options.families or ())]
        else:
            out += [(run, best.sentence()) for best in best_strategies(tradeoff(run, family_names, strategy_names))]
    return out


def oracle_verdict(run: Run, family: str, strategy_names: Sequence[str]) -> str:
    """The oracle replays gold, so accuracy names no strategy: what it says is which grammars reject gold
    and which cost least per token."""
    rejected = [s for s in strategy_names if (row := run.summary_row(family, s, Metric.grammar_rejection)) and row.value]
    costs = [(row.value, s) for s in strategy_names if s != Strategy.none
             and (row := run.summary_row(family, s, Metric.grammar_us_per_token_p50)) and row.value is not None]
    text = f"{family}: the oracle measures grammars, not a model, so accuracy names no strategy; "
    text += f"grammars rejecting gold: {', '.join(rejected)}" if rejected else "no grammar rejects a gold answer"
    if costs:
        value, cheapest = min(costs)
        text += f"; least grammar work per token: {cheapest} ({number(value)} µs)"
    return text + "."


def side_by_side(runs: Sequence[Run], family_names: Sequence[str], strategy_names: Sequence[str]) -> list[list[str]]:
    """family, strategy, metric, then one value per run."""
    metrics = ordered((row.metric for r in runs for row in r.data.summary), KNOWN_METRICS)
    body = []
    for f in family_names:
        for s in strategy_names:
            for m in metrics:
                rows = [r.summary_row(f, s, m) for r in runs]
                if any(rows):
                    body.append([f, s, m, *(summary_cell(row) for row in rows)])
    return body


@dataclass(frozen=True, slots=True)
class RunTables:
    """The tables of one run's section."""

    run: Run
    facts: list[tuple[str, str]]
    """(what, value) lines: engine, suite, model, bounds, versions, counts, warnings."""
    columns: list[str]
    """The summary table's headers: family, strategy, n, then ``summary_columns``."""
    rows: list[list[str]]
    """The summary table's rows (``summary_rows``)."""
    failure_rows: list[list[Any]]
    """Failures by error kind (``failure_rows``, headers ``FAILURE_HEADERS``)."""
    failure_source: str
    """Which files the failures come from (or why there are none)."""
    by_checker: list[tuple[str, int]]
    """(checker, failing samples), most first."""
    target: list[TargetLane]
    """Lanes where vLLM's grammar differs (``--target vllm``)."""
    repeats: list[list[str]]
    """Epochs > 1: pass@k and pass^k (headers ``REPEAT_HEADERS``)."""
    classes: list[list[str]]
    """Epochs > 1: the case classes (headers ``CLASS_HEADERS``)."""


@dataclass(frozen=True, slots=True)
class Report:
    """Everything report.md and report.html show, built once: both render this."""

    runs: Sequence[Run]
    families: list[str]
    strategies: list[str]
    verdicts: list[tuple[Run, str]]
    """(run, sentence) per run and family: the strategy to use, or what the oracle's grammars cost."""
    sections: list[RunTables]
    """One per run."""
    side_by_side: list[list[str]]
    """family, strategy, metric, a value per run (empty for one run)."""
    overhead: list[list[str]]
    """Per-token overhead against none (headers ``OVERHEAD_HEADERS``)."""
    ttft: list[list[str]]
    """Time to first token split into compile and the rest (headers ``compile_time.TTFT_HEADERS``)."""
    disagreements: list[list[str]]
    """Gold calls one grammar backend refused and the other took (``compile_time.DISAGREEMENT_HEADERS``)."""
    figures: list[Figure]
    written_at: str
    """UTC, as the report says it was written."""


def run_tables(run: Run, family_names: Sequence[str], strategy_names: Sequence[str]) -> RunTables:
    rows, source = failure_rows(run)
    repeats, classes = repeat_rows(run, family_names, strategy_names)
    return RunTables(
        run=run, facts=run_facts(run),
        columns=["family", "strategy", "n", *(h for _, h in summary_columns([run]))],
        rows=summary_rows(run, family_names, strategy_names), failure_rows=rows, failure_source=source,
        by_checker=failures_by_checker(failures(run)), target=target_lanes(run), repeats=repeats, classes=classes,
    )


def build_report(runs: Sequence[Run], family_names: list[str], strategy_names: list[str], figures: list[Figure],
                 written_at: str) -> Report:
    """Every table of the report, once."""
    return Report(
        runs=runs, families=family_names, strategies=strategy_names,
        verdicts=verdicts(runs, family_names, strategy_names),
        sections=[run_tables(run, family_names, strategy_names) for run in runs],
        side_by_side=side_by_side(runs, family_names, strategy_names) if len(runs) > 1 else [],
        overhead=overhead_rows(runs, family_names, strategy_names), figures=figures, written_at=written_at,
        ttft=ttft_rows(runs, family_names, strategy_names), disagreements=backend_disagreements(runs),
    )


__all__ = [
    "CLASS_HEADERS",
    "FAILURE_HEADERS",
    "OVERHEAD_HEADERS",
    "REPEATS_NOTE",
    "REPEAT_HEADERS",
    "Report",
    "RunTables",
    "build_report",
    "failure_rows",
    "number",
    "oracle_verdict",
    "overhead_rows",
    "repeat_rows",
    "run_facts",
    "run_tables",
    "side_by_side",
    "summary_cell",
    "summary_columns",
    "summary_rows",
    "verdicts",
]
