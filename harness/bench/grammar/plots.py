"""PNG plots of ``harness bench grammar`` (matplotlib, Agg backend, imported when plotting).

- ``strategies.png``: per family, grouped bars per strategy (xgrammar solid, llguidance hatched) of
  mask p50, mask p99 and compile cold, log scale, the goals as dashed lines;
- ``growth_tools.png``: compile ms, mask p50 and p99 us against the number of tools (one line per
  strategy, llguidance dashed), one row per family;
- ``growth_length.png``: total walk ms against the string argument's length and the number of parallel
  calls, one row per family.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.bench.grammar.results import GrammarBench, GrowthLengthRow, GrowthToolsRow
from harness.vocabulary import Strategy

STRATEGY_COLORS: dict[str, str] = {Strategy.ebnf: "#1f77b4", Strategy.structural_tag: "#ff7f0e", Strategy.json_schema: "#2ca02c"}
ENGINE_STYLE = {"xgrammar": "-", "llguidance": "--"}
ENGINE_MARKER = {"xgrammar": "o", "llguidance": "s"}


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plain_ticks(ax: Any, x: bool = False) -> None:
    """Plain numbers on log axes (``20``, not ``2x10^1``)."""
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _pos: f"{v:g}")
    axes = [ax.yaxis, ax.xaxis] if x else [ax.yaxis]
    for axis in axes:
        axis.set_major_formatter(fmt)
        axis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))


def _color(strategy: str) -> str:
    return STRATEGY_COLORS.get(strategy, "#7f7f7f")


def plot_strategies(bench: GrammarBench, path: Path) -> Path:
    plt = _plt()
    families = bench.config.families
    strategies = bench.config.strategies
    engines = bench.config.engines
    metrics = [("mask_us_p50", "mask p50 (us)"), ("mask_us_p99", "mask p99 (us)"), ("compile_ms_cold", "compile cold (ms)")]
    goals = bench.goals
    rows = {(r.family, r.strategy, r.engine): r for r in bench.main}
    fig, axes = plt.subplots(len(families), len(metrics), figsize=(5.2 * len(metrics), 3.6 * len(families) + 0.6),
                             squeeze=False, layout="constrained")
    width = 0.8 / max(1, len(engines))
    for i, fam in enumerate(families):
        for j, (key, label) in enumerate(metrics):
            ax = axes[i][j]
            for k, engine in enumerate(engines):
                for s, strat in enumerate(strategies):
                    r = rows.get((fam, strat, engine))
                    val = getattr(r, key) if r is not None and r.expressible else None
                    x = s + (k - (len(engines) - 1) / 2) * width
                    if val is None:
                        ax.text(x, 1, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
                        continue
                    ax.bar(x, max(val, 1e-3), width * 0.95, color=_color(strat), hatch="//" if k else None,
                           edgecolor="black", linewidth=0.5, label=engine if s == 0 and i == 0 and j == 0 else None)
                    ax.text(x, val * 1.08, f"{val:.3g}", ha="center", va="bottom", fontsize=7)
            if key in goals:
                ax.axhline(goals[key], color="red", linestyle="--", linewidth=1)
                ax.text(len(strategies) - 0.5, goals[key] * 1.05, f"goal {goals[key]:g}", color="red",
                        ha="right", va="bottom", fontsize=7)
            ax.set_yscale("log")
            _plain_ticks(ax)
            ax.set_xticks(range(len(strategies)), strategies, fontsize=8)
            ax.set_title(f"{fam}: {label}", fontsize=10)
            ax.grid(axis="y", which="major", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="//" if k else None)
               for k in range(len(engines))]
    fig.legend(handles, list(engines), loc="outside upper right", ncols=len(engines), fontsize=8)
    fig.suptitle(f"Grammar cost per strategy ({bench.inputs.tools} tools, "
                 f"{bench.inputs.gold_outputs} gold outputs; solid xgrammar, hatched llguidance)", fontsize=11)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _lines(ax: Any, rows: Sequence[GrowthToolsRow] | Sequence[GrowthLengthRow], family: str, xkey: str, ykey: str,
           strategies: Sequence[str], engines: Sequence[str]) -> None:
    for strat in strategies:
        for engine in engines:
            pts = sorted((getattr(r, xkey), getattr(r, ykey)) for r in rows
                         if r.family == family and r.strategy == strat and r.engine == engine
                         and getattr(r, ykey) is not None)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], ENGINE_STYLE.get(engine, ":"),
                        marker=ENGINE_MARKER.get(engine, "x"), markersize=4, color=_color(strat),
                        label=f"{strat} ({engine})")


def plot_growth_tools(bench: GrammarBench, path: Path) -> Path | None:
    rows = bench.growth_tools or []
    if not rows:
        return None
    plt = _plt()
    families = bench.config.families
    strategies, engines = bench.config.strategies, bench.config.engines
    metrics = [("compile_ms_cold", "compile cold (ms)"), ("mask_us_p50", "mask p50 (us)"), ("mask_us_p99", "mask p99 (us)")]
    corpus = rows[0].corpus
    if corpus:
        metrics += [("mask_us_max", "mask max (us)"), ("grammar_kb", "compiled grammar (KiB)")]
    fig, axes = plt.subplots(len(families), len(metrics), figsize=(5.2 * len(metrics), 3.6 * len(families) + 0.8),
                             squeeze=False, layout="constrained")
    for i, fam in enumerate(families):
        for j, (key, label) in enumerate(metrics):
            ax = axes[i][j]
            _lines(ax, rows, fam, "tools", key, strategies, engines)
            if key in bench.goals:
                ax.axhline(bench.goals[key], color="red", linestyle=":", linewidth=1)
            ax.set_xscale("log")
            ax.set_yscale("log")
            counts = sorted({r.tools for r in rows})
            ax.set_xticks(counts)
            _plain_ticks(ax, x=True)
            ax.set_xlabel("tools")
            ax.set_title(f"{fam}: {label}", fontsize=10)
            ax.grid(which="major", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(6, max(1, len(labels))), fontsize=8)
    where = f"the first N tools of {corpus}" if corpus else "synthetic tool sets"
    fig.suptitle(f"How grammar cost grows with the number of tools ({where}; dotted red: goal)", fontsize=11)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_growth_length(bench: GrammarBench, path: Path) -> Path | None:
    rows = bench.growth_length or []
    if not rows:
        return None
    plt = _plt()
    families = bench.config.families
    strategies, engines = bench.config.strategies, bench.config.engines
    series = [("string_chars", "string argument length (chars)"), ("parallel_calls", "parallel calls in one answer")]
    fig, axes = plt.subplots(len(families), len(series), figsize=(6.0 * len(series), 3.6 * len(families) + 0.8),
                             squeeze=False, layout="constrained")
    for i, fam in enumerate(families):
        for j, (name, label) in enumerate(series):
            ax = axes[i][j]
            _lines(ax, [r for r in rows if r.series == name], fam, "x", "walk_ms", strategies, engines)
            ax.set_xscale("log" if name == "string_chars" else "linear")
            ax.set_yscale("log")
            xs = sorted({r.x for r in rows if r.series == name})
            if xs:
                ax.set_xticks(xs)
            _plain_ticks(ax, x=name == "string_chars")
            ax.set_xlabel(label)
            ax.set_ylabel("whole walk (ms)")
            ax.set_title(f"{fam}: walk time vs {label}", fontsize=10)
            ax.grid(which="major", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(6, max(1, len(labels))), fontsize=8)
    fig.suptitle("How grammar cost grows with the output (mask + accept over every token)", fontsize=11)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_plots(bench: GrammarBench, out_dir: Path) -> list[Path]:
    written = [plot_strategies(bench, out_dir / "strategies.png")]
    for fn, name in ((plot_growth_tools, "growth_tools.png"), (plot_growth_length, "growth_length.png")):
        p = fn(bench, out_dir / name)
        if p is not None:
            written.append(p)
    return written


__all__ = ["plot_growth_length", "plot_growth_tools", "plot_strategies", "write_plots"]
