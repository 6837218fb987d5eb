"""``harness serve`` as a real subprocess on 127.0.0.1 with an ephemeral port, for tests that talk to it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time


class Server:
    """``harness serve`` in a subprocess; ``url`` is its ``/v1`` base URL."""

    def __init__(self, engine: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli.main", "serve", "--engine", engine, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        self.lines: list[str] = []
        self.url = ""
        ready = threading.Event()

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.append(line)
                if "listening on " in line and not self.url:
                    self.url = line.rsplit("listening on ", 1)[1].strip()
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + 180
        while not ready.wait(0.2):
            if time.monotonic() > deadline:
                break
        if not self.url:
            self.stop()
            raise RuntimeError("harness serve did not start:\n" + "".join(self.lines))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
