"""Benchmarks: figures recorded, never asserted (``harness bench grammar|sandbox|engine``).

- ``grammar``: what each constraint strategy costs per model family and grammar engine (xgrammar,
  llguidance), with growth curves; ``measure``, ``llguidance``, ``lark``, ``ebnf``, ``growth``,
  ``synthetic``, ``output`` and ``plots`` are its parts.
- ``sandbox``: one sandboxed file-system tool call, end to end.
- ``engine``: the embedded engine, constrained against unconstrained, and time to first token.

Importing this package is cheap: each benchmark loads xgrammar, torch, llama.cpp or pydantic-monty
when it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.bench.engine import run_engine_bench
    from harness.bench.grammar import GrammarBenchConfig, run_grammar_bench
    from harness.bench.sandbox import bench_sandbox

__getattr__, __dir__ = lazy_exports(__name__, {
    "GrammarBenchConfig": "grammar",
    "run_grammar_bench": "grammar",
    "bench_sandbox": "sandbox",
    "run_engine_bench": "engine",
})

__all__ = ["GrammarBenchConfig", "bench_sandbox", "run_engine_bench", "run_grammar_bench"]

