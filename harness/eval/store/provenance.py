"""Where and with what a run was measured, for run.json: versions, the machine, the git commit, times.

Nothing here imports the libraries it names: versions come from package metadata.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from harness.eval.store.records import Machine, RunRecord, Versions


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_run_id(suite_name: str, engine: str) -> str:
    """``<suite>-<engine>-<UTC yyyymmdd-HHMMSS>``."""
    return f"{suite_name}-{engine}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions() -> Versions:
    """Versions of the harness and the libraries its figures depend on (read from metadata, no import)."""
    return Versions(
        harness=_version("harness"),
        xgrammar=_version("xgrammar"),
        llguidance=_version("llguidance"),
        pydantic_monty=_version("pydantic-monty"),
        python=platform.python_version(),
    )


def machine() -> Machine:
    """This machine, as recorded in run.json (no personal data: the machine id is hashed)."""
    cpu: str | None = None
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                cpu = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    machine_id: str | None = None
    try:
        raw = Path("/etc/machine-id").read_text(encoding="ascii", errors="replace").strip()
        machine_id = hashlib.sha256(raw.encode()).hexdigest()[:12] if raw else None
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return Machine(cpu=cpu or platform.processor() or None, cores=cores,
                   system=f"{platform.system()} {platform.release()}", machine_id=machine_id)


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


def grammar_library(record: RunRecord) -> str | None:
    """The grammar backend and its version as run.json records them (``xgrammar 0.2.8``,
    ``guidance: llguidance 1.7.0``); None when not installed."""
    if record.options.grammar_backend == "guidance":
        version = record.versions.llguidance
        return f"guidance: llguidance {version}" if version else "guidance: llguidance"
    return f"xgrammar {record.versions.xgrammar}" if record.versions.xgrammar else None


__all__ = ["default_run_id", "git_commit", "grammar_library", "machine", "utc_now", "versions"]
