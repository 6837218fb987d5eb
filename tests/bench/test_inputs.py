"""The benchmarks' inputs come from explicit paths (defaults relative to the working directory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.bench.inputs import load_gold, load_tool_schemas
from harness.bench.sandbox import bench_sandbox

REPO = Path(__file__).resolve().parents[2]


def test_defaults_are_the_shellper_bundle_and_suite_from_the_repository_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert len(load_tool_schemas()) == 18
    gold, source = load_gold()
    assert source == "suites/shellper" and len(gold) > 200


def test_elsewhere_the_defaults_say_what_to_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="run from the repository root, or pass --tools"):
        load_tool_schemas()
    with pytest.raises(FileNotFoundError, match="run from the repository root, or pass --calls"):
        load_gold()
    with pytest.raises(ValueError, match="run from the repository root, or pass --tools"):
        bench_sandbox(n=1)


@pytest.mark.parametrize(
    ("text", "problem"),
    [("{not json", "invalid JSON"), ("[]", "non-empty JSON list"), ('[{"type": "function"}]', "tool 0:")],
)
def test_bad_tools_files_name_the_file(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "tools.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=problem) as info:
        load_tool_schemas(path)
    assert str(path) in str(info.value)
