"""The MCP tool source against a hostile stdio server (``hostile_server.py``, written with the ``mcp``
SDK): a crash, a hang, garbage on stdout and a server that never starts each end their call with a
named kind, the next call gets a fresh process on the same folder, ``isError`` is ``tool:error`` with
its text, a result past ``max_output`` is ``tool:limit``, and no process outlives its session."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from harness.agents import BundleError
from harness.agents.bundle import load_bundle_config
from harness.tools import SessionSetup
from harness.vocabulary import ErrorKind

pytest.importorskip("mcp", reason="the MCP SDK is the 'mcp' extra: pip install -e '.[mcp]'")

from harness.tools.mcp.connection import ServerSpec
from harness.tools.mcp.load import list_tools
from harness.tools.mcp.source import FolderState, McpSession, McpSettings, McpSource, McpTool

SERVER = Path(__file__).with_name("hostile_server.py")
TREE = {"root": {"work": {"type": "directory", "contents": {"a.txt": {"type": "file", "content": "A"}}}}}


def alive(pid: int) -> bool:
    """Running (a zombie nobody has reaped yet is not: a container's init may never reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.fixture(scope="module")
def source() -> McpSource:
    """The hostile server's tools, listed by the source's own listing (one server start)."""
    from harness.agents import ToolSchema

    settings = McpSettings(ServerSpec(command=sys.executable, args=(str(SERVER),), cwd="{workdir}"),
                           wall_clock=1.0, max_output=1000)
    listed = asyncio.run(list_tools(settings))
    return McpSource(settings, [McpTool(ToolSchema(t.name, t.description or "", t.input_schema), t.output_schema)
                                for t in listed])


@pytest.mark.parametrize(("tool", "arguments", "kind", "says", "fresh"), [
    ("crash", {}, ErrorKind.tool_internal_error, "failed", True),
    ("hang", {}, ErrorKind.tool_limit, "within 1 s", True),
    ("garbage", {}, ErrorKind.tool_internal_error, "not JSON-RPC", True),
    ("fail", {}, ErrorKind.tool_error, "the pump is broken", False),
    ("big", {"size": 5000}, ErrorKind.tool_limit, "max_output", False),
    ("nothing", {}, ErrorKind.tool_unknown, "unknown tool", False),
])
@pytest.mark.asyncio(loop_scope="module")
async def test_a_failing_call_is_named_and_the_next_call_goes_on(
    shared: McpSession, tool: str, arguments: dict[str, Any], kind: str, says: str, fresh: bool,
) -> None:
    before = int((await shared.call("pid", {})).output)
    result = await shared.call(tool, arguments)
    assert (result.is_error, result.error_kind) == (True, kind) and says in str(result.output)
    after = await shared.call("pid", {})
    assert after.error_kind is None and (int(after.output) != before) == fresh
    await asyncio.gather(*shared._stopping)  # the failed server's stop, which the call did not wait for
    assert alive(before) != fresh
    assert (await shared.snapshot()).tree == {"a.txt": "A", "b.txt": "B"}  # the folder outlives its server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(source: McpSource) -> AsyncIterator[McpSession]:
    """One session for the failure table (a server start costs about a second): each row checks that
    the call after a failure works, on a fresh process where the server failed."""
    session = await source.open(SessionSetup(entry="x", tree=TREE))
    assert (await session.call("note", {"name": "b.txt", "text": "B"})).error_kind is None
    yield session
    last = int((await session.call("pid", {})).output)
    await session.close()
    assert not alive(last)


async def test_a_server_that_never_starts_is_a_limit_per_call(tmp_path: Path) -> None:
    from harness.agents import ToolSchema

    settings = McpSettings(ServerSpec(command=sys.executable, args=("-c", "import time; time.sleep(60)")),
                           start_timeout=0.5)
    source = McpSource(settings, [McpTool(ToolSchema("pid", ""))])
    session = await source.open(SessionSetup(entry="x"))
    try:
        result = await session.call("pid", {})
        assert result.error_kind == ErrorKind.tool_limit and "did not start within 0.5 s" in str(result.output)
    finally:
        await session.close()


async def test_sessions_are_isolated_and_their_folders_removed(source: McpSource) -> None:
    one, two = [await source.open(SessionSetup(entry=n, tree=TREE)) for n in "12"]
    await one.call("note", {"name": "a.txt", "text": "changed"})
    assert ((await one.snapshot()).tree, (await two.snapshot()).tree) == ({"a.txt": "changed"}, {"a.txt": "A"})
    pid = int((await one.call("pid", {})).output)
    for session in (one, two):
        await session.close()
    assert not alive(pid) and not one.workdir.parent.exists()  # type: ignore[union-attr]


@pytest.mark.parametrize(("snapshot", "expected", "holds"), [
    ({"a": "1", "d": {"b": "2"}}, {"files": {"a": "1", "d/b": "2"}}, True),
    ({"a": "1"}, {"files": {"a": "2"}}, False),
    ({"a": "1"}, {"files": {"gone": None}}, True),
    ({"a": "1"}, {"files": {"a": None}}, False),
    ({"a": "1"}, {"SomeClass": {"x": 1}}, False),
])
def test_expected_files_hold(snapshot: dict[str, Any], expected: dict[str, Any], holds: bool) -> None:
    source = McpSource(McpSettings(ServerSpec(command="x")), [])
    assert source.holds(FolderState(snapshot), expected) is holds


def test_a_folder_differs_and_shows_as_lines() -> None:
    source = McpSource(McpSettings(ServerSpec(command="x")), [])
    assert source.difference(FolderState({"a": "1"}), FolderState({"a": "1"})) is None
    assert source.difference(FolderState({"a": "1"}), FolderState({"a": "2"})) == ErrorKind.state_tree_differs
    assert source.difference(FolderState({}, (("s {}", "x"),)), FolderState({}, (("s {}", "y"),))) is not None
    state = FolderState({"d": {"b": "2"}, "a": "x\ny"}, (("git_status {}", "On branch main\nclean"),))
    assert source.lines(state) == ['/a = "x\\ny"', "/d/", '/d/b = "2"', "git_status {}:", "  On branch main", "  clean"]


@pytest.mark.parametrize(("mcp", "problem"), [
    ("{command: x, url: 'http://h/mcp'}", "exactly one of command"),
    ("{}", "exactly one of command"),
    ("{url: 'http://h/mcp', args: [a]}", "args, env and prepare belong to a stdio server"),
    ("{url: 'ftp://h'}", "mcp.url"),
    ("{command: no-such-server-here}", "mcp.command: 'no-such-server-here' is not an executable"),
])
def test_a_bad_mcp_section_is_named(tmp_path: Path, mcp: str, problem: str) -> None:
    from harness.tools import load_source

    file = tmp_path / "bundle.yaml"
    file.write_text(f"name: b\nmodel: {{family: qwen, id: m}}\nsource: mcp\nmcp: {mcp}\n")
    with pytest.raises(BundleError, match="mcp") as info:
        load_source(file, load_bundle_config(file))
    assert problem in str(info.value)


@pytest.mark.parametrize(("prepare", "says"), [
    (("sh", "-c", "echo broken >&2; exit 3"), "mcp.prepare exited 3: broken"),
    (("no-such-command-here",), "mcp.prepare: "),
])
async def test_a_failing_prepare_is_the_samples_named_error(prepare: tuple[str, ...], says: str) -> None:
    from harness.tools import ToolUnavailable

    source = McpSource(McpSettings(ServerSpec(command="x"), prepare=prepare), [])
    with pytest.raises(ToolUnavailable) as info:
        await source.open(SessionSetup(entry="x", tree=TREE))
    assert info.value.kind == ErrorKind.tool_unavailable and says in str(info.value)


async def test_a_server_at_a_url_is_shared_and_has_no_state() -> None:
    import socket
    import subprocess

    from harness.agents import ToolSchema

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):  # until it listens
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await asyncio.sleep(0.1)
        settings = McpSettings(ServerSpec(url=f"http://127.0.0.1:{port}/mcp"), wall_clock=1.0)
        listed = await list_tools(settings)
        source = McpSource(settings, [McpTool(ToolSchema(t.name, t.description or "", t.input_schema)) for t in listed])
        one, two = [await source.open(SessionSetup(entry=n, tree=TREE)) for n in "12"]
        pids = {(await s.call("pid", {})).output for s in (one, two)}
        assert pids == {str(server.pid)} and one.workdir is None  # one server for every sample, no folder
        assert (await one.call("hang", {})).error_kind == ErrorKind.tool_limit
        assert await one.snapshot() is None and source.difference(None, None) is None
        for session in (one, two):
            await session.close()
        assert server.poll() is None  # the harness never stops a server it did not start
    finally:
        server.kill()  # this test's own server (its hung call would hold a graceful stop)
        server.wait(10)


HARNESS = """
import asyncio, sys
from harness.agents import ToolSchema
from harness.tools import SessionSetup
from harness.tools.mcp.connection import ServerSpec
from harness.tools.mcp.source import McpSettings, McpSource, McpTool

async def main():
    settings = McpSettings(ServerSpec(command=sys.executable, args=(sys.argv[1],)), wall_clock=120.0)
    source = McpSource(settings, [McpTool(ToolSchema(name, "")) for name in ("pid", "hang")])
    session = await source.open(SessionSetup(entry="x"))
    pid = (await session.call("pid", {})).output
    hung = asyncio.create_task(session.call("hang", {}))  # a server busy in a call outlives its stdin's end
    await asyncio.sleep(0.5)
    print(pid, session.workdir.parent, flush=True)
    await hung

asyncio.run(main())
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the guard is Linux's PR_SET_PDEATHSIG")
def test_a_server_dies_with_a_harness_killed_by_sigkill() -> None:
    import signal
    import subprocess
    import time

    root = Path(__file__).resolve().parents[3]
    harness = subprocess.Popen([sys.executable, "-c", HARNESS, str(SERVER)], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(root)})
    try:
        assert harness.stdout is not None
        pid, scratch = harness.stdout.readline().split()
        server = int(pid)
        assert alive(server)
    finally:
        harness.send_signal(signal.SIGKILL)  # this test's own process: no shutdown code of the harness runs
        harness.wait(10)
    shutil.rmtree(scratch)  # what the killed harness could not remove
    deadline = time.monotonic() + 10
    while alive(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(server)


def mcp_suite_folder(tmp_path: Path, mcp: str) -> Path:
    """A one-case episode suite (``FOLDER/suite``) whose bundle's ``mcp:`` section is ``mcp``."""
    folder = tmp_path / mcp.split(":")[0].strip("{ ")
    (folder / "suite").mkdir(parents=True)
    (folder / "bundle.yaml").write_text(f"name: b\nmodel: {{family: qwen, id: m}}\nsource: mcp\nmcp: {mcp}\n")
    (folder / "suite" / "suite.yaml").write_text("name: s\nversion: '1'\nkind: episode\nbundle: ..\n")
    (folder / "suite" / "cases.jsonl").write_text(
        '{"id": "c", "turns": [[{"role": "user", "content": "hi"}]], "ground_truth": [[]]}\n')
    return folder


def test_the_report_says_a_shared_server_scores_only_calls(tmp_path: Path) -> None:
    """A run's header (report.html and report.md share it) names a bundle's server at a URL as shared:
    only calls and results are scored there. Read from the bundle's files alone: no server is reached."""
    from harness.eval.data import load_suite
    from harness.eval.report.data import Run
    from harness.eval.report.tables import shared_server

    def suite_with(mcp: str) -> Any:
        return load_suite(mcp_suite_folder(tmp_path, mcp) / "suite")

    def run_of(suite: Any) -> Run:
        return Run(label="r", data=None, steps=None, suite=suite)  # type: ignore[arg-type]  # only the suite is read

    url = "http://127.0.0.1:9/mcp"
    assert shared_server(run_of(suite_with(f"{{url: '{url}'}}"))) == url
    assert shared_server(run_of(suite_with("{command: node}"))) is None
    assert shared_server(run_of(None)) is None


def test_report_html_says_a_shared_server_scores_only_calls(tmp_path: Path) -> None:
    """The page itself (report.html, not only report.md) carries the shared-server line in the run's
    header, and a run of a stdio server's suite does not. A made-up run directory: no server is reached."""
    from runs import run_record, write_run_dir

    from harness.eval.report import write_report
    from harness.eval.store import SuiteRef

    def page_of(mcp: str) -> str:
        folder = mcp_suite_folder(tmp_path, mcp)
        run = run_record("r", suite=SuiteRef(name="s", version="1", kind="episode", path=str(folder / "suite")))
        run_dir = write_run_dir(folder / "run", run, [])
        return (write_report([run_dir], folder / "report").parent / "report.html").read_text(encoding="utf-8")

    shared = page_of("{url: 'http://127.0.0.1:9/mcp'}")
    assert "a shared MCP server at http://127.0.0.1:9/mcp (mcp.url)" in shared
    assert "only the calls and their results are scored; no state is compared" in shared
    assert "shared MCP server" not in page_of("{command: node}")
