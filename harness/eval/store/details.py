"""details.jsonl: what report.html shows beyond samples.jsonl and scores.parquet, written by scoring.

Scoring executes every case's gold calls and every sample's calls on the run's own tools (``.pym``
tools on a file system, Python classes in the tool worker) to judge their state; what it saw there is
kept here, so the report reads the run directory alone and never runs a tool, loads a bundle or starts
a worker. One line per case (``CaseDetail``: each gold call with its tool output) and one per sample
whose state check failed (``SampleDiff``: where its state and gold's part ways, as a diff). The file
is rewritten whole (temp file and rename) each time a run is scored; a run directory scored before
the file existed has none (``read_details`` gives None, and ``harness score`` writes it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from harness.eval.store.base import Record
from harness.eval.store.records import CallRecord
from harness.eval.store.results import RunDirError, _problems, _read_text, _write_atomic
from harness.files import MAX_FILE_BYTES, InputFileError, load_json

DETAILS_FILE = "details.jsonl"


class GoldOutput(Record):
    """A gold call and what the run's tools returned for it."""

    turn: int | None
    """Episodes: the user turn it belongs to; None for a next-call point's expected call."""
    call: CallRecord
    """The call."""
    output: Any
    """Its tool output (JSON; a call the tools refused: ``tool:reason: message``)."""


class StateDifference(Record):
    """Where a sample's state and gold's part ways: the first place the state check compared and found them
    unequal."""

    state: Literal["file_system", "instances"]
    """``file_system``: the tree and current folder of ``.pym`` tools; ``instances``: the public attributes
    of the episode's Python classes (as the tool worker snapshots them)."""
    turn: int | None
    """Episodes: the user turn after which they differ; None for a next-call point (after its call)."""
    lines: tuple[str, ...]
    """A unified diff, gold (-) against the sample (+): one line per path of the tree (``/root/a.txt =
    "text"``) and the current folder, or the snapshot as indented JSON."""


class CaseDetail(Record):
    """One line of details.jsonl: a case's gold calls with their outputs."""

    kind: Literal["case"] = "case"
    case_id: str
    """The suite case."""
    gold: tuple[GoldOutput, ...]
    """In order (next-call: the expected call; episodes: every turn's; single-turn cases: none, their
    tools are schemas that nothing runs)."""


class SampleDiff(Record):
    """One line of details.jsonl: a sample whose state check failed."""

    kind: Literal["sample"] = "sample"
    sample_id: str
    """The sample."""
    difference: StateDifference
    """Its state against gold's."""


DetailLine = Annotated[CaseDetail | SampleDiff, Field(discriminator="kind")]


@dataclass(slots=True)
class Details:
    """What ``read_details`` found: case id -> its gold, sample id -> its state difference."""

    cases: dict[str, CaseDetail] = field(default_factory=dict)
    samples: dict[str, SampleDiff] = field(default_factory=dict)


def write_details(run_dir: Path, cases: Iterable[CaseDetail], samples: Iterable[SampleDiff]) -> None:
    """details.jsonl, the cases first, then the samples (each a compact JSON line)."""
    lines = [record.model_dump_json() + "\n" for record in (*cases, *samples)]
    _write_atomic(Path(run_dir) / DETAILS_FILE, "".join(lines))


def read_details(run_dir: Path) -> Details | None:
    """details.jsonl of a run directory (optional: None when absent, a run scored before it was written);
    a line that is not a detail record is a RunDirError naming its line."""
    path = Path(run_dir) / DETAILS_FILE
    if not path.exists():
        return None
    adapter: TypeAdapter[CaseDetail | SampleDiff] = TypeAdapter(DetailLine)
    found = Details()
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = adapter.validate_python(load_json(line, f"line {number}", max_bytes=MAX_FILE_BYTES))
        except InputFileError as exc:
            raise RunDirError(path, str(exc)) from None
        except ValidationError as exc:
            raise RunDirError(path, f"line {number}: not a detail record: {_problems(exc, DetailLine)}") from None
        if isinstance(record, CaseDetail):
            found.cases[record.case_id] = record
        else:
            found.samples[record.sample_id] = record
    return found


__all__ = [
    "DETAILS_FILE",
    "CaseDetail",
    "Details",
    "GoldOutput",
    "SampleDiff",
    "StateDifference",
    "read_details",
    "write_details",
]
