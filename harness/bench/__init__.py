"""Benchmarks: figures recorded, never asserted (``harness bench grammar|sandbox|engine|jump|client|serve``).

- ``grammar/``: what each constraint strategy costs per model family and grammar engine (xgrammar,
  llguidance), with growth curves (``harness bench grammar``).
- ``sandbox``: one sandboxed file-system tool call, end to end.
- ``engine``: the embedded engine, constrained against unconstrained, and time to first token.
- ``jump``: jump-forward against the plain decoding loop on a suite.
- ``client``: the runner and its OpenAI client against ``harness serve`` replicas.
- ``serve``: hostile requests against ``harness serve``, its memory sampled.
- ``records``: the records they write (pydantic models); ``inputs``: tools and gold calls from explicit
  paths; ``synthetic``: synthetic tool sets of any size.

Importing this package is cheap: each benchmark loads xgrammar, torch, llama.cpp or pydantic-monty
when it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.bench.client import ClientBench, run_client_bench
    from harness.bench.contention import bench_contention
    from harness.bench.engine import EngineBench, run_engine_bench
    from harness.bench.grammar import GrammarBench, GrammarBenchConfig, run_grammar_bench
    from harness.bench.inputs import load_tool_schemas
    from harness.bench.jump import JumpBench, ScoreFigure, run_jump_bench
    from harness.bench.mcp_calls import bench_mcp
    from harness.bench.records import BenchRecord
    from harness.bench.sandbox import GOAL, SandboxBench, bench_sandbox
    from harness.bench.serve import PARTS, ServeBench, bench_serve

__getattr__, __dir__ = lazy_exports(__name__, {
    "bench_contention": "contention",
    "load_tool_schemas": "inputs",
    "ScoreFigure": "jump",
    "GOAL": "sandbox",
    "PARTS": "serve",
    "BenchRecord": "records",
    "ClientBench": "client",
    "EngineBench": "engine",
    "GrammarBench": "grammar",
    "GrammarBenchConfig": "grammar",
    "JumpBench": "jump",
    "SandboxBench": "sandbox",
    "ServeBench": "serve",
    "bench_mcp": "mcp_calls",
    "bench_sandbox": "sandbox",
    "bench_serve": "serve",
    "run_client_bench": "client",
    "run_engine_bench": "engine",
    "run_grammar_bench": "grammar",
    "run_jump_bench": "jump",
})

__all__ = [
    "GOAL",
    "PARTS",
    "BenchRecord",
    "ClientBench",
    "EngineBench",
    "GrammarBench",
    "GrammarBenchConfig",
    "JumpBench",
    "SandboxBench",
    "ScoreFigure",
    "ServeBench",
    "bench_contention",
    "bench_mcp",
    "bench_sandbox",
    "bench_serve",
    "load_tool_schemas",
    "run_client_bench",
    "run_engine_bench",
    "run_grammar_bench",
    "run_jump_bench",
]
