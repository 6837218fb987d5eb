"""One family x strategy of ``harness bench grammar``: its configuration, its gold outputs rendered
as the family's model would write them, and its figures per grammar engine (``measure_cell``).
Used by the main table (``grammar``) and by the growth curves (``growth``)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from harness.agents import ConstraintError, DecodingConstraint, ToolSchema
from harness.bench.grammar.figures import GrammarRow, RenderError
from harness.bench.grammar.measure import GoldText
from harness.bench.grammar.results import GRAMMAR_ENGINES, GrammarBenchConfig
from harness.bench.inputs import GoldCalls

NO_CONSTRAINT = "not measured: vLLM builds no constraint"
"""The reason a cell of a strategy vLLM builds itself has no figures: for this family vLLM sends the
request unconstrained (FunctionGemma's ``strict``), so there is no grammar to time."""


def render_gold(
    family: str, constraint: DecodingConstraint, gold: Sequence[GoldCalls]
) -> tuple[list[GoldText], list[RenderError]]:
    """Each gold answer as the family's model would write it under the strategy; answers the format
    cannot hold (e.g. a FunctionGemma string containing ``<escape>``) are listed, not measured."""
    from harness.grammar.families import get_adapter

    adapter = get_adapter(family)
    texts: list[GoldText] = []
    errors: list[RenderError] = []
    for g in gold:
        try:
            texts.append(GoldText(g.output_id, adapter.render_output(list(g.calls), constraint)))
        except (ConstraintError, ValueError) as exc:
            errors.append(RenderError(output_id=g.output_id, error=str(exc)))
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
) -> list[GrammarRow]:
    """The figures of one family x strategy, one row per engine (where vLLM builds no constraint, rows
    that say so: ``unmeasured``)."""
    from harness.bench.grammar.measure import APPLY_POSITIONS, APPLY_POSITIONS_QUICK, measure_xgrammar
    from harness.grammar.families import get_adapter

    constraint = DecodingConstraint(strategy=strategy, allow_parallel_calls=parallel)
    t0 = time.perf_counter()
    payload = get_adapter(family).build_payload(list(tools), constraint)
    build_ms = (time.perf_counter() - t0) * 1000
    artifact = payload.artifact
    cell = {"family": family, "strategy": strategy, "tools": len(tools), "parallel": parallel}
    if artifact is None and payload.server_built is not None:  # FunctionGemma's strict: a row saying so
        return [GrammarRow.model_validate({**cell, "engine": e, "unmeasured": NO_CONSTRAINT}) for e in cfg.engines]
    if artifact is None:
        raise ConstraintError(f"{family}/{strategy} built no artifact")
    texts, render_errors = render_gold(family, constraint, gold)
    common = {
        **cell,
        "artifact_kind": artifact.kind,
        "artifact_chars": len(artifact.value),
        "build_ms": round(build_ms, 3),
        "render_errors": render_errors,
    }
    rows: list[GrammarRow] = []
    for engine in cfg.engines:
        if engine == "xgrammar":
            fig = measure_xgrammar(
                family, artifact, texts, repeats=cfg.repeats, budget_s=cfg.budget_s, with_apply=with_apply,
                apply_positions=APPLY_POSITIONS_QUICK if cfg.quick else APPLY_POSITIONS,
            )
        else:
            from harness.bench.grammar.llguidance import measure_llguidance

            fig = measure_llguidance(family, artifact, texts, repeats=cfg.repeats, budget_s=cfg.budget_s)
        rows.append(GrammarRow.model_validate({**common, **fig.given()}))
    return rows


__all__ = ["GRAMMAR_ENGINES", "NO_CONSTRAINT", "GrammarBenchConfig", "measure_cell", "render_gold"]
