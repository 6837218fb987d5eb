"""Lock-out attacks on a running ``harness serve`` (part of ``harness bench serve``): idle sockets,
slowloris headers, a huge header, a body shorter than its ``Content-Length``, a slow body, an idle
keep-alive connection. Each attack holds its sockets while ``/health`` is asked on a fresh connection;
the figures are what ``/health`` answered and how fast, what the attacking sockets got, and how long
the server let them stay (up to ``hold_s``). Nothing is asserted: the tests do that."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.bench.records import BenchRecord

MB = 1024 * 1024


class LockoutFigure(BenchRecord):
    """One attack's figures."""

    name: str
    """What the attack is."""
    sockets: int
    """Attacking sockets."""
    health_status: int
    """What ``/health`` answered during the attack (0: no answer within its timeout)."""
    health_s: float
    """How long ``/health`` took."""
    answered: str
    """The status line the attacking sockets got first ("" when closed without one or still open)."""
    closed: int
    """Attacking sockets the server closed within ``hold_s``."""
    held_s: float | None
    """Seconds until the last attacking socket was closed (None: some were still open at ``hold_s``)."""


def _host_port(url: str) -> tuple[str, int]:
    hostport = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = hostport.rpartition(":")
    return host, int(port)


def health(url: str, timeout: float = 10.0) -> tuple[int, float]:
    """(status, seconds) of ``GET /health`` on a fresh connection (status 0: no answer)."""
    import httpx

    base = url.rsplit("/v1", 1)[0]
    started = time.perf_counter()
    try:
        status = httpx.get(base + "/health", timeout=timeout).status_code
    except httpx.HTTPError:
        status = 0
    return status, time.perf_counter() - started


class _Attack:
    """Sockets opened against the server, each sending ``first`` then ``drip`` every ``every`` seconds."""

    def __init__(self, url: str, count: int, first: bytes = b"", drip: bytes = b"", every: float = 1.0) -> None:
        self.address = _host_port(url)
        self.count, self.first, self.drip, self.every = count, first, drip, every
        self.sockets: list[socket.socket] = []
        self.closed_at: dict[int, float] = {}
        self.answers: dict[int, bytes] = {}
        self._stop = threading.Event()

    def open(self) -> None:
        self.started = time.perf_counter()
        for _ in range(self.count):
            s = socket.create_connection(self.address, timeout=30)
            if self.first:
                try:
                    s.sendall(self.first)
                except OSError:
                    pass
            self.sockets.append(s)
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        import selectors

        sel = selectors.DefaultSelector()
        for i, s in enumerate(self.sockets):
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, i)
        next_drip = time.perf_counter() + self.every
        while not self._stop.is_set() and len(self.closed_at) < len(self.sockets):
            for key, _ in sel.select(timeout=0.1):
                i, s = key.data, self.sockets[key.data]
                try:
                    data = s.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data:
                    self.answers.setdefault(i, data)
                    continue
                self.closed_at[i] = time.perf_counter() - self.started
                sel.unregister(s)
            if self.drip and time.perf_counter() >= next_drip:
                next_drip += self.every
                for i, s in enumerate(self.sockets):
                    if i not in self.closed_at:
                        try:
                            s.send(self.drip)
                        except OSError:
                            pass
        sel.close()

    def figure(self, name: str, hold_s: float, probe: Callable[[], tuple[int, float]]) -> LockoutFigure:
        status, seconds = probe()
        deadline = self.started + hold_s
        while len(self.closed_at) < len(self.sockets) and time.perf_counter() < deadline:
            time.sleep(0.1)
        self._stop.set()
        for s in self.sockets:
            s.close()
        first = next(iter(self.answers.values()), b"")
        line = first.split(b"\r\n", 1)[0].decode("latin-1") if first else ""
        everyone = len(self.closed_at) == len(self.sockets)
        return LockoutFigure(name=name, sockets=len(self.sockets), health_status=status, health_s=round(seconds, 2),
                             answered=line, closed=len(self.closed_at),
                             held_s=round(max(self.closed_at.values()), 1) if everyone else None)


def attack(url: str, name: str, count: int, hold_s: float, first: bytes = b"", drip: bytes = b"",
            settle_s: float = 1.0) -> LockoutFigure:
    attack = _Attack(url, count, first, drip)
    attack.open()
    time.sleep(settle_s)
    return attack.figure(name, hold_s, lambda: health(url))


@dataclass
class _Sent:
    count: int = 0
    answer: bytes = b""
    seconds: float | None = None


def huge_header(url: str, hold_s: float, size: int = 64 * MB) -> LockoutFigure:
    """One connection sends a request whose header is ``size`` bytes; /health is asked meanwhile."""
    sock = socket.create_connection(_host_port(url), timeout=hold_s)
    sent = _Sent()

    def send() -> None:
        started, chunk = time.perf_counter(), b"a" * MB
        try:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
            while sent.count < size:
                sock.sendall(chunk)
                sent.count += len(chunk)
            sock.sendall(b"\r\n\r\n")
        except OSError:
            pass  # the server stopped reading and closed: what the bound is for
        try:
            sent.answer = sock.recv(4096)
        except OSError:
            pass
        sent.seconds = round(time.perf_counter() - started, 1)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    time.sleep(0.5)
    status, seconds = health(url)
    thread.join(hold_s)
    sock.close()
    line = sent.answer.split(b"\r\n", 1)[0].decode("latin-1")
    return LockoutFigure(name=f"one header of {size // MB} MB ({sent.count // MB} MB sent)", sockets=1,
                         health_status=status, health_s=round(seconds, 2), answered=line,
                         closed=int(sent.seconds is not None), held_s=sent.seconds)


POST = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


@dataclass(frozen=True)
class LockoutAttack:
    """Sockets that each send ``first``, then ``drip`` every second, and otherwise stay open."""

    name: str
    sockets: int = 1
    first: bytes = b""
    drip: bytes = b""
    header_bytes: int = 0
    """When set: one socket sends a header this large instead (``first`` and ``drip`` unused)."""


ATTACKS: list[LockoutAttack] = [
    LockoutAttack("31 idle connections", 31),
    LockoutAttack("200 idle connections", 200),
    LockoutAttack("300 idle connections", 300),
    LockoutAttack("40 slowloris connections (a header line a second)", 40, POST, b"X-a: b\r\n"),
    LockoutAttack("one header of 64 MB", header_bytes=64 * MB),
    LockoutAttack("Content-Length: 1000 with 8 bytes sent", 1, POST + b'Content-Length: 1000\r\n\r\n{"model"'),
    LockoutAttack("a body of 1000 bytes at a byte a second", 1, POST + b"Content-Length: 1000\r\n\r\n", b"x"),
    LockoutAttack("an idle keep-alive connection after a response", 1, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"),
]


def run_attack(url: str, spec: LockoutAttack, hold_s: float = 60.0) -> LockoutFigure:
    """One attack against the server at ``url`` (its ``/v1`` base)."""
    if spec.header_bytes:
        return huge_header(url, hold_s, spec.header_bytes)
    return attack(url, spec.name, spec.sockets, hold_s, spec.first, spec.drip)


def lockout_attacks(url: str, hold_s: float = 60.0, log: Callable[[str], None] = print) -> list[LockoutFigure]:
    """Every attack of ATTACKS in turn against the server at ``url``."""
    figures = []
    for spec in ATTACKS:
        figure = run_attack(url, spec, hold_s)
        figures.append(figure)
        held = f"all closed after {figure.held_s} s" if figure.held_s is not None else \
            f"{figure.sockets - figure.closed} of {figure.sockets} still open after {hold_s:.0f} s"
        log(f"{figure.name}: /health {figure.health_status} in {figure.health_s:.2f} s; attackers got "
            f"{figure.answered or 'no answer'}; {held}")
    return figures


__all__ = ["ATTACKS", "LockoutAttack", "LockoutFigure", "attack", "health", "huge_header", "lockout_attacks", "run_attack"]
