"""Suite models, validation messages (file, line, field), and the project's own suites."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from harness.agents.types import ToolSchema
from harness.cli.main import app
from harness.eval import (
    FS_TOOL_NAMES,
    CallSpec,
    ChatMessage,
    EpisodeCase,
    NextCallCase,
    SuiteError,
    SuiteSpec,
    load_suite,
    validate_suite,
    write_suite,
)
from harness.eval.data import dump_case

REPO = Path(__file__).resolve().parents[2]
SUITES = REPO / "suites"
TOOLS_JSON = REPO / "tests" / "data" / "shellper_tools.json"
TREE = {"root": {"kim": {"type": "directory", "contents": {
    "a.txt": {"type": "file", "content": "x\ny\n"},
    "docs": {"type": "directory", "contents": {}},
}}}}


def openai_tools() -> dict[str, ToolSchema]:
    return {s.name: s for s in map(ToolSchema.from_openai, json.loads(TOOLS_JSON.read_text()))}


def point(cid: str, expected: dict, **extra: object) -> dict:
    return {"id": cid, "messages": [{"role": "user", "content": "hi"}], "expected": expected,
            "initial_fs": TREE, **extra}


def make_suite(tmp_path: Path, lines: list[str], kind: str = "next_call", **spec: object) -> Path:
    d = tmp_path / "s"
    d.mkdir()
    meta = {"name": "s", "version": 1, "kind": kind, "bundle": str(REPO / "bundles" / "shellper"), **spec}
    (d / "suite.yaml").write_text(yaml.safe_dump(meta))
    (d / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return d


# -- validation messages -----------------------------------------------------------------------------


def test_each_problem_names_file_line_and_field(tmp_path: Path) -> None:
    cases = tmp_path / "s" / "cases.jsonl"
    lines = [
        json.dumps(point("ok", {"name": "cat", "arguments": {"file_name": "a.txt"}})),
        json.dumps({k: v for k, v in point("no-expected", {}).items() if k != "expected"}),
        json.dumps(point("extra", {"name": "pwd", "arguments": {}}, bogus=1)),
        json.dumps(point("type", {"name": "tail", "arguments": {"file_name": "a.txt", "lines": "5"}})),
        json.dumps(point("ok", {"name": "pwd", "arguments": {}})),
        "{broken",
        json.dumps(point("tool", {"name": "cta", "arguments": {}})),
        json.dumps(point("arg", {"name": "cd", "arguments": {"folder_name": "docs"}})),
        json.dumps(point("cwd", {"name": "ls", "arguments": {}}, cwd="nowhere")),
        json.dumps(point("bool", {"name": "ls", "arguments": {"a": 1}})),
        json.dumps(point("missing", {"name": "cp", "arguments": {"source": "a.txt"}})),
        json.dumps(point("enum", {"name": "wc", "arguments": {"file_name": "a.txt", "mode": "x"}})),
        json.dumps(point("hist", {"name": "pwd"}, messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"name": "cd", "arguments": {"dir": "docs"}}]},
        ])),
    ]
    problems = validate_suite(make_suite(tmp_path, lines))
    text = "\n".join(problems)
    expected = [
        f"{cases}:2: expected: Field required",
        f"{cases}:3: bogus: unknown key: expected one of id, messages, expected, expected_alternatives, state_check, conversation, tags, cwd, initial_fs",
        f"{cases}:4: expected.arguments.lines: '5' is not of type 'integer'",
        f"{cases}:5: id: duplicate id 'ok' (first on line 1)",
        f"{cases}:6: invalid JSON",
        f"{cases}:7: expected.name: unknown tool 'cta': did you mean 'cat'?",
        f"{cases}:8: expected.arguments.folder_name: not a parameter of 'cd': did you mean 'folder'?",
        f"{cases}:9: cwd: 'nowhere' is not a directory of initial_fs",
        f"{cases}:10: expected.arguments.a: 1 is not of type 'boolean'",
        f"{cases}:11: expected.arguments: missing required 'destination' of 'cp'",
        f"{cases}:12: expected.arguments.mode: 'x' is not one of ['l', 'w', 'c']",
        f"{cases}:13: messages[1].tool_calls[0].arguments.dir: not a parameter of 'cd' (parameters: folder)",
        f"{cases}:13: messages[1].tool_calls[0].arguments: missing required 'folder' of 'cd'",
    ]
    for e in expected:
        assert any(p.startswith(e) for p in problems), f"missing {e!r} in:\n{text}"
    assert not any(f"{cases}:1:" in p for p in problems)
    assert len(problems) == len(expected)


def test_same_checks_with_the_openai_tool_schemas(tmp_path: Path) -> None:
    lines = [json.dumps(point("t", {"name": "tail", "arguments": {"file_name": "a.txt", "lines": 2.5}}))]
    problems = validate_suite(make_suite(tmp_path, lines), tools=openai_tools())
    assert problems == [f"{tmp_path / 's' / 'cases.jsonl'}:1: expected.arguments.lines: 2.5 is not of type 'integer'"]


def test_episode_problems(tmp_path: Path) -> None:
    case = {"id": "e", "turns": [[{"role": "user", "content": "a"}], [{"role": "assistant", "content": "b"}]],
            "ground_truth": [[{"name": "ls", "arguments": {}}]], "initial_fs": TREE}
    problems = validate_suite(make_suite(tmp_path, [json.dumps(case)], kind="episode"))
    cases = tmp_path / "s" / "cases.jsonl"
    assert f"{cases}:1: ground_truth: 1 lists for 2 turns" in problems
    assert f"{cases}:1: turns[1][0].role: a turn holds user or system messages, not 'assistant'" in problems


def test_tree_and_message_shape_errors(tmp_path: Path) -> None:
    two_roots = {"root": {"a": {"type": "directory", "contents": {}}, "b": {"type": "directory", "contents": {}}}}
    bad_node = {"root": {"a": {"type": "directory", "contents": {"f": {"type": "link", "content": ""}}}}}
    lines = [
        json.dumps(point("roots", {"name": "pwd"}, initial_fs=two_roots)),
        json.dumps(point("node", {"name": "pwd"}, initial_fs=bad_node)),
        json.dumps(point("msg", {"name": "pwd"}, messages=[{"role": "user", "tool_calls": [{"name": "ls"}]}])),
    ]
    problems = validate_suite(make_suite(tmp_path, lines))
    cases = tmp_path / "s" / "cases.jsonl"
    assert any(p.startswith(f"{cases}:1: initial_fs.root: needs exactly one top-level directory") for p in problems)
    assert any(p.startswith(f"{cases}:2: initial_fs.root.a.contents.f") for p in problems)
    assert any(p.startswith(f"{cases}:3: messages[0]: tool_calls are only allowed on assistant") for p in problems)


def test_suite_yaml_problems(tmp_path: Path) -> None:
    d = make_suite(tmp_path, [json.dumps(point("a", {"name": "pwd"}))], kind="chat", strategies=["grammar"], extra=1)
    problems = validate_suite(d)
    where = f"{d / 'suite.yaml'}"
    assert any(p.startswith(f"{where}: kind: Input should be 'next_call', 'episode' or 'single_turn'") for p in problems)
    assert any(p.startswith(f"{where}: strategies: Value error, unknown strategy 'grammar'")
               or p.startswith(f"{where}: strategies: unknown strategy 'grammar'") for p in problems)
    assert any(p.startswith(f"{where}: extra: unknown key: expected one of") for p in problems)
    with pytest.raises(SuiteError):
        load_suite(d)


def test_missing_bundle_is_a_problem(tmp_path: Path) -> None:
    d = make_suite(tmp_path, [json.dumps(point("a", {"name": "pwd"}))], bundle="../no-such-bundle")
    assert validate_suite(d) == [f"{d / 'suite.yaml'}: bundle: '../no-such-bundle' not found (looked at "
                                 f"{(d / '..' / 'no-such-bundle').resolve()})"]


def test_every_broken_part_of_the_bundle_is_reported(tmp_path: Path) -> None:
    """harness validate loads the bundle as harness run does and reports each problem, each .pym too."""
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(REPO / "bundles" / "shellper", bundle)
    (bundle / "tools" / "broken.pym").write_text('"""Broken."""\ndef f(:\n', encoding="utf-8")
    (bundle / "tools" / "typed.pym").write_text('"""Typed."""\nx: int = "no"\n{"ok": x}\n', encoding="utf-8")
    d = make_suite(tmp_path, [json.dumps(point("a", {"name": "pwd"}))], bundle=str(bundle))
    problems = validate_suite(d)
    assert [p.split(":")[0] for p in problems] == [str(bundle / "tools" / "broken.pym"), str(bundle / "tools" / "typed.pym")]
    (bundle / "tools" / "broken.pym").unlink()
    (bundle / "tools" / "typed.pym").unlink()
    text = (bundle / "bundle.yaml").read_text(encoding="utf-8")
    (bundle / "bundle.yaml").write_text(text.replace("max_steps: 8", "max_steps: 0").replace(
        "max_concurrency: 1", "max_concurrency: -1"), encoding="utf-8")
    problems = validate_suite(d)
    assert len(problems) == 2 and all(p.startswith(f"{bundle / 'bundle.yaml'}: kernel.max_") for p in problems)
    (bundle / "bundle.yaml").write_text(text.replace("limits: default", "limits: bogus"), encoding="utf-8")
    (problem,) = validate_suite(d)  # the limits are checked once the schema holds
    assert problem.startswith(f"{bundle / 'bundle.yaml'}: limits")


def test_cli_validate_exit_codes(tmp_path: Path) -> None:
    good = make_suite(tmp_path, [json.dumps(point("a", {"name": "cat", "arguments": {"file_name": "a.txt"}}))])
    res = CliRunner().invoke(app, ["validate", str(good)])
    assert res.exit_code == 0, res.output
    assert "1 scoring points from 1 conversations" in res.output and "tools used: cat" in res.output
    (good / "cases.jsonl").write_text(json.dumps(point("a", {"name": "cat", "arguments": {}})) + "\n")
    res = CliRunner().invoke(app, ["validate", str(good)])
    assert res.exit_code == 1
    assert f"{good / 'cases.jsonl'}:1: expected.arguments: missing required 'file_name' of 'cat'" in res.output


# -- models ------------------------------------------------------------------------------------------


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    case = NextCallCase(
        id="r1", messages=[ChatMessage(role="user", content="héllo \"q\""),
                           ChatMessage(role="assistant", tool_calls=[CallSpec(name="cd", arguments={"folder": "docs"})]),
                           ChatMessage(role="user", content="now?")],
        expected=CallSpec(name="pwd"), initial_fs=TREE, cwd="",  # type: ignore[arg-type]
    )
    ep = EpisodeCase(id="e1", turns=[[ChatMessage(role="user", content="x")]],
                     ground_truth=[[CallSpec(name="ls", arguments={"a": True})]], initial_fs=TREE)  # type: ignore[arg-type]
    write_suite(tmp_path / "n", SuiteSpec(name="n", version="2", kind="next_call", bundle="shellper"), [case])
    write_suite(tmp_path / "e", SuiteSpec(name="e", version="2", kind="episode", bundle="shellper"), [ep])
    loaded = load_suite(tmp_path / "n").cases[0]
    assert loaded == case
    assert load_suite(tmp_path / "e").cases[0] == ep
    line = (tmp_path / "n" / "cases.jsonl").read_text(encoding="utf-8")
    assert line == dump_case(case) + "\n" and "héllo" in line
    assert json.loads(line)["expected"] == {"name": "pwd", "arguments": {}}  # arguments always written
    history = loaded.history()  # type: ignore[union-attr]
    assert [m.role for m in history] == ["user", "assistant", "user"]
    assert history[1].tool_calls[0].id == "r1-h1" and history[1].tool_calls[0].arguments == {"folder": "docs"}


# -- the project's own suites -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["shellper", "fs-episodes", "smoke"])
def test_authored_suites_validate_clean(name: str) -> None:
    assert validate_suite(SUITES / name) == []
    assert validate_suite(SUITES / name, tools=openai_tools()) == []


def test_shellper_suite_counts_and_coverage() -> None:
    suite = load_suite(SUITES / "shellper")
    points = suite.next_call_cases()
    assert suite.kind == "next_call" and len(points) == len(suite.cases)
    assert len({c.conversation for c in points}) >= 40
    assert len(points) >= 200
    assert {c.expected.name for c in points} == set(FS_TOOL_NAMES)
    assert all(c.state_check and c.cwd == "" for c in points)
    # the argument kinds the brief asks for are all exercised
    exp = [c.expected for c in points]
    assert any(e.name == "tail" and isinstance(e.arguments.get("lines"), int) for e in exp)
    assert any(e.name == "ls" and e.arguments.get("a") is True for e in exp)
    assert {e.arguments.get("mode") for e in exp if e.name == "wc"} >= {"l", "w", "c"}
    assert any(e.name == "find" and "name" in e.arguments for e in exp)
    assert any(e.name == "find" and "name" not in e.arguments for e in exp)
    assert any(e.name == "echo" and "file_name" in e.arguments for e in exp)
    assert any(e.name == "echo" and "file_name" not in e.arguments for e in exp)
    strings = [v for e in exp for v in e.arguments.values() if isinstance(v, str)]
    assert any(" " in s for s in strings) and any('"' in s for s in strings)
    assert any(not s.isascii() for s in strings)


def test_episode_suite_counts() -> None:
    suite = load_suite(SUITES / "fs-episodes")
    episodes = suite.episode_cases()
    assert suite.kind == "episode" and len(episodes) >= 20
    assert all(2 <= len(e.turns) <= 4 and len(e.ground_truth) == len(e.turns) for e in episodes)
    assert all(all(turn) for e in episodes for turn in e.ground_truth)


def test_smoke_is_a_subset_of_shellper() -> None:
    smoke = load_suite(SUITES / "smoke").next_call_cases()
    full = {c.id: c for c in load_suite(SUITES / "shellper").next_call_cases()}
    assert 5 <= len(smoke) <= 10
    assert all(full[c.id] == c for c in smoke)


def test_shellpers_written_token_bound_is_the_one_its_gold_derives() -> None:
    """suite.yaml holds shellper's bound so a one-family run needs no other family's tokenizer; it must
    stay what the harness derives from every family and strategy of the suite (the bound runs compare on)."""
    from harness.bundles import load_agent
    from harness.eval.run.token_bound import derive, longest_gold

    suite = load_suite(SUITES / "shellper")
    longest = longest_gold(suite, load_agent(REPO / "bundles" / "shellper"))
    assert longest is not None and not longest.estimated
    assert suite.spec.max_tokens == derive(longest) == 80


def test_generated_files_are_up_to_date() -> None:
    res = subprocess.run([sys.executable, str(SUITES / "_make" / "make_suites.py"), "--check"],
                         capture_output=True, text=True, cwd=REPO, check=False)
    assert res.returncode == 0, res.stdout + res.stderr


# (what breaks the bundle of `harness init`, the one problem it gives)
BROKEN_OWN_BUNDLE = [
    (("bundle.yaml", "  family:", "  famly:"), "bundle.yaml: model.famly: unknown key: did you mean 'family'?"),
    (("tools/convert_units.pym", "converted = value", "converted = = value"), "convert_units.pym line"),
]


@pytest.mark.parametrize(("damage", "problem"), BROKEN_OWN_BUNDLE)
def test_a_broken_bundle_of_own_tools_is_one_problem(tmp_path: Path, damage: tuple[str, str, str], problem: str) -> None:
    from harness.cli.commands.init import scaffold

    scaffold(tmp_path / "mine", "mine")
    path, old, new = damage
    file = tmp_path / "mine" / path
    assert old in file.read_text()
    file.write_text(file.read_text().replace(old, new, 1))
    problems = validate_suite(tmp_path / "mine" / "suite")
    assert len(problems) == 1 and problem in problems[0], problems  # no 'unknown tool' per call of its tools


def test_a_python_bundle_that_does_not_load_is_one_problem_not_one_per_call(tmp_path: Path) -> None:
    (tmp_path / "bundle.yaml").write_text("name: b\nmodel: {family: qwen, id: m}\n"
                                          "python: {classes: {Box: no_such_module:Box}}\n")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "suite.yaml").write_text('name: s\nversion: "1"\nkind: episode\nbundle: ..\n')
    case = {"id": "one", "turns": [[{"role": "user", "content": "go"}]], "involved_classes": ["Box"],
            "ground_truth": [[{"name": "put", "arguments": {"item": "a"}}]]}
    (suite / "cases.jsonl").write_text(json.dumps(case) + "\n")
    problems = validate_suite(suite)
    assert len(problems) == 1 and "python.classes" in problems[0] and "no_such_module" in problems[0], problems
