"""Every CLI command on malformed inputs: one clean error naming the input, a non-zero exit, never a
traceback (issue 14's CI test). A table of hostile inputs per entry point; each row builds its input
in a temporary directory and gives the text the error must contain (the file, field or option)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from hostile import (
    BAD_UTF8,
    SHELLPER_DATA,
    SUITES,
    TOOLS_JSON,
    Builder,
    as_directory,
    copy_run,
    copy_suite,
    deep_json,
    deep_object,
    middle_line_broken,
    replace_in,
    write,
)
from typer.testing import CliRunner

from harness.cli.main import app

runner = CliRunner()


def check_clean_error(args: list[str], needle: str, code: int = 2) -> None:
    """The command fails with exit ``code`` (2: bad input; 1: a verdict, as validate's) and a message
    that names ``needle``, and no traceback."""
    result = runner.invoke(app, args)
    output = result.stdout + result.stderr
    shown = " ".join(a if len(a) < 80 else a[:60] + "..." for a in args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{shown}: uncaught {type(result.exception).__name__}: {str(result.exception)[:300]}"
    )
    assert "Traceback" not in output, output[-2000:]
    assert result.exit_code == code, f"{shown}: exit {result.exit_code}:\n{output[-2000:]}"
    assert needle in output, f"{shown}: {needle!r} not in:\n{output[-2000:]}"


# -- broken suites and bundles (for `validate` and `run`) --------------------------------------------


def _suite(tmp: Path) -> Path:
    return copy_suite(tmp)


def suite_missing(tmp: Path) -> tuple[Path, str]:
    return tmp / "nope", "nope"


def suite_is_a_file(tmp: Path) -> tuple[Path, str]:
    return write(tmp / "file.txt", "x"), "file.txt"


def suite_yaml_directory(tmp: Path) -> tuple[Path, str]:
    suite = _suite(tmp)
    as_directory(suite / "suite.yaml")
    return suite, "suite.yaml"


def cases_directory(tmp: Path) -> tuple[Path, str]:
    suite = _suite(tmp)
    as_directory(suite / "cases.jsonl")
    return suite, "cases.jsonl"


def bundle_missing(tmp: Path) -> tuple[Path, str]:
    suite = _suite(tmp)
    replace_in(suite / "suite.yaml", "../bundle", "../no-bundle")
    return suite, "no-bundle"


def _written(name: str, content: str | bytes, needle: str):
    """A builder of a suite whose file ``name`` holds ``content``."""

    def build(tmp: Path) -> tuple[Path, str]:
        suite = _suite(tmp)
        write(suite / name, content)
        return suite, needle

    return build


SUITE_FILES = {
    "suite_yaml_not_utf8": _written("suite.yaml", BAD_UTF8, "suite.yaml"),
    "suite_yaml_bad": _written("suite.yaml", "name: [unclosed\n", "suite.yaml"),
    "suite_yaml_deep": _written("suite.yaml", "name: " + "[" * 5000 + "]" * 5000 + "\n", "suite.yaml"),
    "cases_not_utf8": _written("cases.jsonl", b'{"id": "\xff"}\n', "cases.jsonl"),
    "cases_deep": _written("cases.jsonl", deep_json() + "\n", "cases.jsonl:1"),
    "cases_deep_object": _written("cases.jsonl", deep_object(3000) + "\n", "cases.jsonl:1"),
}


def _bundle_yaml(tmp: Path, content: str | bytes) -> tuple[Path, str]:
    suite = _suite(tmp)
    write(tmp / "bundle" / "bundle.yaml", content)
    return suite, "bundle.yaml"


def _bundle_edit(tmp: Path, old: str, new: str, needle: str) -> tuple[Path, str]:
    suite = _suite(tmp)
    replace_in(tmp / "bundle" / "bundle.yaml", old, new)
    return suite, needle


def bundle_yaml_not_utf8(tmp: Path) -> tuple[Path, str]:
    return _bundle_yaml(tmp, BAD_UTF8)


def bundle_yaml_bad(tmp: Path) -> tuple[Path, str]:
    return _bundle_yaml(tmp, "name: [unclosed\n")


def bundle_yaml_empty(tmp: Path) -> tuple[Path, str]:
    return _bundle_yaml(tmp, "")


def bundle_yaml_directory(tmp: Path) -> tuple[Path, str]:
    suite = _suite(tmp)
    as_directory(tmp / "bundle" / "bundle.yaml")
    return suite, "bundle.yaml"


def _edited(old: str, new: str, needle: str):
    """A builder of a bundle whose bundle.yaml has ``old`` replaced by ``new``."""

    def build(tmp: Path) -> tuple[Path, str]:
        return _bundle_edit(tmp, old, new, needle)

    return build


BUNDLE_EDITS = {
    "bundle_limits_bogus": _edited("limits: default", "limits: bogus", "limits"),
    "bundle_limit_key_bogus": _edited("limits: default", "limits: {max_mmeory: 5}", "max_mmeory"),
    "bundle_max_concurrency_negative": _edited("max_concurrency: 1", "max_concurrency: -1", "kernel.max_concurrency"),
    "bundle_max_steps_zero": _edited("max_steps: 8", "max_steps: 0", "kernel.max_steps"),
    "bundle_unknown_field": _edited("tools_dir: tools", "tools_dir: tools\ntool_dir: x", "tool_dir"),
    "bundle_unknown_family": _edited("family: function_gemma", "family: gemma", "model.family"),
    "bundle_tools_dir_missing": _edited("tools_dir: tools", "tools_dir: nowhere", "nowhere"),
    "bundle_override_unknown_tool": _edited(
        "tools_dir: tools", "tools_dir: tools\ntools: [{name: nosuch, limits: strict}]", "nosuch"),
}


def bundle_tools_dir_file(tmp: Path) -> tuple[Path, str]:
    suite = _suite(tmp)
    write(tmp / "bundle" / "tools.txt", "x")
    replace_in(tmp / "bundle" / "bundle.yaml", "tools_dir: tools", "tools_dir: tools.txt")
    return suite, "tools.txt"


def pym_syntax_error(tmp: Path) -> tuple[Path, str]:
    suite = _suite(tmp)
    write(tmp / "bundle" / "tools" / "broken.pym", '"""Broken."""\ndef f(:\n')
    return suite, "broken.pym"


def pym_type_error(tmp: Path) -> tuple[Path, str]:
    suite = _suite(tmp)
    write(tmp / "bundle" / "tools" / "typed.pym", '"""Typed."""\nx: int = "not an int"\n{"ok": x}\n')
    return suite, "typed.pym"


def pym_not_utf8(tmp: Path) -> tuple[Path, str]:
    suite = _suite(tmp)
    write(tmp / "bundle" / "tools" / "latin.pym", b'"""Caf\xe9."""\n{"ok": 1}\n')
    return suite, "latin.pym"


def pym_directory(tmp: Path) -> tuple[Path, str]:
    suite = _suite(tmp)
    as_directory(tmp / "bundle" / "tools" / "dir.pym")
    return suite, "dir.pym"


BROKEN_SUITES = [
    pytest.param(f, id=f.__name__) for f in (
        suite_missing, suite_is_a_file, suite_yaml_directory, cases_directory,
        bundle_missing, bundle_yaml_not_utf8, bundle_yaml_bad, bundle_yaml_empty, bundle_yaml_directory,
        bundle_tools_dir_file, pym_syntax_error, pym_type_error, pym_not_utf8, pym_directory,
    )
] + [pytest.param(f, id=name) for name, f in (SUITE_FILES | BUNDLE_EDITS).items()]


@pytest.mark.parametrize("broken", BROKEN_SUITES)
def test_validate_reports_a_broken_suite_or_bundle(tmp_path: Path, broken) -> None:
    suite, needle = broken(tmp_path)
    check_clean_error(["validate", str(suite)], needle, code=1)


@pytest.mark.parametrize("broken", BROKEN_SUITES)
def test_run_refuses_a_broken_suite_or_bundle(tmp_path: Path, broken) -> None:
    suite, needle = broken(tmp_path)
    check_clean_error(["run", str(suite), "--engine", "oracle", "--limit", "1", "--out", str(tmp_path / "out")], needle)


# -- run options ----------------------------------------------------------------------------------------


def _run(tmp: Path, *extra: str) -> list[str]:
    return ["run", str(copy_suite(tmp)), "--engine", "oracle", "--limit", "1", *extra]


RUN_OPTIONS: list[tuple[str, Builder, str]] = [
    ("sample-timeout negative", lambda t: _run(t, "--sample-timeout", "-1"), "--sample-timeout"),
    ("sample-timeout zero", lambda t: _run(t, "--sample-timeout", "0"), "--sample-timeout"),
    ("sample-timeout nan", lambda t: _run(t, "--sample-timeout", "nan"), "--sample-timeout"),
    ("sample-timeout inf", lambda t: _run(t, "--sample-timeout", "inf"), "--sample-timeout"),
    ("out is a file", lambda t: _run(t, "--out", str(write(t / "taken", "x"))), "taken"),
    ("out under a file", lambda t: _run(t, "--out", str(write(t / "taken", "x") / "sub")), "taken"),
    ("unknown engine", lambda t: _run(t, "--engine", "gpt"), "gpt"),
    ("unknown family", lambda t: _run(t, "--family", "llama"), "llama"),
    ("unknown strategy", lambda t: _run(t, "--strategy", "regex"), "regex"),
    ("max-tokens zero", lambda t: _run(t, "--max-tokens", "0"), "--max-tokens"),
]


def _resume(tmp: Path, breaker) -> list[str]:
    run = copy_run(tmp)
    breaker(run)
    return ["run", str(copy_suite(tmp)), "--engine", "oracle", "--out", str(run), "--resume"]


RESUME: list[tuple[str, Builder, str]] = [
    ("run.json garbage", lambda t: _resume(t, lambda r: write(r / "run.json", "{not json")), "run.json"),
    ("run.json not utf8", lambda t: _resume(t, lambda r: write(r / "run.json", BAD_UTF8)), "run.json"),
    ("run.json deep", lambda t: _resume(t, lambda r: write(r / "run.json", deep_object())), "run.json"),
    ("run.json directory", lambda t: _resume(t, lambda r: as_directory(r / "run.json")), "run.json"),
    ("run.json a list", lambda t: _resume(t, lambda r: write(r / "run.json", "[]")), "run.json"),
    ("samples middle line", lambda t: _resume(t, lambda r: middle_line_broken(r / "samples.jsonl")), "samples.jsonl: line"),
    ("samples not utf8", lambda t: _resume(t, lambda r: write(r / "samples.jsonl", BAD_UTF8 + b"{}\n")), "samples.jsonl: line 1"),
    ("samples deep line", lambda t: _resume(t, lambda r: write(r / "samples.jsonl", deep_json() + "\n{}\n")), "samples.jsonl: line 1"),
    ("samples directory", lambda t: _resume(t, lambda r: as_directory(r / "samples.jsonl")), "samples.jsonl"),
]


@pytest.mark.parametrize(("label", "build", "needle"), RUN_OPTIONS + RESUME, ids=[r[0] for r in RUN_OPTIONS + RESUME])
def test_run_refuses_bad_options_and_broken_runs(tmp_path: Path, label: str, build: Builder, needle: str) -> None:
    check_clean_error(build(tmp_path), needle)


# -- score, report, compare --------------------------------------------------------------------------


def _broken_run(breaker) -> Builder:
    def build(tmp: Path) -> list[str]:
        run = copy_run(tmp)
        breaker(run)
        return [str(run)]

    return build


def _wrong_types(samples: Path) -> None:
    replace_in(samples, '"epoch":1', '"epoch":"one"')


BROKEN_RUNS: list[tuple[str, Builder, str]] = [
    ("missing", lambda t: [str(t / "nope")], "nope"),
    ("a file", lambda t: [str(write(t / "f", "x"))], "f"),
    ("run.json garbage", _broken_run(lambda r: write(r / "run.json", "{")), "run.json"),
    ("run.json not utf8", _broken_run(lambda r: write(r / "run.json", BAD_UTF8)), "run.json"),
    ("run.json deep", _broken_run(lambda r: write(r / "run.json", deep_object())), "run.json"),
    ("run.json directory", _broken_run(lambda r: as_directory(r / "run.json")), "run.json"),
    ("summary garbage", _broken_run(lambda r: write(r / "summary.json", "[{")), "summary.json"),
    ("summary deep", _broken_run(lambda r: write(r / "summary.json", deep_json())), "summary.json"),
    ("summary not utf8", _broken_run(lambda r: write(r / "summary.json", BAD_UTF8)), "summary.json"),
    ("summary directory", _broken_run(lambda r: as_directory(r / "summary.json")), "summary.json"),
    ("summary wrong types", _broken_run(lambda r: write(r / "summary.json", '[{"family": 5}]')), "summary.json"),
]
SCORE_ONLY: list[tuple[str, Builder, str]] = [
    ("samples middle line", _broken_run(lambda r: middle_line_broken(r / "samples.jsonl")), "samples.jsonl: line"),
    ("samples wrong types", _broken_run(lambda r: _wrong_types(r / "samples.jsonl")), "samples.jsonl: line 1: not a sample record: epoch"),
    ("samples deep", _broken_run(lambda r: write(r / "samples.jsonl", deep_json() + "\n{}\n")), "samples.jsonl: line 1"),
    ("samples not utf8", _broken_run(lambda r: write(r / "samples.jsonl", BAD_UTF8 + b"{}\n")), "samples.jsonl: line 1"),
    ("samples directory", _broken_run(lambda r: as_directory(r / "samples.jsonl")), "samples.jsonl"),
    ("samples of another lane", _broken_run(lambda r: replace_in(r / "run.json", '"json_schema"', '"ebnf"')), "json_schema"),
    ("suite of another kind", lambda t: [str(copy_run(t)), "--suite", str(SUITES / "fs-episodes")], "episode"),
    ("suite not a suite", lambda t: [str(copy_run(t)), "--suite", str(t)], "suite.yaml"),
    ("a case the suite lacks", _broken_run(lambda r: replace_in(r / "samples.jsonl", '"case_id":"mira-look-00"',
                                                                '"case_id":"nosuch"')), "has no case 'nosuch'"),
]
SCORE_RUNS = [r for r in BROKEN_RUNS if not r[0].startswith("summary")] + SCORE_ONLY


@pytest.mark.parametrize(("label", "build", "needle"), SCORE_RUNS, ids=[r[0] for r in SCORE_RUNS])
def test_score_refuses_broken_runs(tmp_path: Path, label: str, build: Builder, needle: str) -> None:
    check_clean_error(["score", *build(tmp_path)], needle)


@pytest.mark.parametrize(("label", "build", "needle"), BROKEN_RUNS, ids=[r[0] for r in BROKEN_RUNS])
def test_report_refuses_broken_runs(tmp_path: Path, label: str, build: Builder, needle: str) -> None:
    check_clean_error(["report", *build(tmp_path), "--out", str(tmp_path / "report")], needle)


@pytest.mark.parametrize(("label", "build", "needle"), BROKEN_RUNS, ids=[r[0] for r in BROKEN_RUNS])
def test_compare_refuses_broken_runs(tmp_path: Path, label: str, build: Builder, needle: str) -> None:
    good = copy_run(tmp_path, "good")
    check_clean_error(["compare", str(good), *build(tmp_path)], needle)


def test_report_refuses_an_out_that_is_a_file(tmp_path: Path) -> None:
    check_clean_error(["report", str(copy_run(tmp_path)), "--out", str(write(tmp_path / "taken", "x"))], "taken")


# -- import ---------------------------------------------------------------------------------------------


def _import(kind: str, content: str | bytes | None, *extra: str) -> Builder:
    def build(tmp: Path) -> list[str]:
        source = tmp / "in.jsonl"
        if content is not None:
            write(source, content)
        return ["import", kind, str(source), "--out", str(tmp / "out"), *extra]

    return build


def _import_dir(kind: str) -> Builder:
    def build(tmp: Path) -> list[str]:
        return ["import", kind, str(as_directory(tmp / "in.jsonl")), "--out", str(tmp / "out")]

    return build


def _import_out_file(tmp: Path) -> list[str]:
    return ["import", "shellper", str(SHELLPER_DATA), "--out", str(write(tmp / "taken", "x"))]


IMPORTS: list[tuple[str, Builder, str]] = [
    ("shellper missing", _import("shellper", None), "in.jsonl"),
    ("shellper not utf8", _import("shellper", BAD_UTF8), "in.jsonl"),
    ("shellper deep", _import("shellper", deep_json() + "\n"), "in.jsonl: nested deeper"),
    ("shellper deep question", _import("shellper", '{"question": "' + deep_json(5000) + '", "answer": "{}"}\n'), "in.jsonl:1"),
    ("shellper directory", _import_dir("shellper"), "in.jsonl"),
    ("shellper out is a file", _import_out_file, "taken"),
    ("bfcl unknown category", lambda t: ["import", "bfcl", "nosuch", "--out", str(t / "out")], "nosuch"),
    ("bfcl not utf8", _import("bfcl", BAD_UTF8, "--answers", str(SHELLPER_DATA)), "in.jsonl"),
    ("bfcl deep", _import("bfcl", deep_object() + "\n", "--answers", str(SHELLPER_DATA)), "in.jsonl"),
    ("bfcl directory", _import_dir("bfcl"), "in.jsonl"),
]


@pytest.mark.parametrize(("label", "build", "needle"), IMPORTS, ids=[r[0] for r in IMPORTS])
def test_import_refuses_bad_sources(tmp_path: Path, label: str, build: Builder, needle: str) -> None:
    check_clean_error(build(tmp_path), needle)


# -- grammar show / check -------------------------------------------------------------------------------


def _tools_file(content: str | bytes) -> Builder:
    def build(tmp: Path) -> list[str]:
        return [str(write(tmp / "tools.json", content))]

    return build


_PARAMS_X = '[{"type": "function", "function": {"name": "ls", "parameters": "x"}}]'
_PROPS_5 = '[{"type": "function", "function": {"name": "ls", "parameters": {"type": "object", "properties": 5}}}]'
BAD_TOOLS: list[tuple[str, Builder, str]] = [
    ("missing", lambda t: [str(t / "nope.json")], "nope.json"),
    ("not utf8", _tools_file(BAD_UTF8), "tools.json"),
    ("not json", _tools_file("[{"), "tools.json"),
    ("deep", _tools_file(deep_json()), "tools.json"),
    ("parameters a string", _tools_file(_PARAMS_X), "parameters"),
    ("properties a number", _tools_file(_PROPS_5), "properties"),
    ("not a list", _tools_file('{"a": 1}'), "tools.json"),
    ("empty folder", lambda t: [str(as_directory(t / "empty"))], "empty"),
]


@pytest.mark.parametrize(("label", "build", "needle"), BAD_TOOLS, ids=[r[0] for r in BAD_TOOLS])
def test_grammar_show_refuses_bad_tools(tmp_path: Path, label: str, build: Builder, needle: str) -> None:
    check_clean_error(["grammar", "show", "--family", "qwen", "--strategy", "ebnf", "--tools", *build(tmp_path)], needle)


def _calls_file(content: str | bytes) -> Builder:
    def build(tmp: Path) -> list[str]:
        return [str(write(tmp / "calls.jsonl", content))]

    return build


BAD_CALLS: list[tuple[str, Builder, str]] = [
    ("missing", lambda t: [str(t / "nope.jsonl")], "nope.jsonl"),
    ("not utf8", _calls_file(BAD_UTF8), "calls.jsonl"),
    ("deep", _calls_file(deep_json() + "\n"), "calls.jsonl:1"),
    ("deep arguments", _calls_file('{"calls": [{"name": "ls", "arguments": ' + deep_object(3000) + "}]}\n"), "calls.jsonl:1"),
    ("directory", lambda t: [str(as_directory(t / "calls.jsonl"))], "calls.jsonl"),
    ("empty", _calls_file(""), "calls.jsonl"),
]


@pytest.mark.parametrize(("label", "build", "needle"), BAD_CALLS, ids=[r[0] for r in BAD_CALLS])
def test_grammar_check_refuses_bad_calls(tmp_path: Path, label: str, build: Builder, needle: str) -> None:
    args = ["grammar", "check", "--family", "qwen", "--strategy", "ebnf", "--tools", str(TOOLS_JSON), "--calls"]
    check_clean_error([*args, *build(tmp_path)], needle)


# -- bench ------------------------------------------------------------------------------------------------

BENCH: list[tuple[str, Builder, str]] = [
    ("sandbox tools missing", lambda t: ["bench", "sandbox", "--n", "1", "--tools", str(t / "nope")], "nope"),
    ("sandbox bad preset", lambda t: ["bench", "sandbox", "--n", "1", "--limits", "bogus"], "bogus"),
    ("sandbox unknown tool", lambda t: ["bench", "sandbox", "--n", "1", "--tool", "nosuch"], "nosuch"),
    ("grammar tools not utf8", lambda t: ["bench", "grammar", "--quick", "--tools", *_tools_file(BAD_UTF8)(t)], "tools.json"),
    ("grammar tools deep", lambda t: ["bench", "grammar", "--quick", "--tools", *_tools_file(deep_json())(t)], "tools.json"),
    ("grammar calls deep", lambda t: ["bench", "grammar", "--quick", "--calls", *_calls_file(deep_json() + "\n")(t)], "calls.jsonl"),
    ("grammar unknown family", lambda t: ["bench", "grammar", "--quick", "--family", "llama"], "llama"),
    ("engine unknown strategy", lambda t: ["bench", "engine", "--strategy", "regex"], "regex"),
]


@pytest.mark.parametrize(("label", "build", "needle"), BENCH, ids=[r[0] for r in BENCH])
def test_bench_refuses_bad_inputs(tmp_path: Path, label: str, build: Builder, needle: str) -> None:
    check_clean_error(build(tmp_path), needle)


# -- tool run -------------------------------------------------------------------------------------------


def _ls() -> str:
    from hostile import SHELLPER

    return str(SHELLPER / "tools" / "ls.pym")


TOOL: list[tuple[str, Builder, str]] = [
    ("script missing", lambda t: ["tool", "run", str(t / "nope.pym")], "nope.pym"),
    ("script not utf8", lambda t: ["tool", "run", str(write(t / "x.pym", b"\xff\xfe"))], "x.pym"),
    ("script a directory", lambda t: ["tool", "run", str(as_directory(t / "d.pym"))], "d.pym"),
    ("args deep", lambda t: ["tool", "run", _ls(), "--args", deep_object()], "--args"),
    ("args not an object", lambda t: ["tool", "run", _ls(), "--args", "[1]"], "--args"),
]


@pytest.mark.parametrize(("label", "build", "needle"), TOOL, ids=[r[0] for r in TOOL])
def test_tool_run_refuses_bad_inputs(tmp_path: Path, label: str, build: Builder, needle: str) -> None:
    check_clean_error(build(tmp_path), needle, code=2)  # bad input: the script or --args, named


# -- serve ------------------------------------------------------------------------------------------------


def _port_in_use(_tmp: Path) -> list[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    _HELD.append(sock)
    return ["serve", "--engine", "oracle", "--port", str(sock.getsockname()[1])]


_HELD: list[socket.socket] = []
SERVE: list[tuple[str, Builder, str]] = [
    ("port out of range", lambda t: ["serve", "--engine", "oracle", "--port", "99999"], "--port"),
    ("port negative", lambda t: ["serve", "--engine", "oracle", "--port", "-1"], "--port"),
    ("port in use", _port_in_use, "in use"),
    ("unknown host", lambda t: ["serve", "--engine", "oracle", "--host", "no-such-host.invalid"], "no-such-host.invalid"),
    ("unknown engine", lambda t: ["serve", "--engine", "gpt"], "gpt"),
    ("openai cannot be served", lambda t: ["serve", "--engine", "openai"], "openai"),
]


@pytest.mark.parametrize(("label", "build", "needle"), SERVE, ids=[r[0] for r in SERVE])
def test_serve_refuses_bad_addresses(tmp_path: Path, label: str, build: Builder, needle: str) -> None:
    try:
        check_clean_error(build(tmp_path), needle)
    finally:
        while _HELD:
            _HELD.pop().close()
