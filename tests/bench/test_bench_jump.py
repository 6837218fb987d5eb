"""``harness bench jump``: where two decodes part and why, the per-strategy summary, and a run on the
smoke suite with the real embedded engine (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.bench.jump import Pair, first_difference, summarize_pairs

# (plain tokens, jump-forward tokens, positions it filled unchecked, (index, cause))
DIFFERENCES: list[tuple[list[int], list[int], list[int], tuple[int | None, str | None]]] = [
    ([1, 2, 3], [1, 2, 3], [1], (None, None)),
    ([1, 2, 3], [1, 9, 3], [1], (1, "split")),  # a forced token the plain loop's model wrote otherwise
    ([1, 2, 3], [1, 9, 3], [2], (1, "rounding")),  # a free choice after the same tokens
    ([1, 2], [1, 2, 3], [], (2, "end")),
    ([1, 2, 3], [1, 2], [0, 1], (2, "end")),
]


@pytest.mark.parametrize(("plain", "jumped", "unchecked", "expected"), DIFFERENCES)
def test_first_difference(plain, jumped, unchecked, expected) -> None:
    assert first_difference(plain, jumped, unchecked) == expected


def pair(cause: str | None, **kw) -> Pair:
    fields = dict(
        strategy="ebnf", same_tokens=cause is None, same_text=cause is None, cause=cause, at=None,
        plain_token="<" if cause == "split" else None, jump_token="<escape>" if cause == "split" else None,
        tokens=(10, 10), steps=(10, 4), forced=6, tok_s=(40.0, 80.0), plain_text="", jump_text="",
    )
    fields.update(kw)
    return Pair(**fields)  # type: ignore[arg-type]


def test_summary_counts_causes_splits_and_speed() -> None:
    pairs = [pair(None), pair("split"), pair("split"), pair("rounding", tok_s=(40.0, 60.0))]
    s = summarize_pairs(pairs).dump()
    assert s["requests"] == 4 and s["same_tokens"] == 1 and s["same_text"] == 1
    assert s["differ"] == {"split": 2, "rounding": 1}
    assert s["top_splits"] == {"'<' -> '<escape>'": 2}
    assert s["speedup_median"] == 2.0 and s["steps_per_token_plain"] == 1.0 and s["steps_per_token_jump"] == 0.4
    assert s["forced_fraction"] == 0.6


@pytest.mark.slow
def test_a_run_on_the_smoke_suite(tmp_path: Path) -> None:
    from harness.bench.jump import MODES, run_jump_bench

    result = run_jump_bench(Path("suites/smoke"), tmp_path, strategies=["json_schema"], limit=1, log=lambda _m: None).dump()
    assert set(result["per_mode"]) == set(MODES[1:])
    for mode, per in result["per_mode"].items():
        fig = per["json_schema"]
        assert fig["requests"] == 1 and fig["scores"]["validity"]["n"] == 1 == fig["scores_plain"]["validity"]["n"]
        assert (tmp_path / mode / "summary.json").is_file()
    pairs = [json.loads(line) for line in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    assert sorted(p["mode"] for p in pairs) == ["append", "verify"]
    assert all(p["forced"] > 0 and p["steps"][1] < p["steps"][0] for p in pairs)
    assert json.loads((tmp_path / "jump.json").read_text()) == result
