"""Figures, not a test: ``harness run`` against a server whose every answer is 100 MB (issue 14, item 2).

    python tests/bench/huge_answers.py [--mb 100] [--limit 3]

Starts a small OpenAI-compatible server on 127.0.0.1 that answers every chat completion with ``--mb``
megabytes of content (written in 1 MB pieces, with a Content-Length, or streamed as SSE chunks),
runs ``harness run suites/smoke --engine openai`` against it (qwen, the four strategies, ``--limit``
cases; the openai engine streams) while sampling the run's resident memory every 50 ms, and prints the
peak memory, the size of samples.jsonl and the error kinds the samples ended with. Before the client
had a bound, 24 such samples took the run to 10 GB and wrote a 2.4 GB samples.jsonl, as successes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MB = 1024 * 1024


def handler(size_mb: int) -> type[BaseHTTPRequestHandler]:
    class Huge(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # /v1/models
            self._send(json.dumps({"object": "list", "data": [{"id": "huge", "object": "model"}]}).encode())

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            try:
                if body.get("stream"):
                    self._stream(size_mb)
                else:
                    self._whole(size_mb)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what the bound is for

        def _send(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _whole(self, size: int) -> None:
            head = b'{"id": "x", "object": "chat.completion", "created": 0, "model": "huge", "choices": [{"index": 0, "message": {"role": "assistant", "content": "'
            tail = b'"}, "finish_reason": "stop"}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(head) + size * MB + len(tail)))
            self.end_headers()
            self.wfile.write(head)
            for _ in range(size):
                self.wfile.write(b"x" * MB)
            self.wfile.write(tail)

        def _stream(self, size: int) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            piece = json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "huge",
                                "choices": [{"index": 0, "delta": {"content": "x" * 65536}}]})
            for _ in range(size * 16):
                self.wfile.write(f"data: {piece}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

    return Huge


def main() -> None:
    import psutil

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--limit", type=int, default=3)
    args = parser.parse_args()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler(args.mb))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    out = Path(tempfile.mkdtemp()) / "run"
    command = [sys.executable, "-m", "harness.cli.main", "run", "suites/smoke", "--engine", "openai",
               "--base-url", f"http://127.0.0.1:{httpd.server_address[1]}/v1", "--model", "huge",
               "--family", "qwen", "--strategy", "none,ebnf,structural_tag,json_schema", "--limit", str(args.limit),
               "--out", str(out)]
    started = time.perf_counter()
    run = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = 0.0
    process = psutil.Process(run.pid)
    while run.poll() is None:
        try:
            peak = max(peak, process.memory_info().rss / MB)
        except psutil.Error:
            break
        time.sleep(0.05)
    output = run.stdout.read() if run.stdout else ""
    samples = out / "samples.jsonl"
    kinds = Counter(json.loads(line)["error_kind"] for line in samples.read_text().splitlines()) if samples.exists() else {}
    print(output[-1500:])
    print(json.dumps({
        "answer_mb": args.mb, "exit_code": run.returncode, "wall_s": round(time.perf_counter() - started, 1),
        "peak_rss_mb": round(peak), "samples_jsonl_bytes": samples.stat().st_size if samples.exists() else None,
        "error_kinds": dict(kinds),
    }))
    httpd.shutdown()


if __name__ == "__main__":
    main()
