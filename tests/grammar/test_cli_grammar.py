"""``harness grammar show|check``: the interface users and CI rely on (exit codes, last-line JSON)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.main import app
from harness.grammar.families import FAMILIES
from harness.vocabulary import HARNESS_STRATEGIES

TOOLS = Path(__file__).resolve().parents[1] / "data" / "shellper_tools.json"
COMBOS = [(f, s) for f in FAMILIES for s in HARNESS_STRATEGIES]

VALID = [
    {"calls": [{"name": "pwd", "arguments": {}}]},
    {"calls": [{"name": "ls", "arguments": {"a": True}}]},
    {"calls": [{"name": "cd", "arguments": {"folder": ".."}}]},
    {"calls": [{"name": "echo", "arguments": {"content": 'a } b < c " d\n e ü 日本', "file_name": "x.txt"}}]},
    {"calls": [{"name": "tail", "arguments": {"file_name": "log.txt", "lines": 15}}]},
    {"calls": [{"name": "wc", "arguments": {"file_name": "log.txt", "mode": "w"}}]},
    {"calls": [{"name": "grep", "arguments": {"file_name": "a.txt", "pattern": "ERROR \\d+"}}]},
    {"calls": [{"name": "mv", "arguments": {"source": "a", "destination": "b/"}}]},
]
INVALID = [
    {"calls": [{"name": "format_disk", "arguments": {}}]},  # unknown tool
    {"calls": [{"name": "cat", "arguments": {"file_name": "a", "force": True}}]},  # unknown argument
    {"calls": [{"name": "diff", "arguments": {"file_name1": "a"}}]},  # missing required argument
    {"calls": [{"name": "cd", "arguments": {"folder": 5}}]},  # string given a number
    {"calls": [{"name": "tail", "arguments": {"file_name": "a", "lines": "ten"}}]},  # malformed integer
    {"calls": [{"name": "wc", "arguments": {"file_name": "a", "mode": "x"}}]},  # not in the enum
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def run(*args: str):
    return CliRunner().invoke(app, ["grammar", *args])


def summary(result) -> dict:
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("family", "strategy"), COMBOS)
def test_check_accepts_valid_calls(tmp_path, family, strategy):
    calls = write_jsonl(tmp_path / "calls.jsonl", VALID)
    result = run(
        "check", "--family", family, "--strategy", strategy, "--tools", str(TOOLS), "--calls", str(calls)
    )
    assert result.exit_code == 0, result.stderr
    s = summary(result)
    assert s["accepted"] == s["total"] == len(VALID) and s["rejected"] == 0
    for key in (
        "compile_ms_cold",
        "compile_ms_cached",
        "mask_us_p50",
        "mask_us_p99",
        "mask_us_max",
        "tokens",
    ):
        assert isinstance(s[key], (int, float))
    assert s["tokens"] > 0 and s["masks"] == s["tokens"] + len(VALID)


@pytest.mark.parametrize(("family", "strategy"), COMBOS)
def test_check_rejects_each_invalid_call(tmp_path, family, strategy):
    calls = write_jsonl(tmp_path / "calls.jsonl", [VALID[2], *INVALID])
    result = run(
        "check", "--family", family, "--strategy", strategy, "--tools", str(TOOLS), "--calls", str(calls)
    )
    assert result.exit_code == 1
    s = summary(result)
    assert (s["accepted"], s["rejected"], s["total"]) == (1, len(INVALID), 1 + len(INVALID))
    for line in range(2, 2 + len(INVALID)):  # one reason per rejected line, on stderr
        assert f"calls.jsonl:{line}: rejected" in result.stderr


def bfcl_style(tool: dict) -> dict:
    """An OpenAI tool written the way BFCL's function docs are: the bare function, ``"type": "dict"``
    parameters, a ``response`` schema."""
    fn = json.loads(json.dumps(tool["function"]))
    fn["parameters"]["type"] = "dict"
    fn["response"] = {"type": "dict", "properties": {"result": {"type": "string"}}}
    return fn


@pytest.mark.parametrize(("family", "strategy"), COMBOS)
def test_check_reads_bfcl_function_docs(tmp_path, family, strategy):
    """A tools file in BFCL's own schema compiles under every strategy and constrains as the
    OpenAI-style file does (xgrammar knows no type "dict")."""
    tools = tmp_path / "bfcl_tools.json"
    tools.write_text(json.dumps([bfcl_style(t) for t in json.loads(TOOLS.read_text())]))
    calls = write_jsonl(tmp_path / "calls.jsonl", [*VALID, *INVALID])
    result = run(
        "check", "--family", family, "--strategy", strategy, "--tools", str(tools), "--calls", str(calls)
    )
    s = summary(result)
    assert (result.exit_code, s["accepted"], s["rejected"]) == (1, len(VALID), len(INVALID)), result.stderr


def test_two_calls_need_parallel(tmp_path):
    two = {"calls": [{"name": "pwd", "arguments": {}}, {"name": "ls", "arguments": {}}]}
    calls = write_jsonl(tmp_path / "calls.jsonl", [two])
    args = ["check", "--family", "qwen", "--strategy", "ebnf", "--tools", str(TOOLS), "--calls", str(calls)]
    assert run(*args).exit_code == 1
    assert run(*args, "--parallel").exit_code == 0


def test_bad_json_line_names_file_and_line(tmp_path):
    calls = tmp_path / "calls.jsonl"
    calls.write_text(json.dumps(VALID[0]) + "\n\n{not json\n")
    result = run(
        "check", "--family", "qwen", "--strategy", "ebnf", "--tools", str(TOOLS), "--calls", str(calls)
    )
    assert result.exit_code == 2
    assert f"{calls}:3" in result.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"--tools": "missing.json"}, "missing.json"),
        ({"--calls": "missing.jsonl"}, "missing.jsonl"),
        ({"--family": "llama"}, "Invalid value for '--family': 'llama' is not one of 'function_gemma', 'qwen'"),
        ({"--strategy": "none"}, "Invalid value for '--strategy': 'none' is not one of"),
        ({"--strategy": "regex"}, "Invalid value for '--strategy': 'regex' is not one of"),
    ],
)
def test_bad_input_exits_2(tmp_path, change, message):
    calls = write_jsonl(tmp_path / "calls.jsonl", VALID[:1])
    opts = {"--family": "qwen", "--strategy": "ebnf", "--tools": str(TOOLS), "--calls": str(calls)}
    for key, value in change.items():
        opts[key] = str(tmp_path / value) if value.startswith("missing") else value
    result = run("check", *[x for kv in opts.items() for x in kv])
    assert result.exit_code == 2
    assert result.stderr.startswith("harness grammar check: error: ")
    assert message in result.stderr


def test_calls_line_shape_is_checked(tmp_path):
    calls = write_jsonl(tmp_path / "calls.jsonl", [{"call": {"name": "pwd"}}])
    result = run(
        "check", "--family", "qwen", "--strategy", "ebnf", "--tools", str(TOOLS), "--calls", str(calls)
    )
    assert result.exit_code == 2 and ":1:" in result.stderr


@pytest.mark.parametrize("strategy", ["ebnf", "structural_tag", "json_schema", "none"])
def test_show_prints_artifact_and_payload(strategy):
    result = run("show", "--family", "function_gemma", "--strategy", strategy, "--tools", str(TOOLS))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "# request payload" in out
    payload = json.loads(out.split("# request payload", 1)[1])
    assert "<start_function_response>" in payload["stop"]
    if strategy != "none":
        so = payload["extra_body"]["structured_outputs"]
        field = {"ebnf": "grammar", "structural_tag": "structural_tag", "json_schema": "json"}[strategy]
        assert field in so
        # the artifact itself is printed, with the tools in it (names whole, or as the EBNF's name trie)
        assert ("cp" in out and "rmdir" in out) or ("tool-call ::=" in out and "dir_name" in out)


def test_importing_the_grammar_package_is_light():
    code = (
        "import sys, harness.grammar, harness.cli.main; "
        "print(sorted(m for m in ('xgrammar', 'torch', 'transformers', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


EXPECTING = [
    ({"calls": [{"name": "pwd", "arguments": {}}]}, True),
    ({"calls": [{"name": "wc", "arguments": {"file_name": "a", "mode": "x"}}], "expect": "rejected"}, True),
    ({"text": '<tool_call>\n{"name": "pwd", "arguments": {}}\n</tool_call>'}, True),
    ({"text": '<tool_call>\n{"name": "pwd", "arguments": {"x": 1}}\n</tool_call>', "expect": "rejected"}, True),
    ({"calls": [{"name": "pwd", "arguments": {}}], "expect": "rejected"}, False),
    ({"text": "no call here"}, False),
]


@pytest.mark.parametrize(("line", "as_expected"), EXPECTING)
def test_check_honours_expect_and_text_lines(tmp_path, line, as_expected):
    """The lines harness fuzz writes: raw texts, and calls the grammar must refuse."""
    calls = write_jsonl(tmp_path / "calls.jsonl", [line])
    result = run("check", "--family", "qwen", "--strategy", "ebnf", "--tools", str(TOOLS), "--calls", str(calls))
    assert result.exit_code == (0 if as_expected else 1), result.output
    assert summary(result)["unexpected"] == (0 if as_expected else 1)


def test_check_refuses_a_bad_expect(tmp_path):
    calls = write_jsonl(tmp_path / "calls.jsonl", [{"calls": [], "expect": "maybe"}])
    result = run("check", "--family", "qwen", "--strategy", "ebnf", "--tools", str(TOOLS), "--calls", str(calls))
    assert result.exit_code == 2 and "calls.jsonl:1" in result.output


LET_THROUGH = [  # (family, vLLM's own strategy, the INVALID lines vLLM's constraint accepts)
    ("qwen", "required", list(range(1, len(INVALID)))),  # the hermes tag leaves non-strict arguments free
    ("qwen", "strict", []),  # strict: xgrammar pins the arguments (closed objects, types, enums)
    ("function_gemma", "required", []),  # the JSON-array fallback pins them too
    ("function_gemma", "strict", list(range(len(INVALID)))),  # no structural tag: nothing is built
]


@pytest.mark.parametrize(("family", "strategy", "passing"), LET_THROUGH)
def test_what_vllms_own_constraint_lets_through(tmp_path, family, strategy, passing):
    rows = [*VALID, *({**call, "expect": "accepted" if i in passing else "rejected"} for i, call in enumerate(INVALID))]
    calls = write_jsonl(tmp_path / "calls.jsonl", rows)
    result = run("check", "--family", family, "--strategy", strategy, "--tools", str(TOOLS), "--calls", str(calls))
    assert result.exit_code == 0, result.stderr
    s = summary(result)
    assert (s["accepted"], s["unexpected"]) == (len(VALID) + len(passing), 0)


@pytest.mark.parametrize(("family", "strategy", "built"), [
    ("qwen", "strict", "structural_tag:hermes"), ("qwen", "required", "structural_tag:hermes"),
    ("function_gemma", "required", "json_array"), ("function_gemma", "strict", "none"),
])
def test_show_prints_what_vllm_builds_and_what_is_missing(monkeypatch, family, strategy, built):
    # vLLM made unimportable: the harness's copy of its rules is shown, saying so
    monkeypatch.setitem(sys.modules, "vllm.entrypoints.openai.chat_completion.protocol", None)
    result = run("show", "--family", family, "--strategy", strategy, "--tools", str(TOOLS))
    assert result.exit_code == 0, result.stderr
    assert "vLLM is not importable here" in result.stdout
    assert f"# {family} / {strategy}: vLLM builds {built}" in result.stdout
    assert ('"type": "structural_tag"' in result.stdout) == built.startswith("structural_tag")


@pytest.mark.parametrize(("family", "strategy"), COMBOS)
def test_check_names_a_refused_tool_and_walks_the_rest(tmp_path, family, strategy):
    """One tool no strategy can constrain (uniqueItems) among the SHELLper tools: it is named, its
    lines count as constraint:refused, the other tools' lines are walked."""
    tag = {"type": "function", "function": {"name": "tag", "description": "Tag.", "parameters": {
        "type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}}}}
    tools = [*json.loads(TOOLS.read_text(encoding="utf-8")), tag]
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps(tools), encoding="utf-8")
    calls = write_jsonl(tmp_path / "calls.jsonl", [*VALID[:2], {"calls": [{"name": "tag", "arguments": {"tags": ["a"]}}]}])
    result = run("check", "--family", family, "--strategy", strategy, "--tools", str(tools_file), "--calls", str(calls))
    assert result.exit_code == 0, result.stderr
    assert "refused: tool 'tag': parameters.tags: uniqueItems" in result.stderr
    s = summary(result)
    assert (s["accepted"], s["constraint:refused"], s["refused_tools"], s["total"]) == (2, 1, ["tag"], 3)
