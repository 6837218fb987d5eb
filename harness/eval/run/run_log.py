"""The run's log: what a run says, to the terminal and, with times, to ``run.log`` in its directory."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

LOG_FILE = "run.log"
"""The run's log in its directory: what the run said (setup, bound, servers) and the engine's own lines
(llama.cpp's), with times; the terminal gets the progress, not engine chatter."""


class RunLog:
    """The run's messages: to the caller's ``log`` and, with times, to ``run.log`` once the run
    directory exists (earlier lines are kept until then). ``engine`` lines (llama.cpp's own) go to the
    file only. Thread-safe: llama.cpp logs from the worker thread."""

    def __init__(self, echo: Callable[[str], None]) -> None:
        self.echo = echo
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._file: TextIO | None = None

    def __call__(self, message: str) -> None:
        self.echo(message)
        self._write(message)

    def engine(self, text: str) -> None:
        self._write(text.rstrip("\n"), prefix="engine: ")

    def _write(self, message: str, prefix: str = "") -> None:
        if not message:
            return
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {prefix}{message}\n"
        with self._lock:
            if self._file is None:
                self._pending.append(line)
            else:
                self._file.write(line)
                self._file.flush()

    @contextlib.contextmanager
    def to_file(self, path: Path) -> Iterator[None]:
        """Write to ``path`` (appended: a resumed run keeps its earlier lines) while the block runs."""
        with path.open("a", encoding="utf-8") as fh:
            with self._lock:
                fh.writelines(self._pending)
                self._pending.clear()
                self._file = fh
            try:
                yield
            finally:
                with self._lock:
                    self._file = None


__all__ = ["LOG_FILE", "RunLog"]
