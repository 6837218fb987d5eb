"""vLLM servers kept up across runs: a second run finds the server the first one left and skips the
60-110 s start.

A kept server is started like any other (``VllmServer(keep=True)``) but deliberately not tied to the
harness's life: no parent-death signal, no watchman, no stop at exit. Instead a state file in the user
cache (``<cache>/vllm/servers/<key>.json``) names its process (pid = its process group), port, model,
family, full command line, log and start time, and ``harness vllm down`` (or ``stop_kept``) stops its
whole process tree and removes the file. ``harness vllm list`` shows them.

A pid alone names nothing: once the server dies (OOM, reboot, crash) the kernel hands its number to the
next process, which may be a user's editor or database. So the state file also records what only that
one process has: its start time as the kernel reports it, its command line, and a random nonce given to
it in its environment (``NONCE_ENV``). ``survey`` is the one place that decides which kept servers
exist (``vllm list``, ``vllm down`` and ``harness run --engine vllm`` all ask it): a state file whose
process does not match all of them is stale, removed, and named in ``Survey.stale``; a file that is
not a state file (not a regular file, over ``MAX_STATE_BYTES``, not JSON, a field of the wrong type, a
pid of 1 or of the caller's own group, a key that is not the file's name) is removed the same way. Only
a process that matches is ever signalled, and ``stop_kept`` checks again before each signal.

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
import re
import secrets
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.files import InputFileError, load_json, read_bytes

STOP_GRACE_S = 20.0
NONCE_ENV = "HARNESS_KEPT_SERVER_NONCE"
"""The environment variable that gives a kept server its nonce (only it and its state file know it)."""
MAX_STATE_BYTES = 64 * 1024
"""Largest state file read (the harness writes about 2 KB)."""
MAX_PID = 4_194_304
"""The kernel's largest pid (``/proc/sys/kernel/pid_max`` cannot go higher)."""
_KEY = re.compile(r"^[0-9a-f]{16}$")


def state_dir() -> Path:
    """Where kept servers' state files and logs are: ``<user cache>/vllm/servers``."""
    from harness.grammar import cache_root

    return cache_root() / "vllm" / "servers"


def new_nonce() -> str:
    """A kept server's nonce (given to it as ``NONCE_ENV``)."""
    return secrets.token_hex(16)


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


class KeptServer(BaseModel):
    """A kept server as its state file records it (validated: a state file names anything)."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")

    key: str = Field(pattern=_KEY.pattern)
    pid: int = Field(gt=1, le=MAX_PID)
    """The API server's pid, which leads the server's process group (never 1, never 0 or negative)."""
    host: str = Field(max_length=255)
    port: int = Field(ge=1, le=65535)
    family: str = Field(max_length=64)
    model: str = Field(max_length=512)
    """The served model id."""
    model_path: str = Field(max_length=4096)
    command: list[str] = Field(max_length=512)
    log: str = Field(max_length=4096)
    started_at: float
    """time.time() at launch."""
    create_time: float
    """The process's start time as the kernel reports it (``psutil.Process.create_time``)."""
    nonce: str = Field(min_length=16, max_length=64)
    """Given to the server in its environment (``NONCE_ENV``): what a reused pid cannot have."""
    version: str = Field(default="", max_length=64)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def state_file(self) -> Path:
        return state_dir() / f"{self.key}.json"

    def mismatch(self) -> str | None:
        """Why the process ``pid`` is not this server (None: it is): gone, started at another time, running
        another command, without the nonce, or not leading its own process group."""
        import psutil

        try:
            proc = psutil.Process(self.pid)
            with proc.oneshot():
                if abs(proc.create_time() - self.create_time) > 0.01:
                    return f"pid {self.pid} is another process now (started at another time)"
                if proc.status() == psutil.STATUS_ZOMBIE:
                    return f"pid {self.pid} has exited"
                if proc.cmdline() != self.command:
                    return f"pid {self.pid} runs another command"
                if proc.environ().get(NONCE_ENV) != self.nonce:
                    return f"pid {self.pid} does not hold the server's nonce"
            if os.getpgid(self.pid) != self.pid:
                return f"pid {self.pid} does not lead its own process group"
        except psutil.NoSuchProcess:
            return f"its process (pid {self.pid}) is gone"
        except (psutil.AccessDenied, ProcessLookupError, PermissionError):
            return f"pid {self.pid} is another user's process"
        except psutil.Error as exc:
            return f"pid {self.pid} cannot be checked ({type(exc).__name__})"
        if self.pid in (os.getpid(), os.getpgrp()):
            return f"pid {self.pid} is this harness's own process group"
        return None

    def process_alive(self) -> bool:
        """The server's own process is running (not merely some process with its pid)."""
        return self.mismatch() is None

    def serves(self, timeout_s: float = 2.0) -> bool:
        """Its port answers ``/health`` and lists the served model (another server on a reused port does not)."""
        base = f"http://{self.host}:{self.port}"
        try:
            with httpx.Client(timeout=timeout_s) as client:
                if client.get(f"{base}/health").status_code != 200:
                    return False
                answer = client.get(f"{base}/v1/models")
                if answer.status_code != 200 or len(answer.content) > MAX_STATE_BYTES:
                    return False
                listed = load_json(answer.content, f"{base}/v1/models")
        except (httpx.HTTPError, InputFileError):
            return False
        data = listed.get("data") if isinstance(listed, dict) else None
        return isinstance(data, list) and any(isinstance(m, dict) and m.get("id") == self.model for m in data)

    def healthy(self, timeout_s: float = 2.0) -> bool:
        """The process is this server and it serves its model."""
        return self.process_alive() and self.serves(timeout_s)

    def wait_ready(self, timeout_s: float, on_wait: Callable[[float], None] | None = None) -> bool:
        """Wait for a kept server still starting (another run launched it); False if it died or timed out."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            if not self.process_alive():
                return False
            if self.serves():
                return True
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
    tmp.write_text(server.model_dump_json(indent=1))
    os.replace(tmp, server.state_file)


def read_state(path: Path) -> KeptServer:
    """The state file ``path``: a regular file (not a link), under ``MAX_STATE_BYTES``, whose fields
    validate and whose key is its name; ValueError saying why not."""
    if path.is_symlink():
        raise ValueError("a symbolic link, not a state file the harness wrote")
    try:
        server = KeptServer.model_validate(load_json(read_bytes(path, MAX_STATE_BYTES), path))
    except InputFileError as exc:
        raise ValueError(exc.reason) from None
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise ValueError(f"{'.'.join(str(p) for p in error['loc']) or 'top level'}: {error['msg']}") from None
    if server.key != path.stem:
        raise ValueError(f"key {server.key!r} is not the file's name")
    return server


@dataclass
class Survey:
    """Which kept servers exist (``survey``): the ones whose process matches its state file, and what
    was removed as stale."""

    servers: list[KeptServer] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    """One line per stale state file removed: the file and why."""


def survey(prune: bool = True) -> Survey:
    """Every kept server whose state file names its live process (module doc); with ``prune`` every
    other state file is removed and named in ``stale``."""
    found = Survey()
    folder = state_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            server = read_state(path)
            why = server.mismatch()
        except ValueError as exc:
            server, why = None, f"not a valid state file ({exc})"
        if why is None and server is not None:
            found.servers.append(server)
            continue
        if prune:
            with contextlib.suppress(OSError):
                path.unlink()  # a name in our own folder: a link goes, never its target
            found.stale.append(f"removed the stale state file {path}: {why}")
    return found


def kept_servers(prune: bool = True) -> list[KeptServer]:
    """Every live kept server (``survey``)."""
    return survey(prune).servers


def find_kept(key: str, found: Survey | None = None) -> KeptServer | None:
    """The live kept server of ``key``, if any (from ``found``, or a fresh ``survey``)."""
    return next((s for s in (found or survey()).servers if s.key == key), None)


def _tree(server: KeptServer) -> dict[int, float]:
    """The server's process and its descendants (pid -> start time), so each is signalled only while it
    is still the same process."""
    import psutil

    known = {server.pid: server.create_time}
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(server.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                known[child.pid] = child.create_time()
    return known


def _signal_tree(server: KeptServer, known: dict[int, float], sig: int) -> None:
    """``sig`` to the server's process group while its leader is still the server, and to each known
    descendant still the same process (one that left the group, or outlived the leader)."""
    import psutil

    leader = server.mismatch() is None
    if leader:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, sig)
    for pid, started in known.items():
        with contextlib.suppress(psutil.Error, OSError):
            proc = psutil.Process(pid)
            in_group = leader and os.getpgid(pid) == server.pid  # the killpg above reached it
            if pid != server.pid and not in_group and abs(proc.create_time() - started) <= 0.01:
                proc.send_signal(sig)


def stop_kept(server: KeptServer, grace_s: float = STOP_GRACE_S) -> bool:
    """Stop a kept server's process tree (SIGTERM, then SIGKILL after ``grace_s``) and remove its state
    file; False (and no signal at all) when its process is not the one the state file names."""
    if server.mismatch() is not None:
        server.state_file.unlink(missing_ok=True)
        return False
    known = _tree(server)
    _signal_tree(server, known, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while server.mismatch() is None and time.monotonic() < deadline:
        time.sleep(0.25)
    known.update({k: v for k, v in _tree(server).items() if k not in known})
    _signal_tree(server, known, signal.SIGKILL)
    server.state_file.unlink(missing_ok=True)
    return True


__all__ = [
    "NONCE_ENV", "KeptServer", "Survey", "find_kept", "kept_servers", "new_nonce", "read_state", "record",
    "server_key", "state_dir", "stop_kept", "survey",
]
