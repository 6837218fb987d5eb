"""Each error kind, produced by a real script, with the line or input in its message;
and how PymTool turns them into error results."""

from __future__ import annotations

import pytest
from pydantic import BaseModel
from sandbox_helpers import call_tool

from harness.sandbox import (
    CheckError,
    ExecutionError,
    ExternalError,
    LimitError,
    Limits,
    OutputError,
    ParseError,
    PymTool,
    ScriptInputError,
    load_script,
    run_script,
)

ADD = '''
"""Adds two numbers."""
from harness.sandbox import Input

a: int = Input("a")
b: int = Input("b", default=1)

a + b
'''


def test_parse_error_names_the_line(write_script) -> None:
    path = write_script('''
        """Broken."""
        x = 1
        y = (2,
        ''')
    with pytest.raises(ParseError) as err:
        load_script(path)
    assert err.value.line == 3
    assert "script.pym line 3" in str(err.value)


def test_parse_error_for_syntax_the_sandbox_lacks(write_script) -> None:
    path = write_script('''
        """Uses del, which Monty does not support."""
        x = 1

        del x
        ''')
    with pytest.raises(ParseError) as err:
        load_script(path)
    assert err.value.line == 4
    assert "del" in str(err.value)


def test_check_error_for_a_malformed_declaration(write_script) -> None:
    path = write_script("""
        from harness.sandbox import Input

        count: int = Input("cnt")
        """)
    with pytest.raises(CheckError, match=r"line 3: Input\('cnt'\) is assigned to 'count'"):
        load_script(path)


def test_check_error_from_the_type_checker_names_the_pym_line(write_script) -> None:
    path = write_script('''
        """Type error on line 6."""
        from harness.sandbox import Input

        a: int = Input("a")

        b: str = a + 1
        ''')
    with pytest.raises(CheckError) as err:
        load_script(path)
    assert "script.pym:6:" in str(err.value)
    assert "invalid-assignment" in str(err.value)


async def test_input_error_missing_and_wrong_type(write_script) -> None:
    script = load_script(write_script(ADD))
    with pytest.raises(ScriptInputError) as err:
        await run_script(script, {})
    assert err.value.input_name == "a" and "missing input 'a'" in str(err.value)
    assert "line 4" in str(err.value)
    with pytest.raises(ScriptInputError) as err:
        await run_script(script, {"a": "three"})
    assert err.value.input_name == "a" and "must be of type integer" in str(err.value)
    with pytest.raises(ScriptInputError, match="unknown input 'c'"):
        await run_script(script, {"a": 1, "c": 2})
    assert await run_script(script, {"a": 2}) == 3


EXTERNAL = '''
"""Calls the host."""
from harness.sandbox import Input, external

key: str = Input("key")


@external
def lookup(key: str) -> str:
    """Implemented by the host."""
    ...


value = lookup(key)
value.upper()
'''


async def test_external_error_missing_extra_and_raising(write_script) -> None:
    script = load_script(write_script(EXTERNAL))
    with pytest.raises(ExternalError) as err:
        await run_script(script, {"key": "k"})
    assert err.value.function_name == "lookup" and "no implementation" in str(err.value)
    with pytest.raises(ExternalError, match="declares no such @external"):
        await run_script(script, {"key": "k"}, externals={"lookup": str, "other": str})

    class ServiceDown(Exception):  # unknown to the sandbox: it arrives there as Exception
        pass

    def boom(key: str) -> str:
        raise KeyError(key)

    def down(key: str) -> str:
        raise ServiceDown("no route to the service")

    for impl in (boom, down):
        with pytest.raises(ExternalError) as err:
            await run_script(script, {"key": "k"}, externals={"lookup": impl})
        assert err.value.function_name == "lookup" and err.value.line == 13
    assert await run_script(script, {"key": "k"}, externals={"lookup": lambda key: key * 2}) == "KK"


async def test_host_coroutines_implement_externals(write_script) -> None:
    script = load_script(write_script(EXTERNAL))

    async def lookup(key: str) -> str:  # runs on the caller's event loop
        return key + "!"

    assert await run_script(script, {"key": "a"}, externals={"lookup": lookup}) == "A!"


def test_async_def_externals_are_rejected(write_script) -> None:
    path = write_script(
        EXTERNAL.replace("def lookup", "async def lookup").replace("= lookup(", "= await lookup(")
    )
    with pytest.raises(CheckError, match="line 8: declare @external 'lookup' with `def`"):
        load_script(path)


async def test_execution_error_names_the_pym_line(write_script) -> None:
    script = load_script(
        write_script('''
        """Divides."""
        from harness.sandbox import Input

        a: int = Input("a")
        b: int = Input("b")

        c = a // b
        c
        ''')
    )
    with pytest.raises(ExecutionError) as err:
        await run_script(script, {"a": 1, "b": 0})
    assert err.value.line == 7 and err.value.exc_type == "ZeroDivisionError"
    assert str(err.value).startswith("script.pym line 7: ZeroDivisionError")


async def test_limit_error(write_script) -> None:
    script = load_script(
        write_script('''
        """Spins."""
        n = 0
        while True:
            n += 1
        ''')
    )
    with pytest.raises(LimitError) as err:
        await run_script(script, {}, limits=Limits(max_duration="200ms", wall_clock="5s"))
    assert err.value.limit == "duration"


class Total(BaseModel):
    total: int


async def test_output_error(write_script) -> None:
    script = load_script(
        write_script('''
        """Returns the wrong shape, then a set."""
        from harness.sandbox import Input

        as_set: bool = Input("as_set", default=False)

        {1, 2} if as_set else {"total": "many"}
        ''')
    )
    with pytest.raises(OutputError, match="does not match Total: total"):
        await run_script(script, {}, output_model=Total)
    with pytest.raises(OutputError, match="not JSON"):
        await run_script(script, {"as_set": True})


@pytest.mark.parametrize(
    ("source", "args", "kind"),
    [
        (ADD, {"a": "x"}, "tool:bad_arguments"),
        (ADD, {}, "tool:bad_arguments"),
        ('"""Fails."""\n1 / 0\n', {}, "tool:script_error"),
        ('"""Spins."""\nwhile True:\n    pass\n', {}, "tool:limit"),
        ('"""Not JSON."""\nb"bytes"\n', {}, "tool:bad_output"),
        ('"""Bad mutations."""\n{"output": 1, "mutations": "rm -rf"}\n', {}, "tool:bad_output"),
    ],
)
async def test_pymtool_error_kinds(write_script, source: str, args: dict, kind: str) -> None:
    tool = PymTool(load_script(write_script(source)), limits=Limits(max_duration="200ms", wall_clock="5s"))
    result = await call_tool(tool, args)
    assert result.is_error and result.error_kind == kind
    assert isinstance(result.output, str) and result.output
    assert result.duration_us is not None and result.duration_us > 0


async def test_pymtool_mutations_without_a_workspace_are_shown(write_script) -> None:
    tool = PymTool(
        load_script(write_script('"""Wants a write."""\n{"output": 1, "mutations": [{"op": "x"}]}\n'))
    )
    result = await call_tool(tool, {})
    assert not result.is_error
    assert result.output == {"output": 1, "mutations": [{"op": "x"}]}  # nobody applied them: not dropped


async def test_pymtool_impossible_mutation_is_bad_output(write_script, state) -> None:
    from harness.sandbox import Workspace

    tool = PymTool(
        load_script(
            write_script(
                '"""Escapes."""\n{"output": None, "mutations": [{"op": "write", "path": "/etc/x", "content": ""}]}\n'
            )
        )
    )
    result = await call_tool(tool, {}, Workspace.filesystem(state))
    assert result.is_error and result.error_kind == "tool:bad_output"
    assert "outside the file system" in result.output


def test_error_kinds_are_the_seven_of_a_script_and_the_sandbox_s_own() -> None:
    from harness.sandbox import ERROR_KINDS

    assert [(k.__name__, k.error_kind) for k in ERROR_KINDS] == [
        ("ParseError", "tool:load_error"),
        ("CheckError", "tool:load_error"),
        ("ScriptInputError", "tool:script_error"),  # tool:bad_arguments when the model gave the input
        ("ExternalError", "tool:script_error"),
        ("ExecutionError", "tool:script_error"),
        ("LimitError", "tool:limit"),
        ("OutputError", "tool:bad_output"),
        ("UnavailableError", "tool:unavailable"),
    ]
