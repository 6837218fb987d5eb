"""Bundles of Python classes through the CLI, from a folder outside the repository: ``harness init
--python`` runs on the oracle at once; a hostile tool ends as a ``tool:`` error and the run completes;
bad input is one error line naming the file and the field (exit 2), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def harness(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "harness.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ})
    assert "Traceback" not in done.stderr, done.stderr
    return done


def accuracy(run: Path) -> dict[tuple[str, str, str], float]:
    rows = json.loads((run / "summary.json").read_text())
    return {(r["family"], r["strategy"], r["metric"]): r["value"] for r in rows
            if r["metric"] in ("validity", "exact_match", "state_match")}


@pytest.mark.slow
def test_init_python_runs_on_the_oracle_from_an_empty_folder(tmp_path: Path) -> None:
    assert harness(tmp_path, "init", "mytools", "--python").returncode == 0
    files = {p.relative_to(tmp_path / "mytools").as_posix() for p in (tmp_path / "mytools").rglob("*") if p.is_file()}
    assert files == {"README.md", "bundle.yaml", "notebook_tools.py", "suite/suite.yaml", "suite/cases.jsonl"}
    assert harness(tmp_path, "validate", "mytools/suite").returncode == 0
    done = harness(tmp_path, "run", "mytools/suite", "--engine", "oracle", "--out", "runs/a")
    assert done.returncode == 0, done.stderr
    got = accuracy(tmp_path / "runs" / "a")
    assert len(got) == 2 * 4 * 3 and set(got.values()) == {1.0}
    kept = tmp_path / "runs" / "a" / "inputs" / "bundle"
    assert {p.name for p in kept.iterdir()} == {"bundle.yaml", "notebook_tools.py"}  # the class travels with the run
    # --out inside the bundle's own folder: the run's copy is not part of the bundle (nor of a later copy)
    inside = tmp_path / "mytools"
    assert harness(inside, "run", "suite", "--engine", "oracle", "--out", "runs/in").returncode == 0
    assert harness(inside, "score", "runs/in").returncode == 0
    copied = sorted(p.relative_to(inside / "runs/in/inputs/bundle").as_posix()
                    for p in (inside / "runs/in/inputs/bundle").rglob("*.py"))
    assert copied == ["notebook_tools.py"]
    (tmp_path / "mytools" / "notebook_tools.py").unlink()
    assert harness(tmp_path, "score", "runs/a").returncode == 0  # re-scored from the run's own copy
    assert accuracy(tmp_path / "runs" / "a") == got


HOSTILE = textwrap.dedent('''
    import os, time
    from pathlib import Path

    class Box:
        def __init__(self):
            self.items = []

        def put(self, item: str) -> int:
            """Put an item in the box."""
            self.items.append(item)
            return len(self.items)

        def spin(self) -> str:
            """Never answers."""
            while True:
                pass

        def leave(self) -> str:
            """Ends the process."""
            os._exit(1)

        def spawn(self) -> str:
            """Forks."""
            if os.fork() == 0:
                time.sleep(10_000)
            return "parent"

        def hoard(self) -> str:
            """Allocates without bound."""
            kept = []
            while True:
                kept.append(bytearray(64 << 20))

        def strain(self) -> str:
            """Hits a bound, a different one each call: the memory limit, then the wall clock (as one
            allocation loop may on a quiet machine, then on a busy one)."""
            count = Path(__file__).with_name("strain.count")
            calls = int(count.read_text()) + 1 if count.exists() else 1
            count.write_text(str(calls))
            if calls % 2:
                self.hoard()
            self.spin()
''')
BUNDLE = """\
name: box
model: {family: qwen, id: box-model}
constraint: {strategy: ebnf, allow_parallel_calls: true}
python: {classes: {Box: box_tools:Box}, memory: 1gb}
limits: {wall_clock: 1s}
kernel: {max_steps: 6}
"""
SUITE = """\
name: box
version: "1"
kind: episode
bundle: ..
families: [qwen]
strategies: [none]
"""


def write_box(folder: Path, cases: list[dict]) -> None:
    (folder / "suite").mkdir(parents=True)
    (folder / "box_tools.py").write_text(HOSTILE)
    (folder / "bundle.yaml").write_text(BUNDLE)
    (folder / "suite" / "suite.yaml").write_text(SUITE)
    (folder / "suite" / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))


def episode(cid: str, calls: list[str], classes: list[str] | None = None) -> dict:
    return {"id": cid, "turns": [[{"role": "user", "content": "go"}]], "involved_classes": classes or ["Box"],
            "ground_truth": [[{"name": "put", "arguments": {"item": "a"}},
                              *({"name": c, "arguments": {}} for c in calls),
                              {"name": "put", "arguments": {"item": "b"}}]],
            "expected_state": {"Box": {"items": ["a", "b"]}}}


@pytest.mark.slow
def test_hostile_tools_end_as_tool_errors_and_the_run_completes(tmp_path: Path) -> None:
    write_box(tmp_path / "box", [episode(name, [name]) for name in ("spin", "leave", "spawn", "hoard", "strain")])
    done = harness(tmp_path, "run", "box/suite", "--engine", "oracle", "--out", "run")
    assert done.returncode == 0, done.stderr
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    kinds = {s["case_id"]: [r["error_kind"] for step in s["steps"] for r in step["tool_results"]] for s in samples}
    assert kinds == {"spin": [None, "tool:limit", None], "leave": [None, "tool:internal_error", None],
                     "spawn": [None, "tool:error", None], "hoard": [None, "tool:limit", None],
                     "strain": [None, "tool:limit", None]}
    assert all(s["status"] == "ok" for s in samples)
    # the put after the failed call saw the state before it: ["a", "b"] at the end, as expected; and a
    # bound hit one way by the model's calls and another by the gold's (strain) is the same tool:limit
    assert set(accuracy(tmp_path / "run").values()) == {1.0}
    assert int((tmp_path / "box" / "strain.count").read_text()) >= 3  # the run's call, the model's and the gold's


# (what is wrong, the error line's parts)
BAD_BUNDLES = [
    ("python: {classes: {Box: no_such_module:Box}}", ["bundle.yaml: python.classes:", "no_such_module"]),
    ("python: {classes: {Box: not a target}}", ["bundle.yaml: python.classes:", "package.module:Class"]),
]


@pytest.mark.parametrize(("line", "parts"), BAD_BUNDLES)
def test_a_class_that_does_not_load_stops_the_run_with_exit_2(tmp_path: Path, line: str, parts: list[str]) -> None:
    write_box(tmp_path / "box", [episode("one", [])])
    bundle = tmp_path / "box" / "bundle.yaml"
    bundle.write_text(bundle.read_text().replace("python: {classes: {Box: box_tools:Box}, memory: 1gb}", line))
    done = harness(tmp_path, "run", "box/suite", "--engine", "oracle", "--out", "run")
    assert done.returncode == 2 and all(p in done.stderr for p in parts), done.stderr
    assert not (tmp_path / "run" / "samples.jsonl").exists()


def test_a_case_naming_a_class_the_bundle_lacks_stops_the_run_with_exit_2(tmp_path: Path) -> None:
    write_box(tmp_path / "box", [episode("one", []), episode("two", [], ["Box", "Crate"])])
    done = harness(tmp_path, "run", "box/suite", "--engine", "oracle", "--out", "run")
    assert done.returncode == 2
    assert "cases.jsonl:2: involved_classes: no class 'Crate' in the bundle (it has Box)" in done.stderr
