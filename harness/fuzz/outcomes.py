"""What ``harness fuzz`` reports: outcome classes per tool x family x strategy, the counterexamples
kept, and the comparison with an expected baseline.

Outcome classes, named as grammar benchmarks name them, from the most to the least severe (a cell's
``outcome`` is the most severe class it showed; ``classes`` lists them all):

- ``parser_crash``: the family's parser raised on some text instead of returning a typed error;
- ``validation_error``: a call valid for the schema was rejected by the grammar;
- ``invalidation_error``: the grammar accepted a call (or a walk reached a text) that the schema
  forbids, through a keyword the strategy claims to enforce;
- ``round_trip_error``: parsing a rendered call did not give that call back (or a truncated answer
  parsed without an error);
- ``target_disagreement``: vLLM's own grammar backend (``--target vllm``) judged a text otherwise;
- ``build_error``: the constraint could not be built or compiled (the message names the keyword);
- ``timeout``: the cell ran out of time before its examples were done;
- ``schema_invalid``, ``schema_unsatisfiable``, ``generation_slow``: bad input, found before any
  grammar ran: not a JSON schema, a schema no value satisfies (or none was found), a schema whose
  values Hypothesis cannot draw in time;
- ``vllm_gap``: a gap vLLM's own strategy leaves by design, not the tools' nor the harness's: an
  invalid call (or a walk's invalid text) accepted where vLLM's constraint leaves the arguments free
  (Qwen's ``required``), no constraint at all (FunctionGemma's ``strict``), or a tool's schema vLLM
  refuses (its 400, as ``harness.vllm_schemas`` predicts it) in a lane whose JSON schema vLLM checks
  (``json_schema``, FunctionGemma's ``required``); counted, failing the run only when asked
  (``FuzzReport.vllm_gaps_fail``);
- ``grammar_limit``: a valid call the harness's grammar refuses by a documented limit (FunctionGemma's
  ``ebnf``/``structural_tag`` leave ``<`` out of a pattern's or format's character classes: its
  ``<escape>`` delimiter starts with it; docs/schemas.md): named, not a failure;
- ``not_enforced``: a call breaking a keyword the strategy does not enforce (the README's keyword
  table says so) was accepted: named, not a failure;
- ``passing``.
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from harness.fuzz.defects import Defect
from harness.fuzz.reference.records import ReferenceCell, reference_summary


class Outcome(StrEnum):
    """One outcome class (most severe first)."""

    parser_crash = "parser_crash"
    validation_error = "validation_error"
    invalidation_error = "invalidation_error"
    round_trip_error = "round_trip_error"
    target_disagreement = "target_disagreement"
    build_error = "build_error"
    timeout = "timeout"
    schema_invalid = "schema_invalid"
    schema_unsatisfiable = "schema_unsatisfiable"
    generation_slow = "generation_slow"
    vllm_gap = "vllm_gap"
    grammar_limit = "grammar_limit"
    not_enforced = "not_enforced"
    passing = "passing"


SEVERITY: tuple[Outcome, ...] = tuple(Outcome)
FAILING: frozenset[Outcome] = frozenset(set(Outcome) - {Outcome.passing, Outcome.not_enforced, Outcome.vllm_gap,
                                                          Outcome.grammar_limit})
"""Classes that make ``harness fuzz`` exit 1 (with no baseline); ``vllm_gap`` too when asked
(``FuzzReport.failing_classes``)."""


def let_through(family: str, strategy: str) -> Outcome:
    """The class of an invalid call a cell's grammar accepts: ``vllm_gap`` where vLLM's own constraint
    leaves the arguments free by design, else ``invalidation_error``."""
    from harness.grammar.families import builder_of

    return Outcome.vllm_gap if builder_of(family, strategy) == "free" else Outcome.invalidation_error


def predicted(family: str, strategy: str, schema: Any) -> set[Outcome]:
    """The classes the keyword table predicts for a tool's cell: ``build_error`` where a keyword is
    refused, ``vllm_gap`` where vLLM refuses the schema (its 400) or leaves the arguments free,
    validation and invalidation errors where a keyword is ``defective``, ``grammar_limit`` where a
    FunctionGemma grammar of the harness spells a pattern or format; ``passing`` always."""
    from harness.grammar.families import builder_of, keywords_used, refused_keyword, support
    from harness.vllm_schemas import lane_refusal

    out = {Outcome.passing}
    builder = builder_of(family, strategy)
    if builder == "free":  # vLLM's own constraint leaves the arguments free
        return out | {Outcome.vllm_gap, Outcome.not_enforced}
    if lane_refusal(family, strategy, schema):
        out.add(Outcome.vllm_gap)  # vLLM answers 400 to this schema in this lane: vLLM's, by design
    if refused_keyword(schema, builder) is not None:
        out.add(Outcome.build_error)  # a keyword the builder cannot say
    used = keywords_used(schema)
    if any(support(family, strategy, k) == "defective" for k in used):
        out |= {Outcome.validation_error, Outcome.invalidation_error}
    if any(support(family, strategy, k) == "ignored" for k in used):  # vLLM's lanes: xgrammar drops it
        out.add(Outcome.not_enforced)
    if _lt_left_out(family, strategy) and used & {"pattern", "format"}:
        out.add(Outcome.grammar_limit)
    return out


VLLM_REFUSES = "vLLM refuses this tool's schema in this lane (its own check, by design)"
"""The start of a ``vllm_gap`` cell's message where vLLM answers 400 to the tool's schema."""


def vllm_refusal(family: str, strategy: str, schema: Any, error: str) -> str | None:
    """The ``vllm_gap`` message of a cell whose build ``error`` is vLLM's 400 to the tool's schema, as
    ``harness.vllm_schemas`` predicts it (lengths beside a ``format`` or ``pattern``, ``multipleOf``...);
    None for any other build error, which stays a ``build_error``."""
    from harness.vllm_schemas import lane_refusal

    if lane_refusal(family, strategy, schema) is None or "answers 400" not in error:
        return None
    return f"{VLLM_REFUSES}: {error}"


LT_LIMIT = ("FunctionGemma's grammars leave `<` out of a pattern's or format's character classes "
            "(`<escape>` ends its strings; docs/schemas.md)")
"""Why a ``grammar_limit`` finding is one."""


def _lt_left_out(family: str, strategy: str) -> bool:
    from harness.grammar.families import builder_of

    return family == "function_gemma" and builder_of(family, strategy) == "harness"


def grammar_limit(family: str, strategy: str, schema: Any, value: Any) -> str | None:
    """Why a valid ``value`` the cell's grammar rejected is the documented limit (``LT_LIMIT``): a
    FunctionGemma lane of the harness and a string holding ``<`` under a ``pattern`` or ``format``;
    None otherwise (a ``validation_error``)."""
    return LT_LIMIT if _lt_left_out(family, strategy) and _lt_in_text_class(schema, value, schema, 0) else None


def _lt_in_text_class(schema: Any, value: Any, root: Any, depth: int) -> bool:
    """Whether ``value`` holds a string with ``<`` where ``schema`` puts a ``pattern`` or ``format``
    (through ``$ref``, combinators, properties and items; any branch counts)."""
    if depth > 64 or not isinstance(schema, dict):
        return False
    if isinstance(ref := schema.get("$ref"), str) and ref.startswith("#"):
        target: Any = root
        for part in [p.replace("~1", "/").replace("~0", "~") for p in ref[1:].split("/") if p]:
            target = target.get(part) if isinstance(target, dict) else None
        if _lt_in_text_class(target, value, root, depth + 1):
            return True
    for key in ("anyOf", "oneOf", "allOf"):
        subs = schema.get(key)
        if isinstance(subs, list) and any(_lt_in_text_class(s, value, root, depth + 1) for s in subs):
            return True
    if isinstance(value, str):
        return "<" in value and ("pattern" in schema or "format" in schema)
    if isinstance(value, dict):
        props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        return any(_lt_in_text_class(props[k] if k in props else schema.get("additionalProperties"), v, root, depth + 1)
                   for k, v in value.items())
    if isinstance(value, list):
        prefix: list[Any] = schema["prefixItems"] if isinstance(schema.get("prefixItems"), list) else []
        return any(_lt_in_text_class(prefix[i] if i < len(prefix) else schema.get("items"), v, root, depth + 1)
                   for i, v in enumerate(value))
    return False


def worst(classes: set[Outcome]) -> Outcome:
    """The most severe of ``classes`` (``passing`` for none)."""
    return next((c for c in SEVERITY if c in classes), Outcome.passing)


class Counterexample(BaseModel):
    """One finding, as a line ``harness grammar check`` replays."""

    outcome: Outcome
    """The class it shows."""
    tool: str
    """The tool of the cell that found it."""
    family: str
    strategy: str
    expect: str
    """``accepted`` (a valid call the grammar must take) or ``rejected`` (one it must refuse)."""
    calls: list[dict[str, Any]] | None = None
    """The calls (``{"name", "arguments"}``), shrunk by Hypothesis where it could."""
    text: str | None = None
    """The raw answer text, where the finding is a text rather than calls (walks, broken escaping)."""
    why: str
    """What is wrong, in words (the keyword, the token where the grammar stopped...)."""
    keyword: str | None = None
    """The schema keyword involved, when there is one."""
    shrunk: bool = False
    """Hypothesis shrank it (else it is the first example found)."""


class CellReport(BaseModel):
    """One cell: one tool in one lane (family x strategy)."""

    tool: str
    family: str
    strategy: str
    outcome: Outcome
    """The most severe class seen."""
    classes: dict[str, int] = Field(default_factory=dict)
    """Every class seen, with how many checks showed it."""
    not_enforced: dict[str, int] = Field(default_factory=dict)
    """Invalid calls accepted per keyword the strategy does not enforce."""
    examples: int = 0
    """Distinct valid calls checked (rendered, walked, parsed back)."""
    valid_rejected: int = 0
    mutants: int = 0
    """Invalid neighbours checked."""
    invalid_accepted: int = 0
    """Mutants accepted (``not_enforced`` ones included)."""
    walks: int = 0
    """Random walks through the mask that ended."""
    walks_invalid: int = 0
    parsed_noise: int = 0
    """Arbitrary and truncated texts fed to the parser."""
    target_disagreements: int = 0
    compile_ms: float | None = None
    """Cold compile of the tool set's constraint for this family and strategy."""
    mask_us_p50: float | None = None
    mask_us_p99: float | None = None
    mask_us_max: float | None = None
    seconds: float = 0.0
    """Time spent on this cell (generation excluded)."""
    message: str | None = None
    """Why the cell could not run (build error, bad schema...)."""
    unpredicted: list[str] = Field(default_factory=list)
    """Classes seen that the README's keyword table does not predict for this tool's schema: bugs of
    the builders (or of the table)."""
    counterexamples: list[Counterexample] = Field(default_factory=list)
    defects: list[Defect] = Field(default_factory=list)
    """Defects of the grammar library behind this cell's failures (``harness.fuzz.defects``)."""
    reference: ReferenceCell | None = None
    """The token-level differential against a second engine (``--reference``)."""

    @property
    def key(self) -> str:
        return f"{self.tool}/{self.family}/{self.strategy}"


class FuzzReport(BaseModel):
    """A whole ``harness fuzz`` run."""

    tools_path: str
    families: list[str]
    strategies: list[str]
    examples: int
    """Examples asked per tool (distinct ones checked are in each cell)."""
    seed: int
    target: str | None = None
    cells: list[CellReport]
    seconds: float
    """Wall time of the run."""
    counterexample_files: list[str] = Field(default_factory=list)
    reference: str | None = None
    """The second engine of the token-level differential (``--reference``)."""
    defects: list[Defect] = Field(default_factory=list)
    """Each defect of the grammar library found, once (with its reproduction's file once written)."""
    vllm_gaps_fail: bool = False
    """``vllm_gap`` fails the run too (``--fail-on-vllm-gaps``, or ``--strategy required|strict`` named)."""

    @property
    def failing_classes(self) -> frozenset[Outcome]:
        """The classes that fail this run: ``FAILING``, and ``vllm_gap`` when ``vllm_gaps_fail``."""
        return FAILING | {Outcome.vllm_gap} if self.vllm_gaps_fail else FAILING

    def vllm_gaps(self) -> dict[str, int]:
        """Per lane (``family/strategy``), the cells that showed ``vllm_gap``."""
        gaps = Counter(f"{c.family}/{c.strategy}" for c in self.cells if Outcome.vllm_gap.value in c.classes)
        return dict(sorted(gaps.items()))

    def summary(self) -> dict[str, Any]:
        """Counts per outcome class and the failing cells: the JSON line printed last."""
        counts: dict[str, int] = {}
        for cell in self.cells:
            counts[cell.outcome.value] = counts.get(cell.outcome.value, 0) + 1
        return {
            "tools": self.tools_path,
            "cells": len(self.cells),
            "outcomes": counts,
            "failing": [c.key for c in self.cells if c.outcome in self.failing_classes],
            "vllm_gaps": self.vllm_gaps(),
            "vllm_gaps_fail": self.vllm_gaps_fail,
            "unpredicted": [f"{c.key}: {', '.join(c.unpredicted)}" for c in self.cells if c.unpredicted],
            "not_enforced": sorted({k for c in self.cells for k in c.not_enforced}),
            "examples": self.examples,
            "seed": self.seed,
            "target": self.target,
            "seconds": round(self.seconds, 2),
            "counterexample_files": self.counterexample_files,
            "defective": self.defective(),
            "defects": [d.file or d.key for d in self.defects],
            **({"reference": reference_summary(self.reference, self.cells)} if self.reference else {}),
        }

    def defective(self) -> dict[str, list[str]]:
        """Per lane (``family/strategy``), the labels of the library defects its cells met (``format:email``...)."""
        out: dict[str, set[str]] = {}
        for cell in self.cells:
            if cell.defects:
                out.setdefault(f"{cell.family}/{cell.strategy}", set()).update(d.label for d in cell.defects)
        return {k: sorted(v) for k, v in sorted(out.items())}


def baseline(report: FuzzReport) -> dict[str, list[str]]:
    """The ``--expected`` file's content: each cell's failing classes."""
    return {c.key: sorted(k for k in c.classes if Outcome(k) in report.failing_classes) for c in report.cells}


def compare(report: FuzzReport, expected: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """(worse, better) against a baseline: a cell with a failing class the baseline lacks is worse; a
    class of the baseline that is gone (or a cell gone) is better."""
    now = baseline(report)
    worse = [f"{key}: {', '.join(sorted(set(classes) - set(expected.get(key, []))))}"
             for key, classes in now.items() if set(classes) - set(expected.get(key, []))]
    better = [f"{key}: {', '.join(sorted(set(classes) - set(now.get(key, []))))} gone"
              for key, classes in expected.items() if set(classes) - set(now.get(key, []))]
    return worse, better



class FuzzInterrupted(Exception):
    """SIGTERM or Ctrl-C stopped the run; ``report`` holds the cells that finished."""

    def __init__(self, report: FuzzReport) -> None:
        super().__init__("interrupted")
        self.report = report


__all__ = [
    "FAILING",
    "LT_LIMIT",
    "SEVERITY",
    "VLLM_REFUSES",
    "CellReport",
    "Counterexample",
    "FuzzInterrupted",
    "FuzzReport",
    "Outcome",
    "baseline",
    "compare",
    "grammar_limit",
    "let_through",
    "predicted",
    "vllm_refusal",
    "worst",
]
