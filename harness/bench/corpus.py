"""Growth on real tools: ``harness bench grammar --growth-tools PATH|bfcl``.

The tool-count curve of ``growth`` on a real corpus instead of synthetic tools: the user's tools (an
OpenAI tools JSON file, a ``.pym`` folder or a bundle) or BFCL's single-turn function documents
(``bfcl``: about 1,700 distinct tools, converted as BFCL converts them). The first 10, 30, 100, 300
and 1,000 tools (those the corpus holds, in its order, keeping only tools whose constraint builds in
every cell measured) are measured as the synthetic sets are: cold and cached compile, mask p50/p99/max
per token over valid calls, gold acceptance, plus the compiled grammar's size (xgrammar's
``memory_size_bytes``) as the memory figure. Valid calls are drawn by the synthetic generator from the
real schemas and kept only when the schema's validator accepts them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.agents.constraint import ConstraintError, DecodingConstraint
from harness.agents.types import ToolCall, ToolSchema

CORPUS_COUNTS = (10, 30, 100, 300, 1000)
CORPUS_COUNTS_QUICK = (10, 100)


def load_corpus(source: str) -> list[ToolSchema]:
    """The corpus's tools: ``bfcl`` for BFCL's function documents, else a path the fuzz reads."""
    if source == "bfcl":
        from harness.eval.bfcl_tools import distinct_tools

        return [ToolSchema.from_openai(t) for t in distinct_tools()]
    from harness.bench.inputs import load_tool_schemas

    path = Path(source)
    if (path / "bundle.yaml").is_file():
        path = path / "tools"
    return load_tool_schemas(path)


def buildable(tools: Sequence[ToolSchema], families: Sequence[str], strategies: Sequence[str]) -> list[ToolSchema]:
    """The tools whose constraint builds alone in every family x strategy (names unique)."""
    from harness.agents.families import get_adapter

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

    from harness.agents.families._calls import strict_schema
    from harness.bench.synthetic import synthetic_calls

    by_name = {t.name: t for t in tools}
    calls = synthetic_calls(tools, 2 * k)
    ok = [c for c in calls if Draft202012Validator(strict_schema(by_name[c.name].parameters)).is_valid(c.arguments)]
    return ok[:k]


def growth_corpus(cfg: Any, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The tool-count curve on ``cfg.growth_corpus``; one row per count x family x strategy x engine."""
    from harness.bench.cells import measure_cell
    from harness.bench.growth import CALLS_PER_SET, CALLS_PER_SET_QUICK, slim, sub_config
    from harness.bench.inputs import GoldCalls

    corpus = buildable(load_corpus(cfg.growth_corpus), cfg.families, cfg.strategies)
    counts = [n for n in (CORPUS_COUNTS_QUICK if cfg.quick else CORPUS_COUNTS) if n <= len(corpus)]
    log(f"  growth: corpus {cfg.growth_corpus}: {len(corpus)} tools build in every cell; counts {counts}")
    sub = sub_config(cfg, 2 if cfg.quick else 3)
    rows: list[dict[str, Any]] = []
    for n in counts:
        tools = corpus[:n]
        gold = [GoldCalls(f"corpus{n}-{i}", (c,)) for i, c in enumerate(
            valid_calls(tools, CALLS_PER_SET_QUICK if cfg.quick else CALLS_PER_SET))]
        for family in cfg.families:
            for strategy in cfg.strategies:
                for row in measure_cell(family, strategy, tools, gold, sub, parallel=False, with_apply=False):
                    rows.append({**slim(row), "tools": n, "corpus": cfg.growth_corpus,
                                 "grammar_kb": _grammar_kb(family, strategy, tools)})
        log(f"  growth: {n} corpus tools done")
    return rows


def _grammar_kb(family: str, strategy: str, tools: Sequence[ToolSchema]) -> float | None:
    """The compiled grammar's size (its token-mask cache included), in KiB."""
    from harness.agents.families import get_adapter
    from harness.grammar import compile_artifact

    artifact = get_adapter(family).build_payload(list(tools), DecodingConstraint(strategy=strategy)).artifact  # type: ignore[arg-type]
    if artifact is None:
        return None
    return round(compile_artifact(artifact, family).compiled.memory_size_bytes / 1024, 1)


__all__ = ["CORPUS_COUNTS", "buildable", "growth_corpus", "load_corpus", "valid_calls"]
