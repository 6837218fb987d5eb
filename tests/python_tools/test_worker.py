"""The Python-tool worker: hostile tools cost one call (a ``tool:`` error), the session keeps its state,
and the harness's process never runs them."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness.tools import SessionSetup
from harness.tools.python import PythonClassSource, WorkerFailure, WorkerSettings
from harness.tools.python.signatures import json_type

HOSTILE = textwrap.dedent('''
    import os, time
    from typing import Literal

    class Counter:
        def __init__(self):
            self.count = 0

        def _load_scenario(self, config, long_context=False):
            self.count = config.get("count", 0)

        def add(self, n: int = 1) -> int:
            """Add to the count.

            Args:
                n: How much.
            """
            self.count += n
            return self.count

        def exit_now(self):
            os._exit(3)

        def sleep_forever(self):
            time.sleep(10_000)

        def allocate(self):
            hoard = []
            while True:
                hoard.append(bytearray(64 << 20))

        def fork(self):
            if os.fork() == 0:
                time.sleep(10_000)
            return "forked"

        def not_json(self):
            return object()

        def huge(self):
            return "x" * (100 << 20)

        def fail(self):
            raise ValueError("no such thing")

        def pid(self):
            return os.getpid()

        def add_then_allocate(self):
            self.count += 100
            self.allocate()

        def quick_once(self, mark: str) -> str:
            """Answers at once the first time; never again (made again on a new worker, it hangs)."""
            seen = os.path.join(os.path.dirname(__file__), f"seen-{mark}")
            if os.path.exists(seen):
                time.sleep(10_000)
            open(seen, "w").close()
            return "first"
''')


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "hostile_tools.py").write_text(HOSTILE)
    settings = WorkerSettings(classes={"Counter": "hostile_tools:Counter"}, search_path=(folder,),
                              memory=1 << 30, wall_clock=1.5)
    made = PythonClassSource(settings)
    yield made
    made.close()


# (method, the error kind of its call)
HOSTILE_CALLS = [
    ("exit_now", "tool:internal_error"),
    ("sleep_forever", "tool:limit"),
    ("allocate", "tool:limit"),
    ("fork", "tool:error"),
    ("not_json", "tool:bad_output"),
    ("huge", "tool:limit"),
    ("fail", "tool:exception"),
    ("add_then_allocate", "tool:limit"),  # the state from before the call, not the half-done call's
]


@pytest.mark.parametrize(("method", "kind"), HOSTILE_CALLS)
async def test_a_hostile_call_is_a_tool_error_and_the_state_survives(source: Any, method: str, kind: str) -> None:
    session = await source.open(SessionSetup("case", classes=("Counter",), config={"Counter": {"count": 40}}))
    try:
        assert await session.run("add", {"n": 1}) == (41, None, None)
        output, got, message = await session.run(method, {})
        assert (output, got) == (None, kind), message
        assert await session.run("add", {"n": 1}) == (42, None, None)  # the state it had, and on
        assert await session.snapshot() == {"Counter": {"count": 42}}
    finally:
        await session.close()


async def test_a_session_whose_replay_fails_is_lost_and_says_so(source: Any) -> None:
    fragile = await source.open(SessionSetup("case", classes=("Counter",), config={}))
    sturdy = await source.open(SessionSetup("case", classes=("Counter",), config={"Counter": {"count": 1}}))
    try:
        assert await fragile.run("quick_once", {"mark": str(os.getpid())}) == ("first", None, None)
        assert await sturdy.run("add", {"n": 5}) == (6, None, None)
        assert (await sturdy.run("exit_now", {}))[1] == "tool:internal_error"  # a new worker: both replayed
        output, kind, message = await fragile.run("add", {"n": 1})
        assert (output, kind) == (None, "tool:internal_error")
        assert "was lost" in str(message) and "wall clock" in str(message)
        with pytest.raises(WorkerFailure, match="was lost"):
            await fragile.snapshot()
        assert await sturdy.run("add", {"n": 1}) == (7, None, None)  # rebuilt without the lost one
    finally:
        await fragile.close()
        await sturdy.close()


def test_a_python_source_is_a_tool_source(source: Any) -> None:
    from harness.tools import ToolSource

    assert isinstance(source, ToolSource)
    assert {t.schema.name for t in source.tools} >= {"add", "fork", "huge"}


async def test_tools_run_in_another_process(source: Any) -> None:
    session = await source.open(SessionSetup("case", classes=("Counter",), config={}))
    pid, kind, _ = await session.run("pid", {})
    await session.close()
    assert kind is None and pid != os.getpid()


async def test_sessions_keep_their_own_instances(source: Any) -> None:
    a = await source.open(SessionSetup("case", classes=("Counter",), config={"Counter": {"count": 1}}))
    b = await source.open(SessionSetup("case", classes=("Counter",), config={}))
    await a.run("add", {"n": 5})
    assert (await a.snapshot(), await b.snapshot()) == ({"Counter": {"count": 6}}, {"Counter": {"count": 0}})
    await a.close()
    await b.close()


# (arguments, kind)
BAD_ARGUMENTS = [({"m": 1}, "tool:bad_arguments"), ({"n": 1, "extra": 2}, "tool:bad_arguments")]


@pytest.mark.parametrize(("arguments", "kind"), BAD_ARGUMENTS)
async def test_arguments_the_signature_refuses(source: Any, arguments: dict, kind: str) -> None:
    session = await source.open(SessionSetup("case", classes=("Counter",), config={}))
    assert (await session.run("add", arguments))[1] == kind
    await session.close()


def test_schemas_come_from_signatures_and_docstrings(source: Any) -> None:
    add = next(t for t in source.tools if t.schema.name == "add")
    assert add.owner == "Counter"
    assert add.schema.description == "Add to the count."
    assert add.schema.parameters == {"type": "object", "required": [],
                                     "properties": {"n": {"type": "integer", "description": "How much."}}}


# (annotation, JSON schema)
TYPES = [
    (str, {"type": "string"}), (int, {"type": "integer"}), (float, {"type": "number"}), (bool, {"type": "boolean"}),
    (list[str], {"type": "array", "items": {"type": "string"}}), (dict[str, int], {"type": "object"}),
    (int | None, {"type": "integer"}), (tuple[int, int], {"type": "array"}), (object, {}),
]


@pytest.mark.parametrize(("annotation", "schema"), TYPES)
def test_annotation_types(annotation: Any, schema: dict) -> None:
    assert json_type(annotation) == schema


def test_a_class_that_does_not_import_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "broken_tools.py").write_text("import no_such_module_anywhere\n")
    settings = WorkerSettings(classes={"Broken": "broken_tools:Broken"}, search_path=(tmp_path,))
    with pytest.raises(WorkerFailure) as info:
        PythonClassSource(settings)
    assert info.value.kind == "tool:load_error" and "No module named 'no_such_module_anywhere'" in str(info.value)
