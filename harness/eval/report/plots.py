"""PNG plots for ``harness report``: grouped bars with error bars, box plots, accuracy against cost.

Every figure is a grid with one column per model family; inside a panel the x axis groups by strategy
(canonical order) and, inside a group, one bar or box per run. Every figure names the engine that made
it: in the subtitle for one run, in each run's legend label for several (runs are labelled
``run id (engine)``), so two engines never share an axis unlabelled. Titles are wrapped to the
figure's width, never clipped. matplotlib (Agg backend) is imported inside the functions.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Bar = tuple[float, float | None, float | None]
"""value, ci_low, ci_high (the interval may be unknown)."""
BarFn = Callable[[str, str, str, str], Bar | None]
"""(panel, run, family, strategy) -> a bar, or None when not measured."""
Dot = tuple[float, float, float | None, float | None]
"""x, y, y's ci_low, y's ci_high."""


@dataclass(frozen=True, slots=True)
class Grid:
    """The axes of a figure: panels (rows) x families (columns), strategies x runs inside a panel."""

    families: Sequence[str]
    strategies: Sequence[str]
    runs: Sequence[str]
    """Legend labels, one per run: ``run id (engine)``."""
    title: str
    subtitle: str = ""
    """Under the title: the run and its engine when there is one run."""


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _colors(n: int) -> list[Any]:
    cmap = _pyplot().get_cmap("tab10")
    return [cmap(i % 10) for i in range(n)]


def _figure(grid: Grid, nrows: int, row_height: float = 3.3, min_width: float = 6.0) -> tuple[Any, Any, float]:
    plt = _pyplot()
    ncols = max(1, len(grid.families))
    per_group = max(1, len(grid.runs))
    panel = max(min_width / ncols, 0.55 * len(grid.strategies) * (per_group + 1) + 1.5)
    width = panel * ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, row_height * nrows + 1.2), squeeze=False,
                             layout="constrained")
    return fig, axes, width


def _wrap(text: str, width_in: float, size: float) -> str:
    """``text`` broken into lines that fit ``width_in`` inches at font ``size`` points."""
    chars = max(20, int(width_in * 72 / (size * 0.55)))
    return "\n".join(textwrap.fill(part, chars) for part in text.split("\n"))


def _handles(colors: Sequence[Any], marker: bool = False) -> list[Any]:
    """One legend entry per run, whether or not it drew anything (so labels and colours stay paired)."""
    if marker:
        from matplotlib.lines import Line2D

        return [Line2D([], [], marker="o", linestyle="", color=c) for c in colors]
    return [_pyplot().Rectangle((0, 0), 1, 1, color=c, alpha=0.85) for c in colors]


def _finish(fig: Any, grid: Grid, handles: list[Any], path: Path, width: float) -> Path:
    plt = _pyplot()
    title = grid.title + (f"\n{grid.subtitle}" if grid.subtitle else "")
    fig.suptitle(_wrap(title, width, 10), fontsize=10)
    if len(grid.runs) > 1:
        labels = [_wrap(label, width / min(2, len(grid.runs)), 8) for label in grid.runs]
        fig.legend(handles, labels, loc="outside lower center", ncols=min(2, len(grid.runs)), fontsize=8,
                   title="run (engine)")
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
    ax.set_xlabel("strategy", fontsize=8)
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
    zero_line: bool = False,
) -> Path:
    """Grouped bars with 95% CI error bars; ``panels`` = [(panel key, y label with unit)], one row each."""
    fig, axes, width = _figure(grid, len(panels))
    colors = _colors(len(grid.runs))
    pos, slot = _positions(len(grid.strategies), len(grid.runs))
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
                    ax.bar(x, value, slot * 0.92, yerr=yerr, capsize=3, color=colors[r], ecolor="0.2")
                    if len(grid.strategies) * len(grid.runs) <= 16:
                        top = hi if hi is not None else value
                        ax.annotate(f"{value:.2g}" if abs(value) < 1 else f"{value:.3g}", (x, max(top, value)),
                                    xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=6)
            if ylim is not None:
                ax.set_ylim(*ylim)
            if zero_line:
                ax.axhline(0.0, color="0.3", linewidth=0.8)
            _style_axis(ax, grid, f"{family}: {ylabel}", ylabel)
    return _finish(fig, grid, _handles(colors), path, width)


def box_grid(
    path: Path,
    grid: Grid,
    panels: Sequence[tuple[str, str]],
    data: dict[tuple[str, str, str, str], list[float]],
    *,
    log: bool | None = None,
) -> Path:
    """Box plots of ``data[(panel, run, family, strategy)]`` (whiskers 1.5 IQR, no fliers; n above each
    box), one row per panel ``(key, y label with unit)``. ``log=None`` picks a log axis per panel when
    its values span more than two decades."""
    fig, axes, width = _figure(grid, len(panels), row_height=3.8)
    colors = _colors(len(grid.runs))
    pos, slot = _positions(len(grid.strategies), len(grid.runs))
    for row, (panel, ylabel) in enumerate(panels):
        positive = [v for (p, *_), vals in data.items() if p == panel for v in vals if v > 0]
        use_log = log if log is not None else bool(positive) and max(positive) / min(positive) > 100.0
        for col, family in enumerate(grid.families):
            ax = axes[row][col]
            for s, strategy in enumerate(grid.strategies):
                for r, run in enumerate(grid.runs):
                    vals = [v for v in data.get((panel, run, family, strategy), []) if v > 0 or not use_log]
                    x = pos[s][r]
                    if not vals:
                        _na(ax, x)
                        continue
                    bp = ax.boxplot([vals], positions=[x], widths=slot * 0.8, patch_artist=True, showfliers=False,
                                    medianprops={"color": "black"})
                    for patch in bp["boxes"]:
                        patch.set_facecolor(colors[r])
                        patch.set_alpha(0.8)
                    ax.text(x, 0.985, f"n={len(vals)}", transform=ax.get_xaxis_transform(), ha="center", va="top",
                            fontsize=6, color="0.3")
            if use_log:
                from matplotlib.ticker import FuncFormatter, LogFormatter

                ax.set_yscale("log")
                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1.2, 0.5)))
            low, high = ax.get_ylim()  # headroom for the n= labels above the boxes
            ax.set_ylim(low, high * (high / low) ** 0.12 if use_log and low > 0 else high + (high - low) * 0.12)
            _style_axis(ax, grid, f"{family}: {ylabel}", ylabel + (" (log scale)" if use_log else ""))
    return _finish(fig, grid, _handles(colors), path, width)


_LABEL_OFFSETS = ((5, 4), (5, -11), (5, 14), (5, -21))


def scatter_grid(
    path: Path,
    grid: Grid,
    dots: dict[tuple[str, str, str], Dot],
    xlabel: str,
    ylabel: str,
    best: dict[tuple[str, str], str],
) -> Path:
    """Accuracy (y, with its 95% interval) against cost (x) per family; one colour per run, each dot
    labelled with its strategy; ``best[(run, family)]`` is ringed."""
    fig, axes, width = _figure(grid, 1, row_height=4.2)
    colors = _colors(len(grid.runs))
    xs = [d[0] for d in dots.values() if d[0] > 0]
    use_log = bool(xs) and max(xs) / min(xs) > 20.0
    for col, family in enumerate(grid.families):
        ax = axes[0][col]
        for r, run in enumerate(grid.runs):
            for s, strategy in enumerate(grid.strategies):
                dot = dots.get((run, family, strategy))
                if dot is None:
                    continue
                x, y, lo, hi = dot
                yerr = None if lo is None or hi is None else [[max(0.0, y - lo)], [max(0.0, hi - y)]]
                ax.errorbar([x], [y], yerr=yerr, fmt="o", color=colors[r], ecolor=colors[r], capsize=3, markersize=5)
                if best.get((run, family)) == strategy:
                    ax.plot([x], [y], "o", markersize=13, markerfacecolor="none", markeredgecolor="0.1")
                # Labels alternate above and below, so strategies at one point stay readable.
                ax.annotate(strategy, (x, y), xytext=_LABEL_OFFSETS[s % len(_LABEL_OFFSETS)],
                            textcoords="offset points", fontsize=7, color=colors[r])
        if use_log:
            ax.set_xscale("log")
        ax.margins(x=0.15)  # room for the strategy labels
        ax.set_ylim(-0.12, 1.12)
        ax.set_title(f"{family}: accuracy against cost (ringed: best)", fontsize=9)
        ax.set_xlabel(xlabel + (" (log scale)" if use_log else ""), fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    return _finish(fig, grid, _handles(colors, marker=True), path, width)


__all__ = ["Bar", "BarFn", "Dot", "Grid", "bar_grid", "box_grid", "scatter_grid"]
