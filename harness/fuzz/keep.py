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
from harness.fuzz.outcomes import FAILING, FuzzReport


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
    cells with their classes and counterexamples, ``not_enforced`` cells with a note in system-out."""
    from junitparser import Failure, JUnitXml, TestCase, TestSuite

    suite = TestSuite("harness fuzz")
    for cell in report.cells:
        case = TestCase(xml_text(cell.tool), classname=f"{cell.family}.{cell.strategy}", time=cell.seconds)
        failing = sorted(k for k in cell.classes if k in {c.value for c in FAILING})
        if failing:
            lines = [f"{c.outcome.value}: {c.why} :: {json.dumps(c.calls if c.calls is not None else c.text)}"
                     for c in cell.counterexamples]
            failure = Failure(xml_text(f"{', '.join(failing)}{': ' + cell.message if cell.message else ''}"))
            failure.text = xml_text("\n".join(lines))
            case.result = [failure]
        if cell.not_enforced:
            case.system_out = xml_text(f"not enforced by this strategy: {json.dumps(cell.not_enforced)}")
        suite.add_testcase(case)
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
    known = {c.value for c in FAILING}
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
