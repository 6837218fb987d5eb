"""The benchmarks' inputs come from explicit paths (defaults: the shipped SHELLper bundle and suite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.bench.inputs import load_gold, load_tool_schemas
from harness.bench.sandbox import bench_sandbox

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("where", ["repository", "elsewhere"])
def test_the_defaults_are_the_shipped_shellper_bundle_and_suite_from_any_folder(
        where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO if where == "repository" else tmp_path)
    assert len(load_tool_schemas()) == 18
    gold, source = load_gold()
    assert source == "suites/shellper" and len(gold) > 200


def test_a_missing_path_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope: no tools there"):
        load_tool_schemas(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="nope: no gold calls there"):
        load_gold(tmp_path / "nope")
    with pytest.raises(ValueError, match=r"nope: not a folder of \.pym tools"):
        bench_sandbox(n=1, tools_dir=tmp_path / "nope")


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
