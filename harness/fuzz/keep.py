"""What ``harness fuzz`` keeps: counterexamples as calls files, the report, a JUnit file, a baseline.

Calls files: one per family x strategy, ``<family>-<strategy>.jsonl``, one counterexample a line in
the format ``harness grammar check --calls`` replays: ``{"calls": [...]}`` (or ``{"text": "..."}``
for a raw answer), with ``"expect"`` (``accepted`` or ``rejected``) so the replay fails exactly where
the grammar is still wrong, and the outcome, tool, keyword and reason beside. Replay one with::

    harness grammar check --family F --strategy S --tools TOOLS --calls DIR/F-S.jsonl
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.files import xml_text
from harness.fuzz.outcomes import FAILING, FuzzReport, Outcome


def write_calls_files(report: FuzzReport, folder: Path) -> list[Path]:
    """One calls file per family x strategy that has counterexamples; the files written."""
    lines: dict[tuple[str, str], list[str]] = {}
    for cell in report.cells:
        for found in cell.counterexamples:
            line: dict[str, Any] = {"calls": found.calls} if found.calls is not None else {"text": found.text}
            line.update(expect=found.expect, outcome=found.outcome.value, tool=found.tool, keyword=found.keyword,
                        why=found.why, shrunk=found.shrunk)
            lines.setdefault((cell.family, cell.strategy), []).append(json.dumps(line, ensure_ascii=False))
    written = []
    folder.mkdir(parents=True, exist_ok=True)
    for (family, strategy), rows in sorted(lines.items()):
        path = folder / f"{family}-{strategy}.jsonl"
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        written.append(path)
    return written


def write_junit(report: FuzzReport, path: Path) -> None:
    """A JUnit XML file: one test case per cell (class ``family.strategy``, name the tool), failing
    cells with their classes and counterexamples, ``not_enforced`` cells and vLLM's gaps (when they do not
    fail the run) with a note in system-out."""
    from junitparser import Failure, JUnitXml, TestCase, TestSuite

    suite = TestSuite("harness fuzz")
    for cell in report.cells:
        case = TestCase(xml_text(cell.tool), classname=f"{cell.family}.{cell.strategy}", time=cell.seconds)
        failing = sorted(k for k in cell.classes if Outcome(k) in report.failing_classes)
        if failing:
            lines = [f"{c.outcome.value}: {c.why} :: {json.dumps(c.calls if c.calls is not None else c.text)}"
                     for c in cell.counterexamples]
            failure = Failure(xml_text(f"{', '.join(failing)}{': ' + cell.message if cell.message else ''}"))
            failure.text = xml_text("\n".join(lines))
            case.result = [failure]
        notes = [f"not enforced by this strategy: {json.dumps(cell.not_enforced)}"] if cell.not_enforced else []
        if Outcome.vllm_gap.value in cell.classes and Outcome.vllm_gap.value not in failing:
            notes.append(f"vllm_gap {cell.classes[Outcome.vllm_gap.value]}: left open by vLLM's own {cell.strategy}, "
                         "by design (not failing the run)" + (f": {cell.message}" if cell.message else ""))
        if Outcome.grammar_limit.value in cell.classes:
            notes.append(f"grammar_limit {cell.classes[Outcome.grammar_limit.value]}: valid calls refused by a "
                         "documented limit of the grammar (not failing the run)")
        notes += [f"defective: {d.label} ({d.kind}): {d.file or d.key}" for d in cell.defects]
        if cell.reference is not None:
            from harness.fuzz.reference import junit_text

            notes.append(junit_text(cell.reference))
        if notes:
            case.system_out = xml_text("\n".join(notes))
        suite.add_testcase(case)
    if report.reference is not None:  # the differential's counts per family/strategy and class
        from harness.fuzz.reference import reference_summary

        for key, row in reference_summary(report.reference, report.cells).items():
            for cls, n in sorted(row["classes"].items()):
                suite.add_property(f"reference.{key}.{cls}", str(n))
            for keyword_cls, keywords in sorted(row["by_keyword"].items()):
                for keyword, n in sorted(keywords.items()):
                    suite.add_property(f"reference.{key}.{keyword_cls}.{keyword}", str(n))
    xml = JUnitXml()
    xml.add_testsuite(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    xml.write(str(path), pretty=True)


def read_expected(path: Path) -> dict[str, list[str]]:
    """An ``--expected`` baseline: ``{"tool/family/strategy": [failing classes]}``; ValueError naming
    the file and the entry otherwise."""
    from harness.files import read_json

    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object of cells to lists of outcome classes")
    cells = data.get("cells", data)
    if not isinstance(cells, dict):
        raise ValueError(f"{path}: cells: expected an object")
    known = {c.value for c in FAILING | {Outcome.vllm_gap}}  # a baseline of a run that failed on vLLM's gaps
    for key, classes in cells.items():
        if not isinstance(classes, list) or not all(isinstance(c, str) and c in known for c in classes):
            raise ValueError(f"{path}: {key}: expected a list of outcome classes among {', '.join(sorted(known))}")
    return {str(k): list(v) for k, v in cells.items()}


def write_expected(report: FuzzReport, path: Path) -> None:
    """The baseline of ``report`` (``--update``)."""
    from harness.fuzz.outcomes import baseline

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": baseline(report)}, indent=1, sort_keys=True) + "\n", encoding="utf-8")


__all__ = ["read_expected", "write_calls_files", "write_expected", "write_junit"]
