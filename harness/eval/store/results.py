"""The results store: ``results/<run-id>/`` with run.json, samples.jsonl, scores.parquet, summary.json
and errors.json, each read and written through its typed record (``harness.eval.store.records``).

The layout is the contract between the runner (writes), scoring (reads samples, writes scores and the
summary) and the report/compare commands (read). ``samples.jsonl`` is append-only: each finished
sample is one line, written, flushed and fsynced by a single writer task the moment it is handed over.
A run killed at any point leaves at most one torn line at the end; ``load_samples`` ignores it and
``repair_samples`` cuts it off before a resumed run appends, so nothing is lost or counted twice.
Every file that is there but cannot be read raises RunDirError naming the file (and the line and
field); optional files that are absent read as ``None``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from harness.eval.store.records import (
    ErrorCount,
    Record,
    RunRecord,
    SampleRecord,
    ScoreRow,
    SummaryRow,
)
from harness.files import MAX_FILE_BYTES, InputFileError, TooDeep, load_json, read_bytes, read_text

if TYPE_CHECKING:
    import polars as pl

RUN_FILE = "run.json"
SAMPLES_FILE = "samples.jsonl"
SCORES_FILE = "scores.parquet"
SUMMARY_FILE = "summary.json"
ERRORS_FILE = "errors.json"
RETRIED_FILE = "samples.retried.jsonl"
"""Samples taken out of samples.jsonl by ``--resume --retry-errors`` (they ran again), kept as they were."""

R = TypeVar("R", bound=Record)
T = TypeVar("T")


class RunDirError(Exception):
    """A results file is missing, unreadable or not in its record's shape; ``path`` names it."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


def _problems(exc: ValidationError, model: Any = None) -> str:
    from harness.agents import validation_problems

    return "; ".join(validation_problems(exc, model=model))


def make_sample_id(case_id: str, family: str, strategy: str, epoch: int) -> str:
    """``<case_id>/<family>/<strategy>/<epoch>``: unique within a run, stable across resumes."""
    return f"{case_id}/{family}/{strategy}/{epoch}"


# -- JSON files -------------------------------------------------------------------------------------


def _write_atomic(path: Path, text: str) -> None:
    """Temp file + rename, so a reader never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _json_text(value: BaseModel | Sequence[BaseModel]) -> str:
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else [v.model_dump(mode="json") for v in value]
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _read_text(path: Path) -> str:
    try:
        return read_text(path)
    except InputFileError as exc:
        raise RunDirError(path, exc.reason) from None


def _read_rows(path: Path, model: type[R]) -> list[R]:
    try:
        return TypeAdapter(list[model]).validate_json(_read_text(path))  # type: ignore[valid-type]
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise RunDirError(path, f"not valid JSON: {exc.errors()[0]['msg']}") from exc
        raise RunDirError(path, _problems(exc, list[model])) from exc  # type: ignore[valid-type]


def write_run(run_dir: Path, run: RunRecord) -> None:
    _write_atomic(Path(run_dir) / RUN_FILE, _json_text(run))


def read_run(run_dir: Path) -> RunRecord:
    """``run.json`` (required)."""
    path = Path(run_dir) / RUN_FILE
    text = _read_text(path)
    try:
        return RunRecord.model_validate_json(text)
    except ValidationError as exc:
        raise RunDirError(path, _problems(exc, RunRecord)) from exc


def write_summary(run_dir: Path, rows: Sequence[SummaryRow]) -> None:
    _write_atomic(Path(run_dir) / SUMMARY_FILE, _json_text(rows))


def read_summary(run_dir: Path) -> list[SummaryRow]:
    """``summary.json`` rows (required)."""
    return _read_rows(Path(run_dir) / SUMMARY_FILE, SummaryRow)


def write_errors(run_dir: Path, rows: Sequence[ErrorCount]) -> None:
    _write_atomic(Path(run_dir) / ERRORS_FILE, _json_text(rows))


def read_errors(run_dir: Path) -> list[ErrorCount] | None:
    """``errors.json`` (optional)."""
    path = Path(run_dir) / ERRORS_FILE
    return _read_rows(path, ErrorCount) if path.exists() else None


# -- samples.jsonl ----------------------------------------------------------------------------------


@dataclass
class SampleLog:
    """What ``load_samples`` found: the samples by id (file order) and what it had to skip."""

    samples: dict[str, SampleRecord] = field(default_factory=dict)
    torn_tail_at: int | None = None
    """Byte offset where a torn last line starts (a run was killed mid-write), or None."""
    duplicates: int = 0


def _sample_line(raw: bytes, where: str) -> SampleRecord | None:
    """The record of one line; None when the line is not JSON at all (a torn write). InputFileError for
    JSON nested too deep to be a sample."""
    try:
        value = load_json(raw, where, max_bytes=MAX_FILE_BYTES)  # a line is as long as the runner wrote it
    except TooDeep:
        raise
    except InputFileError:
        return None
    return SampleRecord.model_validate(value)


def load_samples(path: Path) -> SampleLog:
    """Read samples.jsonl. A last line cut off by a kill (no newline, or not JSON) is ignored; a bad
    line anywhere else is a RunDirError naming its line number and field. A repeated sample id keeps
    the last line; the runner never writes one."""
    log = SampleLog()
    path = Path(path)
    if not path.exists():
        return log
    try:
        lines = read_bytes(path).split(b"\n")  # a regular file under MAX_FILE_BYTES (a FIFO is refused, not read)
    except InputFileError as exc:
        raise RunDirError(path, exc.reason) from None
    offset = 0
    for number, raw in enumerate(lines, start=1):
        start, offset = offset, offset + len(raw) + 1
        if number == len(lines):
            if raw.strip():
                log.torn_tail_at = start  # no newline after it: the write never finished
            break
        if not raw.strip():
            continue
        try:
            record = _sample_line(raw, f"line {number}")
        except ValidationError as exc:
            raise RunDirError(path, f"line {number}: not a sample record: {_problems(exc, SampleRecord)}") from exc
        except InputFileError as exc:
            raise RunDirError(path, str(exc)) from None
        if record is None:
            if number == len(lines) - 1 and not lines[-1]:
                log.torn_tail_at = start  # a complete-looking last line that is not JSON: torn too
                break
            raise RunDirError(path, f"line {number}: not JSON (or not UTF-8 text)")
        if record.sample_id in log.samples:
            log.duplicates += 1
        log.samples[record.sample_id] = record
    return log


def read_samples(run_dir: Path) -> SampleLog | None:
    """``samples.jsonl`` of a run directory (optional): ``None`` when absent."""
    path = Path(run_dir) / SAMPLES_FILE
    return load_samples(path) if path.exists() else None


def repair_samples(path: Path) -> SampleLog:
    """Load samples.jsonl and cut off a torn last line so appending can resume cleanly."""
    log = load_samples(path)
    if log.torn_tail_at is not None:
        with open(path, "r+b") as fh:
            fh.truncate(log.torn_tail_at)
            fh.flush()
            os.fsync(fh.fileno())
    return log


def set_aside_errors(path: Path, kind_prefix: str) -> list[str]:
    """Take the samples of samples.jsonl that ended in an error of ``kind_prefix`` (``model:``) out of it,
    so a resumed run runs them again: their lines are appended to samples.retried.jsonl first (kept,
    never lost), then samples.jsonl is rewritten without them (temp file, fsync, rename). Returns their ids."""
    path = Path(path)
    log = load_samples(path)
    retried = [r for r in log.samples.values() if r.status == "error" and (r.error_kind or "").startswith(kind_prefix)]
    if not retried:
        return []
    gone = {r.sample_id for r in retried}
    with open(path.with_name(RETRIED_FILE), "a", encoding="utf-8") as fh:
        fh.write("".join(sample_line(r) for r in retried))
        fh.flush()
        os.fsync(fh.fileno())
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("".join(sample_line(r) for r in log.samples.values() if r.sample_id not in gone))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return sorted(gone)


def sample_line(record: SampleRecord) -> str:
    """One samples.jsonl line (compact JSON, unicode kept, newline-terminated)."""
    return record.model_dump_json() + "\n"


class SampleWriter:
    """The one writer of samples.jsonl: ``put`` hands a finished sample over; a single task appends
    what is queued, then flushes and fsyncs (a group commit when several samples finish at once)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._fh: IO[str] | None = None
        self.written = 0
        self.error: BaseException | None = None

    async def __aenter__(self) -> SampleWriter:
        self._fh = open(self.path, "a", encoding="utf-8")
        self._task = asyncio.create_task(self._loop(), name="samples-writer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def put(self, record: SampleRecord) -> None:
        if self.error is not None:
            raise RuntimeError(f"the samples writer failed: {self.error}") from self.error
        self._queue.put_nowait(sample_line(record))

    async def _loop(self) -> None:
        assert self._fh is not None
        done = False
        while not done:
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            lines = [b for b in batch if b is not None]
            done = len(lines) != len(batch)
            if lines:
                try:
                    self._fh.write("".join(lines))
                    self._fh.flush()
                    await asyncio.to_thread(os.fsync, self._fh.fileno())
                except OSError as exc:
                    self.error = exc
                    raise
                self.written += len(lines)

    async def close(self) -> None:
        if self._task is None:
            return
        self._queue.put_nowait(None)
        try:
            await self._task
        finally:
            self._task = None
            if self._fh is not None:
                with contextlib.suppress(OSError):
                    self._fh.close()


# -- scores.parquet ---------------------------------------------------------------------------------


def _score_schema() -> dict[str, pl.DataType]:
    import polars as pl

    return {
        "sample_id": pl.Utf8(), "case_id": pl.Utf8(), "family": pl.Utf8(), "strategy": pl.Utf8(),
        "epoch": pl.Int64(), "metric": pl.Utf8(), "value": pl.Float64(), "error_kind": pl.Utf8(),
    }


def write_scores(run_dir: Path, rows: Iterable[ScoreRow]) -> None:
    """scores.parquet in long format: one row per sample and metric."""
    import polars as pl

    path = Path(run_dir) / SCORES_FILE
    frame = pl.DataFrame([r.model_dump() for r in rows], schema=_score_schema())
    tmp = path.with_name(path.name + ".tmp")
    frame.write_parquet(tmp)
    os.replace(tmp, path)


def read_scores(run_dir: Path) -> list[ScoreRow] | None:
    """scores.parquet rows (optional): ``None`` when absent."""
    import polars as pl

    path = Path(run_dir) / SCORES_FILE
    if not path.exists():
        return None
    try:
        data = read_bytes(path)  # a regular file under MAX_FILE_BYTES (a FIFO is refused, not read)
    except InputFileError as exc:
        raise RunDirError(path, exc.reason) from None
    try:
        rows = pl.read_parquet(io.BytesIO(data)).to_dicts()
    except Exception as exc:  # polars raises several error types for a damaged file
        raise RunDirError(path, f"cannot read parquet: {exc}") from exc
    try:
        return [ScoreRow.model_validate(r) for r in rows]
    except ValidationError as exc:
        raise RunDirError(path, _problems(exc, ScoreRow)) from exc


def typed_rows(frame: pl.DataFrame, row: Callable[..., T]) -> list[T]:
    """The rows of a polars frame as typed values: ``row`` (a NamedTuple or a record) takes the
    frame's columns by name, so a reader names fields, not string keys, and a renamed column fails
    at once."""
    return [row(**values) for values in frame.iter_rows(named=True)]


def scores_frame(rows: Iterable[ScoreRow]) -> pl.DataFrame:
    """Score rows as a polars frame (the report groups with it)."""
    import polars as pl

    return pl.DataFrame([r.model_dump() for r in rows], schema=_score_schema())


# -- a whole run directory ----------------------------------------------------------------------------


@dataclass(slots=True)
class RunDir:
    """Everything report needs from one results directory."""

    path: Path
    run: RunRecord
    summary: list[SummaryRow]
    samples: SampleLog | None
    scores: list[ScoreRow] | None
    errors: list[ErrorCount] | None

    @property
    def run_id(self) -> str:
        return self.run.run_id or self.path.name


def load_run_dir(run_dir: Path) -> RunDir:
    """Read a whole results directory; ``run.json`` and ``summary.json`` are required."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(run_dir, "not a directory")
    return RunDir(
        path=run_dir,
        run=read_run(run_dir),
        summary=read_summary(run_dir),
        samples=read_samples(run_dir),
        scores=read_scores(run_dir),
        errors=read_errors(run_dir),
    )


__all__ = [
    "ERRORS_FILE",
    "RETRIED_FILE",
    "RUN_FILE",
    "SAMPLES_FILE",
    "SCORES_FILE",
    "SUMMARY_FILE",
    "RunDir",
    "RunDirError",
    "SampleLog",
    "SampleWriter",
    "load_run_dir",
    "load_samples",
    "make_sample_id",
    "read_errors",
    "read_run",
    "read_samples",
    "read_scores",
    "read_summary",
    "repair_samples",
    "sample_line",
    "scores_frame",
    "set_aside_errors",
    "typed_rows",
    "write_errors",
    "write_run",
    "write_scores",
    "write_summary",
]
