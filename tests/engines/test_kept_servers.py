"""vLLM servers kept up across runs, with a stand-in for the server process (a small HTTP server that
answers /health, in a session of its own, with a child, as vLLM's engine core is): the state file, how
a run finds it again, and how ``harness vllm down`` stops its whole process group."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.main import app
from harness.engines.vllm.kept import KeptServer, find_kept, kept_servers, record, server_key, stop_kept
from harness.engines.vllm.launch import server_args, server_env
from harness.engines.vllm.opener import VllmServers, user_model

runner = CliRunner()
STAND_IN = """
import http.server, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(child.pid, flush=True)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture()
def stand_in(cache: Path, tmp_path: Path) -> Iterator[tuple[KeptServer, int]]:
    """A kept "server" for qwen on a model folder, as ``VllmServer(keep=True)`` records it."""
    port = _port()
    proc = subprocess.Popen([sys.executable, "-c", STAND_IN, str(port)], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    model = user_model(str(tmp_path / "my-qwen"), "qwen")
    command = server_args(model, port)
    server = KeptServer(key=server_key(command, server_env()), pid=proc.pid, host="127.0.0.1", port=port, family="qwen",
                        model=model.served_name, model_path=str(model.path), command=command,
                        log=str(tmp_path / "log"), started_at=time.time())
    record(server)
    assert server.wait_ready(30)
    yield server, child
    for pid in (proc.pid, child):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    proc.wait(5)


def test_the_key_is_the_servers_command_without_where_it_listens() -> None:
    model = user_model("/models/q", "qwen")
    env = server_env()
    assert server_key(server_args(model, 8000), env) == server_key(server_args(model, 9001, host="0.0.0.0"), env)
    assert server_key(server_args(model, 8000), env) != server_key(server_args(model, 8000, extra=["--x", "1"]), env)
    other = user_model("/models/other", "qwen")
    assert server_key(server_args(model, 8000), env) != server_key(server_args(other, 8000), env)


def test_a_run_asking_for_the_same_server_uses_the_kept_one(stand_in: tuple[KeptServer, int], tmp_path: Path) -> None:
    server, _ = stand_in
    lines: list[str] = []
    setup = VllmServers(log_dir=tmp_path, model_args={"qwen": str(tmp_path / "my-qwen")}, log=lines.append)
    setup.prepare(["qwen"])  # no vLLM started (none could be: the folder holds no model)
    assert setup.servers["qwen"] == server and setup.base_url == server.base_url
    assert any("using the kept server for qwen" in line for line in lines)
    assert setup.describe()["servers"][0]["kept"] is True
    assert [e.base_url for e in setup.endpoints(["qwen"])] == [server.base_url]
    other = VllmServers(log_dir=tmp_path, model_args={"qwen": str(tmp_path / "my-qwen")}, extra_args=("--x", "1"))
    other.resolve("qwen")
    assert find_kept(server_key(server_args(other.models["qwen"], 0, extra=other.extra_args), server_env())) is None


def test_vllm_list_and_down_stop_the_whole_process_group(stand_in: tuple[KeptServer, int]) -> None:
    server, child = stand_in
    listed = runner.invoke(app, ["vllm", "list"])
    assert listed.exit_code == 0 and "qwen" in listed.stdout and "serving" in listed.stdout
    result = runner.invoke(app, ["vllm", "down"])
    assert result.exit_code == 0 and f"pid {server.pid}" in result.stdout
    deadline = time.monotonic() + 10
    while (_alive(server.pid) or _alive(child)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)  # the engine core's stand-in went with it
    assert not server.state_file.exists() and kept_servers() == []
    assert "no kept vLLM server is up" in runner.invoke(app, ["vllm", "down"]).stdout


def test_a_state_file_whose_process_is_gone_is_pruned(cache: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    server = KeptServer(key="k", pid=gone.pid, host="127.0.0.1", port=1, family="qwen", model="m", model_path="/m",
                        command=["x"], log="l", started_at=0.0)
    record(server)
    assert json.loads(server.state_file.read_text())["pid"] == gone.pid
    assert kept_servers() == [] and not server.state_file.exists()
    assert stop_kept(server) is False
