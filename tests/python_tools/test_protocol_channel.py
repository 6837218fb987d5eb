"""Nothing on the worker's answer channel crashes the harness: a tool (or a tool module, at import) that
writes on it costs that call (``tool:internal_error``, a fresh worker, the session rebuilt), a line that
answers another request is refused, and a signature the worker cannot describe is a load error."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from harness.tools.python.client import WorkerClient, WorkerFailure, WorkerSettings
from harness.tools.python.source import PythonClassSource

WRITER = textwrap.dedent('''
    import os

    def _write_everywhere(data: bytes) -> None:
        """Every pipe among the process's file descriptors (the answer channel is one)."""
        for fd in range(3, 64):
            try:
                if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                    os.write(fd, data)
            except OSError:
                pass

    if os.environ.get("WRITE_AT_IMPORT"):
        _write_everywhere(b"hello from the module\\n")

    class Pen:
        def __init__(self):
            self.count = 0

        def tick(self) -> int:
            """Counts."""
            self.count += 1
            return self.count

        def shout(self, megabytes: int) -> str:
            """Prints without bound on stderr, then dies saying so."""
            import sys
            for _ in range(megabytes):
                sys.stderr.write("x" * (1 << 20))
            sys.stderr.write("\\nlast words\\n")
            sys.stderr.flush()
            os._exit(3)

        def hang_up(self) -> str:
            """Closes the worker's stdin (the harness's requests)."""
            os.close(0)
            return "closed"

        def scribble(self, data: str) -> str:
            """Writes on every pipe it finds."""
            _write_everywhere(data.encode())
            return "written"
''')

LINES = [
    "not json at all\n",
    "[1, 2, 3]\n",
    '{"output_json": "\\"forged\\""}\n',  # well formed, but answers no request in flight
    '{"id": 999999, "output_json": "1"}\n',
    '{"truncated": \n',
]


def _client(folder: Path, **settings: object) -> tuple[WorkerClient, str]:
    client = WorkerClient(WorkerSettings(classes={"Pen": "pen_tools:Pen"}, search_path=(folder,), **settings))  # type: ignore[arg-type]
    return client, asyncio.run(client.open(["Pen"], {}))


@pytest.mark.parametrize("line", LINES)
def test_a_tool_writing_on_the_answer_channel_costs_its_call(tmp_path: Path, line: str) -> None:
    (tmp_path / "pen_tools.py").write_text(WRITER)
    client, session = _client(tmp_path)
    try:
        assert client.request({"op": "call", "session": session, "name": "tick"})["output_json"] == "1"
        with pytest.raises(WorkerFailure) as failed:
            client.request({"op": "call", "session": session, "name": "scribble", "arguments": {"data": line}})
        assert failed.value.kind == "tool:internal_error"
        assert "answer channel" in str(failed.value)
        assert client.restarts == 1  # a fresh worker, the session rebuilt from its answered calls
        assert client.request({"op": "call", "session": session, "name": "tick"})["output_json"] == "2"
    finally:
        client.close()


def test_a_module_writing_on_the_channel_at_import_is_a_load_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pen_tools.py").write_text(WRITER)
    monkeypatch.setenv("WRITE_AT_IMPORT", "1")
    with pytest.raises(WorkerFailure, match="answer channel"):
        _client(tmp_path)


def test_a_signature_the_worker_cannot_describe_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "odd_tools.py").write_text(textwrap.dedent('''
        class Odd:
            def take(self, *args, **kwargs) -> str:
                """Takes anything."""
                return "ok"
            take.__signature__ = "not a signature"
    '''))
    with pytest.raises(WorkerFailure, match="cannot describe") as failed:
        PythonClassSource(WorkerSettings(classes={"Odd": "odd_tools:Odd"}, search_path=(tmp_path,)))
    assert failed.value.kind == "tool:load_error"


def test_a_tool_printing_without_bound_costs_no_disk_and_its_last_words_are_kept(tmp_path: Path) -> None:
    from harness.tools.python.client import STDERR_KEPT

    (tmp_path / "pen_tools.py").write_text(WRITER)
    client, session = _client(tmp_path)
    try:
        with pytest.raises(WorkerFailure, match=r"exit status 3\): \.\.\.last words"):
            client.request({"op": "call", "session": session, "name": "shout", "arguments": {"megabytes": 256}})
        assert len(client._stderr._kept) <= STDERR_KEPT  # what was kept of 256 MB: the end, in memory
    finally:
        client.close()


def test_a_tool_closing_the_workers_stdin_costs_its_worker_not_the_run(tmp_path: Path) -> None:
    (tmp_path / "pen_tools.py").write_text(WRITER)
    client, session = _client(tmp_path)
    try:
        assert client.request({"op": "call", "session": session, "name": "hang_up"})["output_json"] == '"closed"'
        client.request({"op": "call", "session": session, "name": "tick"})  # on a fresh worker, or a named failure
    except WorkerFailure as exc:
        assert exc.kind == "tool:internal_error"
    finally:
        client.close()  # never BrokenPipeError (it ended the run with exit 1, no error line, no scores)
