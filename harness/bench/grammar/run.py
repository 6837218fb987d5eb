"""``harness bench grammar``: what each constraint strategy costs, per model family and grammar engine.

For every family x strategy the family adapter builds the request's artifact for the tool set
(``build_payload``) and renders every gold call as the model would emit it (``render_output``); the
grammar is then measured with xgrammar (``measure``) and, where the strategy can be expressed
exactly, with llguidance (``llguidance``). Growth curves (``growth``) repeat the figures
for synthetic tool sets of growing size and for outputs of growing length. Outputs
(``output``): ``bench.json``, ``bench.md``, PNG plots, a rich table, and one JSON summary line.

Defaults (``harness.bench.inputs``): the SHELLper bundle's 18 tools and the gold calls of
``suites/shellper`` (each case's ``expected`` call and its ``expected_alternatives``, duplicates
removed), relative to the working directory.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from harness.agents import ToolSchema
from harness.bench.grammar.cells import measure_cell
from harness.bench.grammar.figures import GrammarRow
from harness.bench.grammar.results import (
    GRAMMAR_ENGINES,
    GrammarBench,
    GrammarBenchConfig,
    GrammarInputs,
    Machine,
)
from harness.bench.inputs import GoldCalls, load_gold, load_tool_schemas

GOALS = {
    "mask_us_p50": 25.0,
    "mask_us_p99": 250.0,
    "compile_ms_cold": 50.0,
    "compile_ms_cached": 0.2,
    "compile_ms_cold_100_tools": 100.0,
}
"""The project's goals (each figure must be at most its goal): the 18-tool set's, and the cold compile
of the growth curve's 100 synthetic tools (every family x strategy)."""

Log = Callable[[str], None]


def _versions() -> dict[str, str | None]:
    import importlib.metadata as md

    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("harness", "xgrammar", "llguidance", "transformers", "torch", "numpy"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def default_out_dir() -> Path:
    return Path("results") / "bench" / f"grammar-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


def check_engines(engines: Sequence[str]) -> list[str]:
    """The engines that can run here (llguidance dropped with a message when not installed)."""
    out = []
    for e in engines:
        if e not in GRAMMAR_ENGINES:
            raise ValueError(f"unknown engine {e!r}: expected {', '.join(GRAMMAR_ENGINES)}")
        if e == "llguidance":
            from harness.bench.grammar.llguidance import available

            if available() is not None:
                continue
        out.append(e)
    return out


def run_grammar_bench(cfg: GrammarBenchConfig, log: Log = print) -> GrammarBench:
    """Run the bench, write its files into the output folder; returns what bench.json holds
    (``summary`` is the final JSON line). The files are written after the main table and after each
    growth curve, and when a step fails (its error in ``stopped``): what was measured is kept."""
    cfg.resolved()
    started = datetime.now(UTC)
    t_start = time.perf_counter()
    engines = check_engines(cfg.engines)
    skipped = [e for e in cfg.engines if e not in engines]
    if skipped:
        log(f"skipping {', '.join(skipped)}: not installed (pip install 'harness[guidance]')")
    cfg.engines = tuple(engines)
    tools = load_tool_schemas(cfg.tools_path)
    gold, gold_src = load_gold(cfg.calls_path)
    if cfg.max_outputs:
        gold = gold[: cfg.max_outputs]
    parallel = any(len(g.calls) > 1 for g in gold)
    out_dir = Path(cfg.out_dir) if cfg.out_dir else default_out_dir()
    log(f"{len(tools)} tools, {len(gold)} gold outputs from {gold_src}; engines {', '.join(engines)}; out {out_dir}")
    bench = GrammarBench(
        config=cfg,
        inputs=GrammarInputs(tools=len(tools), tool_names=[t.name for t in tools], gold_outputs=len(gold),
                             gold_source=gold_src, parallel=parallel),
        goals=GOALS, machine=Machine(platform=platform.platform(), cpus=_cpu_count()), versions=_versions(),
        setup_s={}, started_at=started.isoformat(timespec="seconds"), main=[],
    )  # growth_tools, growth_length: None (left out of bench.json) until measured
    try:
        bench.setup_s = _tokenizers(cfg.families, engines, log)
        _main_table(cfg, tools, gold, parallel, log, bench.main)
        if cfg.growth:
            from harness.bench.grammar.growth import growth_corpus, growth_length, growth_tools

            _save(bench, out_dir, t_start)  # the main table on disk before the growth curves (minutes)
            bench.growth_tools = (growth_corpus if cfg.growth_corpus else growth_tools)(cfg, log)
            _save(bench, out_dir, t_start)
            bench.growth_length = growth_length(cfg, tools, gold, log)
    except BaseException as exc:  # Ctrl-C too: what was measured is written before the error goes on
        if bench.main:
            bench.stopped = f"{type(exc).__name__}: {exc}"[:300]
            _save(bench, out_dir, t_start)
            log(f"stopped ({bench.stopped}): {out_dir}/bench.json and bench.md hold what was measured before")
        raise
    _save(bench, out_dir, t_start, plots=True)
    return bench


def _save(bench: GrammarBench, out_dir: Path, t_start: float, *, plots: bool = False) -> None:
    """bench.json and bench.md as measured so far (the PNG plots too with ``plots``)."""
    from harness.bench.grammar.output import summarize, write_outputs

    bench.duration_s = round(time.perf_counter() - t_start, 1)
    bench.summary = summarize(bench, out_dir)
    write_outputs(bench, out_dir, plots=plots)


def _tokenizers(families: Sequence[str], engines: Sequence[str], log: Log) -> dict[str, float]:
    """Each family's tokenizers built now (not inside a timing): family -> seconds."""
    from harness.grammar import get_tokenizer

    setup: dict[str, float] = {}
    for family in families:
        t0 = time.perf_counter()
        get_tokenizer(family).info  # noqa: B018 (build xgrammar's tokenizer view now, not inside a timing)
        if "llguidance" in engines:
            from harness.bench.grammar.llguidance import get_llg_tokenizer

            get_llg_tokenizer(family)
        setup[family] = round(time.perf_counter() - t0, 2)
        log(f"  {family}: tokenizers ready in {setup[family]} s")
    return setup


def _main_table(
    cfg: GrammarBenchConfig, tools: Sequence[ToolSchema], gold: Sequence[GoldCalls], parallel: bool, log: Log,
    main: list[GrammarRow],
) -> None:
    """Every family x strategy x engine into ``main``, logged as it is measured."""
    for family in cfg.families:
        for strategy in cfg.strategies:
            rows = measure_cell(family, strategy, tools, gold, cfg, parallel=parallel)
            for r in rows:
                log(
                    f"  {family:14s} {strategy:14s} {r.engine:10s} "
                    + (
                        f"compile {r.compile_ms_cold} ms, mask p50 {r.mask_us_p50} us p99 {r.mask_us_p99} us, "
                        f"gold {r.gold_accepted}/{r.gold_total}"
                        if r.expressible
                        else str(r.unmeasured or r.note)
                    )
                )
            main.extend(rows)


def _cpu_count() -> int | None:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count()


__all__ = ["GOALS", "GRAMMAR_ENGINES", "GrammarBenchConfig", "check_engines", "run_grammar_bench"]
