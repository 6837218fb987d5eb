"""``harness fuzz``: property-based checking of a tool set's grammars and parsers (see ``run``).

For every tool in every lane (family x strategy), a cell, Hypothesis draws arguments valid for the tool's
JSON schema and the cell checks that the compiled grammar accepts them token by token with the family's real
tokenizer, that the parser gives them back, that near-miss mutants are rejected (or named as not
enforced), that random walks through the mask end in valid calls, and that the parser never raises.
Importing this package loads Hypothesis and jsonschema: the CLI imports it inside the command.
"""

from __future__ import annotations

from harness.fuzz.defects import Defect, keep_defects
from harness.fuzz.inputs import load_fuzz_tools
from harness.fuzz.keep import read_expected, write_calls_files, write_expected, write_junit
from harness.fuzz.outcomes import (
    FAILING,
    VLLM_REFUSES,
    CellReport,
    Counterexample,
    FuzzInterrupted,
    FuzzReport,
    Outcome,
    baseline,
    compare,
)
from harness.fuzz.run import FuzzOptions, build_grammar, draw_case, fuzz

__all__ = [
    "FAILING",
    "VLLM_REFUSES",
    "CellReport",
    "Counterexample",
    "Defect",
    "FuzzInterrupted",
    "FuzzOptions",
    "FuzzReport",
    "Outcome",
    "baseline",
    "build_grammar",
    "compare",
    "draw_case",
    "fuzz",
    "keep_defects",
    "load_fuzz_tools",
    "read_expected",
    "write_calls_files",
    "write_expected",
    "write_junit",
]
