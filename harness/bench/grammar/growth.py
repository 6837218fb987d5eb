"""How grammar cost grows: with the number of tools, and with the length of the output.

- ``growth_tools``: synthetic tool sets (``harness.bench.synthetic``) of 1, 5, 18, 50 and 100 tools, each with
  ``CALLS_PER_SET`` valid calls; per family x strategy x engine: compile cold and cached, mask
  p50/p99/max, gold acceptance.
- ``growth_length``: the bench's own tool set; one call whose free-text string argument holds 10 ..
  5000 characters of prose (``series: "string_chars"``), and 1 .. 8 parallel calls in one answer
  (``series: "parallel_calls"``, grammars built with ``allow_parallel_calls``); per point the whole
  walk's time (median of ``WALK_REPEATS``), tokens, mask p50/p99.
- ``growth_corpus`` (``--growth-tools PATH|NAME``): the tool-count curve on a real corpus, the user's
  tools or a benchmark's (``NAME``, the ``corpus`` seam of ``harness.benchmarks``: ~1,700 distinct
  single-turn tools in the one there is): the first 10, 100, 400 and 1,000 tools that build in every lane measured, valid
  calls drawn from the real schemas (kept when the schema's validator accepts them), and the compiled
  grammar's size (xgrammar's ``memory_size_bytes``) as the memory figure.

A point whose walk would take too long (the previous point of the same curve, scaled linearly to this
one, predicts more than a third of the time budget) is skipped and says so, rather than stalling the
bench for minutes; within a point, walks stop being timed once a third of the budget is spent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.agents import ConstraintError, DecodingConstraint, ToolCall, ToolSchema
from harness.bench.grammar.figures import EngineFigures, GrammarRow, WalkFigures
from harness.bench.grammar.results import GrammarBenchConfig, GrowthLengthRow, GrowthToolsRow

TOOL_COUNTS = (1, 5, 18, 50, 100)
TOOL_COUNTS_QUICK = (1, 18)
STRING_CHARS = (10, 100, 1000, 5000)
STRING_CHARS_QUICK = (10, 1000)
PARALLEL_CALLS = (1, 2, 4, 8)
PARALLEL_CALLS_QUICK = (1, 4)
CALLS_PER_SET = 16
CALLS_PER_SET_QUICK = 6
WALK_REPEATS = 3

def slim(row: GrammarRow, tools: int) -> GrowthToolsRow:
    """The figures of a main-table row that the growth curve keeps (None where not measured)."""
    own = {"tools", "corpus", "grammar_kb"}  # the curve's own fields, set by the caller
    kept = {k: getattr(row, k) for k in GrowthToolsRow.model_fields if k not in own}
    return GrowthToolsRow(**kept, tools=tools)


def growth_tools(cfg: GrammarBenchConfig, log: Callable[[str], None]) -> list[GrowthToolsRow]:
    from harness.bench.grammar.cells import measure_cell
    from harness.bench.inputs import GoldCalls
    from harness.bench.synthetic import synthetic_calls, synthetic_tools

    counts = TOOL_COUNTS_QUICK if cfg.quick else TOOL_COUNTS
    k = CALLS_PER_SET_QUICK if cfg.quick else CALLS_PER_SET
    repeats = 2 if cfg.quick else 3
    sub = sub_config(cfg, repeats)
    rows: list[GrowthToolsRow] = []
    for n in counts:
        tools = synthetic_tools(n)
        gold = [GoldCalls(f"syn{n}-{i}", (c,)) for i, c in enumerate(synthetic_calls(tools, k))]
        for family in cfg.families:
            for strategy in cfg.strategies:
                for row in measure_cell(family, strategy, tools, gold, sub, parallel=False, with_apply=False):
                    rows.append(slim(row, n))
        log(f"  growth: {n} synthetic tools done")
    return rows


def sub_config(cfg: GrammarBenchConfig, repeats: int) -> GrammarBenchConfig:
    return cfg.model_copy(update={"repeats": repeats, "budget_s": max(2.0, cfg.budget_s / 2)})


def _length_outputs(
    tools: Sequence[ToolSchema], gold: Sequence[Any], quick: bool
) -> list[tuple[str, int, bool, tuple[ToolCall, ...]]]:
    """(series, x, parallel, calls) for every point of the length curves."""
    from harness.bench.synthetic import call_with_text, long_text, string_parameter, synthetic_tools

    points: list[tuple[str, int, bool, tuple[ToolCall, ...]]] = []
    found = string_parameter(tools) or string_parameter(synthetic_tools(18))
    if found is not None:
        tool, key = found
        for n in STRING_CHARS_QUICK if quick else STRING_CHARS:
            points.append(("string_chars", n, False, (call_with_text(tool, key, long_text(n)),)))
    singles = [g.calls[0] for g in gold if len(g.calls) == 1][:8] or [c for g in gold for c in g.calls][:8]
    for n in PARALLEL_CALLS_QUICK if quick else PARALLEL_CALLS:
        calls = tuple(singles[i % len(singles)] for i in range(n))
        points.append(("parallel_calls", n, True, calls))
    return points


def growth_length(
    cfg: GrammarBenchConfig, tools: Sequence[ToolSchema], gold: Sequence[Any], log: Callable[[str], None]
) -> list[GrowthLengthRow]:
    """Walk time against output length, per family x strategy x engine (where vLLM builds no
    constraint, rows that say so)."""
    from harness.bench.grammar.cells import NO_CONSTRAINT, render_gold
    from harness.bench.grammar.measure import GoldText
    from harness.bench.inputs import GoldCalls
    from harness.grammar.families import get_adapter

    points = _length_outputs(tools, gold, cfg.quick)
    rows: list[GrowthLengthRow] = []
    limit_s = cfg.budget_s / 3
    for family in cfg.families:
        for strategy in cfg.strategies:
            if get_adapter(family).build_payload(list(tools), DecodingConstraint(strategy=strategy)).artifact is None:
                rows += [GrowthLengthRow(family=family, strategy=strategy, engine=engine, series=series, x=x,
                                         walk_ms=None, note=NO_CONSTRAINT)
                         for engine in cfg.engines for series, x, _, _ in points]
                continue
            for engine in cfg.engines:
                compiled: dict[bool, Any] = {}
                slow_note: dict[str, str] = {}
                last: dict[str, tuple[int, float]] = {}
                for series, x, parallel, calls in points:
                    base: dict[str, Any] = {"family": family, "strategy": strategy, "engine": engine, "series": series, "x": x}
                    prev = last.get(series)
                    if series not in slow_note and prev and prev[1] * x / prev[0] / 1000 > limit_s:
                        slow_note[series] = (
                            f"skipped: estimated {prev[1] * x / prev[0] / 1000:.0f} s per walk "
                            f"({prev[1] / 1000:.1f} s at {prev[0]})"
                        )
                    if series in slow_note:
                        rows.append(GrowthLengthRow(**base, walk_ms=None, note=slow_note[series]))
                        continue
                    constraint = DecodingConstraint(strategy=strategy, allow_parallel_calls=parallel)
                    texts, errors = render_gold(family, constraint, [GoldCalls(f"{series}-{x}", calls)])
                    if errors:
                        rows.append(GrowthLengthRow(**base, walk_ms=None, note=errors[0].error))
                        continue
                    outs = [GoldText(f"{series}-{x}-{r}", texts[0].text) for r in range(WALK_REPEATS)]
                    fig = _walk(engine, family, constraint, tools, outs, compiled, limit_s)
                    refused = isinstance(fig, EngineFigures) and not fig.expressible
                    row = GrowthLengthRow(
                        **base,
                        chars=len(texts[0].text),
                        tokens=(fig.tokens_timed or 0) // max(1, fig.outputs_timed or 1),
                        walk_ms=fig.walk_ms_p50,
                        mask_us_p50=fig.mask_us_p50,
                        mask_us_p99=fig.mask_us_p99,
                        accepted=None if refused else fig.gold_accepted == len(outs),
                        note=fig.note if isinstance(fig, EngineFigures) and refused else None,
                    )
                    rows.append(row)
                    if row.walk_ms is not None:
                        last[series] = (x, row.walk_ms)
            log(f"  growth: output length for {family}/{strategy} done")
    return rows


def _walk(
    engine: str,
    family: str,
    constraint: DecodingConstraint,
    tools: Sequence[ToolSchema],
    outs: Sequence[Any],
    compiled: dict[bool, Any],
    budget_s: float,
) -> WalkFigures:
    """xgrammar's walks (``WalkFigures``) or llguidance's figures (an ``EngineFigures``: it may not
    express the grammar)."""
    from harness.grammar.families import get_adapter

    payload = get_adapter(family).build_payload(list(tools), constraint)
    if payload.artifact is None:  # growth_length leaves out the strategies vLLM builds nothing for
        raise ConstraintError(f"{family}/{constraint.strategy} built no artifact")
    if engine == "xgrammar":
        from harness.bench.grammar.measure import walk_outputs
        from harness.grammar import compile_artifact

        key = constraint.allow_parallel_calls
        if key not in compiled:
            compiled[key] = compile_artifact(payload.artifact, family).compiled
        return walk_outputs(compiled[key], family, outs, budget_s)
    from harness.bench.grammar.llguidance import measure_llguidance

    return measure_llguidance(family, payload.artifact, outs, repeats=1, budget_s=budget_s)


CORPUS_COUNTS = (10, 100, 400, 1000)
CORPUS_COUNTS_QUICK = (10, 100)


def load_corpus(source: str) -> list[ToolSchema]:
    """The corpus's tools: a benchmark's by its name (``harness.benchmarks``), else a path the fuzz reads."""
    from harness.benchmarks import CORPUS, seam, with_seam

    if source in with_seam(CORPUS):
        return [ToolSchema.from_openai(t) for t in seam(source, CORPUS)()]
    from harness.bench.inputs import load_tool_schemas

    path = Path(source)
    if (path / "bundle.yaml").is_file():
        path = path / "tools"
    return load_tool_schemas(path)


def buildable(tools: Sequence[ToolSchema], families: Sequence[str], strategies: Sequence[str]) -> list[ToolSchema]:
    """The tools whose constraint builds alone in every family x strategy (names unique)."""
    from harness.grammar.families import get_adapter

    out: list[ToolSchema] = []
    names: set[str] = set()
    for tool in tools:
        if tool.name in names:
            continue
        try:
            for family in families:
                for strategy in strategies:
                    get_adapter(family).build_payload([tool], DecodingConstraint(strategy=strategy))  # type: ignore[arg-type]
        except ConstraintError:
            continue
        names.add(tool.name)
        out.append(tool)
    return out


def valid_calls(tools: Sequence[ToolSchema], k: int) -> list[ToolCall]:
    """Up to ``k`` calls spread over ``tools`` whose arguments the schema accepts."""
    from jsonschema import Draft202012Validator

    from harness.bench.synthetic import synthetic_calls
    from harness.grammar.families import strict_schema

    by_name = {t.name: t for t in tools}
    calls = synthetic_calls(tools, 2 * k)
    ok = [c for c in calls if Draft202012Validator(strict_schema(by_name[c.name].parameters)).is_valid(c.arguments)]
    return ok[:k]


def growth_corpus(cfg: GrammarBenchConfig, log: Callable[[str], None]) -> list[GrowthToolsRow]:
    """The tool-count curve on ``cfg.growth_corpus``; one row per count x family x strategy x engine."""
    from harness.bench.grammar.cells import measure_cell
    from harness.bench.inputs import GoldCalls

    assert cfg.growth_corpus is not None
    corpus = buildable(load_corpus(cfg.growth_corpus), cfg.families, cfg.strategies)
    counts = [n for n in (CORPUS_COUNTS_QUICK if cfg.quick else CORPUS_COUNTS) if n <= len(corpus)]
    log(f"  growth: corpus {cfg.growth_corpus}: {len(corpus)} tools build in every lane; counts {counts}")
    sub = sub_config(cfg, 2 if cfg.quick else 3)
    rows: list[GrowthToolsRow] = []
    for n in counts:
        tools = corpus[:n]
        gold = [GoldCalls(f"corpus{n}-{i}", (c,)) for i, c in enumerate(
            valid_calls(tools, CALLS_PER_SET_QUICK if cfg.quick else CALLS_PER_SET))]
        for family in cfg.families:
            for strategy in cfg.strategies:
                for row in measure_cell(family, strategy, tools, gold, sub, parallel=False, with_apply=False):
                    rows.append(slim(row, n).model_copy(update={
                        "corpus": cfg.growth_corpus, "grammar_kb": _grammar_kb(family, strategy, tools)}))
        log(f"  growth: {n} corpus tools done")
    return rows


def _grammar_kb(family: str, strategy: str, tools: Sequence[ToolSchema]) -> float | None:
    """The compiled grammar's size (its token-mask cache included), in KiB."""
    from harness.grammar import compile_artifact
    from harness.grammar.families import get_adapter

    artifact = get_adapter(family).build_payload(list(tools), DecodingConstraint(strategy=strategy)).artifact  # type: ignore[arg-type]
    if artifact is None:
        return None
    return round(compile_artifact(artifact, family).compiled.memory_size_bytes / 1024, 1)


__all__ = [
    "CORPUS_COUNTS",
    "PARALLEL_CALLS",
    "STRING_CHARS",
    "TOOL_COUNTS",
    "buildable",
    "growth_corpus",
    "growth_length",
    "growth_tools",
    "load_corpus",
    "slim",
    "sub_config",
    "valid_calls",
]
