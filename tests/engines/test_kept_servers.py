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

import psutil
import pytest
from typer.testing import CliRunner

from harness.cli.main import app
from harness.engines.vllm.kept import (
    NONCE_ENV,
    KeptServer,
    find_kept,
    kept_servers,
    new_nonce,
    record,
    server_key,
    state_dir,
    stop_kept,
    survey,
)
from harness.engines.vllm.launch import server_args, server_env
from harness.engines.vllm.opener import VllmServers, user_model

runner = CliRunner()
STAND_IN = """
import http.server, json, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(child.pid, flush=True)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"data": [{"id": sys.argv[2]}]}).encode() if self.path == "/v1/models" else b""
        self.send_response(200 if self.path in ("/health", "/v1/models") else 404)
        self.end_headers()
        self.wfile.write(body)
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
    """A kept "server" for qwen on a model folder, recorded as ``VllmServer(keep=True)`` records one
    (its key from the vLLM command; its identity from the stand-in's own process)."""
    port = _port()
    model = user_model(str(tmp_path / "my-qwen"), "qwen")
    argv = [sys.executable, "-c", STAND_IN, str(port), model.served_name]
    nonce = new_nonce()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, NONCE_ENV: nonce})
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    server = KeptServer(key=server_key(server_args(model, port), server_env()), pid=proc.pid, host="127.0.0.1",
                        port=port, family="qwen", model=model.served_name, model_path=str(model.path), command=argv,
                        log=str(tmp_path / "log"), started_at=time.time(),
                        create_time=psutil.Process(proc.pid).create_time(), nonce=nonce)
    record(server)
    assert server.wait_ready(30)
    yield server, child
    for pid in (proc.pid, child):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    proc.wait(5)


@pytest.fixture()
def stranger(cache: Path) -> Iterator[psutil.Process]:
    """A process this test starts in a session of its own (``setsid sleep``): what a reused pid names."""
    proc = subprocess.Popen(["setsid", "sleep", "300"])  # not a group leader: setsid execs sleep in this pid
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and psutil.Process(proc.pid).cmdline()[:1] != ["sleep"]:
        time.sleep(0.02)
    yield psutil.Process(proc.pid)
    proc.kill()
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
    server = _planted(pid=gone.pid)
    assert json.loads(server.state_file.read_text())["pid"] == gone.pid
    assert kept_servers() == [] and not server.state_file.exists()
    assert stop_kept(server) is False


KEY = "0123456789abcdef"


def _planted(**fields: object) -> KeptServer:
    """A state file written as the harness writes one, with ``fields`` changed."""
    values: dict[str, object] = dict(
        key=KEY, pid=2, host="127.0.0.1", port=1, family="function_gemma", model="m", model_path="/m",
        command=["x"], log="l", started_at=0.0, create_time=0.0, nonce="0" * 32)
    values.update(fields)
    server = KeptServer(**values)  # type: ignore[arg-type]
    record(server)
    return server


def _as_stranger(stranger: psutil.Process, how: str) -> dict[str, object]:
    """State fields naming ``stranger``: as a reused pid (its own start time and command line, no nonce),
    or with the recorded start time of the server that died."""
    if how == "reused pid, same start time and command line":
        return {"pid": stranger.pid, "create_time": stranger.create_time(), "command": stranger.cmdline()}
    return {"pid": stranger.pid, "create_time": stranger.create_time() - 5.0, "command": stranger.cmdline()}


STALE = ["reused pid, same start time and command line", "reused pid, older start time"]


def check_survives(stranger: psutil.Process, server: KeptServer, output: str) -> None:
    time.sleep(0.3)
    assert stranger.is_running() and stranger.status() != psutil.STATUS_ZOMBIE
    assert not server.state_file.exists()
    assert f"removed the stale state file {server.state_file}" in " ".join(output.split())


@pytest.mark.parametrize("how", STALE)
@pytest.mark.parametrize("command", [["vllm", "down"], ["vllm", "list"], ["vllm", "down", "--family", "function_gemma"]])
def test_a_stale_state_file_leaves_the_process_it_names_alive(stranger: psutil.Process, how: str,
                                                              command: list[str]) -> None:
    server = _planted(**_as_stranger(stranger, how))
    result = runner.invoke(app, command)
    assert result.exit_code == 0, result.output
    assert "stopped" not in result.stdout and "no kept vLLM server is up" in result.stdout
    check_survives(stranger, server, result.stderr)


def test_stop_kept_never_signals_a_process_that_is_not_the_server(stranger: psutil.Process) -> None:
    server = _planted(**_as_stranger(stranger, STALE[0]))
    assert stop_kept(server, grace_s=0.1) is False
    check_survives(stranger, server, f"removed the stale state file {server.state_file}")


@pytest.mark.parametrize("how", STALE)
def test_a_run_does_not_take_a_stale_state_file_for_its_server(stranger: psutil.Process, how: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``harness run --engine vllm``'s path (VllmServers): the stale file is removed and a server is started
    (the start is a fake raising at once: this seam is the question, not vLLM)."""
    from harness.engines.shapes import EngineError
    from harness.engines.vllm import launch

    setup = VllmServers(log_dir=tmp_path, model_args={"qwen": str(tmp_path / "my-qwen")}, log=(lines := []).append)
    key = server_key(server_args(setup.resolve("qwen"), 0), server_env())
    server = _planted(**_as_stranger(stranger, how), key=key, family="qwen")

    def no_start(self: object) -> None:
        raise launch.VllmError("fake launch: no vLLM started in this test")

    monkeypatch.setattr(launch.VllmServer, "launch", no_start)
    with pytest.raises(EngineError, match="fake launch"):
        setup.prepare(["qwen"])
    check_survives(stranger, server, " ".join(lines))


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _huge(path: Path) -> None:
    path.write_text(json.dumps({"key": KEY, "pad": "x" * 100_000}))


@pytest.mark.parametrize(("fields", "why"), [
    ({"pid": 0}, "pid"), ({"pid": True}, "pid"), ({"pid": "abc"}, "pid"), ({"pid": 12.5}, "pid"),
    ({"pid": 2**40}, "pid"), ({"pid": -1}, "pid"), ({"pid": 1}, "pid"),
    ({"key": "../../../../precious"}, "key"), ({"key": "fedcba9876543210"}, "is not the file's name"),
    ({"port": 0}, "port"), ({"nonce": None}, "nonce"), ({"extra": 1}, "extra"),
])
def test_a_state_file_with_bad_fields_is_removed_and_named(cache: Path, fields: dict[str, object], why: str) -> None:
    precious = cache / "precious.json"
    precious.parent.mkdir(parents=True, exist_ok=True)
    precious.write_text("mine")
    good = _planted(pid=os.getpgrp())  # valid fields; the pytest's own group, which it must never signal
    planted = json.dumps({**json.loads(good.state_file.read_text()), **fields})
    for command in (["vllm", "list"], ["vllm", "down"]):
        good.state_file.write_text(planted)
        result = runner.invoke(app, command)
        assert result.exit_code == 0, result.output
        assert why in result.stderr and "not a valid state file" in result.stderr
        assert not good.state_file.exists() and precious.read_text() == "mine"
    assert _alive(os.getpid())


@pytest.mark.parametrize("make", [_fifo, _dev_zero, _huge])
def test_a_state_file_that_is_not_a_regular_bounded_file_is_refused_at_once(cache: Path, make: object) -> None:
    state_dir().mkdir(parents=True)
    path = state_dir() / f"{KEY}.json"
    make(path)  # type: ignore[operator]
    started = time.monotonic()
    found = survey()
    assert time.monotonic() - started < 5 and found.servers == []
    assert [line for line in found.stale if str(path) in line] and not os.path.lexists(path)
    assert Path("/dev/zero").exists()


def test_a_state_file_naming_the_callers_own_group_is_never_signalled(cache: Path) -> None:
    try:
        leader = psutil.Process(os.getpgrp())
        create_time, command = leader.create_time(), leader.cmdline()
    except psutil.NoSuchProcess:  # the group's leader has exited (a job started from a subshell that ended)
        create_time, command = 0.0, []
    server = _planted(pid=os.getpgrp(), create_time=create_time, command=command)
    assert server.mismatch() is not None
    assert stop_kept(server, grace_s=0.1) is False and _alive(os.getpid())
