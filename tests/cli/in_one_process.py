"""Many ``harness`` commands in one child process, one after the other, each in its own folder: what a
test gets from a fresh ``harness`` process per command (exit code, output, no traceback, a hang caught)
for one interpreter start and one import of the harness instead of one per command.

The child, not the test process, runs them: a command that hangs on a FIFO or grows without bound
(``/dev/zero``, a billion laughs) takes the child down, never pytest. A command still running after
``hang_s`` is stopped by SIGALRM (a blocking ``open`` or ``read`` of a FIFO is interrupted) and reported
with a traceback, so a test's "no traceback" check fails on it.

``python tests/cli/in_one_process.py JOBS RESULTS HANG_S``: JOBS is a JSON list of ``{"key", "args",
"cwd"}``; each result is a JSON line ``{"key", "code", "output"}`` appended as soon as its command ends
(a child that dies mid-way leaves the results before it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any


class Hung(Exception):
    """The command ran past its hang bound."""


def _alarm(_signum: int, _frame: Any) -> None:
    raise Hung("still running after the hang bound (a hang)")


def _run_all(jobs_path: str, results_path: str, hang_s: float) -> None:
    from typer.testing import CliRunner

    from harness.cli.main import app

    signal.signal(signal.SIGALRM, _alarm)
    jobs = json.loads(Path(jobs_path).read_text(encoding="utf-8"))
    for job in jobs:
        os.chdir(job["cwd"])
        signal.setitimer(signal.ITIMER_REAL, hang_s)
        try:
            result = CliRunner().invoke(app, job["args"], prog_name="harness")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        output = result.output
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            output += "".join(traceback.format_exception(result.exception))  # what a process would print
        with open(results_path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"key": job["key"], "code": result.exit_code, "output": output}) + "\n")


def run_in_one_process(jobs: list[dict[str, Any]], work: Path, hang_s: float) -> dict[str, tuple[int, str]]:
    """Run ``jobs`` (``key``, ``args``, ``cwd``) in one child: key -> (exit code, output). A job the
    child never reached (it died or ran past every bound) gets exit code -1 and the child's stderr."""
    jobs_path, results_path = work / "jobs.json", work / "results.jsonl"
    jobs_path.write_text(json.dumps(jobs), encoding="utf-8")
    results_path.unlink(missing_ok=True)
    try:
        done = subprocess.run([sys.executable, __file__, str(jobs_path), str(results_path), str(hang_s)],
                              capture_output=True, text=True, timeout=hang_s + 30 * len(jobs),
                              stdin=subprocess.DEVNULL)
        said = done.stderr[-3000:]
    except subprocess.TimeoutExpired as exc:
        said = f"the child ran past its bound: {exc}"
    results = {}
    if results_path.exists():
        for line in results_path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            results[row["key"]] = (row["code"], row["output"])
    return {job["key"]: results.get(job["key"], (-1, f"not run: {said}")) for job in jobs}


if __name__ == "__main__":
    _run_all(sys.argv[1], sys.argv[2], float(sys.argv[3]))
