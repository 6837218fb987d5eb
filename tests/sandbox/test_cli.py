"""``harness tool run`` and ``harness bench sandbox``: exact output shapes and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sandbox_helpers import TOOLS_DIR
from typer.testing import CliRunner

from harness.cli.main import app

runner = CliRunner()


def run_tool(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["tool", "run", *args])
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout  # exactly one JSON object
    return result.exit_code, json.loads(lines[0])


def test_tool_run_success_with_files(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "a.txt").write_text("hello\nworld")
    code, out = run_tool(str(TOOLS_DIR / "ls.pym"), "--files", str(root))
    assert code == 0
    assert out == {
        "output": {"current_directory_content": ["a.txt", "docs"]},
        "is_error": False,
        "error_kind": None,
        "mutations": [],
    }
    code, out = run_tool(
        str(TOOLS_DIR / "tail.pym"),
        "--args",
        '{"file_name": "a.txt", "lines": 1}',
        "--files",
        str(root),
        "--limits",
        "strict",
    )
    assert (code, out["output"]) == (0, {"last_lines": "world"})
    assert (root / "a.txt").read_text() == "hello\nworld"  # the host directory is only read


def test_tool_run_without_files_sees_an_empty_tree() -> None:
    code, out = run_tool(str(TOOLS_DIR / "pwd.pym"))
    assert (code, out["output"]) == (0, {"current_working_directory": "/workspace"})


def test_tool_run_prints_the_mutations_it_applied(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("hi")
    code, out = run_tool(str(TOOLS_DIR / "mv.pym"), "--args", '{"source": "a.txt", "destination": "b.txt"}',
                         "--files", str(root))
    assert code == 0 and out["mutations"] == [{"op": "move", "src": "/fs/proj/a.txt", "dst": "/fs/proj/b.txt"}]
    assert (root / "a.txt").read_text() == "hi"  # applied to the tree read in, never to the host


BAD_INPUT = [
    (["--args", '{"file_name": 3}'], "--args: cat: argument 'file_name'"),
    (["--args", "not json"], "--args"),
    (["--args", "[1]"], "--args must be a JSON object, got list"),
    (["--args", "[" * 100_000 + "]" * 100_000], "--args"),
]


@pytest.mark.parametrize(("args", "named"), BAD_INPUT)
def test_bad_input_exits_2_naming_it(args: list[str], named: str) -> None:
    result = runner.invoke(app, ["tool", "run", str(TOOLS_DIR / "cat.pym"), *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert named in result.stderr and "harness tool run: error:" in result.stderr


def test_tool_run_reports_a_script_that_does_not_load(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pym"
    broken.write_text('"""Broken."""\nx = (\n')
    for script, named in ((broken, "broken.pym line 2"), (tmp_path / "missing.pym", "missing.pym")):
        result = runner.invoke(app, ["tool", "run", str(script)])
        assert result.exit_code == 2 and named in result.stderr and "tool:load_error" in result.stderr


def test_tool_run_script_failure(tmp_path: Path) -> None:
    script = tmp_path / "loop.pym"
    script.write_text('"""Spins."""\nwhile True:\n    pass\n')
    code, out = run_tool(str(script), "--limits", "strict")
    assert code == 1 and out["error_kind"] == "tool:limit"


def test_bench_sandbox_prints_json_last() -> None:
    result = runner.invoke(app, ["bench", "sandbox", "--n", "21"])
    assert result.exit_code == 0, result.stdout
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    for key in ("tool_call_us_p50", "tool_call_us_p90", "tool_call_us_p99", "tool_call_us_mean"):
        assert figures[key] > 0
    assert figures["n"] == 21 and figures["preset"] == "default" and figures["files"] == 20
    assert figures["error_results"] == 0
    assert set(figures["per_tool_us_p50"]) == {p.stem for p in TOOLS_DIR.glob("*.pym")}


def test_tool_run_files_never_follows_a_link_out_of_the_directory(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text("host secret")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("mine")
    (root / "secret.txt").symlink_to(host / "secret.txt")
    (root / "hostdir").symlink_to(host, target_is_directory=True)
    result = runner.invoke(app, ["tool", "run", str(TOOLS_DIR / "cat.pym"), "--args", '{"file_name": "secret.txt"}',
                                 "--files", str(root)])
    assert json.loads(result.stdout.strip())["output"] == {"error": "cat: 'secret.txt': No such file or directory"}
    assert "skipped" in result.stderr and "secret.txt" in result.stderr and "hostdir" in result.stderr
    code, out = run_tool(str(TOOLS_DIR / "find.pym"), "--files", str(root))
    assert (code, out["output"]) == (0, {"matches": ["./a.txt"]})


@pytest.mark.parametrize("make", ["link-to-a-directory", "too-deep"])
def test_tool_run_files_that_cannot_be_read_is_a_usage_error(tmp_path: Path, make: str) -> None:
    target = tmp_path / "dir"
    (target / "/".join(["d"] * 70)).mkdir(parents=True)
    if make == "link-to-a-directory":
        (tmp_path / "link").symlink_to(target, target_is_directory=True)
        target = tmp_path / "link"
    result = runner.invoke(app, ["tool", "run", str(TOOLS_DIR / "ls.pym"), "--files", str(target)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--files" in result.stderr and ("links are not followed" in result.stderr or "deeper than" in result.stderr)


def test_bench_sandbox_times_any_tool_folder(tmp_path: Path) -> None:
    from harness.cli.commands.init import scaffold

    scaffold(tmp_path / "mine", "mine")  # one tool that touches no files, and no ls
    result = runner.invoke(app, ["bench", "sandbox", "--n", "5", "--tools", str(tmp_path / "mine" / "tools")])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(figures["per_tool_us_p50"]) == {"convert_units"} and figures["error_results"] == 0
    assert figures["bare_feed_pool_us_p50"] is None  # no pwd to time the bare feed with


@pytest.mark.parametrize("tool", ["nope", None])
def test_bench_sandbox_bad_folder_or_tool_exits_2(tmp_path: Path, tool: str | None) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    args = ["--tool", tool, "--tools", str(TOOLS_DIR)] if tool else ["--tools", str(folder)]
    result = runner.invoke(app, ["bench", "sandbox", "--n", "5", *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (repr(tool) if tool else "no .pym tools") in result.stderr
