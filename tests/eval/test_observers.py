"""The kernel's events reach a user's observer (``harness run --observer module:Class``, or
``run_suite(..., observers=[...])``), and they are what the runner records samples from: what an
observer sees of each model call is what samples.jsonl holds."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli.main import app
from harness.eval.run import RunOptions, RunPlace, run_suite
from harness.eval.store import load_samples

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "suites" / "smoke"
EPISODES = ROOT / "suites" / "fs-episodes"

TRACES = '''
import json, pathlib

class Traces:
    """Written by the test: one JSON line per event kind of interest, written on close()."""

    def __init__(self, sample):
        self.sample, self.lines = sample, []

    def emit(self, event):
        kind = type(event).__name__
        line = {"sample": self.sample.sample_id, "kind": kind, "step": getattr(event, "step", None)}
        if kind == "ModelResponseEvent":
            line.update(latency_ms=event.latency_ms, text=event.content)
        if kind == "ToolResultEvent":
            line.update(tool=event.result.name, is_error=event.result.is_error)
        self.lines.append(line)

    def close(self):
        with (pathlib.Path(__file__).parent / "traces.jsonl").open("a") as fh:
            fh.writelines(json.dumps(line) + "\\n" for line in self.lines)

class Broken:
    def __init__(self, sample):
        pass

    def emit(self, event):
        raise RuntimeError("an observer bug")
'''


@pytest.fixture
def traces_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A module ``user_traces`` the test writes, importable for the run (and forgotten after it)."""
    folder = tmp_path / "mods"
    folder.mkdir()
    (folder / "user_traces.py").write_text(textwrap.dedent(TRACES))
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("user_traces", None)
    yield folder / "traces.jsonl"
    sys.modules.pop("user_traces", None)


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def check_traces_match_samples(traces: list[dict[str, Any]], run_dir: Path) -> None:
    """Each sample's responses, as the observer saw them, are the steps samples.jsonl holds."""
    samples = load_samples(run_dir / "samples.jsonl").samples
    assert {t["sample"] for t in traces} == set(samples)
    for sample_id, record in samples.items():
        seen = [t for t in traces if t["sample"] == sample_id and t["kind"] == "ModelResponseEvent"]
        assert [(t["text"], t["latency_ms"]) for t in seen] == [(s.output, s.latency_ms) for s in record.steps]
        kinds = [t["kind"] for t in traces if t["sample"] == sample_id]
        assert kinds.count("ModelRequestEvent") == kinds.count("StepCompleteEvent") == len(record.steps)
        results = [(t["tool"], t["is_error"]) for t in traces if t["sample"] == sample_id and t["kind"] == "ToolResultEvent"]
        assert results == [(r.name, r.is_error) for r in record.tool_results()]


def test_the_command_gives_the_kernels_events_to_a_users_observer(traces_module: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(SMOKE), "--engine", "oracle", "--family", "qwen", "--strategy",
                                      "ebnf", "--limit", "2", "--out", str(out), "--observer", "user_traces:Traces"])
    assert result.exit_code == 0, result.output
    check_traces_match_samples(read_lines(traces_module), out)


async def test_the_library_api_gives_an_episodes_events_turn_by_turn(traces_module: Path, tmp_path: Path) -> None:
    import user_traces  # type: ignore[import-not-found]

    out = tmp_path / "ep"
    await run_suite(EPISODES, RunOptions(engine="oracle", families=("qwen",), strategies=("json_schema",), limit=1),
                    RunPlace(out=out), observers=[user_traces.Traces])
    traces = read_lines(traces_module)
    check_traces_match_samples(traces, out)
    (record,) = load_samples(out / "samples.jsonl").samples.values()
    assert len({s.turn for s in record.steps}) > 1  # several user turns, each a kernel.run
    assert sum(t["kind"] == "KernelStartEvent" for t in traces) == len({s.turn for s in record.steps})


def test_an_observer_that_raises_never_stops_a_sample(traces_module: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(SMOKE), "--engine", "oracle", "--family", "qwen", "--strategy",
                                      "none", "--limit", "1", "--out", str(out), "--observer", "user_traces:Broken"])
    assert result.exit_code == 0, result.output
    (record,) = load_samples(out / "samples.jsonl").samples.values()
    assert record.status == "ok" and record.steps


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("user_traces", "expected module:Class"),
        ("no_such_module_here:Traces", "cannot import 'no_such_module_here'"),
        ("user_traces:Nope", "has no callable 'Nope'"),
    ],
)
def test_a_bad_observer_stops_the_run_before_it_starts(traces_module: Path, tmp_path: Path, name: str,
                                                        problem: str) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(SMOKE), "--engine", "oracle", "--limit", "1", "--out", str(out),
                                      "--observer", name])
    assert result.exit_code == 2 and problem in result.output
    assert not out.exists()
