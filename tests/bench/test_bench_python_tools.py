"""pytest-benchmark: one Python-class tool call through the worker, end to end.

What a runner pays per call of a ``python:`` bundle's tool: ``WorkerTool.execute`` (a JSON request to the
worker process, the method on the session's instance, a JSON answer), here BFCL's GorillaFileSystem
through BFCL's own executor and a plain class of the ``harness init --python`` template. Figures:
docs/bfcl-multi-turn.md. Run with ``pytest tests/bench --benchmark-enable``; in the plain test run each
benchmark executes once, as a smoke test.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harness.agents.tools import ToolContext
from harness.agents.types import ToolCall
from harness.tools import SessionSetup
from harness.tools.python import PythonClassSource, WorkerSettings

TEMPLATE = Path(__file__).resolve().parents[2] / "harness" / "templates" / "init-python"
FS = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.gorilla_file_system:GorillaFileSystem"
FS_CONFIG = {"root": {"workspace": {"type": "directory", "contents": {
    "notes.txt": {"type": "file", "content": "one\ntwo\n"}, "docs": {"type": "directory", "contents": {}}}}}}


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("notebook")
    (folder / "notebook_tools.py").write_text((TEMPLATE / "notebook_tools.py.template").read_text())
    source = PythonClassSource(WorkerSettings(classes={"Notebook": "notebook_tools:Notebook"}, search_path=(folder,)))
    yield source, "Notebook", {"Notebook": {"notes": {"a": "1"}}}
    source.close()


@pytest.fixture(scope="module")
def file_system() -> Any:
    pytest.importorskip("bfcl_eval", reason="BFCL's package is not installed: pip install --no-deps bfcl-eval==2026.3.23")
    from harness.bfcl.data import multi_turn_classes, tool_schemas

    docs = multi_turn_classes()["GorillaFileSystem"].docs
    tools = {"GorillaFileSystem": [t.to_openai() for t in tool_schemas(docs)]}
    source = PythonClassSource(WorkerSettings(classes={"GorillaFileSystem": FS}, execution="bfcl"), tools)
    yield source, "GorillaFileSystem", {"GorillaFileSystem": FS_CONFIG}
    source.close()


@pytest.mark.parametrize(("where", "tool", "arguments"), [
    ("notebook", "read_note", {"title": "a"}),
    ("notebook", "list_titles", {}),
    ("file_system", "ls", {}),
    ("file_system", "cat", {"file_name": "notes.txt"}),
])
def test_bench_python_tool_call(benchmark: Any, request: pytest.FixtureRequest, where: str, tool: str,
                                arguments: dict[str, Any]) -> None:
    source, owner, config = request.getfixturevalue(where)
    loop = asyncio.new_event_loop()
    session = loop.run_until_complete(source.open(SessionSetup("case", classes=(owner,), config=config)))
    by_name = {t.schema.name: t for t in source.tools}
    context = ToolContext(call_id="bench", workspace=session)
    try:
        result = benchmark(lambda: loop.run_until_complete(by_name[tool].execute(ToolCall("bench", tool, arguments), context)))
    finally:
        loop.run_until_complete(session.close())
        loop.close()
    assert not result.is_error, result.output
    assert "error" not in str(result.output).lower(), result.output
