"""Importers on small hand-made files in the upstream formats (tests/data/*_sample*)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.bfcl import BFCL_ADDED_TOOLS_PROMPT, import_bfcl, parse_python_call
from harness.cli.main import app
from harness.eval import EMPTY_WORKSPACE, ImportFailure, import_shellper, load_suite, validate_suite

DATA = Path(__file__).resolve().parents[1] / "data"
REPO = Path(__file__).resolve().parents[2]
SHELLPER = DATA / "shellper_sample.jsonl"
BFCL_Q = DATA / "bfcl_fs_sample.json"
BFCL_A = DATA / "bfcl_fs_sample_answers.json"
FS: dict[str, Any] = {"bundle": "bfcl", "file_system_only": True}
"""The file-system entries alone, for the .pym tools of bundles/bfcl."""


def _points(out: Path) -> dict[str, dict]:
    return {c.id: c.model_dump(mode="json") for c in load_suite(out).cases}


# -- SHELLper ---------------------------------------------------------------------------------------


def test_shellper_expands_every_prefix_and_merges_duplicates(tmp_path: Path) -> None:
    report = import_shellper(SHELLPER, tmp_path / "sp")
    suite = load_suite(tmp_path / "sp")
    assert suite.kind == "next_call" and suite.spec.bundle == "shellper"
    # line 1: 2 calls + answer = 3 points; line 2 duplicates line 1's first; line 3: 1 call + answer;
    # line 4: same history as line 1's first point with another answer -> an alternative, not a point
    assert (report.records, report.cases, report.duplicates, report.conflicts) == (4, 5, 1, 1)
    by_expected = {(c.expected.name, json.dumps(c.expected.arguments)): c for c in suite.next_call_cases()}
    first = by_expected[("ls", "{}")]
    assert [m.content for m in first.messages] == ["what files do I have"]
    assert [a.model_dump() for a in first.expected_alternatives] == [{"name": "ls", "arguments": {"a": True}}]
    cd = by_expected[("cd", json.dumps({"folder": "music"}))]
    assert [m.role for m in cd.messages] == ["user", "assistant", "user"]
    cat = by_expected[("cat", json.dumps({"file_name": "lyrics.txt"}))]
    assert [c.name for c in cat.history_calls()] == ["ls", "cd"]
    tail = by_expected[("tail", json.dumps({"file_name": "notes.txt", "lines": 3}))]
    assert tail.history_calls()[0].arguments == {"dir_name": "été"}  # arguments given as a JSON string
    assert isinstance(tail.expected.arguments["lines"], int)


def test_shellper_points_have_no_file_system_and_no_state_check(tmp_path: Path) -> None:
    import_shellper(SHELLPER, tmp_path / "sp")
    suite = load_suite(tmp_path / "sp")
    assert suite.spec.echo_mode == "append"  # SHELLper runs `echo "..." >> file` in bash
    for case in suite.next_call_cases():
        assert case.state_check is False
        assert case.initial_fs.to_nodes() == EMPTY_WORKSPACE
        assert case.conversation is not None


def test_shellper_output_validates_against_the_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the bare bundle name resolves to ./bundles/shellper
    import_shellper(SHELLPER, tmp_path / "sp")
    assert validate_suite(tmp_path / "sp") == []


def test_shellper_bad_line_is_reported_with_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    good = SHELLPER.read_text(encoding="utf-8").splitlines()[0]
    src.write_text(good + "\n{not json\n" + json.dumps({"question": "[]", "answer": "{}"}) + "\n", encoding="utf-8")
    with pytest.raises(ImportFailure) as info:
        import_shellper(src, tmp_path / "out")
    assert any(p.startswith(f"{src}:2: invalid JSON") for p in info.value.problems)
    assert any(p.startswith(f"{src}:3: question") for p in info.value.problems)
    assert not (tmp_path / "out").exists()
    report = import_shellper(src, tmp_path / "out", skip_invalid=True)
    assert report.cases == 3 and len(report.errors) == 2


def test_shellper_assistant_turn_with_two_calls_is_rejected(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "x"},
            {"role": "assistant", "content": "", "tool_calls": [{"name": "ls", "arguments": {}}] * 2},
            {"role": "user", "content": "y"}]
    src = tmp_path / "two.jsonl"
    src.write_text(json.dumps({"question": json.dumps(msgs), "answer": json.dumps({"name": "pwd", "parameters": {}})}))
    with pytest.raises(ImportFailure, match=r"two\.jsonl:1: question\[1\]: an assistant turn needs exactly one call"):
        import_shellper(src, tmp_path / "out")


# -- BFCL -------------------------------------------------------------------------------------------


def test_bfcl_imports_file_system_only_entries(tmp_path: Path) -> None:
    report = import_bfcl(BFCL_Q, BFCL_A, tmp_path / "bf", **FS)
    assert report.records == 4 and report.cases == 3
    assert report.skipped == {"involve classes other than GorillaFileSystem": 1}
    suite = load_suite(tmp_path / "bf")
    assert suite.kind == "episode" and suite.spec.bundle == "bfcl" and suite.spec.echo_mode == "overwrite"
    cases = {c.id: c for c in suite.episode_cases()}
    assert set(cases) == {"multi_turn_base_900", "multi_turn_miss_func_902", "multi_turn_miss_param_903"}
    base = cases["multi_turn_base_900"]
    assert [[c.model_dump() for c in turn] for turn in base.ground_truth] == [
        [{"name": "cd", "arguments": {"folder": "docs"}}, {"name": "sort", "arguments": {"file_name": "b.txt"}}],
        [{"name": "echo", "arguments": {"content": "it's done", "file_name": "b.txt"}},
         {"name": "diff", "arguments": {"file_name1": "a.txt", "file_name2": "b.txt"}}],
    ]
    assert base.initial_fs.root_name == "rosa" and base.initial_fs.directory("docs") is not None
    param = cases["multi_turn_miss_param_903"]
    assert [len(t) for t in param.ground_truth] == [1, 0, 2]  # a turn with no call is kept
    assert param.ground_truth[2][0].arguments == {"file_name": "log.txt", "lines": 2}
    assert param.excluded_tools == []  # BFCL offers every tool whatever excluded_function says
    missing = cases["multi_turn_miss_func_902"]
    assert missing.held_out_tools == {1: ["cp"]}  # offered from turn 1 on, whose message is BFCL's
    assert [m.content for m in missing.turns[1]] == [BFCL_ADDED_TOOLS_PROMPT]


def bfcl_entries(**changes: Any) -> list[dict[str, Any]]:
    """The sample entries with fields of the miss_func entry replaced."""
    rows = [json.loads(line) for line in BFCL_Q.read_text().splitlines()]
    rows[2].update(changes)
    return rows


# (entries, reason the import gives)
BFCL_REFUSALS = [
    (bfcl_entries(question=[[{"role": "user", "content": "copy it"}], [{"role": "user", "content": "now?"}]]),
     "multi_turn_miss_func_902: turn 1 adds ['cp'] but holds a user message (BFCL requires none)"),
    (bfcl_entries(missed_function={"5": ["cp"]}), "multi_turn_miss_func_902: missed_function: no turn '5'"),
    (bfcl_entries(missed_function={"1": ["teleport"]}), "held_out_tools.1[0]: unknown tool 'teleport'"),
]


@pytest.mark.parametrize(("rows", "reason"), BFCL_REFUSALS)
def test_bfcl_refuses_with_the_true_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: list, reason: str) -> None:
    monkeypatch.chdir(REPO)
    entries = tmp_path / "entries.json"
    entries.write_text("\n".join(json.dumps(r) for r in rows))
    try:
        import_bfcl(entries, BFCL_A, tmp_path / "out", **FS)
    except ImportFailure as exc:
        problems = exc.problems
    else:
        problems = validate_suite(tmp_path / "out")
    assert any(reason in p for p in problems), problems


def test_bfcl_long_context_needs_bfcls_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.bfcl import BfclDataError
    from harness.bfcl import multi_import as importers

    def missing() -> None:
        raise BfclDataError("long-context entries need BFCL's expansion data from its package: pip install ...")

    monkeypatch.setattr(importers, "long_context_data", missing)
    rows = bfcl_entries(id="multi_turn_long_context_902")
    entries, answers = tmp_path / "entries.json", tmp_path / "answers.json"
    entries.write_text("\n".join(json.dumps(r) for r in rows))
    answers.write_text(BFCL_A.read_text().replace("multi_turn_miss_func_902", "multi_turn_long_context_902"))
    with pytest.raises(ImportFailure) as info:
        import_bfcl(entries, answers, tmp_path / "out", **FS)
    assert info.value.problems == [
        f"{entries}:3: multi_turn_long_context_902: long-context entries need BFCL's expansion data from its "
        "package: pip install ..."
    ]


# (source, answers, what the error says)
BFCL_SOURCE_ERRORS = [
    ("no_such_category", None, "no_such_category: no such file, and not a BFCL category (base, miss_func"),
    (str(BFCL_Q), None, "no --answers given, and no " + str(BFCL_Q.parent / "possible_answer" / BFCL_Q.name)),
]


@pytest.mark.parametrize(("source", "answers", "message"), BFCL_SOURCE_ERRORS)
def test_bfcl_source_errors_say_what_is_missing(tmp_path: Path, source: str, answers: Any, message: str) -> None:
    with pytest.raises(ImportFailure) as info:
        import_bfcl(source, answers, tmp_path / "out", **FS)
    assert message in info.value.problems[0]


def test_bfcl_output_validates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    import_bfcl(BFCL_Q, BFCL_A, tmp_path / "bf", **FS)
    assert validate_suite(tmp_path / "bf") == []


def test_bfcl_non_literal_argument_names_id_and_turn(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    rows = [json.loads(line) for line in BFCL_A.read_text().splitlines()]
    rows[0]["ground_truth"][1][1] = "diff(file_name1=open('/etc/passwd').read(), file_name2='b.txt')"
    answers.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(ImportFailure) as info:
        import_bfcl(BFCL_Q, answers, tmp_path / "out", **FS)
    (problem,) = info.value.problems
    assert "multi_turn_base_900: turn 1: call 1" in problem and "not a literal" in problem
    report = import_bfcl(BFCL_Q, answers, tmp_path / "out", skip_invalid=True, **FS)
    assert report.cases == 2 and len(report.errors) == 1


def test_bfcl_missing_answer_is_an_error(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(BFCL_A.read_text().splitlines()[3] + "\n")
    with pytest.raises(ImportFailure, match="multi_turn_base_900: no ground truth"):
        import_bfcl(BFCL_Q, answers, tmp_path / "out", **FS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cd(folder='document')", {"name": "cd", "arguments": {"folder": "document"}}),
        ("sort('final_report.pdf')", {"name": "sort", "arguments": {"file_name": "final_report.pdf"}}),
        ("tail(file_name='log.txt',lines=20)", {"name": "tail", "arguments": {"file_name": "log.txt", "lines": 20}}),
        ("ls(a=True)", {"name": "ls", "arguments": {"a": True}}),
        ("pwd()", {"name": "pwd", "arguments": {}}),
        ("echo(content='a\\nb \"q\" é', file_name='x')",
         {"name": "echo", "arguments": {"content": 'a\nb "q" é', "file_name": "x"}}),
        ("post_tweet(content='x', tags=('#a', '#b'))", {"name": "post_tweet", "arguments": {"content": "x", "tags": ["#a", "#b"]}}),
    ],
)
def test_parse_python_call(text: str, expected: dict) -> None:
    assert parse_python_call(text).model_dump() == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("cd(folder=x)", "not a literal"),
        ("__import__('os').system('rm -rf /')", "call of a plain name"),
        ("cd(**{'folder': 'a'})", "**kwargs"),
        ("cd(*['a'])", "*args"),
        ("cd(folder='a'); rm(file_name='b')", "not Python syntax"),
        ("cd('a', 'b')", "positional argument 2"),
        ("cd(folder='a', folder='b')", "given twice"),
        ("echo(content={1, 2})", "not a JSON value"),
        ("echo(content=b'x')", "not a JSON value"),
        ("lambda: 1", "call of a plain name"),
    ],
)
def test_parse_python_call_rejects(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason.replace("*", r"\*")):
        parse_python_call(text)


# -- CLI --------------------------------------------------------------------------------------------


def test_cli_import_then_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    runner = CliRunner()
    res = runner.invoke(app, ["import", "shellper", str(SHELLPER), "--out", str(tmp_path / "sp")])
    assert res.exit_code == 0, res.output
    assert "wrote 5 cases" in res.output
    res = runner.invoke(app, ["import", "bfcl", str(BFCL_Q), "--answers", str(BFCL_A), "--out", str(tmp_path / "bf"),
                              "--file-system-only", "--bundle", "bfcl"])
    assert res.exit_code == 0, res.output
    assert "skipped 1: involve classes other than GorillaFileSystem" in res.output
    res = runner.invoke(app, ["validate", str(tmp_path / "bf")])
    assert res.exit_code == 0 and "3 episodes" in res.output
    res = runner.invoke(app, ["import", "bfcl", str(BFCL_Q), "--answers", str(BFCL_A), "--out", str(tmp_path / "all")])
    assert res.exit_code == 0, res.output  # every entry, on BFCL's classes (the bundle written beside)
    assert "wrote 4 cases" in res.output and "1 with classes GorillaFileSystem+TwitterAPI" in res.output


def test_cli_import_of_bad_input_exits_2(tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text("{nope\n")
    res = CliRunner().invoke(app, ["import", "shellper", str(src), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert res.output.startswith("harness import shellper: error: ")
    assert f"{src}:1: invalid JSON" in res.output


# -- bad inputs the importers must name, and what they must never overwrite (issue 30) -------------------


def _bfcl_entry(tmp_path: Path, values: Any) -> tuple[Path, Path]:
    entries, answers = tmp_path / "simple_python.json", tmp_path / "answers.json"
    function = {"name": "area", "description": "Area.", "parameters": {
        "type": "dict", "properties": {"r": {"type": "integer", "description": "radius"}}, "required": ["r"]}}
    entries.write_text(json.dumps({"id": "simple_python_0", "question": [[{"role": "user", "content": "r=2"}]],
                                   "function": [function]}) + "\n")
    answers.write_text(json.dumps({"id": "simple_python_0", "ground_truth": [{"area": {"r": values}}]}) + "\n")
    return entries, answers


@pytest.mark.parametrize(("values", "named"), [(2, "got int"), ("2", "got str"), ({"a": 1}, "got dict"), (None, "got NoneType")])
def test_bfcl_ground_truth_values_that_are_not_lists_are_named(tmp_path: Path, values: Any, named: str) -> None:
    entries, answers = _bfcl_entry(tmp_path, values)
    res = CliRunner().invoke(app, ["import", "bfcl", str(entries), "--answers", str(answers), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert "ground_truth[0].area.r: expected a list of acceptable values" in res.output and named in res.output


def _existing(out: Path, tmp_path: Path) -> None:
    import_shellper(SHELLPER, out)


def _linked(out: Path, tmp_path: Path) -> None:
    out.mkdir()
    (tmp_path / "elsewhere.yaml").write_text("mine\n")
    (out / "suite.yaml").symlink_to(tmp_path / "elsewhere.yaml")


@pytest.mark.parametrize("make", [_existing, _linked])
def test_an_import_never_overwrites_a_suite_nor_writes_through_a_link(tmp_path: Path, make: Any) -> None:
    out = tmp_path / "suite"
    make(out, tmp_path)
    before = {p: (p.read_bytes(), p.is_symlink()) for p in tmp_path.rglob("*") if p.is_file()}
    res = CliRunner().invoke(app, ["import", "shellper", str(SHELLPER), "--out", str(out)])
    assert res.exit_code == 2 and "already holds suite.yaml" in res.output, res.output
    assert {p: (p.read_bytes(), p.is_symlink()) for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_very_long_conversation_is_a_named_bad_line_and_the_import_stays_fast(tmp_path: Path) -> None:
    import time

    from harness.eval.data.shellper_import import MAX_CONVERSATION_MESSAGES

    turns = []
    for i in range(5_000):  # 10,000 messages: once hours and ~40 GB
        turns += [{"role": "user", "content": f"step {i}"},
                  {"role": "assistant", "content": "", "tool_calls": [{"name": "ls", "arguments": {}}]}]
    src = tmp_path / "long.jsonl"
    line = json.dumps({"question": json.dumps([*turns, {"role": "user", "content": "end"}]),
                       "answer": json.dumps({"name": "pwd", "parameters": {}})})
    src.write_text(SHELLPER.read_text(encoding="utf-8").splitlines()[0] + "\n" + line + "\n")
    started = time.monotonic()
    with pytest.raises(ImportFailure) as info:
        import_shellper(src, tmp_path / "out")
    assert time.monotonic() - started < 10
    assert info.value.problems == [f"{src}:2: question: 10001 messages, over the bound of {MAX_CONVERSATION_MESSAGES} "
                                   "(MAX_CONVERSATION_MESSAGES): each call becomes a point holding its whole history"]
    assert import_shellper(src, tmp_path / "out", skip_invalid=True).cases > 0
