"""``harness compare``'s terminal output: the paired rates and the summary diffs as rich tables, the
flip list with links into the candidate's report.html, warnings, then the verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.eval.compare.gate import Comparison, Kind
from harness.eval.compare.paired import Flip, PairedMetric

_STYLE = {"regression": "bold red", "missing": "bold red", "improved": "green", "new": "cyan", "info": "yellow"}
REPORT_PAGE = "report.html"
FLIPS_SHOWN = 20
"""Flips printed per family, strategy and metric (the JUnit file and the step summary list more)."""


def sample_link(run_dir: Path, sample_id: str) -> str:
    """Where report.html shows a sample: ``RUN_DIR/report.html#sample=<id>`` (the page opens it)."""
    return f"{run_dir / REPORT_PAGE}#sample={quote(sample_id, safe='')}"


def flip_line(flip: Flip, run_dir: Path) -> str:
    """``case (epoch 2): pass -> fail [kind]  link``."""
    epoch = f" (epoch {flip.epoch})" if flip.epoch != 1 else ""
    if flip.worse:
        what = f"pass -> fail [{flip.candidate_kind or 'no error kind'}]"
    else:
        what = f"fail [{flip.baseline_kind or 'no error kind'}] -> pass"
    return f"{flip.case_id}{epoch}: {what}  {sample_link(run_dir, flip.candidate_sample)}"


def _fmt(v: float | None, kind: Kind) -> str:
    if v is None:
        return "-"
    if kind in ("accuracy", "rejections"):
        return f"{v:.3f}"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"


def _styled(status: str, text: str) -> str:
    style = _STYLE.get(status, "")
    return f"[{style}]{text}[/]" if style else text


def paired_row(p: PairedMetric) -> list[str]:
    """family, strategy, metric, cases, baseline, candidate, change [95% CI], worse/better, p, MDE."""
    return [p.family, p.strategy, p.metric, str(p.cases), f"{p.baseline:.3f}", f"{p.candidate:.3f}",
            f"{p.effect:+.3f} [{p.ci_low:+.3f}, {p.ci_high:+.3f}]", f"{p.worse_cases}/{p.better_cases}",
            f"{p.p_value:.3g}" + (f" ({p.p_adjusted:.3g})" if p.p_adjusted != p.p_value else ""), f"{p.mde:.3f}"]


PAIRED_HEADERS = ["family", "strategy", "metric", "cases", "baseline", "candidate", "change [95% CI]",
                  "worse/better", "p (adjusted)", "MDE"]


def _paired_table(cmp: Comparison, console: Any) -> None:
    from rich.table import Table

    table = Table(title=f"case by case: baseline {cmp.baseline_dir}  vs  candidate {cmp.candidate_dir}",
                  title_justify="left")
    for col in PAIRED_HEADERS:
        table.add_column(col, justify="left" if col in ("family", "strategy", "metric") else "right")
    table.add_column("status")
    for p in cmp.paired:
        table.add_row(*paired_row(p), _styled(p.status, p.status + (f": {p.reason}" if p.reason else "")))
    console.print(table)


def _summary_table(cmp: Comparison, console: Any) -> None:
    from rich.table import Table

    title = "summary.json" if cmp.paired else f"baseline {cmp.baseline_dir}  vs  candidate {cmp.candidate_dir}"
    table = Table(title=title, title_justify="left")
    for col in ("family", "strategy", "metric"):
        table.add_column(col)
    for col in ("baseline", "candidate", "change", "n"):
        table.add_column(col, justify="right")
    table.add_column("status")
    for d in cmp.diffs:
        n = "" if d.baseline_n == d.candidate_n else f"{d.baseline_n}->{d.candidate_n}"
        if d.baseline_n == d.candidate_n and d.baseline_n is not None:
            n = str(d.baseline_n)
        status = d.status + (f": {d.reason}" if d.reason else "")
        table.add_row(d.family, d.strategy, d.metric, _fmt(d.baseline, d.kind), _fmt(d.candidate, d.kind),
                      d.change, n, _styled(d.status, status))
    console.print(table)


def _flips(cmp: Comparison, console: Any) -> None:
    for p in cmp.paired:
        if not p.flips or not p.gated:
            continue
        worse = sum(f.worse for f in p.flips)
        console.print(f"flips {p.family}/{p.strategy}/{p.metric}: {worse} pass -> fail, "
                      f"{len(p.flips) - worse} fail -> pass")
        ordered = sorted(p.flips, key=lambda f: not f.worse)
        for flip in ordered[:FLIPS_SHOWN]:
            console.print(f"  {flip_line(flip, cmp.candidate_dir)}", markup=False, highlight=False)
        if len(ordered) > FLIPS_SHOWN:
            console.print(f"  ... {len(ordered) - FLIPS_SHOWN} more (--junit FILE lists every case)")


def limits(cmp: Comparison) -> str:
    """The rules in one line."""
    policy = cmp.policy
    if cmp.paired:
        return (f"alpha {policy.alpha:g}, minimum effect {policy.min_effect:g}; timings: max slowdown "
                f"{policy.max_slowdown:g}x for at least {policy.min_timing_n} values")
    return (f"max drop {policy.max_drop:g}, max slowdown {policy.max_slowdown:g}x "
            f"for timings of at least {policy.min_timing_n} values")


def weak_passes(cmp: Comparison) -> list[str]:
    """Gated rates whose minimum detectable effect exceeds the minimum effect, one line per (cases,
    effect): a pass there says little about smaller changes."""
    groups: dict[tuple[int, float], list[str]] = {}
    for p in cmp.paired:
        if p.gated and not p.is_regression and p.mde > cmp.policy.min_effect:
            groups.setdefault((p.cases, round(p.mde, 3)), []).append(f"{p.family}/{p.strategy}/{p.metric}")
    lines = []
    for (cases, mde), names in groups.items():
        which = names[0] if len(names) == 1 else f"{len(names)} rates ({names[0]}, ...)"
        lines.append(f"{which}: with {cases} cases the smallest change this comparison could detect is "
                     f"{mde:.3f}, above the minimum effect {cmp.policy.min_effect:g}: a pass says little about "
                     "smaller changes")
    return lines


def print_comparison(cmp: Comparison, console: Any) -> None:
    """Print the comparison: tables, flips, warnings, notes and the verdict."""
    if cmp.paired:
        _paired_table(cmp, console)
    if cmp.diffs:
        _summary_table(cmp, console)
    _flips(cmp, console)
    for w in cmp.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
    if cmp.timing_note:
        console.print(f"[yellow]note:[/] {cmp.timing_note}")
    regs = cmp.regressions
    if regs:
        console.print(f"[bold red]{len(regs)} regression(s)[/] ({limits(cmp)}):")
        for d in regs:
            console.print(f"  {d.family}/{d.strategy}/{d.metric}: {d.reason}", highlight=False)
        return
    for line in weak_passes(cmp):
        console.print(f"[yellow]note:[/] {line}", highlight=False)
    compared = len(cmp.paired) + len(cmp.diffs)
    console.print(f"[green]no regression[/] ({compared} metrics compared; {limits(cmp)})")


__all__ = ["PAIRED_HEADERS", "flip_line", "limits", "paired_row", "print_comparison", "sample_link", "weak_passes"]
