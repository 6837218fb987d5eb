"""Compiled grammars kept on disk across runs (``harness.grammar.store``): a kept grammar is read back
instead of compiled; a corrupt, foreign or stale file, or one holding another request's grammar, is
compiled again and replaced, never trusted; a link, FIFO, device or oversized file is never followed or
read; the folder stays within its bound; ``HARNESS_GRAMMAR_CACHE=off`` keeps nothing."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.agents.constraint import ConstraintArtifact, DecodingConstraint
from harness.agents.types import ToolSchema
from harness.grammar import store
from harness.grammar.compile import CompiledConstraint, clear_compile_cache, compile_artifact, is_kept
from harness.grammar.families import get_adapter

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

    from harness.grammar.families.qwen import call_head

    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.accept_string(call_head("cat")[:14])
    assert not matcher.accept_string("}")


def files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.grammar.json"))


def notes(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The store's one-line notes (warnings on its logger)."""
    return [r.getMessage() for r in caplog.records if r.name == "harness.grammar.store" and r.levelno >= logging.WARNING]


def compile_within(seconds: float, art: ConstraintArtifact) -> CompiledConstraint:
    """``compile_artifact(art, keep=True)``, failing (not hanging) when it takes over ``seconds``."""
    done: list[CompiledConstraint] = []
    worker = threading.Thread(target=lambda: done.append(compile_artifact(art, FAMILY, keep=True)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"the compile took over {seconds} s (a read that blocks or never ends)"
    assert done, "the compile raised"
    return done[0]


@pytest.mark.parametrize("strategy", ["ebnf", "structural_tag", "json_schema"])
def test_a_kept_grammar_is_read_back_not_compiled(kept: Path, strategy: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "harness.grammar.store")
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
    assert notes(caplog) == []  # a miss and a hit say nothing


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


def _other_tokenizer_header(path: Path) -> None:
    """The header says another tokenizer (and the digest is recomputed to match)."""
    record = json.loads(path.read_text(encoding="utf-8"))
    header = {k: v for k, v in record.items() if k not in ("check", "compiled")}
    header["tokenizer"] = "0" * 40
    path.write_text(json.dumps({**header, "check": store._check(header, record["compiled"]),
                                "compiled": record["compiled"]}), encoding="utf-8")


def _deep(path: Path) -> None:
    path.write_text("[" * 100_000, encoding="utf-8")


@pytest.mark.parametrize("spoil", [_truncate, _garbage, _other_key, _bad_payload, _other_tokenizer,
                                   _other_tokenizer_header, _deep])
def test_a_corrupt_or_foreign_file_is_compiled_again_and_replaced(
    kept: Path, spoil: Callable[[Path], None], caplog: pytest.LogCaptureFixture,
) -> None:
    fresh_process()
    compile_artifact(artifact(), FAMILY, keep=True)
    (path,) = files(kept)
    spoil(path)
    fresh_process()
    again = compile_artifact(artifact(), FAMILY, keep=True)
    assert again.found == "compiled"
    check_works(again.compiled)
    (note,) = notes(caplog)
    assert str(path) in note and "compiled again" in note and "\n" not in note
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


def accepts(compiled: Any, text: str) -> bool:
    import xgrammar as xgr

    return bool(xgr.GrammarMatcher(compiled).accept_string(text))


def _key_only(record: dict[str, Any], wanted: store.StoreKey) -> dict[str, Any]:
    """The other grammar's file with its key field rewritten to this request's."""
    return {**record, "key": wanted.digest()}


def _whole_header(record: dict[str, Any], wanted: store.StoreKey) -> dict[str, Any]:
    """The other grammar's file with every header field rewritten to this request's (not its digest)."""
    return {**record, **wanted.header()}


@pytest.mark.parametrize("rewrite", [_key_only, _whole_header])
def test_another_grammar_under_this_name_is_rebuilt_not_served(
    kept: Path, rewrite: Callable[[dict[str, Any], store.StoreKey], dict[str, Any]], caplog: pytest.LogCaptureFixture,
) -> None:
    from harness.grammar.families.qwen import call_head

    wanted, other = artifact(tools=3), artifact(tools=1)  # pwd, ls, cd; pwd alone
    fresh_process()
    compile_artifact(wanted, FAMILY, keep=True)
    other_compiled = compile_artifact(other, FAMILY, keep=True).compiled
    assert not accepts(other_compiled, call_head("cd"))
    key = store.store_key(wanted, FAMILY)
    path, other_path = kept / store.file_name(key), kept / store.file_name(store.store_key(other, FAMILY))
    record = json.loads(other_path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(rewrite(record, key)), encoding="utf-8")
    fresh_process()
    served = compile_artifact(wanted, FAMILY, keep=True)
    assert served.found == "compiled"
    assert accepts(served.compiled, call_head("cd"))  # the requested grammar, not the other one
    assert len(notes(caplog)) == 1
    fresh_process()
    again = compile_artifact(wanted, FAMILY, keep=True)
    assert again.found == "disk" and accepts(again.compiled, call_head("cd"))


def _link_outside(path: Path, outside: Path) -> None:
    """The entry moved elsewhere (a whole, valid file) and linked back."""
    os.replace(path, outside)
    os.utime(outside, (1000, 1000))
    path.symlink_to(outside)


def _link_dev_zero(path: Path, outside: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def _fifo(path: Path, outside: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _sparse(path: Path, outside: Path) -> None:
    """A 4 GiB file that takes no room: over the read bound, never read."""
    with path.open("r+b") as fh:
        fh.truncate(4 * 1024**3)


def _directory(path: Path, outside: Path) -> None:
    path.unlink()
    path.mkdir()


@pytest.mark.parametrize("spoil", [_link_outside, _link_dev_zero, _fifo, _sparse, _directory])
def test_a_link_or_special_file_is_never_followed_or_read(
    kept: Path, tmp_path: Path, spoil: Callable[[Path, Path], None], caplog: pytest.LogCaptureFixture,
) -> None:
    fresh_process()
    compile_artifact(artifact(), FAMILY, keep=True)
    (path,) = files(kept)
    outside = tmp_path / "outside.grammar.json"
    spoil(path, outside)
    before = (outside.read_bytes(), outside.stat().st_mtime) if outside.exists() else None
    assert not is_kept(artifact(), FAMILY)
    fresh_process()
    t0 = time.monotonic()
    again = compile_within(10, artifact())
    assert time.monotonic() - t0 < 10
    assert again.found == "compiled"
    check_works(again.compiled)
    assert len(notes(caplog)) == 1
    if before is not None:  # the link's target is neither read into service nor touched nor written
        assert (outside.read_bytes(), outside.stat().st_mtime) == before
    if spoil is not _directory:  # replaced by a regular file, served from then on
        assert path.is_file() and not path.is_symlink() and path.stat().st_size < 4 * 1024**3
        fresh_process()
        assert compile_artifact(artifact(), FAMILY, keep=True).found == "disk"


def test_a_file_over_the_store_bound_is_not_read(kept: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    fresh_process()
    compile_artifact(artifact(), FAMILY, keep=True)
    (path,) = files(kept)
    monkeypatch.setenv("HARNESS_GRAMMAR_CACHE_BYTES", str(path.stat().st_size - 1))
    fresh_process()
    assert compile_artifact(artifact(), FAMILY, keep=True).found == "compiled"
    (note,) = notes(caplog)
    assert "over the bound" in note


@pytest.mark.parametrize(("value", "expected"), [
    ("off", None), ("Off ", None), (" OFF", None), ("\tno\n", None), ("False", None), ("0", None),
    (" /tmp/harness-grammars ", Path("/tmp/harness-grammars")), ("   ", "default"), ("", "default"),
])
def test_the_folder_setting_is_stripped_and_off_in_any_case(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: Path | str | None,
) -> None:
    monkeypatch.delenv("HARNESS_GRAMMAR_CACHE", raising=False)
    default = store.store_folder()
    monkeypatch.setenv("HARNESS_GRAMMAR_CACHE", value)
    assert store.store_folder() == (default if expected == "default" else expected)


@pytest.mark.parametrize(("value", "expected", "warned"), [
    ("", store.DEFAULT_LIMIT_BYTES, False), ("4096", 4096, False), (" 4096\n", 4096, False), ("0", 0, False),
    ("abc", store.DEFAULT_LIMIT_BYTES, True), ("1e9", store.DEFAULT_LIMIT_BYTES, True),
    ("-5", store.DEFAULT_LIMIT_BYTES, True), ("1_000", store.DEFAULT_LIMIT_BYTES, True),
    ("2.5", store.DEFAULT_LIMIT_BYTES, True), ("\u0663", store.DEFAULT_LIMIT_BYTES, True),
])
def test_a_bound_that_is_not_a_whole_number_of_bytes_is_warned_about_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, value: str, expected: int, warned: bool,
) -> None:
    monkeypatch.setattr(store, "_WARNED", set())
    monkeypatch.setenv("HARNESS_GRAMMAR_CACHE_BYTES", value)
    assert store.limit_bytes() == expected
    assert store.limit_bytes() == expected
    said = notes(caplog)
    assert len(said) == (1 if warned else 0)
    if warned:
        assert "HARNESS_GRAMMAR_CACHE_BYTES" in said[0] and repr(value) in said[0] and "not a whole number" in said[0]


def test_stale_temporary_files_are_counted_and_removed_on_trim(tmp_path: Path) -> None:
    now = time.time()
    for i in range(2):
        entry = tmp_path / f"{i:040x}.grammar.json"
        entry.write_bytes(b"x" * 100)
        os.utime(entry, (now - 100 + i, now - 100 + i))
    stale, fresh = tmp_path / ".tmp-dead.grammar.json", tmp_path / ".tmp-writing.grammar.json"
    for temp, age in ((stale, 2 * store.STALE_TMP_S), (fresh, 1)):
        temp.write_bytes(b"t" * 100)
        os.utime(temp, (now - age, now - age))
    assert store._size(tmp_path) == 400
    removed = store.trim(tmp_path, 250)  # 300 once the dead writer's file is gone: the oldest entry goes
    assert [p.name for p in removed] == [stale.name, f"{0:040x}.grammar.json"]
    assert fresh.exists() and (tmp_path / f"{1:040x}.grammar.json").exists()


class _UnserializableGrammar:
    """A FAKE compiled grammar (a unit test of the store's seam): its serialization fails as xgrammar's
    does past memory (``std::bad_alloc``), or yields ``size`` characters."""

    memory_size_bytes = 9_000_000

    def __init__(self, size: int | None) -> None:
        self.size = size

    def serialize_json(self) -> str:
        if self.size is None:
            raise RuntimeError("std::bad_alloc")
        return "x" * self.size


@pytest.mark.parametrize(("size", "limit"), [(None, 1 << 30), (2048, 1024)])
def test_a_grammar_the_store_cannot_keep_is_not_kept_and_the_caller_goes_on(tmp_path: Path, size: int | None,
                                                                             limit: int) -> None:
    key = store.StoreKey(family="qwen", tokenizer="t1", library="xgrammar 0.2.8", kind="grammar", value="root ::= \"a\"")
    assert store.save(tmp_path / "store", key, _UnserializableGrammar(size), limit) is False
    assert not (tmp_path / "store").exists() or list((tmp_path / "store").iterdir()) == []
