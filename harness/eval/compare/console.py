"""``harness compare``'s output: the comparison as a rich table, then warnings and the verdict."""

from __future__ import annotations

from typing import Any

from harness.eval.compare.gate import Comparison, Kind

_STYLE = {"regression": "bold red", "missing": "bold red", "improved": "green", "new": "cyan", "info": "yellow"}


def _fmt(v: float | None, kind: Kind) -> str:
    if v is None:
        return "-"
    if kind in ("accuracy", "rejections"):
        return f"{v:.3f}"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"


def print_comparison(cmp: Comparison, console: Any) -> None:
    """Print the differences as a rich table, then warnings and the verdict."""
    from rich.table import Table

    table = Table(title=f"baseline {cmp.baseline_dir}  vs  candidate {cmp.candidate_dir}", title_justify="left")
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
        style = _STYLE.get(d.status, "")
        table.add_row(d.family, d.strategy, d.metric, _fmt(d.baseline, d.kind), _fmt(d.candidate, d.kind),
                      d.change, n, f"[{style}]{status}[/]" if style else status)
    console.print(table)
    for w in cmp.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    if cmp.timing_note:
        console.print(f"[yellow]note:[/] {cmp.timing_note}")
    limits = (f"max drop {cmp.max_drop:g}, max slowdown {cmp.max_slowdown:g}x "
              f"for timings of at least {cmp.min_timing_n} values")
    regs = cmp.regressions
    if regs:
        console.print(f"[bold red]{len(regs)} regression(s)[/] ({limits}):")
        for d in regs:
            console.print(f"  {d.family}/{d.strategy}/{d.metric}: {d.reason}")
    else:
        console.print(f"[green]no regression[/] ({len(cmp.diffs)} metrics compared; {limits})")


__all__ = ["print_comparison"]
