"""``harness bench grammar`` outputs: the summary line, bench.json, bench.md, the rich table, plots."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.bench.grammar.figures import GrammarRow
from harness.bench.grammar.results import (
    GoalVerdict,
    GrammarBench,
    GrammarSummary,
    GrowthToolsRow,
    LlguidanceSummary,
)
from harness.eval.report import markdown_table

NA = "-"
RATIO_KEYS = frozenset({"forced_fraction", "steps_over_plain"})


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return NA
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{digits}f}" if abs(v) >= 0.1 or v == 0 else f"{v:.3f}"
    return str(v)


def _cell(key: str, v: Any) -> str:
    """A table cell: ratios as percentages, the rest as ``_fmt``."""
    if v is not None and key in RATIO_KEYS:
        return f"{100 * v:.1f}%"
    return _fmt(v)


def _cells(bench: GrammarBench, engine: str) -> list[GrammarRow]:
    return [r for r in bench.main if r.engine == engine and r.expressible]


def _worst(rows: Sequence[GrammarRow | GrowthToolsRow], key: str) -> tuple[float | None, str | None]:
    vals = [(getattr(r, key), f"{r.family}/{r.strategy}") for r in rows if getattr(r, key, None) is not None]
    if not vals:
        return None, None
    v, where = max(vals, key=lambda x: x[0])
    return round(float(v), 3), where


def _at_most(figure: float | None, goal: float) -> bool:
    return figure is not None and figure <= goal


WORST_KEYS = ("mask_us_p50", "mask_us_p99", "mask_us_max", "compile_ms_cold", "compile_ms_cached", "accept_us_p50",
              "apply_us_p50", "apply_np_us_p50")
"""The figures the summary gives for the worst xgrammar cell."""


def summarize(bench: GrammarBench, out_dir: Path) -> GrammarSummary:
    """The final JSON line: worst-case figures per goal (xgrammar; llguidance alongside)."""
    xgr = _cells(bench, "xgrammar")
    worst = {key: _worst(xgr, key) for key in WORST_KEYS}
    at_100 = [r for r in bench.growth_tools or [] if r.engine == "xgrammar" and r.tools == 100]
    worst["compile_ms_cold_100_tools"] = _worst(at_100, "compile_ms_cold")
    figures = {key: value for key, (value, _) in worst.items()}
    accepted, total = sum(r.gold_accepted or 0 for r in xgr), sum(r.gold_total or 0 for r in xgr)
    goals = {
        k: GoalVerdict(goal=g, worst=figures[k], met=_at_most(figures[k], g))
        for k, g in bench.goals.items()
        if k in figures and (figures[k] is not None or k != "compile_ms_cold_100_tools")
    }
    llg_all = [r for r in bench.main if r.engine == "llguidance"]
    llg = [r for r in llg_all if r.expressible]
    return GrammarSummary(
        out=str(out_dir), tools=bench.inputs.tools, gold_outputs=bench.inputs.gold_outputs,
        families=list(bench.config.families), strategies=list(bench.config.strategies),
        engines=list(bench.config.engines), mask_us_p50=figures["mask_us_p50"], mask_us_p99=figures["mask_us_p99"],
        mask_us_max=figures["mask_us_max"], compile_ms_cold=figures["compile_ms_cold"],
        compile_ms_cached=figures["compile_ms_cached"], accept_us_p50=figures["accept_us_p50"],
        apply_us_p50=figures["apply_us_p50"], apply_np_us_p50=figures["apply_np_us_p50"],
        worst_at={key: where for key, (_, where) in worst.items()},
        gold_accepted=accepted, gold_total=total, gold_rejected=total - accepted,
        forced_fraction={f"{r.family}/{r.strategy}": r.forced_fraction for r in xgr},
        steps_over_plain={f"{r.family}/{r.strategy}": r.steps_over_plain for r in xgr},
        retokenized=sum(r.retokenized or 0 for r in xgr),
        compile_ms_cold_100_tools=figures["compile_ms_cold_100_tools"],
        goals=goals, goals_met=all(v.met for v in goals.values()) and total == accepted,
        llguidance=LlguidanceSummary(
            mask_us_p50=_worst(llg, "mask_us_p50")[0], mask_us_p99=_worst(llg, "mask_us_p99")[0],
            compile_ms_cold=_worst(llg, "compile_ms_cold")[0],
            gold_rejected=sum((r.gold_total or 0) - (r.gold_accepted or 0) for r in llg),
            gold_rejected_special_in_text=sum(r.gold_rejected_special_in_text or 0 for r in llg),
            not_expressible=[f"{r.family}/{r.strategy}" for r in llg_all if r.expressible is False],
        ) if llg_all else None,
        unmeasured={f"{r.family}/{r.strategy}": r.unmeasured for r in bench.main if r.unmeasured},
        duration_s=bench.duration_s,
    )


# --- markdown ------------------------------------------------------------------------------------------

MAIN_COLUMNS: list[tuple[str, str]] = [
    ("compile cold ms", "compile_ms_cold"),
    ("cached ms", "compile_ms_cached"),
    ("mask p50 us", "mask_us_p50"),
    ("mask p99 us", "mask_us_p99"),
    ("mask max us", "mask_us_max"),
    ("accept p50 us", "accept_us_p50"),
    ("apply torch p50 us", "apply_us_p50"),
    ("apply torch max us", "apply_us_max"),
    ("apply numpy p50 us", "apply_np_us_p50"),
    ("apply numpy max us", "apply_np_us_max"),
    ("forced", "forced_fraction"),
    ("steps vs plain", "steps_over_plain"),
    ("retokenized", "retokenized"),
]
LLG_COLUMNS: list[tuple[str, str]] = [
    ("llg compile ms", "compile_ms_cold"),
    ("llg mask p50 us", "mask_us_p50"),
    ("llg mask p99 us", "mask_us_p99"),
]


def table_rows(bench: GrammarBench) -> tuple[list[str], list[list[str]]]:
    """The side-by-side table (xgrammar figures, then llguidance's) as header + string rows."""
    by_key = {(r.family, r.strategy, r.engine): r for r in bench.main}
    has_llg = "llguidance" in bench.config.engines
    header = ["family", "strategy", *(h for h, _ in MAIN_COLUMNS), "gold"]
    if has_llg:
        header += [*(h for h, _ in LLG_COLUMNS), "llg gold"]
    rows = []
    for fam in bench.config.families:
        for strat in bench.config.strategies:
            x = by_key.get((fam, strat, "xgrammar"))
            if x is not None and x.unmeasured:  # the reason where the figures would be
                rows.append([fam, strat, x.unmeasured, *[NA] * (len(header) - 3)])
                continue
            row = [fam, strat, *(_cell(k, getattr(x, k, None)) for _, k in MAIN_COLUMNS),
                   f"{_given(x, 'gold_accepted')}/{_given(x, 'gold_total')}"]
            if has_llg:
                g = by_key.get((fam, strat, "llguidance"))
                if g is not None and g.expressible:
                    row += [*(_fmt(getattr(g, k)) for _, k in LLG_COLUMNS), f"{g.gold_accepted}/{g.gold_total}"]
                else:
                    row += ["not expressible", NA, NA, NA]
            rows.append(row)
    return header, rows


def _given(row: GrammarRow | None, key: str) -> Any:
    """A row's figure as given (None too), or ``NA`` when the row has no such figure."""
    return getattr(row, key) if row is not None and key in row.model_fields_set else NA


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return markdown_table(header, rows).splitlines()


def markdown(bench: GrammarBench) -> str:
    s = bench.summary
    if s is None:
        raise ValueError("the bench has no summary yet")
    inp = bench.inputs
    stopped = f" (stopped early: {bench.stopped})" if bench.stopped else ""
    lines = [
        "# Grammar bench: strategy overhead per family and engine",
        "",
        f"{inp.tools} tools, {inp.gold_outputs} gold outputs ({inp.gold_source}), parallel calls "
        f"{'allowed' if inp.parallel else 'off'}; {bench.machine.cpus} CPUs; "
        f"xgrammar {bench.versions.get('xgrammar')}, llguidance {bench.versions.get('llguidance')}; "
        f"{bench.duration_s} s{stopped}. Masks: every step of every gold walk (the oracle walk, mask filled each "
        "step). Compile cold: median of the repeats, cache cleared before each; llguidance: the matcher's "
        "construction (it has no cache). Apply: masking full-vocabulary float32 logits. Forced: the "
        "fraction of tokens jump-forward appends without a model step on the gold outputs (stop "
        "included); steps vs plain: model steps with jump-forward over those of the plain loop; "
        "retokenized: gold outputs whose jump-forward tokens differ from the tokenizer's own.",
        "",
        *_md_table(*table_rows(bench)),
        "",
        "## Goals (the project's, worst cell, xgrammar)",
        "",
    ]
    goal_rows = [
        [k, _fmt(v.goal), _fmt(v.worst), str(s.worst_at.get(k)), "yes" if v.met else "**no**"]
        for k, v in s.goals.items()
    ]
    goal_rows.append(["gold rejections", "0", str(s.gold_rejected), "", "yes" if s.gold_rejected == 0 else "**no**"])
    lines += _md_table(["figure", "goal", "worst", "where", "met"], goal_rows)
    lines += _notes(bench.main)
    lines += [
        "",
        "## Slowest mask fills (xgrammar)",
        "",
        "Each re-timed at the same matcher state (fastest of 3): a fill that is fast again was the machine "
        "(a preempted thread; spikes of one or two 4 ms scheduler ticks), one that stays slow is the grammar.",
        "",
    ]
    for r in _cells(bench, "xgrammar"):
        for sm in (r.slowest_masks or [])[:2]:
            lines.append(
                f"- {r.family}/{r.strategy}: {_fmt(sm.us)} us (re-timed {_fmt(sm.retimed_us)} us) "
                f"at step {sm.step} of {sm.output_id}, after `{sm.before!r}`, next `{sm.next!r}`"
            )
    lines += _growth_markdown(bench)
    lines += ["", "Plots: strategies.png, growth_tools.png, growth_length.png.", ""]
    return "\n".join(lines)


def _notes(rows: Sequence[GrammarRow]) -> list[str]:
    """Each row's note, rejected gold outputs and outputs the format cannot hold."""
    lines: list[str] = []
    noted = [r for r in rows if r.note or r.rejections or r.render_errors]
    if noted:
        lines += ["", "## Notes and rejections", ""]
        for r in noted:
            head = f"- {r.family}/{r.strategy}/{r.engine}:"
            if r.note:
                lines.append(f"{head} {r.note}")
            for rej in r.rejections or []:
                lines.append(f"{head} **rejected gold** {rej.output_id}: {rej.reason}")
            for err in r.render_errors or []:
                lines.append(f"{head} not renderable {err.output_id}: {err.error}")
    return lines


def _growth_markdown(bench: GrammarBench) -> list[str]:
    lines: list[str] = []
    gt = bench.growth_tools or []
    if gt:
        corpus = gt[0].corpus
        lines += ["", f"## Growth with the number of tools ({f'corpus: {corpus}' if corpus else 'synthetic sets'})", ""]
        rows = [
            [r.family, r.strategy, r.engine, str(r.tools), _fmt(r.compile_ms_cold), _fmt(r.grammar_kb),
             _fmt(r.mask_us_p50), _fmt(r.mask_us_p99),
             f"{r.gold_accepted}/{r.gold_total}" if r.expressible else r.unmeasured or "not expressible"]
            for r in gt
        ]
        lines += _md_table(["family", "strategy", "engine", "tools", "compile ms", "compiled KiB", "mask p50 us",
                            "mask p99 us", "gold"], rows)
    gl = bench.growth_length or []
    if gl:
        lines += ["", "## Growth with the output length", ""]
        rows = [
            [r.family, r.strategy, r.engine, r.series, str(r.x), _fmt(r.tokens),
             _fmt(r.walk_ms, 2), _fmt(r.mask_us_p50), _fmt(r.mask_us_p99),
             {True: "yes", False: "**no**", None: NA}[r.accepted] + (f" ({r.note})" if r.note else "")]
            for r in gl
        ]
        lines += _md_table(["family", "strategy", "engine", "series", "x", "tokens", "walk ms", "mask p50 us",
                            "mask p99 us", "accepted"], rows)
    return lines


# --- files and console -----------------------------------------------------------------------------------


def write_outputs(bench: GrammarBench, out_dir: Path, *, plots: bool = True) -> list[Path]:
    """bench.json, bench.md and (with ``plots``) the PNG plots into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "bench.json", out_dir / "bench.md"]
    written[0].write_text(json.dumps(bench.dump(), indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    written[1].write_text(markdown(bench), encoding="utf-8")
    if plots:
        from harness.bench.grammar.plots import write_plots

        written += write_plots(bench, out_dir)
    return written


def print_table(bench: GrammarBench) -> None:
    """The side-by-side table on the console (rich)."""
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    header, rows = table_rows(bench)
    table = Table(title=f"grammar bench: {bench.inputs.tools} tools, {bench.inputs.gold_outputs} gold outputs")
    for h in header:
        if h in ("family", "strategy"):
            table.add_column(h, justify="left", no_wrap=True)
        else:
            table.add_column(h, justify="right", overflow="fold")
    goals = bench.goals
    for row in rows:
        styled = list(row)
        for i, (_, key) in enumerate(MAIN_COLUMNS, start=2):
            try:
                if key in goals and float(row[i].replace(",", "")) > goals[key]:
                    styled[i] = f"[red]{row[i]}[/red]"
            except ValueError:
                pass
        table.add_row(*styled)
    # Cells never fold: the table is as wide as its content (a narrow terminal wraps whole lines).
    for column in table.columns:
        column.no_wrap = True
    wide = Console(width=10_000)
    Console(width=Measurement.get(wide, wide.options, table).maximum).print(table)


__all__ = ["markdown", "print_table", "summarize", "table_rows", "write_outputs"]
