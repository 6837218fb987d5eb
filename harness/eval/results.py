"""The results store: ``results/<run-id>/`` with run.json, samples.jsonl, scores.parquet, summary.json.

The layout is the contract between the runner (writes), scoring (reads samples, writes scores and the
summary) and the report/compare commands (read). ``samples.jsonl`` is append-only: each finished
sample is one line, written, flushed and fsynced by a single writer task the moment it is handed over.
A run killed at any point leaves at most one torn line at the end; ``load_samples`` ignores it and
``repair_samples`` cuts it off before a resumed run appends, so nothing is lost or counted twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

RUN_FILE = "run.json"
SAMPLES_FILE = "samples.jsonl"
SCORES_FILE = "scores.parquet"
SUMMARY_FILE = "summary.json"
ERRORS_FILE = "errors.json"

METRICS: tuple[str, ...] = ("validity", "exact_match", "state_match", "grammar_rejection")
"""Per-sample metrics in scores.parquet (the summary names the last one ``grammar_rejections``)."""

SCORE_COLUMNS: tuple[str, ...] = (
    "sample_id", "case_id", "family", "strategy", "epoch", "metric", "value", "error_kind",
)


def make_sample_id(case_id: str, family: str, strategy: str, epoch: int) -> str:
    """``<case_id>/<family>/<strategy>/<epoch>``: unique within a run, stable across resumes."""
    return f"{case_id}/{family}/{strategy}/{epoch}"


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_run_id(suite_name: str, engine: str) -> str:
    """``<suite>-<engine>-<UTC yyyymmdd-HHMMSS>``."""
    return f"{suite_name}-{engine}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


# -- run.json ---------------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """Versions of the harness and the libraries its figures depend on (read from metadata, no import)."""
    return {
        "harness": _version("harness"),
        "xgrammar": _version("xgrammar"),
        "pydantic_monty": _version("pydantic-monty"),
        "python": platform.python_version(),
    }


def git_commit(cwd: Path | None = None) -> str | None:
    """``git rev-parse HEAD`` of the working tree, or None when git or the repository is missing."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd or Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


def write_json(path: Path, value: Any) -> None:
    """Write JSON atomically (temp file + rename), so a reader never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_run(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (is {run_dir} a run directory?)")
    value = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return value


# -- samples.jsonl ----------------------------------------------------------------------------------


@dataclass
class SampleLog:
    """What ``load_samples`` found: the samples by id (file order) and what it had to skip."""

    samples: dict[str, dict[str, Any]] = field(default_factory=dict)
    torn_tail_at: int | None = None
    """Byte offset where a torn last line starts (a run was killed mid-write), or None."""
    duplicates: int = 0


def load_samples(path: Path) -> SampleLog:
    """Read samples.jsonl. A last line cut off by a kill (no newline, or not JSON) is ignored; a bad
    line anywhere else is an error naming its line number. A repeated sample id keeps the last line
    (as the report's reader does); the runner never writes one."""
    log = SampleLog()
    path = Path(path)
    if not path.exists():
        return log
    data = path.read_bytes()
    offset = 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        start = offset
        offset += len(raw) + 1
        is_last = number == len(lines)
        if is_last:
            if raw.strip():
                log.torn_tail_at = start  # no newline after it: the write never finished
            break
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
            if not isinstance(record, dict) or not isinstance(record.get("sample_id"), str):
                raise ValueError("not a sample object")
        except ValueError as exc:
            if number == len(lines) - 1 and not lines[-1]:
                # A complete-looking last line that is not JSON: treat as torn too.
                log.torn_tail_at = start
                break
            raise ValueError(f"{path}:{number}: not a sample record ({exc})") from exc
        if record["sample_id"] in log.samples:
            log.duplicates += 1
        log.samples[record["sample_id"]] = record
    return log


def repair_samples(path: Path) -> SampleLog:
    """Load samples.jsonl and cut off a torn last line so appending can resume cleanly."""
    log = load_samples(path)
    if log.torn_tail_at is not None:
        with open(path, "r+b") as fh:
            fh.truncate(log.torn_tail_at)
            fh.flush()
            os.fsync(fh.fileno())
    return log


class SampleWriter:
    """The one writer of samples.jsonl: ``put`` hands a finished sample over; a single task appends
    what is queued, then flushes and fsyncs (a group commit when several samples finish at once)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._fh: Any = None
        self.written = 0
        self.error: BaseException | None = None

    async def __aenter__(self) -> SampleWriter:
        self._fh = open(self.path, "a", encoding="utf-8")
        self._task = asyncio.create_task(self._loop(), name="samples-writer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def put(self, record: dict[str, Any]) -> None:
        if self.error is not None:
            raise RuntimeError(f"the samples writer failed: {self.error}") from self.error
        self._queue.put_nowait(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")

    async def _loop(self) -> None:
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
            with contextlib.suppress(OSError):
                self._fh.close()


# -- scores.parquet ---------------------------------------------------------------------------------


def write_scores(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """scores.parquet in long format: one row per sample and metric."""
    import polars as pl

    schema = {
        "sample_id": pl.Utf8, "case_id": pl.Utf8, "family": pl.Utf8, "strategy": pl.Utf8,
        "epoch": pl.Int64, "metric": pl.Utf8, "value": pl.Float64, "error_kind": pl.Utf8,
    }
    frame = pl.DataFrame(list(rows), schema=schema)
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    frame.write_parquet(tmp)
    os.replace(tmp, path)


def read_scores(path: Path) -> list[dict[str, Any]]:
    import polars as pl

    return pl.read_parquet(path).to_dicts()


def command_line() -> str:
    return " ".join(sys.argv)


__all__ = [
    "ERRORS_FILE",
    "METRICS",
    "RUN_FILE",
    "SAMPLES_FILE",
    "SCORES_FILE",
    "SCORE_COLUMNS",
    "SUMMARY_FILE",
    "SampleLog",
    "SampleWriter",
    "default_run_id",
    "git_commit",
    "load_samples",
    "make_sample_id",
    "read_run",
    "read_scores",
    "repair_samples",
    "utc_now",
    "versions",
    "write_json",
    "write_scores",
]
