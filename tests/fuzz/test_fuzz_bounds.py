"""``harness fuzz`` stays inside its bounds (issue 30): schemas it cannot take are named cells, never a
traceback or a fetch; a huge enum, a huge ``--walks`` and shrinking honour ``--cell-timeout``; outputs
are checked before the work starts; SIGTERM ends it with 130 and the report of what finished, no
worker left; Hypothesis' storage stays out of the current folder."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import psutil
import pytest
from typer.testing import CliRunner

from harness.agents import ToolSchema
from harness.cli.main import app
from harness.fuzz import FuzzOptions, Outcome, fuzz
from harness.fuzz.bounds import parameters_problem

pytestmark = pytest.mark.fuzz

LS = {"type": "function", "function": {"name": "ls", "description": "List.", "parameters": {
    "type": "object", "properties": {"a": {"type": "boolean"}}, "required": []}}}


def tool(name: str, parameters: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": "T.", "parameters": parameters}}


def run(tmp_path: Path, tools: list[dict[str, Any]], *args: str) -> Any:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools))
    return CliRunner().invoke(app, ["fuzz", "--tools", str(path), "--family", "qwen", "--strategy", "ebnf",
                                    "--examples", "5", "--jobs", "1", *args])


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)}


SCREENED = [  # (parameters, what the cell's message says)
    (obj(x={"$ref": "#/$defs/missing"}), "points at nothing"),
    (obj(x={"$ref": "http://example.invalid/schema.json"}), "is never fetched"),
    (obj(x={"$ref": "file:///etc/passwd"}), "is never fetched"),
    ({"type": "array"}, "must be an object schema"),
]


@pytest.mark.parametrize(("parameters", "named"), SCREENED)
def test_a_schema_the_fuzzer_cannot_take_is_a_named_cell(tmp_path: Path, parameters: dict[str, Any],
                                                         named: str) -> None:
    assert named in (parameters_problem(parameters) or "")
    result = run(tmp_path, [tool("t", parameters), LS], "--out", str(tmp_path / "out"))
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["outcomes"] == {"passing": 1, "schema_invalid": 1} and summary["failing"] == ["t/qwen/ebnf"]
    assert named in result.stdout


def test_a_huge_enum_stops_at_the_cell_timeout(tmp_path: Path) -> None:
    huge = tool("pick", obj(v={"type": "string", "enum": [f"value-{i:06d}" for i in range(100_000)]}))
    started = time.monotonic()
    result = run(tmp_path, [huge, LS], "--out", str(tmp_path / "out"), "--cell-timeout", "2")
    assert time.monotonic() - started < 120, "the enum check ran outside --cell-timeout"
    assert result.exit_code in (0, 1) and "Traceback" not in result.output, result.output
    cells = {c["tool"]: c for c in json.loads((tmp_path / "out" / "report.json").read_text())["cells"]}
    assert cells["pick"]["outcome"] == "generation_slow" and "limit of 2 s" in cells["pick"]["message"]


def test_a_huge_walks_count_stops_at_the_cell_deadline(tmp_path: Path) -> None:
    ls = ToolSchema.from_openai(LS)
    started = time.monotonic()
    report = fuzz([ls], FuzzOptions(families=("qwen",), strategies=("ebnf",), examples=3, walks=10**9,
                                    cell_timeout_s=1.0, database=None, shrink=False))
    assert time.monotonic() - started < 30
    (cell,) = report.cells
    assert cell.classes.get(Outcome.timeout.value) == 1 and 0 < cell.walks < 10**9


UNWRITABLE = [  # (the option, the path given, what the error says)
    ("--out", "/proc/harness-fuzz", "--out '/proc/harness-fuzz'"),
    ("--junit", "/proc/harness-fuzz.xml", "--junit '/proc/harness-fuzz.xml'"),
    ("--expected", "/proc/harness-expected.json", "--expected '/proc/harness-expected.json'"),
    ("--junit", "{tmp}", "is a directory"),
]


@pytest.mark.parametrize(("option", "path", "named"), UNWRITABLE)
def test_an_output_that_cannot_be_written_is_refused_before_the_work(tmp_path: Path, option: str, path: str,
                                                                     named: str) -> None:
    args = [option, path.format(tmp=tmp_path)]
    if option == "--expected":
        args.append("--update")
    if option != "--out":
        args += ["--out", str(tmp_path / "out")]
    started = time.monotonic()
    result = run(tmp_path, [LS], *args)
    assert result.exit_code == 2 and named in result.output and "Traceback" not in result.output, result.output
    assert time.monotonic() - started < 10 and not (tmp_path / "out" / "report.json").exists()


def test_junit_holds_a_tool_name_with_control_characters(tmp_path: Path) -> None:
    junit = tmp_path / "fuzz.xml"
    result = run(tmp_path, [tool("bad\x01\x1bname", {"type": "object", "properties": []}), LS],
                 "--out", str(tmp_path / "out"), "--junit", str(junit))
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    names = [case.get("name") for case in ET.parse(junit).iter("testcase")]
    assert "bad\\x01\\x1bname" in names and "ls" in names


def test_hypothesis_storage_stays_out_of_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hypothesis.configuration import set_hypothesis_home_dir

    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("HARNESS_FUZZ_DB", str(tmp_path / "cache" / "examples"))
    monkeypatch.setenv("HYPOTHESIS_STORAGE_DIRECTORY", str(tmp_path / "restored-after"))
    try:
        result = run(tmp_path, [LS], "--out", str(tmp_path / "out"))
    finally:
        set_hypothesis_home_dir(None)  # the tests' own Hypothesis storage, as it was
    assert result.exit_code == 0, result.output
    assert list(here.iterdir()) == []
    assert os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] == str(tmp_path / "cache" / "hypothesis")


@pytest.mark.slow
def test_sigterm_ends_the_fuzz_with_130_the_report_and_no_worker_left(tmp_path: Path) -> None:
    tools = [tool(f"t{i}", obj(n={"type": "integer", "minimum": 0, "maximum": 9},
                               s={"type": "string", "maxLength": 8})) for i in range(400)]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools))
    env = {**os.environ, "HARNESS_FUZZ_DB": str(tmp_path / "db")}
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli.main", "fuzz", "--tools", str(path), "--family", "qwen",
                             "--strategy", "ebnf", "--examples", "20", "--jobs", "2", "--out", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None and proc.stdout is not None
    read: dict[str, list[str]] = {"out": [], "err": []}
    some_done = threading.Event()

    def drain(name: str, stream: Any) -> None:  # stderr's progress: "fuzz: N/400 cells", first once a cell is done
        for line in stream:
            read[name].append(line)
            if name == "err" and re.match(r"fuzz: [1-9]\d*/", line):
                some_done.set()

    readers = [threading.Thread(target=drain, args=(n, f), daemon=True) for n, f in (("out", proc.stdout),
                                                                                   ("err", proc.stderr))]
    for reader in readers:
        reader.start()
    workers: set[psutil.Process] = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(workers) < 2:
        workers |= {p for p in psutil.Process(proc.pid).children(recursive=True) if "spawn" in " ".join(p.cmdline())}
        time.sleep(0.2)
    assert len(workers) >= 2, "the workers did not start"
    # Some cells finish (each worker first compiles the 400 tools' grammar): the progress line says so,
    # where a fixed 30 s sleep stood before.
    assert some_done.wait(timeout=180), "".join(read["err"])[-2000:]
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    for reader in readers:
        reader.join(timeout=60)
        assert not reader.is_alive(), "a pipe of the fuzz stayed open (a worker left?)"
    out, err = "".join(read["out"]), "".join(read["err"])
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "Traceback" not in err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert 0 < len(report["cells"]) < 400
    assert json.loads(out.strip().splitlines()[-1])["cells"] == len(report["cells"])
    time.sleep(1.0)
    assert [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE] == []
