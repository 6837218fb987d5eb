"""Read a results directory for report and compare.

run.json, samples.jsonl and scores.parquet go through the results store's readers
(harness.eval.results); summary.json and errors.json are read and checked here. Every file that is
there but cannot be read raises RunDirError naming the file; optional files that are absent read as
``None``. polars loads only when ``scores.parquet`` is read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.eval import results
from harness.eval.results import (
    ERRORS_FILE,
    RUN_FILE,
    SAMPLES_FILE,
    SCORE_COLUMNS,
    SCORES_FILE,
    SUMMARY_FILE,
    SampleLog,
    load_samples,
)

if TYPE_CHECKING:
    import polars as pl

SUMMARY_KEYS = ("family", "strategy", "metric", "value", "n", "ci_low", "ci_high")


class RunDirError(Exception):
    """A results file is missing, unreadable or not in the contract's shape; ``path`` names it."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise RunDirError(path, "file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(path, f"cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise RunDirError(path, f"not valid JSON: {exc}") from exc


def read_run_json(run_dir: Path) -> dict[str, Any]:
    """``run.json`` as a dict (required)."""
    path = run_dir / RUN_FILE
    if not path.is_file():
        raise RunDirError(path, "file not found")
    try:
        return results.read_run(run_dir)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunDirError(path, str(exc).removeprefix(f"{path}: ")) from exc


def read_summary(run_dir: Path) -> list[dict[str, Any]]:
    """``summary.json`` rows (required), each checked for the contract's keys and types."""
    path = run_dir / SUMMARY_FILE
    data = _read_json(path)
    if not isinstance(data, list):
        raise RunDirError(path, "expected a JSON list of rows")
    rows: list[dict[str, Any]] = []
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise RunDirError(path, f"row {i}: expected an object")
        missing = [k for k in ("family", "strategy", "metric", "value") if k not in row]
        if missing:
            raise RunDirError(path, f"row {i}: missing {', '.join(missing)}")
        for key in ("family", "strategy", "metric"):
            if not isinstance(row[key], str):
                raise RunDirError(path, f"row {i}: {key} must be a string")
        for key in ("value", "ci_low", "ci_high", "n"):
            val = row.get(key)
            if val is not None and (isinstance(val, bool) or not isinstance(val, int | float)):
                raise RunDirError(path, f"row {i}: {key} must be a number or null")
        rows.append({k: row.get(k) for k in SUMMARY_KEYS})
    return rows


def read_samples(run_dir: Path) -> SampleLog | None:
    """``samples.jsonl`` (optional) through the results store's reader: ``None`` when absent."""
    path = run_dir / SAMPLES_FILE
    if not path.exists():
        return None
    try:
        return load_samples(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(path, f"cannot read: {exc}") from exc
    except ValueError as exc:
        raise RunDirError(path, str(exc).removeprefix(f"{path}:")) from exc


def read_scores(run_dir: Path) -> pl.DataFrame | None:
    """``scores.parquet`` (optional) as a polars frame: ``None`` when absent."""
    path = run_dir / SCORES_FILE
    if not path.exists():
        return None
    import polars as pl

    try:
        rows = results.read_scores(path)
    except Exception as exc:  # polars raises several error types for a damaged file
        raise RunDirError(path, f"cannot read parquet: {exc}") from exc
    schema = {c: pl.Int64 if c == "epoch" else pl.Float64 if c == "value" else pl.Utf8 for c in SCORE_COLUMNS}
    if rows:
        missing = [c for c in SCORE_COLUMNS if c not in rows[0]]
        if missing:
            raise RunDirError(path, f"missing columns {', '.join(missing)}")
    return pl.DataFrame([{c: r[c] for c in SCORE_COLUMNS} for r in rows], schema=schema)


def read_errors_json(run_dir: Path) -> list[dict[str, Any]] | None:
    """``errors.json`` (optional): ``[{family, strategy, error_kind, count}]`` or ``None``."""
    path = run_dir / ERRORS_FILE
    if not path.exists():
        return None
    data = _read_json(path)
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise RunDirError(path, "expected a JSON list of objects")
    return data


@dataclass(slots=True)
class RunDir:
    """Everything report needs from one results directory."""

    path: Path
    run: dict[str, Any]
    summary: list[dict[str, Any]]
    samples: SampleLog | None
    scores: pl.DataFrame | None
    errors: list[dict[str, Any]] | None

    @property
    def run_id(self) -> str:
        rid = self.run.get("run_id")
        return str(rid) if rid else self.path.name


def load_run_dir(run_dir: Path) -> RunDir:
    """Read a whole results directory; ``run.json`` and ``summary.json`` are required."""
    if not run_dir.is_dir():
        raise RunDirError(run_dir, "not a directory")
    return RunDir(
        path=run_dir,
        run=read_run_json(run_dir),
        summary=read_summary(run_dir),
        samples=read_samples(run_dir),
        scores=read_scores(run_dir),
        errors=read_errors_json(run_dir),
    )
