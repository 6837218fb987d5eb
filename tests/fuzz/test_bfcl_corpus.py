"""A real-world corpus: BFCL's single-turn function documents (converted as BFCL converts them for
OpenAI-style tools) through ``harness fuzz``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval", reason="BFCL's package is not installed: pip install --no-deps bfcl-eval==2026.3.23")

from harness.agents import ToolSchema
from harness.bfcl.data import distinct_tools, load_entries
from harness.fuzz import FuzzOptions, Outcome, fuzz

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]

LANES = [(f, s) for f in ("function_gemma", "qwen") for s in ("ebnf", "structural_tag", "json_schema")]
BATCH = 120
"""Tools per fuzzed tool set: the tool-name choice of a 1,700-tool grammar makes every accept ~50 us
(``harness bench grammar``'s growth), so the corpus is fuzzed in sets of this size."""


def test_bfcl_converter_follows_bfcl() -> None:
    entries = {e.id: e for e in load_entries("live_simple")}
    tool = entries["live_simple_2-2-0"].tools[0]["function"]
    assert tool["name"] == "uber_ride" and tool["parameters"]["type"] == "object"  # '.' replaced, dict -> object
    floats = [p for t in distinct_tools(("simple_python",)) for p in t["function"]["parameters"]["properties"].values()
              if p.get("format") == "float"]
    assert floats and all(p["type"] == "number" for p in floats)  # BFCL's float: number with a format note
    assert entries["live_simple_2-2-0"].gold_calls() == [
        {"name": "uber_ride", "arguments": {"loc": "2020 Addison Street, Berkeley, CA, USA", "type": "comfort", "time": 600}}]


def test_bfcl_tools_through_the_fuzz(tmp_path: Path) -> None:
    """Every distinct tool through every cell: only the classes the keyword table predicts, and the bad
    input of BFCL's own data named (a required array whose enum holds strings: no value satisfies it)."""
    tools = [ToolSchema.from_openai(t) for t in distinct_tools()]
    assert len(tools) > 1500
    outcomes: dict[str, int] = {}
    odd: list[str] = []
    bad_input: list[str] = []
    for start in range(0, len(tools), BATCH):
        report = fuzz(tools[start:start + BATCH], FuzzOptions(
            families=("function_gemma", "qwen"), strategies=("ebnf", "structural_tag", "json_schema"),
            examples=1, walks=1, jobs=1, database=tmp_path / "db", shrink=False))
        for cell in report.cells:
            outcomes[cell.outcome.value] = outcomes.get(cell.outcome.value, 0) + 1
            if cell.outcome in (Outcome.schema_invalid, Outcome.schema_unsatisfiable, Outcome.generation_slow):
                bad_input.append(cell.key)
            elif cell.unpredicted or cell.not_enforced:
                odd.append(f"{cell.key}: {cell.classes} {cell.message or ''} "
                           f"{[c.why for c in cell.counterexamples]}"[:300])
    print(json.dumps(outcomes), f"bad input: {len(bad_input) // len(LANES)} tools")
    assert not odd, "\n".join(odd[:40])
    assert len(bad_input) < 20 * len(LANES)


# Every gold answer through every constrained lane is asserted once, whole, by the oracle's gold replay
# (tests/eval/test_bfcl_gold_replay.py: every entry of every category, every lane, the
# exceptions listed by id). A second walk of the same answers here asserted the same property.
