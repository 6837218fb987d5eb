"""The managed vLLM dies with the harness whatever kills it (issue 22, item 3): ``harness run --engine
vllm`` is killed with SIGKILL while its vLLM server starts and while it serves, and no process of the
server's tree (API server, EngineCore, workers, multiprocessing's resource tracker) survives: none is
left, under PID 1 or anywhere. Before: EngineCore and the resource tracker were reparented to PID 1 and
stayed. A real vLLM (the Qwen3 format fixture: 1-2 minutes to start here), so slow."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.slow

START_S = 600.0
"""How long the run may take to reach the moment of the kill (a loaded 2-core machine is slow)."""
GONE_S = 60.0
"""How long the tree may take to disappear after the kill (the issue checked 60 s after)."""


def _tree(root: psutil.Process) -> dict[int, psutil.Process]:
    try:
        return {p.pid: p for p in [root, *root.children(recursive=True)]}
    except psutil.NoSuchProcess:
        return {}


def _engine_core_started(run: Path, tree: dict[int, psutil.Process]) -> bool:
    """vLLM is starting: its EngineCore process exists (the API server spawned it)."""
    for p in tree.values():
        try:
            if "EngineCore" in " ".join(p.cmdline()) or "EngineCore" in p.name():
                return True
        except psutil.Error:
            continue
    return False


def _serving(run: Path, tree: dict[int, psutil.Process]) -> bool:
    """vLLM answers: the run has saved a sample (it came through the server)."""
    samples = run / "samples.jsonl"
    return samples.exists() and samples.stat().st_size > 0


# (when the harness is killed, how the test sees that moment)
MOMENTS: list[tuple[str, Callable[[Path, dict[int, psutil.Process]], bool]]] = [
    ("while vLLM starts (its EngineCore exists)", _engine_core_started),
    ("while vLLM serves (a sample is saved)", _serving),
]


def _vllm_missing() -> str | None:
    try:
        from harness.engines.vllm import check_environment

        check_environment()
    except Exception as exc:
        return str(exc)
    return None


def _alive(procs: dict[int, psutil.Process]) -> list[str]:
    left = []
    for p in procs.values():
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{p.pid} ppid={p.ppid()} {' '.join(p.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            continue
    return left


@pytest.mark.parametrize(("moment", "reached"), MOMENTS, ids=[m[0] for m in MOMENTS])
def test_kill_9_of_the_harness_leaves_no_vllm_process(
    tmp_path: Path, moment: str, reached: Callable[[Path, dict[int, psutil.Process]], bool]
) -> None:
    why = _vllm_missing()
    if why:
        pytest.skip(f"real vLLM not available: {why}")
    run = tmp_path / "run"
    harness = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "run", "suites/smoke", "--engine", "vllm", "--family", "qwen",
         "--out", str(run)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    root = psutil.Process(harness.pid)
    seen: dict[int, psutil.Process] = {}
    try:
        deadline = time.monotonic() + START_S
        while True:
            tree = _tree(root)
            seen.update(tree)
            if reached(run, tree):
                break
            assert harness.poll() is None, f"the run ended before {moment}"
            assert time.monotonic() < deadline, f"the run did not reach the moment {moment!r} in {START_S:.0f} s"
            time.sleep(0.5)
        seen.update(_tree(root))
        seen.pop(harness.pid)
        assert len(seen) >= 2, seen  # the API server and its EngineCore at least
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait(30)
        gone_by = time.monotonic() + GONE_S
        while _alive(seen) and time.monotonic() < gone_by:
            time.sleep(1.0)
        assert _alive(seen) == [], f"killed {moment}; still alive {GONE_S:.0f} s later: {_alive(seen)}"
    finally:
        for p in seen.values():  # never leave a server behind, even when the test fails
            try:
                p.kill()
            except psutil.Error:
                pass
        if harness.poll() is None:
            harness.kill()
