"""`validate` and `run` check a suite by one path (issue 22, item 6): a case validate rejects is never
run, and a `{"role": "tool"}` message without its call is refused by both. Before: run accepted an
expected call naming an unknown tool or with wrong arguments, and both accepted a tool message that
answered no call. Each row breaks the smoke suite's first case; `run` must refuse it before any sample."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile import copy_suite
from typer.testing import CliRunner

from harness.cli.main import app

runner = CliRunner()

Edit = Callable[[dict[str, Any]], object]


def _expected(**fields: Any) -> Edit:
    return lambda case: case["expected"].update(fields)


def _arguments(**arguments: Any) -> Edit:
    return lambda case: case["expected"].update(arguments=arguments)


def _messages(*extra: dict[str, Any], at: int | None = None) -> Edit:
    def edit(case: dict[str, Any]) -> None:
        where = len(case["messages"]) if at is None else at
        case["messages"][where:where] = list(extra)

    return edit


USER = {"role": "user", "content": "and now?"}
TOOL = {"role": "tool", "content": "file.txt", "tool_call_id": "x"}
CALLS = {"role": "assistant", "tool_calls": [{"name": "ls", "arguments": {}}]}
SAYS = {"role": "assistant", "content": "Sure."}

# (label, how the first case is broken, what both commands name)
BROKEN: list[tuple[str, Edit, str]] = [
    ("expected names an unknown tool", _expected(name="lsx"), "expected.name: unknown tool 'lsx'"),
    ("expected has an unknown argument", _arguments(colour=True), "expected.arguments.colour: not a parameter of 'ls'"),
    ("expected has an argument of the wrong type", _arguments(a="yes"), "expected.arguments.a: 'yes' is not of type"),
    ("expected misses a required argument", lambda c: c.update(expected={"name": "cat", "arguments": {}}),
     "expected.arguments: missing required 'file_name' of 'cat'"),
    ("a history call names an unknown tool", _messages({"role": "assistant", "tool_calls": [{"name": "nope"}]}, USER),
     "messages[1].tool_calls[0].name: unknown tool 'nope'"),
    ("a tool message first", _messages(TOOL, at=0), "messages[0].role: a tool message without its call"),
    ("a tool message after a user message", _messages(TOOL), "messages[1].role: a tool message without its call"),
    ("a tool message after an answer without calls", _messages(SAYS, TOOL, USER),
     "messages[2].role: a tool message without its call"),
    ("two tool messages for one call", _messages(CALLS, TOOL, TOOL, USER),
     "messages[3].role: a tool message without its call"),
]

# A tool message that answers its call is accepted by both.
ANSWERED: list[tuple[str, Edit]] = [
    ("a call and its tool message", _messages(CALLS, TOOL, USER)),
    ("two calls and their tool messages", _messages(
        {"role": "assistant", "tool_calls": [{"name": "ls", "arguments": {}}, {"name": "pwd", "arguments": {}}]},
        TOOL, TOOL, USER)),
]


def _suite(tmp: Path, edit: Edit) -> Path:
    suite = copy_suite(tmp)
    lines = (suite / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    case = json.loads(lines[0])
    edit(case)
    lines[0] = json.dumps(case)
    (suite / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return suite


def _invoke(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    return result.exit_code, output


def _run(suite: Path, tmp: Path) -> list[str]:
    return ["run", str(suite), "--engine", "oracle", "--family", "qwen", "--strategy", "ebnf", "--out", str(tmp / "out")]


@pytest.mark.parametrize(("label", "edit", "needle"), BROKEN, ids=[b[0] for b in BROKEN])
def test_validate_and_run_refuse_the_same_case(tmp_path: Path, label: str, edit: Edit, needle: str) -> None:
    suite = _suite(tmp_path, edit)
    code, output = _invoke(["validate", str(suite)])
    assert code == 1 and f"cases.jsonl:1: {needle}" in output, output
    code, output = _invoke(_run(suite, tmp_path))
    assert code == 2 and f"cases.jsonl:1: {needle}" in output, output
    assert not (tmp_path / "out" / "samples.jsonl").exists()  # refused before any sample


@pytest.mark.parametrize(("label", "edit"), ANSWERED, ids=[a[0] for a in ANSWERED])
def test_a_tool_message_that_answers_its_call_is_accepted(tmp_path: Path, label: str, edit: Edit) -> None:
    suite = _suite(tmp_path, edit)
    code, output = _invoke(["validate", str(suite)])
    assert code == 0, output
