"""``harness bench grammar``: what each constraint strategy costs, per model family and grammar engine.

- ``run``: the bench end to end (``run_grammar_bench``), its goals;
- ``cells``: one lane (family x strategy): its artifact, its gold outputs rendered, a row per engine
  (the bench's cell: one lane measured by one grammar engine, at one tool count);
- ``measure``: xgrammar's figures (compile, mask, accept, jump-forward, mask application), and the
  walk ``harness grammar check`` uses;
- ``llguidance``: llguidance on the same grammars (converted by ``harness.grammar.guidance``);
- ``growth``: growth with the number of tools and with the output's length;
- ``figures``, ``results``: the records (a row's figures; the config, growth rows, summary, bench.json);
- ``output``, ``plots``: bench.json, bench.md, the console table, the PNG plots.

Names load on first use (``measure`` imports numpy; the engines load xgrammar and llguidance when they
measure).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.bench.grammar.figures import EngineFigures, GrammarRow
    from harness.bench.grammar.measure import GoldText, GrammarCheck, check_outputs
    from harness.bench.grammar.output import print_table
    from harness.bench.grammar.results import (
        GRAMMAR_ENGINES,
        GrammarBench,
        GrammarBenchConfig,
        GrammarSummary,
        GrowthLengthRow,
        GrowthToolsRow,
    )
    from harness.bench.grammar.run import GOALS, run_grammar_bench

__getattr__, __dir__ = lazy_exports(__name__, {
    "print_table": "output",
    "EngineFigures": "figures",
    "GrammarRow": "figures",
    "GoldText": "measure",
    "GrammarCheck": "measure",
    "check_outputs": "measure",
    "GRAMMAR_ENGINES": "results",
    "GrammarBench": "results",
    "GrammarBenchConfig": "results",
    "GrammarSummary": "results",
    "GrowthLengthRow": "results",
    "GrowthToolsRow": "results",
    "GOALS": "run",
    "run_grammar_bench": "run",
})

__all__ = [
    "GOALS",
    "GRAMMAR_ENGINES",
    "EngineFigures",
    "GoldText",
    "GrammarBench",
    "GrammarBenchConfig",
    "GrammarCheck",
    "GrammarRow",
    "GrammarSummary",
    "GrowthLengthRow",
    "GrowthToolsRow",
    "check_outputs",
    "print_table",
    "run_grammar_bench",
]
