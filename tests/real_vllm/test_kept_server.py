"""A kept vLLM server outlives the harness that started it, on purpose (issue 26), while a run's own
server does not (issue 22): ``harness vllm up`` exits and its server keeps serving with its whole tree
(API server, EngineCore); a run finds it and starts none; ``harness vllm down`` stops the whole tree.
A real vLLM (the Gemma 3 270M base weights: about a minute to start here), so slow."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.real_vllm.test_no_orphans import GONE_S, _alive, _tree, _vllm_missing

pytestmark = pytest.mark.slow

UP_S = 600.0
"""How long ``harness vllm up`` may take (a loaded 2-core machine is slow)."""


def _harness(*args: str, timeout_s: float = UP_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout_s)


def test_a_kept_server_outlives_the_harness_serves_the_next_run_and_goes_down_whole(tmp_path: Path) -> None:
    why = _vllm_missing()
    if why:
        pytest.skip(f"real vLLM not available: {why}")
    from harness.engines.vllm.kept import kept_servers, stop_kept

    before = {k.pid for k in kept_servers()}
    seen: dict[int, psutil.Process] = {}
    try:
        up = _harness("vllm", "up", "--family", "function_gemma")
        assert up.returncode == 0, up.stderr
        [server] = [k for k in kept_servers() if k.pid not in before]
        time.sleep(3.0)  # the harness that started it is gone: a watchman would have killed it by now
        assert server.healthy(), "the kept server stopped when the harness that started it exited"
        seen = _tree(psutil.Process(server.pid))
        assert len(seen) >= 2, seen  # the API server and its EngineCore at least

        run = _harness("run", "smoke", "--engine", "vllm", "--family", "function_gemma", "--strategy",
                       "json_schema", "--limit", "2", "--out", str(tmp_path / "run"))
        assert run.returncode == 0, run.stderr
        log = (tmp_path / "run" / "run.log").read_text()
        assert "using the kept server for function_gemma" in log and "starting a server" not in log
        assert server.healthy()  # the run left it up

        down = _harness("vllm", "down", "--family", "function_gemma", timeout_s=120.0)
        assert down.returncode == 0, down.stderr
        gone_by = time.monotonic() + GONE_S
        while _alive(seen) and time.monotonic() < gone_by:
            time.sleep(1.0)
        assert _alive(seen) == [], f"still alive {GONE_S:.0f} s after harness vllm down: {_alive(seen)}"
        assert all(k.pid != server.pid for k in kept_servers())
    finally:
        for kept in kept_servers():  # never leave a server behind, even when the test fails
            if kept.pid not in before:
                stop_kept(kept)
        for p in seen.values():
            try:
                p.kill()
            except psutil.Error:
                pass
