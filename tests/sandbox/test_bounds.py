"""Host-side bounds and error kinds: a table of hostile scripts and inputs, each ending as its named
kind (and limit), the state as it was, and the next call still answered."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from sandbox_helpers import BASE_TREE, call_tool

from harness.sandbox import (
    CheckError,
    ExternalError,
    FileSystemState,
    LimitError,
    Limits,
    PymTool,
    SandboxError,
    ScriptInputError,
    Workspace,
    load_script,
    run_script,
)

SMALL = Limits.default().merge(Limits(max_print="64kb", max_mutations=20))
"""The default preset with room for 64 KB of prints and 20 mutations."""

DOUBLING = (
    '"""Doubles."""\n'
    'm = [{"op": "mkdir", "path": "/fs/alex/d"}, {"op": "write", "path": "/fs/alex/d/f", "content": "x" * 1000}]\n'
    "for i in range(18):\n"
    '    m.append({"op": "copy", "src": "/fs/alex/d", "dst": "/fs/alex/e"})\n'
    '    m.append({"op": "move", "src": "/fs/alex/e", "dst": "/fs/alex/d/" + str(i)})\n'
    '{"output": 1, "mutations": m}\n'
)
DIGGING = (
    '"""Digs."""\np = "/fs/alex"\nm = []\nfor i in range(1500):\n    p = p + "/d"\n'
    '    m.append({"op": "mkdir", "path": p})\n{"output": 1, "mutations": m}\n'
)

HOSTILE_SCRIPTS = [
    # (id, source, limits, the limits it may breach first)
    ("prints-past-max-print", '"""Prints."""\nwhile True:\n    print("x" * 10000)\n', SMALL, {"print"}),
    (
        "prints-and-catches-the-refusal",
        '"""Prints on."""\nfor i in range(100):\n    try:\n        print("x" * 10000)\n    except Exception:\n'
        "        pass\n1\n",
        SMALL,
        {"print"},
    ),
    ("100k-deep-value", '"""Nests."""\nx = []\nfor i in range(100000):\n    x = [x]\nx\n', SMALL, {"output_depth"}),
    ("101-deep-value", '"""Nests."""\nx = 1\nfor i in range(101):\n    x = [x]\nx\n', SMALL, {"output_depth"}),
    (
        "more-mutations-than-allowed",
        '"""Mutates."""\n{"output": 1, "mutations": [{"op": "chdir", "path": "/fs/alex"} for i in range(21)]}\n',
        SMALL,
        {"mutations"},
    ),
    ("copies-doubling-the-tree", DOUBLING, Limits.default(), {"tree_bytes", "tree_entries"}),
    ("1500-deep-tree", DIGGING, Limits.default().merge(Limits(max_mutations=2000)), {"tree_depth"}),
]


@pytest.mark.parametrize(
    ("source", "limits", "breached"), [c[1:] for c in HOSTILE_SCRIPTS], ids=[c[0] for c in HOSTILE_SCRIPTS]
)
async def test_host_side_limits_end_the_call_and_leave_the_state_as_it_was(
    write_script, fs_tools, source: str, limits: Limits, breached: set[str]
) -> None:
    state = FileSystemState("alex", copy.deepcopy(BASE_TREE), ("docs",))
    workspace = Workspace.filesystem(state)
    tool = PymTool(load_script(write_script(source)), limits=limits)
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    result = await call_tool(tool, {}, workspace, emit=emit)
    assert result.is_error and result.error_kind == "tool:limit", result.output
    assert state.tree == BASE_TREE and state.cwd == ("docs",)  # all or nothing
    kept = sum(len(e.text) for e in events if type(e).__name__ == "ScriptPrintEvent")
    assert kept <= 64 * 1024  # the host keeps no more print output than the limit
    try:
        await run_script(tool.script, {}, limits=limits)
    except LimitError as err:  # breached in the sandbox run itself
        assert err.limit in breached
    else:  # breached when the mutations were applied
        assert breached & {"mutations", "tree_bytes", "tree_entries", "tree_depth"}
    assert (await call_tool(fs_tools["ls"], {}, workspace)).output == {"current_directory_content": ["x.md", "sub"]}


async def test_a_value_as_deep_as_the_limit_comes_back_whole(write_script) -> None:
    script = load_script(write_script('"""Nests."""\nx = 1\nfor i in range(100):\n    x = [x]\nx\n'))
    value = await run_script(script, {}, limits=Limits.default())
    for _ in range(100):
        value = value[0]
    assert value == 1


@pytest.mark.parametrize(
    "exc",
    [RecursionError("maximum recursion depth exceeded"), MemoryError("memory limit exceeded"),
     TimeoutError("time limit exceeded"), TimeoutError("sleep limit exceeded")],
    ids=["recursion", "memory", "timeout-time-limit", "timeout-sleep-limit"],
)
async def test_an_externals_own_exception_is_not_a_sandbox_limit(write_script, exc: BaseException) -> None:
    script = load_script(
        write_script('"""Asks."""\nfrom harness.sandbox import external\n\n\n@external\ndef ask() -> str:\n    ...\n\n\nask()\n')
    )

    def ask() -> str:
        raise exc

    with pytest.raises(ExternalError) as err:
        await run_script(script, {}, externals={"ask": ask})
    assert err.value.function_name == "ask" and err.value.error_kind == "tool:script_error"


async def test_an_external_returning_more_than_the_sandbox_holds_is_refused_at_once(write_script) -> None:
    script = load_script(
        write_script('"""Asks."""\nfrom harness.sandbox import external\n\n\n@external\ndef big() -> list:\n    ...\n\n\nlen(big())\n')
    )
    with pytest.raises(LimitError) as err:  # converting 20M items would hold the host past the wall clock
        await run_script(script, {}, externals={"big": lambda: [0] * 20_000_000}, limits=Limits.default())
    assert err.value.limit == "memory" and "big()" in str(err.value)
    assert await run_script(script, {}, externals={"big": lambda: [0] * 1000}) == 1000


async def test_a_worker_killed_for_its_memory_is_a_limit(write_script) -> None:
    script = load_script(write_script('"""Allocates."""\nx = "a" * (2 ** 62)\n'))
    with pytest.raises(LimitError) as err:  # no sandbox memory limit: the worker itself is killed
        await run_script(script, {}, limits=Limits.default().merge(Limits(max_memory=None)))
    assert err.value.limit == "memory"


SURROGATE_ARGUMENTS = [
    ({"file_name": "a\ud800b"}, "argument 'file_name'"),
    ({"file_name": "\udfff"}, "argument 'file_name'"),
]


@pytest.mark.parametrize(("args", "named"), SURROGATE_ARGUMENTS)
async def test_a_lone_surrogate_argument_is_bad_arguments(fs_tools, state, args: dict, named: str) -> None:
    result = await call_tool(fs_tools["cat"], args, Workspace.filesystem(state))
    assert result.error_kind == "tool:bad_arguments" and named in result.output
    with pytest.raises(ScriptInputError) as err:
        await run_script(fs_tools["cat"].script, args, host_inputs={"here": {}, "cwd": "/fs/alex"})
    assert err.value.error_kind == "tool:bad_arguments" and err.value.input_name == "file_name"


@pytest.mark.parametrize("module", ["subprocess", "socket"])
def test_importing_a_module_the_sandbox_lacks_is_a_clear_load_error(write_script, module: str) -> None:
    path = write_script(f'"""Reaches out."""\nimport {module}\n\n{module}.anything()\n')
    with pytest.raises(CheckError) as err:
        load_script(path)
    text = str(err.value)
    assert f"script.pym:2:8: error[unresolved-import] Cannot resolve imported module `{module}`" in text
    assert "the sandbox has no such module" in text and "snapshot" not in text.lower()


def test_every_limit_error_names_a_documented_limit() -> None:
    """The limit names the errors carry are the ones the LimitError docstring and the README list."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "bundles" / "shellper" / "tools" / "README.md").read_text()
    for name in ("memory", "duration", "recursion", "suspensions", "sleep", "wall_clock", "print",
                 "output_depth", "mutations", "tree_depth", "tree_entries", "tree_bytes"):
        assert f"`{name}`" in (LimitError.__doc__ or ""), name
        assert f"`{name}`" in readme, name
    for field in Limits.model_fields:
        assert f"`{field}`" in readme, field
    assert issubclass(LimitError, SandboxError)


# Outputs and messages are cut to a documented size (issue 22, item 8): (id, source, what the result
# starts with, the note it ends with, its most characters). Before: an 8 MB exception message came back
# whole (107 MB of memory to print it).
CUT: list[tuple[str, str, str, str, int]] = [
    ("an 8 MB exception message", '"""Raises."""\nraise ValueError("x" * 8_000_000)\n', "ExecutionError: ",
     "more characters cut]", 2100),
    ("a 2 MB string output", '"""Talks."""\n"y" * 2_000_000\n', "yyy", "limit max_output=1048576]", 1_048_700),
    ("a 2 MB list output", '"""Lists."""\n["z" * 1000] * 2000\n', '["zzz', "limit max_output=1048576]", 1_048_700),
]


@pytest.mark.parametrize(("label", "source", "start", "note", "most"), CUT, ids=[c[0] for c in CUT])
async def test_outputs_and_messages_are_cut_to_their_bound(write_script, label: str, source: str, start: str,
                                                            note: str, most: int) -> None:
    tool = PymTool(load_script(write_script(source)), limits=Limits.default().merge(Limits(max_memory="64mb")))
    result = await call_tool(tool, {})
    text = result.output
    assert isinstance(text, str) and text.startswith(start) and text.endswith(note), text[:100] + text[-100:]
    assert len(text) <= most
    assert (await call_tool(tool, {})).output == text  # and the next call is answered the same


def test_a_short_message_or_output_is_kept_whole() -> None:
    from harness.sandbox.errors import cut_message
    from harness.sandbox.tool import cut_output

    assert cut_message("short") == "short" and cut_output({"a": [1, 2]}, 1024) == {"a": [1, 2]}
    assert cut_output("é" * 300, 1000) == "é" * 300  # 600 bytes
    assert cut_output("é" * 600, 1000).startswith("é" * 500 + "...")  # cut on a character, not a byte
