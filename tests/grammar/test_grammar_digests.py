"""Every grammar text, payload and prompt the harness builds is byte for byte what it was when
``grammar_digests.json`` was recorded (before the grammar builder moved into ``harness.grammar``):
the shipped tools (as a set and each alone), pydantic-written schemas and BFCL's first tool sets, for
both families x every strategy x three constraint settings (``_make_digests``). The recording covers
all of BFCL's function documents too (``bfcl-all``); ``python tests/grammar/_make_digests.py`` checks
those by rewriting the file (``git diff`` shows any change)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("bfcl_eval", reason="BFCL's package is not installed: pip install --no-deps bfcl-eval==2026.3.23")

from _make_digests import DIGESTS_FILE, digest_sets, quick_sets

RECORDED: dict[str, str] = json.loads(DIGESTS_FILE.read_text(encoding="utf-8"))


def test_every_grammar_is_byte_identical_to_the_recording() -> None:
    rebuilt = digest_sets(quick_sets())
    expected = {key: RECORDED.get(key) for key in rebuilt}
    changed = sorted(key for key in rebuilt if rebuilt[key] != expected[key])
    assert not changed, f"{len(changed)} of {len(rebuilt)} digests differ: {changed[:20]}"


def test_the_recording_covers_every_family_strategy_and_source() -> None:
    sets = {key.split("|")[0] for key in RECORDED}
    assert {"shellper", "pydantic", "bfcl-quick", "bfcl-all", "shellper:ls"} <= sets
    assert {tuple(key.split("|")[1:]) for key in RECORDED if key.startswith("bfcl-all|")} >= {
        (family, strategy) for family in ("function_gemma", "qwen")
        for strategy in ("prompt", "none", "ebnf", "structural_tag", "json_schema", "required", "strict")}
