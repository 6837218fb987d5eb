"""What the token-level differential reports: per cell (one tool in one lane), the tokens two engines disagree on and what
each disagreement is, per class and per keyword, with examples; summed per family x strategy.

Classes of a disagreeing token (allowed by one engine, masked by the other, after the same prefix):

- ``over_constraining``: the engine that masks it is wrong: the token continues a valid call (the
  instance's own next token on a valid instance, or a completion under the other engine that the
  tool's JSON-schema validator accepts);
- ``under_constraining``: the engine that allows it is wrong: every completion from it under that
  engine ends in a dead end (no token allowed, no stop in reach) or a call the validator rejects;
- ``special_tokens``: the engines treat added tokens differently, neither grammar is wrong: a token
  llguidance treats as special (never text) that xgrammar lets through as text inside a string; one
  the harness blanks in xgrammar's vocabulary (Gemma's ``[multimodal]``) that llguidance lets through;
  the first piece of a control marker spelt in pieces (``<`` of ``<tool_call>``), which xgrammar
  allows and llguidance cannot (it knows the marker as its special token only);
- ``unresolved``: the completions ran out of tokens before they ended.

Each class but the last two names the engine at fault (``over_constraining:llguidance``...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

OVER = "over_constraining"
UNDER = "under_constraining"
SPECIAL = "special_tokens"
UNRESOLVED = "unresolved"
EXAMPLES_KEPT = 3
"""Examples kept per class and cell."""


class DisagreementExample(BaseModel):
    """One classified disagreement."""

    cls: str
    """``over_constraining:<engine>``, ``under_constraining:<engine>``, ``special_tokens``, ``unresolved``."""
    keyword: str
    allowed_by: str
    token: str
    """The token's text (``<stop>`` for a stop token)."""
    token_id: int
    prefix: str
    """The text before the token (its last 120 characters)."""
    completion: str | None = None
    """The text the allowing engine went on to (its last 200 characters)."""
    verdict: str = ""
    """What the tool's validator said of the completion."""


class ReferenceCell(BaseModel):
    """The differential of one tool x family x strategy against the reference engine."""

    engine: str
    comparable: bool
    note: str | None = None
    """Why the engines cannot read the same grammar, or how it was converted."""
    instances: int = 0
    """Valid and invalid instances walked."""
    prefixes: int = 0
    """Prefixes whose two masks were compared."""
    disagreeing_tokens: int = 0
    """Tokens allowed by one engine and masked by the other, over all prefixes."""
    classified: int = 0
    """Of those, how many were classified (a sample: at most a few per prefix)."""
    classes: dict[str, int] = Field(default_factory=dict)
    by_keyword: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Class -> keyword -> count."""
    examples: list[DisagreementExample] = Field(default_factory=list)
    sampled: bool = False
    """Some disagreeing tokens were left unclassified (see ``classified``)."""
    timed_out: bool = False
    """The cell's time ran out before every instance was walked."""
    seconds: float = 0.0

    def add(self, example: DisagreementExample, count: int = 1) -> None:
        """``count`` disagreements of ``example``'s class and keyword (``example`` kept as one)."""
        self.classified += count
        self.classes[example.cls] = self.classes.get(example.cls, 0) + count
        keywords = self.by_keyword.setdefault(example.cls, {})
        keywords[example.keyword] = keywords.get(example.keyword, 0) + count
        if sum(e.cls == example.cls for e in self.examples) < EXAMPLES_KEPT:
            self.examples.append(example)


def reference_summary(engine: str, cells: Sequence[Any]) -> dict[str, Any]:
    """Per family/strategy: the classes' counts summed over the tools, per keyword, and where the
    engines could not be compared."""
    per: dict[str, dict[str, Any]] = {}
    for cell in cells:
        ref: ReferenceCell | None = cell.reference
        if ref is None:
            continue
        row = per.setdefault(f"{cell.family}/{cell.strategy}", {
            "engine": engine, "cells": 0, "not_comparable": 0, "instances": 0, "prefixes": 0,
            "disagreeing_tokens": 0, "classified": 0, "classes": {}, "by_keyword": {}, "sampled": False,
            "timed_out": 0, "notes": []})
        row["cells"] += 1
        if not ref.comparable:
            row["not_comparable"] += 1
            if ref.note and ref.note not in row["notes"]:
                row["notes"].append(ref.note)
            continue
        for name in ("instances", "prefixes", "disagreeing_tokens", "classified"):
            row[name] += getattr(ref, name)
        row["sampled"] = row["sampled"] or ref.sampled
        row["timed_out"] += ref.timed_out
        for cls, n in ref.classes.items():
            row["classes"][cls] = row["classes"].get(cls, 0) + n
        for cls, keywords in ref.by_keyword.items():
            into = row["by_keyword"].setdefault(cls, {})
            for keyword, n in keywords.items():
                into[keyword] = into.get(keyword, 0) + n
    return per


__all__ = ["OVER", "SPECIAL", "UNDER", "UNRESOLVED", "DisagreementExample", "ReferenceCell", "reference_summary"]
