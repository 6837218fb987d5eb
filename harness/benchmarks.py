"""The one table of upstream benchmarks whose code lives in a folder of its own (``harness/bfcl``).

A benchmark brings what the rest of the harness cannot know: its cases' verdicts, the way its tools
execute in the Python-tool worker, the tool schemas of its function documents, a check of its ground
truth, a corpus of tools. Each of those is a *seam*, asked for by name where it is used; the benchmark
fills the seams it has, by import path (``module:attribute``), imported on first use: this table
imports nothing, so the layers below a benchmark's folder reach it without importing it, as the
tool-source and engine tables do. A case, a bundle or a command names its benchmark by the key here
(``execution: bfcl`` in bundle.yaml, a case's ``benchmark``, ``--tools bfcl``).

Seams: ``EXECUTION`` an execution mode of the Python-tool worker (``ExecutionMode`` below);
``EPISODE_VERDICT`` ``async (source, case, truth, steps_by_turn) -> Verdict``, the verdict of an episode
whose case carries the benchmark's own ground truth; ``SINGLE_TURN`` a class whose instance scores
single-turn cases (``validity``, ``verdicts``); ``FUNCTION_DOCS`` ``(docs) -> [ToolSchema]``, a
single-turn case's tools from the benchmark's function documents; ``TRUTH_PROBLEMS`` ``(case, tools) ->
[(field, problem)]``, what ``harness validate`` finds in that ground truth; ``CORPUS`` ``() -> [OpenAI
tool dicts]`` (ImportError saying what to install), the benchmark's distinct tools, for ``harness fuzz --tools NAME`` and ``harness bench
grammar --growth-tools NAME``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

EXECUTION = "execution"
EPISODE_VERDICT = "episode_verdict"
SINGLE_TURN = "single_turn"
FUNCTION_DOCS = "function_docs"
TRUTH_PROBLEMS = "truth_problems"
CORPUS = "corpus"
SEAMS = (EXECUTION, EPISODE_VERDICT, SINGLE_TURN, FUNCTION_DOCS, TRUTH_PROBLEMS, CORPUS)


class ExecutionMode(Protocol):
    """How the Python-tool worker runs a bundle's classes in a benchmark's own way (``execution: NAME``).
    A session is the worker's dict of one sample (``names``, ``config``, ``long_context``, ``entry``,
    ``tag``); a call comes as its Python source text."""

    def problems(self, classes: Mapping[str, str]) -> list[str]:
        """What keeps the mode from running these classes (name -> ``module:Class``): one line each."""
        ...

    def open(self, session: dict[str, Any]) -> dict[str, Any]:
        """The session's instances, class name -> instance."""
        ...

    def call(self, session: dict[str, Any], text: str) -> Any:
        """One call's result."""
        ...

    def close(self, session: dict[str, Any]) -> None: ...

    def check(self, request: dict[str, Any]) -> dict[str, Any]:
        """The benchmark's own verdict on a sample's calls (the worker's ``check`` request)."""
        ...


@dataclass(frozen=True, slots=True)
class Benchmark:
    """One registered benchmark: its seams, each ``module:attribute``."""

    name: str
    label: str
    """How messages name it."""
    summary: str
    seams: Mapping[str, str]


BENCHMARKS: dict[str, Benchmark] = {
    info.name: info
    for info in (
        Benchmark("bfcl", "BFCL", "the Berkeley Function Calling Leaderboard, run and judged as its package does", {
            EXECUTION: "harness.bfcl.execution:MODE",
            EPISODE_VERDICT: "harness.bfcl.multi_verdict:bfcl_multi_turn_verdict",
            SINGLE_TURN: "harness.bfcl.single_verdict:SingleTurnScoring",
            FUNCTION_DOCS: "harness.bfcl.data:tool_schemas",
            TRUTH_PROBLEMS: "harness.bfcl.seams:truth_problems",
            CORPUS: "harness.bfcl.seams:corpus",
        }),
    )
}


def with_seam(seam: str) -> tuple[str, ...]:
    """The benchmarks that fill ``seam``, in the table's order."""
    return tuple(name for name, info in BENCHMARKS.items() if seam in info.seams)


def seam(benchmark: str, name: str) -> Any:
    """What ``benchmark`` puts in seam ``name``, imported now. LookupError for a benchmark or a seam the
    table lacks, naming the ones it has."""
    info = BENCHMARKS.get(benchmark)
    if info is None or name not in info.seams:
        raise LookupError(f"no benchmark {benchmark!r} with a {name} (known: {', '.join(with_seam(name)) or 'none'})")
    module, _, attr = info.seams[name].partition(":")
    return getattr(importlib.import_module(module), attr)


__all__ = [
    "BENCHMARKS",
    "CORPUS",
    "EPISODE_VERDICT",
    "EXECUTION",
    "FUNCTION_DOCS",
    "SEAMS",
    "SINGLE_TURN",
    "TRUTH_PROBLEMS",
    "Benchmark",
    "ExecutionMode",
    "seam",
    "with_seam",
]
