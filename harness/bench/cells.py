"""One family x strategy of ``harness bench grammar``: its configuration, its gold outputs rendered
as the family's model would write them, and its figures per grammar engine (``measure_cell``).
Used by the main table (``grammar``) and by the growth curves (``growth``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.agents.constraint import CONSTRAINED_STRATEGIES, ConstraintError, DecodingConstraint
from harness.agents.families import FAMILIES
from harness.agents.types import ToolSchema
from harness.bench.inputs import GoldCalls
from harness.bench.measure import GoldText

GRAMMAR_ENGINES = ("xgrammar", "llguidance")
"""Grammar engines the bench measures (not the model engines of ``harness run``)."""


@dataclass(slots=True)
class GrammarBenchConfig:
    """What ``harness bench grammar`` measures, and how long it may take."""

    families: tuple[str, ...] = FAMILIES
    strategies: tuple[str, ...] = CONSTRAINED_STRATEGIES
    engines: tuple[str, ...] = GRAMMAR_ENGINES
    tools_path: str | None = None
    """A JSON list of OpenAI tools or a .pym folder (None: ``inputs.DEFAULT_TOOLS``)."""
    calls_path: str | None = None
    """A CALLS.jsonl or a suite folder (None: ``inputs.DEFAULT_SUITE``)."""
    out_dir: str | None = None
    """Where bench.json, bench.md and the plots go (None: ``results/bench/grammar-<UTC time>``)."""
    quick: bool = False
    """Fewer outputs, repeats and growth points (a smoke run)."""
    growth: bool = True
    """Also measure growth with the number of tools and the output length."""
    growth_corpus: str | None = None
    """Measure the tool-count growth on this real corpus (a tools path, or ``bfcl``) at 10 ... 1,000
    tools instead of on synthetic tools (``harness.bench.corpus``)."""
    repeats: int = 0
    """Compile repeats (0: 5, or 3 with ``quick``)."""
    budget_s: float = 0.0
    """Time budget per (family, strategy, engine) for timed walks (0: 40 s, or 8 s with ``quick``)."""
    max_outputs: int = 0
    """Gold outputs used (0: all, or 24 with ``quick``)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Free-form notes copied into bench.json's config."""

    def resolved(self) -> GrammarBenchConfig:
        self.repeats = self.repeats or (3 if self.quick else 5)
        self.budget_s = self.budget_s or (8.0 if self.quick else 40.0)
        self.max_outputs = self.max_outputs or (24 if self.quick else 0)
        return self


def render_gold(
    family: str, constraint: DecodingConstraint, gold: Sequence[GoldCalls]
) -> tuple[list[GoldText], list[dict[str, str]]]:
    """Each gold answer as the family's model would write it under the strategy; answers the format
    cannot hold (e.g. a FunctionGemma string containing ``<escape>``) are listed, not measured."""
    from harness.agents.families import get_adapter

    adapter = get_adapter(family)
    texts: list[GoldText] = []
    errors: list[dict[str, str]] = []
    for g in gold:
        try:
            texts.append(GoldText(g.output_id, adapter.render_output(list(g.calls), constraint)))
        except (ConstraintError, ValueError) as exc:
            errors.append({"output_id": g.output_id, "error": str(exc)})
    return texts, errors


def measure_cell(
    family: str,
    strategy: str,
    tools: Sequence[ToolSchema],
    gold: Sequence[GoldCalls],
    cfg: GrammarBenchConfig,
    *,
    parallel: bool,
    with_apply: bool = True,
) -> list[dict[str, Any]]:
    """The figures of one family x strategy, one row per engine."""
    from harness.agents.families import get_adapter
    from harness.bench.measure import measure_xgrammar

    constraint = DecodingConstraint(strategy=strategy, allow_parallel_calls=parallel)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    payload = get_adapter(family).build_payload(list(tools), constraint)
    build_ms = (time.perf_counter() - t0) * 1000
    artifact = payload.artifact
    if artifact is None:
        raise ConstraintError(f"{family}/{strategy} built no artifact")
    texts, render_errors = render_gold(family, constraint, gold)
    common = {
        "family": family,
        "strategy": strategy,
        "tools": len(tools),
        "parallel": parallel,
        "artifact_kind": artifact.kind,
        "artifact_chars": len(artifact.value),
        "build_ms": round(build_ms, 3),
        "render_errors": render_errors,
    }
    rows = []
    for engine in cfg.engines:
        if engine == "xgrammar":
            fig = measure_xgrammar(
                family, artifact, texts, repeats=cfg.repeats, budget_s=cfg.budget_s, with_apply=with_apply
            )
        else:
            from harness.bench.llguidance import measure_llguidance

            fig = measure_llguidance(family, artifact, texts, repeats=cfg.repeats, budget_s=cfg.budget_s)
        rows.append({**common, **fig})
    return rows


__all__ = ["GRAMMAR_ENGINES", "GrammarBenchConfig", "measure_cell", "render_gold"]
