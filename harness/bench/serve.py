"""``harness bench serve``: hostile requests against ``harness serve``, with the server's memory sampled.

Starts ``harness serve --engine oracle`` as a child process (grammars are bounded the same way whatever
the engine; the oracle needs no weights), measures its idle memory,
then sends each attack request (a grammar of 20,000 rules, 100,000 ``choice`` strings, a JSON schema
nested 2,000 deep, a body nested 100,000 deep, a 5 MB body, and grammars under the size bound that
take long to compile), each twice (the second answered from the verdict cache), while a thread samples
the resident memory of the server process and of its compile worker every 50 ms. Then a healthy
constrained request, to show the server still answers, and a shutdown (SIGTERM) timed while a slow
compile is in flight. Every figure is measured, none asserted: the machine is shared and noisy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.bench.records import BenchRecord

MB = 1024 * 1024
SAMPLE_S = 0.05


def rules_grammar(n: int) -> str:
    """``n`` rules that refer to each other: xgrammar's compile time grows about with the square of n
    (5,000 rules, 224 KB: ~11 s here; 20,000 rules: minutes and gigabytes)."""
    rules = [f'r{i} ::= "a{i}" r{(i + 1) % n} | "b{i}" | r{(i * 7) % n} "c"' for i in range(n)]
    return "root ::= r0\n" + "\n".join(rules) + "\n"


def _name(i: int) -> str:
    digits = "abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        i, r = divmod(i, 26)
        out = digits[r] + out
        if i == 0:
            return "r" + out


def short_rules_grammar(n: int) -> str:
    """``n`` rules in ~25 bytes each, some referring to themselves: 9,000 fit under the 256 KB
    constraint bound; xgrammar took 31 s for 3,000 of them and 170 s for 6,000 here."""
    rules = [f'{_name(i)} ::= "x" {_name((i + 1) % n)} | {_name((i * 7) % n)}' for i in range(n)]
    return f"root ::= {_name(0)}\n" + "\n".join(rules) + "\n"


def nested_schema(depth: int) -> str:
    """The text of a JSON schema nested ``depth`` objects deep (built as text: ``json.dumps`` recurses)."""
    return '{"type": "object", "properties": {"a": ' * depth + '{"type": "string"}' + "}}" * depth


def doubling_schema(depth: int) -> dict[str, Any]:
    """A schema whose every level refers to the one below twice (its text doubles per level)."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema, "b": {"type": "array", "items": schema}}}
    return schema


def _body(**extra: Any) -> dict[str, Any]:
    return {"model": "oracle-qwen", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
            "oracle": {"calls": []}, **extra}


ATTACKS: dict[str, Callable[[], bytes]] = {
    "grammar of 20,000 rules (0.9 MB)": lambda: json.dumps(_body(structured_outputs={"grammar": rules_grammar(20_000)})).encode(),
    "choice of 100,000 strings": lambda: json.dumps(_body(structured_outputs={"choice": [f"w{i}" for i in range(100_000)]})).encode(),
    "JSON schema nested 2,000 deep": lambda: json.dumps(_body(structured_outputs={"json": "SCHEMA"})).encode().replace(
        b'"SCHEMA"', nested_schema(2000).encode()),
    "body nested 100,000 deep": lambda: b'{"model": "oracle-qwen", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "body of 5 MB": lambda: json.dumps(_body(messages=[{"role": "user", "content": "x" * (5 * MB)}])).encode(),
    "grammar of 9,000 short rules (250 KB, under the size bound; minutes to compile)": lambda: json.dumps(
        _body(structured_outputs={"grammar": short_rules_grammar(9_000)})).encode(),
    "grammar of 5,000 rules (224 KB, under the size bound; ~11 s to compile)": lambda: json.dumps(
        _body(structured_outputs={"grammar": rules_grammar(5_000)})).encode(),
    "JSON schema doubling 11 deep (under the size bound, slow)": lambda: json.dumps(
        _body(structured_outputs={"json": doubling_schema(11)})).encode(),
    "choice of 20,000 strings (under the size bound)": lambda: json.dumps(
        _body(structured_outputs={"choice": [f"w{i}" for i in range(20_000)]})).encode(),
}
HEALTHY = _body(structured_outputs={"grammar": 'root ::= "Done."'}, oracle={"calls": []})


@dataclass
class Sampler:
    """Peak resident memory of the server and of its other processes (the compile worker)."""

    pid: int
    server_mb: float = 0.0
    worker_mb: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)

    def _loop(self) -> None:
        import psutil

        server = psutil.Process(self.pid)
        while not self._stop.wait(SAMPLE_S):
            try:
                self.server_mb = max(self.server_mb, server.memory_info().rss / MB)
                for child in server.children(recursive=True):
                    self.worker_mb = max(self.worker_mb, child.memory_info().rss / MB)
            except psutil.Error:
                return

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class AttackFigure(BenchRecord):
    """One attack request, sent twice (the second answered from the verdict cache)."""

    name: str
    """What the request is."""
    status: int
    """The server's HTTP status (0: no answer)."""
    seconds: float
    """Until the answer."""
    repeat_status: int
    """The status of the same request again."""
    repeat_seconds: float
    """Until that answer."""
    message: str
    """The start of the error message."""
    server_peak_mb: int
    """The server process's peak resident memory during the two requests."""
    worker_peak_mb: int
    """Its compile worker's peak."""


class ServeBench(BenchRecord):
    """``harness bench serve``'s figures (its JSON line)."""

    engine: str
    """The served engine (grammars are bounded the same way whatever the engine)."""
    start_s: float
    """Until the server listened."""
    idle_server_mb: int
    """The server's resident memory, idle."""
    idle_worker_mb: int
    """The compile worker's, idle."""
    peak_server_mb: int
    """The server's peak over every attack."""
    peak_worker_mb: int
    """The worker's peak over every attack."""
    attacks: list[AttackFigure]
    """Each attack."""
    healthy_status: int
    """A healthy request after the attacks."""
    healthy_s: float
    """Its time."""
    healthy_during_compile_status: int
    """A healthy request (its grammar seen before) while a slow new grammar compiles."""
    healthy_during_compile_s: float
    """Its time."""
    shutdown_s: float
    """SIGTERM with a compile in flight, until the process ended."""


def _post(url: str, data: bytes, timeout: float) -> tuple[int, str, float]:
    import httpx

    started = time.perf_counter()
    try:
        r = httpx.post(url, content=data, headers={"content-type": "application/json"}, timeout=timeout)
        status, text = r.status_code, r.text
    except httpx.HTTPError as exc:
        status, text = 0, f"{type(exc).__name__}: {exc}"
    return status, text, time.perf_counter() - started


def _message(text: str) -> str:
    try:
        return str(json.loads(text)["error"]["message"])[:160]
    except (ValueError, KeyError, TypeError):
        return text[:160]


def _start(engine: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], str, float]:
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "serve", "--engine", engine, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, **env, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if "listening on " in line:
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # drain
            return proc, line.rsplit("listening on ", 1)[1].strip(), time.perf_counter() - started
    raise RuntimeError("harness serve did not start")


def bench_serve(env: dict[str, str] | None = None, log: Callable[[str], None] = print) -> ServeBench:
    """Run the attacks on the oracle engine's server (``env``: extra environment, e.g. HARNESS_SERVE_*
    bounds); the figures as a dict (see the module doc)."""
    import psutil

    engine = "oracle"
    proc, url, start_s = _start(engine, env or {})
    chat = url + "/chat/completions"
    try:
        time.sleep(1.0)
        server = psutil.Process(proc.pid)
        idle_server = server.memory_info().rss / MB
        idle_worker = max((c.memory_info().rss / MB for c in server.children(recursive=True)), default=0.0)
        log(f"started in {start_s:.1f} s; idle: server {idle_server:.0f} MB, compile worker {idle_worker:.0f} MB")
        figures: list[AttackFigure] = []
        with Sampler(proc.pid) as overall:
            for name, make in ATTACKS.items():
                data = make()
                with Sampler(proc.pid) as sampled:
                    status, text, seconds = _post(chat, data, 300)
                    repeat, _, repeat_s = _post(chat, data, 300)
                figures.append(AttackFigure(
                    name=name, status=status, seconds=round(seconds, 2), repeat_status=repeat,
                    repeat_seconds=round(repeat_s, 2), message=_message(text), server_peak_mb=round(sampled.server_mb),
                    worker_peak_mb=round(sampled.worker_mb),
                ))
                log(f"{name}: {status} in {seconds:.2f} s (again: {repeat} in {repeat_s:.2f} s); peak server "
                    f"{sampled.server_mb:.0f} MB, worker {sampled.worker_mb:.0f} MB: {_message(text)}")
            healthy, _, healthy_s = _post(chat, json.dumps(HEALTHY).encode(), 60)
            log(f"healthy request after the attacks: {healthy} in {healthy_s:.2f} s")
            # A healthy request (its grammar seen before) while a new slow grammar compiles.
            slow = json.dumps(_body(structured_outputs={"grammar": short_rules_grammar(8_000)})).encode()
            threading.Thread(target=_post, args=(chat, slow, 300), daemon=True).start()
            time.sleep(2.0)
            during, _, during_s = _post(chat, json.dumps(HEALTHY).encode(), 60)
            log(f"healthy request while a slow grammar compiles: {during} in {during_s:.2f} s")
        # Shutdown while a slow grammar compiles (a fresh one: not in the verdict cache).
        slow = json.dumps(_body(structured_outputs={"grammar": short_rules_grammar(8_500)})).encode()
        threading.Thread(target=_post, args=(chat, slow, 300), daemon=True).start()
        time.sleep(2.0)
        stop_started = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
        shutdown_s = time.perf_counter() - stop_started
        log(f"shutdown (SIGTERM) with a compile in flight: {shutdown_s:.2f} s")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return ServeBench(
        engine=engine,
        start_s=round(start_s, 2),
        idle_server_mb=round(idle_server),
        idle_worker_mb=round(idle_worker),
        peak_server_mb=round(overall.server_mb),
        peak_worker_mb=round(overall.worker_mb),
        attacks=figures,
        healthy_status=healthy,
        healthy_s=round(healthy_s, 2),
        healthy_during_compile_status=during,
        healthy_during_compile_s=round(during_s, 2),
        shutdown_s=round(shutdown_s, 2),
    )


__all__ = ["ATTACKS", "bench_serve", "doubling_schema", "nested_schema", "rules_grammar"]
