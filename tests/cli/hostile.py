"""Hostile inputs for the CLI tests: broken suites, bundles, run directories and input files, each
built in a temporary directory from the project's own smoke suite, SHELLper bundle and a test run."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "suites"
SMOKE = SUITES / "smoke"
SHELLPER = ROOT / "bundles" / "shellper"
ORACLE_RUN = ROOT / "tests" / "data" / "runs" / "smoke-oracle"
TOOLS_JSON = ROOT / "tests" / "data" / "shellper_tools.json"
SHELLPER_DATA = ROOT / "tests" / "data" / "shellper_sample.jsonl"
BAD_UTF8 = b"name: \xff\xfe broken\n"
"""Bytes that are not UTF-8 (a Latin-1 or binary file where text belongs)."""


def deep_json(depth: int = 100_000) -> str:
    """A JSON array nested ``depth`` deep: Python's json and pydantic recurse on it."""
    return "[" * depth + "]" * depth


def deep_object(depth: int = 100_000) -> str:
    """A JSON object nested ``depth`` deep."""
    return '{"a":' * depth + "1" + "}" * depth


def copy_suite(tmp: Path, name: str = "suite") -> Path:
    """The smoke suite with its bundle beside it (``bundle: ../bundle``), free to be broken."""
    suite = tmp / name
    shutil.copytree(SMOKE, suite)
    bundle = tmp / "bundle"
    if not bundle.exists():
        shutil.copytree(SHELLPER, bundle)
    text = (suite / "suite.yaml").read_text(encoding="utf-8").replace("../../bundles/shellper", "../bundle")
    (suite / "suite.yaml").write_text(text, encoding="utf-8")
    return suite


def copy_run(tmp: Path, name: str = "run") -> Path:
    """A finished oracle run of the smoke suite (run.json, samples.jsonl, summary.json...)."""
    run = tmp / name
    shutil.copytree(ORACLE_RUN, run)
    return run


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def as_directory(path: Path) -> Path:
    """``path`` turned into a directory (a directory where a file belongs)."""
    if path.exists():
        path.unlink()
    path.mkdir(parents=True)
    return path


def middle_line_broken(samples: Path) -> None:
    """A bad line in the middle of samples.jsonl (not the torn tail a kill leaves)."""
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[len(lines) // 2] = '{"sample_id": "x", "broken\n'
    samples.write_text("".join(lines), encoding="utf-8")


Builder = Callable[[Path], list[str]]
"""Builds a hostile input under a temporary directory; returns the CLI arguments that use it."""
