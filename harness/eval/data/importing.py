"""What every importer shares: its failure (every problem listed), its report, and reading its input.

The importers (``shellper_import``, and each benchmark folder's, ``harness.benchmarks``) turn upstream data into suite directories
(suite.yaml + cases.jsonl); the project ships loaders, not the upstream files.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.files import InputFileError, load_json, read_text


class ImportFailure(ValueError):
    """The input has problems; ``problems`` lists them (``<where>: <what>``)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__((self.problems[0] if self.problems else "import failed") + more)


@dataclass
class ImportReport:
    """What an import read, wrote and left out."""

    out_dir: Path
    source: str
    records: int = 0
    cases: int = 0
    conversations: int = 0
    duplicates: int = 0
    conflicts: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    """Problems of records left out under ``skip_invalid``."""
    notes: Counter[str] = field(default_factory=Counter)
    """What was done to imported records, counted (e.g. long-context expansions)."""

    def summary(self) -> str:
        parts = [f"read {self.records} records from {self.source}", f"wrote {self.cases} cases to {self.out_dir}"]
        if self.conversations:
            parts.append(f"{self.conversations} conversations")
        if self.duplicates:
            parts.append(f"{self.duplicates} duplicate points merged")
        if self.conflicts:
            parts.append(f"{self.conflicts} conflicting points kept as alternatives")
        for note, n in sorted(self.notes.items()):
            parts.append(f"{n} {note}")
        for reason, n in sorted(self.skipped.items()):
            parts.append(f"skipped {n}: {reason}")
        if self.errors:
            parts.append(f"left out {len(self.errors)} invalid")
        return "; ".join(parts)


def slug(raw: str) -> str:
    """A suite name made of ``raw``: lower case, runs of other characters as ``-``."""
    return re.sub(r"[^a-z0-9_.-]+", "-", raw.lower()).strip("-._") or "imported"


def suite_name(out: Path, name: str | None) -> str:
    """``name``, else the output folder's name, as a suite name."""
    return slug(name or out.resolve().name)


def read_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line, value) per JSON line of ``path`` (or per item of a JSON list); a line that is not JSON
    comes as a ValueError in place of its value. ImportFailure when the file cannot be read."""
    try:
        text = read_text(path)
        if text.lstrip().startswith("["):
            data = load_json(text, path)
            yield from enumerate(data, start=1)
            return
    except InputFileError as exc:
        raise ImportFailure([str(exc)]) from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                yield lineno, load_json(line, f"line {lineno}")
            except InputFileError as exc:
                yield lineno, ValueError(exc.reason)


def read_entries(path: Path, report: ImportReport, problems: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, entry) per entry of ``path`` that is an object with a string ``id``, each record counted in
    ``report``; every other record is a problem naming its file and line."""
    for lineno, raw in read_lines(path):
        report.records += 1
        where = f"{path}:{lineno}"
        if isinstance(raw, Exception) or not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            problems.append(f"{where}: {raw if isinstance(raw, Exception) else 'expected an entry with an id'}")
            continue
        yield where, raw


def read_answers(path: Path | None, problems: list[str]) -> dict[str, Any]:
    """``id`` -> ``ground_truth`` of each record of an answers file (none without one); a record without
    an id is a problem naming its file and line."""
    truth: dict[str, Any] = {}
    for lineno, raw in read_lines(path) if path is not None else ():
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            truth[raw["id"]] = raw.get("ground_truth")
        else:
            problems.append(f"{path}:{lineno}: {raw if isinstance(raw, Exception) else 'expected {id, ground_truth}'}")
    return truth


def check_new_suite(out: Path, cases_file: str = "cases.jsonl") -> None:
    """ImportFailure when ``out`` already holds a suite (its suite.yaml or cases file, or a link in their
    place): an import writes a new suite and never overwrites one, nor writes through a link."""
    held = [name for name in ("suite.yaml", cases_file) if os.path.lexists(Path(out) / name)]
    if held:
        raise ImportFailure([f"--out {out}: already holds {' and '.join(held)}: an import writes a new suite "
                             "and overwrites none (remove them, or import into a new folder); nothing was written"])


__all__ = ["ImportFailure", "ImportReport", "check_new_suite", "read_answers", "read_entries", "read_lines", "slug",
           "suite_name"]
