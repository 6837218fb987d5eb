"""PNG plots for ``harness report``: grouped bar charts with error bars and box plots.

Every figure is a grid with one column per model family; within a panel the x axis groups by strategy
and, inside a group, one bar or box per run (runs side by side, labelled by run id in the legend).
matplotlib (Agg backend) is imported inside the functions, never at module import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Bar = tuple[float, float | None, float | None]
"""value, ci_low, ci_high (the interval may be unknown)."""
BarFn = Callable[[str, str, str, str], Bar | None]
"""(panel, run, family, strategy) -> a bar, or None when not measured."""


@dataclass(frozen=True, slots=True)
class Grid:
    """The axes of a figure: panels (rows) x families (columns), strategies x runs inside a panel."""

    families: Sequence[str]
    strategies: Sequence[str]
    runs: Sequence[str]
    title: str


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _colors(n: int) -> list[Any]:
    plt = _pyplot()
    cmap = plt.get_cmap("tab10")
    return [cmap(i % 10) for i in range(n)]


def _figure(grid: Grid, nrows: int, row_height: float = 3.3) -> tuple[Any, Any]:
    plt = _pyplot()
    ncols = max(1, len(grid.families))
    per_group = max(1, len(grid.runs))
    width = max(4.5, 0.55 * len(grid.strategies) * (per_group + 1) + 1.5)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(width * ncols, row_height * nrows + 0.9),
        squeeze=False,
        layout="constrained",
    )
    return fig, axes


def _finish(fig: Any, grid: Grid, handles: list[Any], path: Path) -> Path:
    plt = _pyplot()
    if len(grid.runs) > 1:
        fig.suptitle(grid.title, fontsize=11)
        fig.legend(
            handles, list(grid.runs), loc="outside lower center", ncols=min(3, len(grid.runs)), fontsize=8, title="run"
        )
    else:
        run = grid.runs[0] if grid.runs else ""
        fig.suptitle(f"{grid.title}\nrun {run}" if run else grid.title, fontsize=11)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _positions(n_strategies: int, n_runs: int) -> tuple[list[list[float]], float]:
    """x position of each (strategy, run) slot and the slot width."""
    width = 0.8 / max(1, n_runs)
    pos = [[s - 0.4 + width * (r + 0.5) for r in range(n_runs)] for s in range(n_strategies)]
    return pos, width


def _style_axis(ax: Any, grid: Grid, title: str, ylabel: str) -> None:
    ax.set_xticks(range(len(grid.strategies)))
    ax.set_xticklabels(list(grid.strategies), rotation=15, fontsize=8)
    ax.set_xlim(-0.6, len(grid.strategies) - 0.4)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(axis="y", which="both", labelsize=8)
    ax.grid(axis="y", alpha=0.3)


def _na(ax: Any, x: float) -> None:
    ax.text(x, 0.02, "n/a", transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=7, color="0.4")


def bar_grid(
    path: Path,
    grid: Grid,
    panels: Sequence[tuple[str, str]],
    bar: BarFn,
    *,
    ylim: tuple[float, float] | None = None,
    annotate: bool = True,
    zero_line: bool = False,
) -> Path:
    """Grouped bars with 95% CI error bars; ``panels`` = [(panel key, y label)], one row each."""
    fig, axes = _figure(grid, len(panels))
    colors = _colors(len(grid.runs))
    pos, width = _positions(len(grid.strategies), len(grid.runs))
    handles: list[Any] = []
    for row, (panel, ylabel) in enumerate(panels):
        for col, family in enumerate(grid.families):
            ax = axes[row][col]
            for s, strategy in enumerate(grid.strategies):
                for r, run in enumerate(grid.runs):
                    got = bar(panel, run, family, strategy)
                    x = pos[s][r]
                    if got is None:
                        _na(ax, x)
                        continue
                    value, lo, hi = got
                    yerr = None
                    if lo is not None and hi is not None:
                        yerr = [[max(0.0, value - lo)], [max(0.0, hi - value)]]
                    h = ax.bar(x, value, width * 0.92, yerr=yerr, capsize=3, color=colors[r], ecolor="0.2")
                    if len(handles) <= r:
                        handles.append(h)
                    if annotate and len(grid.strategies) * len(grid.runs) <= 16:
                        top = hi if hi is not None else value
                        ax.annotate(
                            f"{value:.2f}",
                            (x, max(top, value)),
                            xytext=(0, 2),
                            textcoords="offset points",
                            ha="center",
                            va="bottom",
                            fontsize=6,
                        )
            if ylim is not None:
                ax.set_ylim(*ylim)
            if zero_line:
                ax.axhline(0.0, color="0.3", linewidth=0.8)
            _style_axis(ax, grid, f"{family}: {panel}", ylabel)
    return _finish(fig, grid, handles, path)


def box_grid(
    path: Path,
    grid: Grid,
    data: dict[tuple[str, str, str], list[float]],
    ylabel: str,
    *,
    log: bool | None = None,
) -> Path:
    """Box plots of ``data[(run, family, strategy)]`` (whiskers 1.5 IQR, no fliers; n under each box).

    ``log=None`` picks a log axis when the values span more than two decades.
    """
    positive = [v for vals in data.values() for v in vals if v > 0]
    if log is None:
        log = bool(positive) and max(positive) / min(positive) > 100.0
    fig, axes = _figure(grid, 1, row_height=4.2)
    colors = _colors(len(grid.runs))
    pos, width = _positions(len(grid.strategies), len(grid.runs))
    handles: list[Any] = []
    plt = _pyplot()
    for col, family in enumerate(grid.families):
        ax = axes[0][col]
        for s, strategy in enumerate(grid.strategies):
            for r, run in enumerate(grid.runs):
                vals = data.get((run, family, strategy), [])
                if log:
                    vals = [v for v in vals if v > 0]
                x = pos[s][r]
                if not vals:
                    _na(ax, x)
                    continue
                bp = ax.boxplot(
                    [vals],
                    positions=[x],
                    widths=width * 0.8,
                    patch_artist=True,
                    showfliers=False,
                    medianprops={"color": "black"},
                )
                for patch in bp["boxes"]:
                    patch.set_facecolor(colors[r])
                    patch.set_alpha(0.8)
                ax.text(
                    x, 0.985, f"n={len(vals)}", transform=ax.get_xaxis_transform(),
                    ha="center", va="top", fontsize=6, color="0.3",
                )
        for r in range(len(grid.runs)):
            if len(handles) <= r:
                handles.append(plt.Rectangle((0, 0), 1, 1, color=colors[r], alpha=0.8))
        if log:
            from matplotlib.ticker import FuncFormatter, LogFormatter

            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1.2, 0.5)))
        low, high = ax.get_ylim()  # headroom for the n= labels above the boxes
        ax.set_ylim(low, high * (high / low) ** 0.12 if log and low > 0 else high + (high - low) * 0.12)
        _style_axis(ax, grid, family, ylabel + (" (log scale)" if log else ""))
    return _finish(fig, grid, handles, path)
