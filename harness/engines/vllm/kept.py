"""vLLM servers kept up across runs: a second run finds the server the first one left and skips the
60-110 s start.

A kept server is started like any other (``VllmServer(keep=True)``) but deliberately not tied to the
harness's life: no parent-death signal, no watchman, no stop at exit. Instead a state file in the user
cache (``<cache>/vllm/servers/<key>.json``) names its process (pid = its process group), port, model,
family, full command line, log and start time, and ``harness vllm down`` (or ``stop_kept``) stops its
whole process group and removes the file. ``harness vllm list`` shows them; a state file whose process
is gone is removed when found.

A server is found again by its key: a digest of its command line without host and port (model folder,
served name, tool parser, chat template and its content, every added ``--vllm-arg``) and of the
environment the harness gives it. A run asking for the same server uses it; one asking for anything
else (another model, another argument) starts its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

STOP_GRACE_S = 20.0


def state_dir() -> Path:
    """Where kept servers' state files and logs are: ``<user cache>/vllm/servers``."""
    from harness.grammar import cache_root

    return cache_root() / "vllm" / "servers"


def server_key(command: Sequence[str], env: dict[str, str]) -> str:
    """The identity of a server: its command without ``--host``/``--port`` values, the chat template's
    content, and the environment variables vLLM reads that the harness sets."""
    words, skip = [], False
    template = ""
    for i, word in enumerate(command):
        if skip:
            skip = False
            continue
        if word in ("--host", "--port"):
            skip = True
            continue
        if word == "--chat-template" and i + 1 < len(command):
            with contextlib.suppress(OSError):
                template = hashlib.sha256(Path(command[i + 1]).read_bytes()).hexdigest()
        words.append(word)
    wanted = {k: env.get(k, "") for k in ("VLLM_CPU_KVCACHE_SPACE",)}
    blob = json.dumps({"command": words[1:], "template": template, "env": wanted}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class KeptServer:
    """A kept server as its state file records it."""

    key: str
    pid: int
    """The API server's pid, which leads the server's process group."""
    host: str
    port: int
    family: str
    model: str
    """The served model id."""
    model_path: str
    command: list[str]
    log: str
    started_at: float
    """time.time() at launch."""
    version: str = ""

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def state_file(self) -> Path:
        return state_dir() / f"{self.key}.json"

    def process_alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def healthy(self, timeout_s: float = 2.0) -> bool:
        """The process is there and answers ``/health``."""
        if not self.process_alive():
            return False
        try:
            return httpx.get(f"http://{self.host}:{self.port}/health", timeout=timeout_s).status_code == 200
        except httpx.HTTPError:
            return False

    def wait_ready(self, timeout_s: float, on_wait: Callable[[float], None] | None = None) -> bool:
        """Wait for a kept server still starting (another run launched it); False if it died or timed out."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            if self.healthy():
                return True
            if not self.process_alive():
                return False
            if on_wait is not None:
                on_wait(time.monotonic() - started)
            time.sleep(1.0)
        return False

    def describe(self) -> dict[str, object]:
        """What run.json records about a server the run found running."""
        return {
            "family": self.family, "model": self.model, "model_path": self.model_path, "version": self.version,
            "command": self.command, "log": self.log, "base_url": self.base_url, "kept": True, "pid": self.pid,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started_at)),
        }


def record(server: KeptServer) -> None:
    """Write the state file of a kept server (atomically)."""
    server.state_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = server.state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(server), indent=1))
    os.replace(tmp, server.state_file)


def kept_servers(prune: bool = True) -> list[KeptServer]:
    """Every kept server with a state file; with ``prune``, files of processes that are gone are removed."""
    found = []
    for path in sorted(state_dir().glob("*.json")) if state_dir().is_dir() else []:
        try:
            server = KeptServer(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        if prune and not server.process_alive():
            path.unlink(missing_ok=True)
            continue
        found.append(server)
    return found


def find_kept(key: str) -> KeptServer | None:
    """The live kept server of ``key``, if any."""
    return next((s for s in kept_servers() if s.key == key), None)


def stop_kept(server: KeptServer, grace_s: float = STOP_GRACE_S) -> bool:
    """Stop a kept server's process group (SIGTERM, then SIGKILL after ``grace_s``) and remove its state
    file; False when it was already gone."""
    was_alive = server.process_alive()
    if was_alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while server.process_alive() and time.monotonic() < deadline:
            time.sleep(0.25)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, signal.SIGKILL)
    server.state_file.unlink(missing_ok=True)
    return was_alive


__all__ = ["KeptServer", "find_kept", "kept_servers", "record", "server_key", "state_dir", "stop_kept"]
