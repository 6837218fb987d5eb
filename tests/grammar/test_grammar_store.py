"""Compiled grammars kept on disk across runs (``harness.grammar.store``): a kept grammar is read back
instead of compiled; a corrupt, foreign or stale file is compiled again and replaced, never trusted;
the folder stays within its bound; ``HARNESS_GRAMMAR_CACHE=off`` keeps nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.agents.constraint import ConstraintArtifact, DecodingConstraint
from harness.agents.families import get_adapter
from harness.agents.types import ToolSchema
from harness.grammar import store
from harness.grammar.compile import clear_compile_cache, compile_artifact

FAMILY = "qwen"
TOOLS_FILE = Path(__file__).resolve().parents[1] / "data" / "shellper_tools.json"


def shellper_tools() -> list[ToolSchema]:
    return [ToolSchema.from_openai(t) for t in json.loads(TOOLS_FILE.read_text(encoding="utf-8"))]


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "grammars"
    monkeypatch.setenv("HARNESS_GRAMMAR_CACHE", str(folder))
    return folder


def artifact(strategy: str = "ebnf", tools: int = 3) -> ConstraintArtifact:
    payload = get_adapter(FAMILY).build_payload(list(shellper_tools())[:tools], DecodingConstraint(strategy=strategy))
    assert payload.artifact is not None
    return payload.artifact


def fresh_process() -> None:
    """What a new process knows: nothing compiled in memory."""
    clear_compile_cache(FAMILY)


def check_works(compiled: Any) -> None:
    """The grammar read back matches what the compiled one matches."""
    import xgrammar as xgr

    from harness.agents.families.qwen import call_head

    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.accept_string(call_head("cat")[:14])
    assert not matcher.accept_string("}")


def files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.grammar.json"))


@pytest.mark.parametrize("strategy", ["ebnf", "structural_tag", "json_schema"])
def test_a_kept_grammar_is_read_back_not_compiled(kept: Path, strategy: str) -> None:
    fresh_process()
    first = compile_artifact(artifact(strategy), FAMILY, keep=True)
    assert first.found == "compiled" and not first.cached
    assert len(files(kept)) == 1
    fresh_process()
    again = compile_artifact(artifact(strategy), FAMILY, keep=True)
    assert again.found == "disk" and again.cached
    assert compile_artifact(artifact(strategy), FAMILY, keep=True).found == "memory"
    if strategy != "json_schema":
        check_works(again.compiled)


def _truncate(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8")[:200], encoding="utf-8")


def _garbage(path: Path) -> None:
    path.write_bytes(b"\xff\xfe not json at all")


def _other_key(path: Path) -> None:
    record = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**record, "key": "0" * 40}), encoding="utf-8")


def _bad_payload(path: Path) -> None:
    record = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**record, "compiled": '{"__VERSION__": "v0", "grammar": 3}'}), encoding="utf-8")


def _other_tokenizer(path: Path) -> None:
    """xgrammar's serialization of the same grammar for the other family's tokenizer."""
    other = compile_artifact(artifact("ebnf"), "function_gemma").compiled
    record = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**record, "compiled": other.serialize_json()}), encoding="utf-8")


@pytest.mark.parametrize("spoil", [_truncate, _garbage, _other_key, _bad_payload, _other_tokenizer])
def test_a_corrupt_or_foreign_file_is_compiled_again_and_replaced(kept: Path, spoil: Callable[[Path], None]) -> None:
    fresh_process()
    compile_artifact(artifact(), FAMILY, keep=True)
    (path,) = files(kept)
    spoil(path)
    fresh_process()
    again = compile_artifact(artifact(), FAMILY, keep=True)
    assert again.found == "compiled"
    check_works(again.compiled)
    fresh_process()
    assert compile_artifact(artifact(), FAMILY, keep=True).found == "disk"  # the replacement is whole


def test_the_key_names_the_artifact_the_tokenizer_and_the_library() -> None:
    base = store.StoreKey(family="qwen", tokenizer="t1", library="xgrammar 0.2.8", kind="grammar", value="root ::= \"a\"")
    variants = [
        store.StoreKey(family="function_gemma", tokenizer="t1", library="xgrammar 0.2.8", kind="grammar", value=base.value),
        store.StoreKey(family="qwen", tokenizer="t2", library="xgrammar 0.2.8", kind="grammar", value=base.value),
        store.StoreKey(family="qwen", tokenizer="t1", library="xgrammar 0.2.9", kind="grammar", value=base.value),
        store.StoreKey(family="qwen", tokenizer="t1", library="xgrammar 0.2.8", kind="json", value=base.value),
        store.StoreKey(family="qwen", tokenizer="t1", library="xgrammar 0.2.8", kind="grammar", value="root ::= \"b\""),
    ]
    assert len({base.digest(), *(v.digest() for v in variants)}) == 6


def test_the_folder_is_trimmed_to_its_bound_oldest_first(tmp_path: Path) -> None:
    import os

    for i in range(5):
        path = tmp_path / f"{i:040x}.grammar.json"
        path.write_bytes(b"x" * 100)
        os.utime(path, (1000 + i, 1000 + i))
    removed = store.trim(tmp_path, 250)
    assert [p.name[:40] for p in removed] == [f"{i:040x}" for i in range(3)]
    assert len(files(tmp_path)) == 2


def test_a_save_keeps_the_bound(kept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh_process()
    compile_artifact(artifact("ebnf"), FAMILY, keep=True)
    size = files(kept)[0].stat().st_size
    monkeypatch.setenv("HARNESS_GRAMMAR_CACHE_BYTES", str(size + 10))
    compile_artifact(artifact("json_schema"), FAMILY, keep=True)
    assert len(files(kept)) == 1


def test_off_keeps_nothing_and_without_keep_nothing_is_written(kept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh_process()
    compile_artifact(artifact(), FAMILY)
    assert not kept.exists()
    monkeypatch.setenv("HARNESS_GRAMMAR_CACHE", "off")
    fresh_process()
    assert compile_artifact(artifact(), FAMILY, keep=True).found == "compiled"
    assert not kept.exists()
