"""A third tool source, added in this module alone: an in-memory key-value store (a test of the seam, not a
shipped source). Its one registration line puts it in ``harness.tools.SOURCES``; a bundle naming
``source: memory`` then runs a suite on the oracle, is scored state by state with the one episode
verdict, and its failures get the source's own state diff, with nothing else of the harness changed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from harness.agents import BundleConfig, ToolCall, ToolContext, ToolResult, ToolSchema
from harness.tools import SOURCES, SessionSetup, SourceInfo, StateKind
from harness.vocabulary import ErrorKind


class MemorySession:
    def __init__(self, source: MemorySource) -> None:
        self.source, self.store = source, {}  # type: ignore[var-annotated]
        self.workspace = self.store

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        call = ToolCall(id=name, name=name, arguments=dict(arguments))
        return await self.source.by_name[name].execute(call, ToolContext(call_id=name, workspace=self.store))

    async def snapshot(self) -> Any:
        return dict(self.store)

    async def close(self) -> None:
        return None


class MemoryTool:
    def __init__(self, name: str, description: str, keys: list[str]) -> None:
        properties = {key: {"type": "string"} for key in keys}
        self.schema = ToolSchema(name, description, {"type": "object", "properties": properties, "required": keys})

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolResult:
        store: dict[str, str] = context.workspace
        if self.schema.name == "put":
            store[call.arguments["key"]] = call.arguments["value"]
            return ToolResult(call.id, call.name, "ok")
        return ToolResult(call.id, call.name, store.get(call.arguments["key"], ""))


class MemorySource:
    state_kind: StateKind = "instances"
    unwanted_calls_fail = True

    def __init__(self) -> None:
        self.tools = (MemoryTool("put", "Store a value under a key.", ["key", "value"]),
                      MemoryTool("get", "The value stored under a key.", ["key"]))
        self.by_name = {t.schema.name: t for t in self.tools}

    def owner(self, tool: Any) -> str | None:
        return None

    async def open(self, setup: SessionSetup) -> MemorySession:
        session = MemorySession(self)
        for call in setup.history:
            await session.call(call.name, call.arguments)
        return session

    def difference(self, gold: Any, model: Any, *, cwd: bool = True) -> str | None:
        return None if gold == model else ErrorKind.state_instance_differs

    def lines(self, snapshot: Any) -> list[str]:
        return [f"{key} = {value}" for key, value in sorted(snapshot.items())]

    def holds(self, snapshot: Any, expected: Mapping[str, Mapping[str, Any]]) -> bool:
        return not expected

    def close(self) -> None:
        return None


def load_memory_source(file: Path, config: BundleConfig) -> MemorySource:
    return MemorySource()


@pytest.fixture
def memory_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SOURCES, "memory", SourceInfo("memory", "a key-value store", f"{__name__}:load_memory_source"))


def put(key: str, value: str) -> dict[str, Any]:
    return {"name": "put", "arguments": {"key": key, "value": value}}


CASES = [
    {"id": "colour", "turns": [[{"role": "user", "content": "Remember that my colour is teal."}],
                               [{"role": "user", "content": "What is my colour?"}]],
     "ground_truth": [[put("colour", "teal")], [{"name": "get", "arguments": {"key": "colour"}}]]},
    {"id": "two", "turns": [[{"role": "user", "content": "Note a=1 and b=2."}]],
     "ground_truth": [[put("a", "1"), put("b", "2")]]},
]


def write_suite(root: Path) -> Path:
    (root / "bundle").mkdir(parents=True)
    (root / "bundle" / "bundle.yaml").write_text("name: memo\nsource: memory\nmodel:\n  family: qwen\n  id: m\n")
    (root / "suite").mkdir()
    (root / "suite" / "suite.yaml").write_text("name: memo\nversion: '1'\nkind: episode\nbundle: ../bundle\n"
                                               "families: [qwen]\nstrategies: [ebnf]\n")
    (root / "suite" / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    return root / "suite"


def test_a_suite_runs_and_scores_through_a_third_source(tmp_path: Path, memory_registered: None) -> None:
    from harness.eval.run import RunOptions, RunPlace, run_suite
    from harness.eval.store import read_summary

    outcome = asyncio.run(run_suite(write_suite(tmp_path), RunOptions(engine="oracle"), RunPlace(out=tmp_path / "run")))
    assert outcome.errors == 0
    rows = {r.metric: (r.value, r.n) for r in read_summary(tmp_path / "run")}
    assert rows["state_match"] == (1.0, 2) and rows["exact_match"] == (1.0, 2)


@pytest.mark.parametrize(("calls", "kind", "diff"), [
    ([[put("colour", "teal")], [{"name": "get", "arguments": {"key": "colour"}}]], None, None),
    ([[put("colour", "red")], [{"name": "get", "arguments": {"key": "colour"}}]], ErrorKind.state_instance_differs,
     ["-colour = teal", "+colour = red"]),
    ([[put("colour", "teal")], []], ErrorKind.state_empty_turn, None),
])
async def test_the_one_episode_verdict_judges_the_third_source(
    tmp_path: Path, memory_registered: None, calls: list[list[dict[str, Any]]], kind: str | None,
    diff: list[str] | None,
) -> None:
    from harness.bundles import bundle_source
    from harness.eval.data import load_suite
    from harness.eval.score import Scorer
    from harness.eval.store import SampleRecord

    suite = load_suite(write_suite(tmp_path))
    _, source = bundle_source(suite.bundle_dir)
    scorer = Scorer(suite.cases, [t.schema for t in source.tools], "oracle", source)
    steps = [{"output": "x", "tool_calls": turn_calls, "parse_errors": [], "tool_results": [], "latency_ms": 1.0,
              "ttft_ms": None, "usage": None, "stats": None, "turn": turn} for turn, turn_calls in enumerate(calls)]
    sample = SampleRecord.model_validate({
        "sample_id": "colour/qwen/ebnf/1", "case_id": "colour", "family": "qwen", "strategy": "ebnf", "epoch": 1,
        "kind": "episode", "status": "ok", "error_kind": None, "error": None, "steps": steps, "duration_ms": 1.0,
        "harness_ms": 0.1,
    })
    rows = {row.metric: row for row in await scorer.score(sample)}
    assert rows["state_match"].error_kind == kind
    found = scorer.differences.get(sample.sample_id)
    assert (found and [line for line in found.lines if line[:1] in "+-" and line[:2] not in ("++", "--")]) == diff
