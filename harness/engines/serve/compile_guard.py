"""``harness serve`` compiles a request's grammar first in a worker process it can abandon.

xgrammar compiles in C++ and cannot be interrupted: a hostile grammar (20,000 rules, 100,000
``choice`` strings, a schema nested 2,000 deep) compiled in the server itself took minutes and
gigabytes, kept both cores busy after the client left, and held up shutdown. So before the server
compiles a grammar it has not seen, :class:`CompileGuard` compiles it in one long-lived worker process
(the families' tokenizers loaded once) while the server watches the clock and the worker's resident
memory every ``compile_poll_s``. A compile over ``compile_timeout_s`` or over ``compile_memory_mb``
above the worker's memory before it started is stopped by killing the worker (a new one starts for
the next grammar), and the request gets a 400 naming the bound. Only a grammar that compiled within
both bounds is then compiled in the server (xgrammar's cache, bounded by ``grammar_cache_mb``, keeps
it), which costs about as much again, once per new grammar.

Verdicts (compiles fine, or why not) are kept by digest for ``verdict_cache_entries`` grammars, so a
repeated grammar, good or hostile, never reaches the worker again. One grammar is compiled at a time;
other requests with new grammars wait their turn without holding a thread.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import multiprocessing
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.agents import ConstraintArtifact, ConstraintError
from harness.engines.serve.limits import MIB, ServeLimits

READY_TIMEOUT_S = 300.0
"""How long a new worker may take to load xgrammar and the tokenizers (seconds, cold caches)."""


def _worker(conn: Any, families: tuple[str, ...]) -> None:
    """The worker process: load each family's compiler, then compile what comes, answering None (it
    compiles) or why not. Exits when the server's end of the pipe closes."""
    from harness.grammar import clear_compile_cache, compile_artifact, get_compiler

    for family in families:
        get_compiler(family)
    conn.send("ready")
    while True:
        try:
            family, kind, value = conn.recv()
        except (EOFError, OSError):
            return
        verdict: str | None = None
        try:
            compile_artifact(ConstraintArtifact(kind, value), family)
        except ConstraintError as exc:
            verdict = str(exc)
        except MemoryError:
            verdict = "xgrammar ran out of memory compiling it"
        except Exception as exc:  # a grammar that crashes xgrammar is refused, never served
            verdict = f"xgrammar failed on it: {type(exc).__name__}: {exc}"
        clear_compile_cache(family)  # the worker keeps nothing: its memory is measured per grammar
        conn.send(verdict)


@dataclass
class GuardStats:
    """What the guard did since the server started (``GET /health`` shows it)."""

    compiled: int = 0
    """Grammars the worker compiled within the bounds."""
    refused: int = 0
    """Grammars xgrammar refused (bad syntax, bad schema)."""
    timeouts: int = 0
    """Compiles stopped at ``compile_timeout_s``."""
    memory_kills: int = 0
    """Compiles stopped at ``compile_memory_mb``."""
    verdict_hits: int = 0
    """Requests answered from the verdict cache."""
    worker_starts: int = 0


class CompileGuard:
    """Compiles grammars in a worker process under the time and memory bounds of ``limits``."""

    def __init__(self, limits: ServeLimits, families: Sequence[str]) -> None:
        self.limits = limits
        self.families = tuple(families)
        self.stats = GuardStats()
        self._verdicts: OrderedDict[bytes, str | None] = OrderedDict()
        self._turn = asyncio.Lock()
        self._mutex = threading.Lock()
        self._process: Any = None
        self._conn: Any = None
        self._ready = False
        self._closed = False

    # -- the worker process ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker (it loads the tokenizers while the server gets ready); does not wait."""
        with self._mutex:
            if self._process is None and not self._closed:
                context = multiprocessing.get_context("spawn")
                parent, child = context.Pipe()
                self._process = context.Process(
                    target=_worker, args=(child, self.families), name="harness-compile", daemon=True
                )
                self._process.start()
                child.close()
                self._conn, self._ready = parent, False
                self.stats.worker_starts += 1

    def wait_ready(self) -> None:
        """Block until the worker has loaded its tokenizers (ConstraintError if it cannot start)."""
        with self._mutex:
            if self._process is None:
                return
        self._wait_ready()

    def _wait_ready(self) -> None:
        conn = self._conn
        if self._ready or conn is None:
            return
        try:
            if not conn.poll(READY_TIMEOUT_S):
                self._kill()
                raise ConstraintError(f"the compile worker did not start within {READY_TIMEOUT_S:g} s")
            conn.recv()
        except (EOFError, OSError) as exc:
            self._kill()
            raise ConstraintError("the compile worker failed to start (or the server is shutting down)") from exc
        self._ready = True

    def _kill(self, restart: bool = False) -> None:
        """Stop the worker; with ``restart``, start the next one now, so it loads while the server
        answers (grammars the server compiled before never wait for it)."""
        with self._mutex:
            process, conn = self._process, self._conn
            self._process = self._conn = None
            self._ready = False
        if process is not None:
            process.kill()
            process.join(5)
        if conn is not None:
            conn.close()
        if restart and not self._closed:
            self.start()

    def close(self) -> None:
        """Stop the worker (a compile in flight is abandoned)."""
        self._closed = True
        self._kill()

    @property
    def worker_pid(self) -> int | None:
        process = self._process
        return None if process is None else int(process.pid)

    # -- one grammar --------------------------------------------------------------------------------

    @staticmethod
    def key(artifact: ConstraintArtifact, family: str) -> bytes:
        text = f"{family}\0{artifact.kind}\0{artifact.value}"
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def _remember(self, key: bytes, verdict: str | None) -> None:
        if self.limits.verdict_cache_entries <= 0:
            return
        self._verdicts[key] = verdict
        self._verdicts.move_to_end(key)
        while len(self._verdicts) > self.limits.verdict_cache_entries:
            self._verdicts.popitem(last=False)

    async def compile(self, artifact: ConstraintArtifact, family: str) -> None:
        """Compile ``artifact`` for ``family`` in the server, once it is known to compile within the
        bounds (checked in the worker the first time); ConstraintError naming the bound it hit, or
        xgrammar's complaint, otherwise. A grammar the server compiled lately goes straight to its
        cache; new grammars take turns, so a slow one delays only other new ones."""
        from harness.grammar import compile_artifact, is_kept, was_compiled

        keep = functools.partial(compile_artifact, keep=True, bound=None)  # bounded in the worker already
        key = self.key(artifact, family)
        if key not in self._verdicts and (was_compiled(artifact, family) or is_kept(artifact, family)):
            # compiled here lately, or by an earlier server on this machine (the on-disk store)
            self.stats.verdict_hits += 1
            await asyncio.to_thread(keep, artifact, family)
            return
        if key in self._verdicts:
            self._verdicts.move_to_end(key)
            verdict = self._verdicts[key]
            if verdict is not None:
                self.stats.verdict_hits += 1
                raise ConstraintError(verdict)
            if was_compiled(artifact, family):
                self.stats.verdict_hits += 1
                await asyncio.to_thread(keep, artifact, family)
                return
        async with self._turn:
            if key in self._verdicts:  # checked while this request waited its turn
                verdict = self._verdicts[key]
            else:
                verdict = await asyncio.to_thread(self._compile, artifact, family)
                self._remember(key, verdict)
            if verdict is not None:
                raise ConstraintError(verdict)
            await asyncio.to_thread(keep, artifact, family)  # one server compile at a time

    def _compile(self, artifact: ConstraintArtifact, family: str) -> str | None:
        """Compile in the worker, watching its clock and memory; the verdict (None: it compiles)."""
        import psutil

        if self._closed:
            return "the server is shutting down"
        if self._process is None:
            self.start()
        self._wait_ready()
        conn, pid = self._conn, self.worker_pid
        if conn is None or pid is None:
            raise ConstraintError("the compile worker is not running (the server is shutting down?)")
        worker = psutil.Process(pid)
        before = worker.memory_info().rss
        ceiling = before + self.limits.compile_memory_mb * MIB
        deadline = time.monotonic() + self.limits.compile_timeout_s
        conn.send((family, artifact.kind, artifact.value))
        while True:
            try:
                answered = conn.poll(self.limits.compile_poll_s)
                verdict: str | None = conn.recv() if answered else None
            except (EOFError, OSError):
                if self._closed:
                    return "the server is shutting down"
                self._kill(restart=True)
                return "the compile worker died compiling this grammar (killed for memory by the system?)"
            if answered:
                if verdict is None:
                    self.stats.compiled += 1
                else:
                    self.stats.refused += 1
                return verdict
            try:
                used = worker.memory_info().rss
            except psutil.Error:
                used = 0
            if used > ceiling:
                self._kill(restart=True)
                self.stats.memory_kills += 1
                return (f"compiling this grammar took more than compile_memory_mb={self.limits.compile_memory_mb} "
                        "MiB (a bound of this server): refused, the compile was stopped")
            if time.monotonic() > deadline:
                self._kill(restart=True)
                self.stats.timeouts += 1
                return (f"this grammar did not compile within compile_timeout_s={self.limits.compile_timeout_s:g} "
                        "(a bound of this server): refused, the compile was stopped")


__all__ = ["CompileGuard", "GuardStats"]
