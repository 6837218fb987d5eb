"""Loading .pym scripts: declarations, schema derivation, blanked lines, stubs, malformed declarations;
the 18 bundled tools against SHELLper's tool list."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from sandbox_helpers import TOOLS_DIR

from harness.sandbox import (
    CheckError,
    FileSystemState,
    ParseError,
    Workspace,
    discover_tools,
    load_script,
    parse_script,
    run_script,
)

SHELLPER_TOOLS = Path(__file__).resolve().parents[1] / "data" / "shellper_tools.json"

TYPED = '''
"""Exercises every supported annotation.

Second paragraph of the description."""
from typing import Any, Literal, Optional

from harness.sandbox import Input

name: str = Input("name", description="Who.")
count: int = Input("count", default=3)
ratio: float = Input("ratio", default=0.5)
flag: bool = Input("flag", default=False)
tags: list[str] = Input("tags", default=[])
meta: dict[str, int] = Input("meta", default={})
mode: Literal["l", "w", "c"] = Input("mode", default="l")
maybe: Optional[str] = Input("maybe", default=None)
other: int | None = Input("other", default=None)
anything: Any = Input("anything", default="x")
cwd: str = Input("cwd", hidden=True)

[name, count, ratio, flag, tags, meta, mode, maybe, other, anything, cwd]
'''


def test_schema_from_inputs(write_script) -> None:
    script = load_script(write_script(TYPED, name="typed.pym"))
    schema = script.tool_schema()
    assert schema.name == "typed"
    assert (
        schema.description == "Exercises every supported annotation.\n\nSecond paragraph of the description."
    )
    props = schema.parameters["properties"]
    assert props["name"] == {"type": "string", "description": "Who."}
    assert props["count"] == {"type": "integer", "default": 3}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["flag"] == {"type": "boolean", "default": False}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "default": []}
    assert props["meta"] == {"type": "object", "default": {}}
    assert props["mode"] == {"type": "string", "enum": ["l", "w", "c"], "default": "l"}
    assert props["maybe"] == {"type": "string"}  # Optional[X] -> X, not required, no null default shown
    assert props["other"] == {"type": "integer"}
    assert props["anything"] == {"type": "string", "default": "x"}
    assert "cwd" not in props  # hidden: supplied by the host
    assert schema.parameters["required"] == ["name"]
    spec = script.inputs["cwd"]
    assert spec.hidden and not spec.required and not spec.has_default


async def test_inputs_reach_the_script(write_script) -> None:
    script = load_script(write_script(TYPED, name="typed.pym"))
    value = await run_script(
        script,
        {"name": "n", "maybe": None, "other": 2, "tags": ["a"]}, host_inputs={"cwd": "/fs"}
    )
    assert value == ["n", 3, 0.5, False, ["a"], {}, "l", None, 2, "x", "/fs"]


def test_declaration_lines_are_blanked_not_rewritten(write_script) -> None:
    script = load_script(write_script(TYPED, name="typed.pym"))
    source = (write_script(TYPED, name="typed.pym")).read_text().splitlines()
    code = script.code.splitlines()
    assert len(code) == len(source)
    docstring_lines = ast.parse("\n".join(source)).body[0].end_lineno or 1
    for n, (original, fed) in enumerate(zip(source, code, strict=True)):
        if "Input" in original or n < docstring_lines:  # a declaration, or the docstring (the description)
            assert fed == ""
        else:
            assert fed == original
    assert script.description.startswith(source[0].strip('"'))


def test_stubs_declare_inputs_externals_and_open(write_script) -> None:
    script = load_script(
        write_script('''
        """With an external."""
        from harness.sandbox import Input, external

        n: int = Input("n")


        @external
        def fetch(url: str, *, retries: int = 2) -> str:
            """Docstring."""
            ...


        fetch("u") * n
        ''')
    )
    assert "n: int" in script.stubs
    assert "def fetch(url: str, *, retries: int=2) -> str:" in script.stubs
    assert "def open(" in script.stubs
    assert list(script.externals) == ["fetch"] and script.externals["fetch"].lineno == 8
    assert "@external" not in script.code and "def fetch" not in script.code


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ('from harness.sandbox import Input\nx = Input("x")\n', "needs a type annotation"),
        ('from harness.sandbox import Input\nx: int = Input("y")\n', "the names must match"),
        ("from harness.sandbox import Input\nx: int = Input(name)\n", "one string argument"),
        ('from harness.sandbox import Input\nx: int = Input("x", dflt=1)\n', "no argument 'dflt'"),
        ('from harness.sandbox import Input\nx: int = Input("x", default="a")\n', "default of input 'x'"),
        ('from harness.sandbox import Input\nx: set[int] = Input("x")\n', "unsupported generic 'set'"),
        ('from harness.sandbox import Input\nx: Path = Input("x")\n', "unsupported type 'Path'"),
        ('from harness.sandbox import Input\nx: int = Input("x", hidden="yes")\n', "hidden= must be"),
        ('from harness.sandbox import Input\nx: int = Input("x"); y = 2\n', "lines of its own"),
        ('from harness.sandbox import Input\ndef f():\n    return Input("x")\n', "Input may only be used"),
        ('from harness.sandbox import Input\nx: int = Input("x")\nx: int = Input("x")\n', "declared twice"),
        ("from harness.sandbox import Input, Limits\n", "provides only Input and external"),
        (
            "from harness.sandbox import external\n@external\ndef f(x: int) -> int:\n    return x\n",
            "must have `...` as its body",
        ),
        (
            "from harness.sandbox import external\n@external\ndef f(x) -> int:\n    ...\n",
            "needs a type annotation",
        ),
        ("from harness.sandbox import external\n@external\ndef f(x: int):\n    ...\n", "return annotation"),
    ],
)
def test_malformed_declarations(source: str, needle: str) -> None:
    with pytest.raises(CheckError, match=needle):
        parse_script(source, "bad.pym")


def test_grail_imports_are_accepted() -> None:
    script = parse_script(
        '"""Written for grail."""\nfrom grail import Input\n\nx: int = Input("x")\nx * 2\n', "g.pym"
    )
    assert list(script.inputs) == ["x"] and script.code.splitlines()[1] == ""


def test_unreadable_script_is_a_parse_error(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="cannot read"):
        load_script(tmp_path / "missing.pym")


def test_bundled_tools_match_shellpers_tool_list() -> None:
    tools = {t.name: t for t in discover_tools(TOOLS_DIR)}
    expected = {t["function"]["name"]: t["function"] for t in json.loads(SHELLPER_TOOLS.read_text())}
    assert set(tools) == set(expected) and len(tools) == 18
    for name, tool in tools.items():
        schema = tool.schema
        assert schema.description.startswith("This tool belongs to the Gorilla file system."), name
        want = expected[name]["parameters"]
        got = schema.parameters
        assert list(got["properties"]) == list(want["properties"]), name
        assert got["required"] == want["required"], name
        for prop, spec in want["properties"].items():
            mine = got["properties"][prop]
            assert mine["type"] == spec["type"], (name, prop)
            assert mine.get("enum") == spec.get("enum"), (name, prop)
            assert mine.get("default") == spec.get("default"), (name, prop)
            assert mine.get("description"), (name, prop)
        hidden = {s.name for s in tool.script.inputs.values() if s.hidden}
        served = set(Workspace.filesystem(FileSystemState("alex")).data.host_inputs(name))
        assert hidden and hidden <= served, name  # the state comes in as inputs the bridge serves


def test_discover_tools_fails_loudly_on_a_broken_script(tmp_path: Path) -> None:
    (tmp_path / "good.pym").write_text('"""Good."""\n1\n')
    (tmp_path / "bad.pym").write_text('"""Bad."""\nx = (\n')
    with pytest.raises(ParseError, match=r"bad\.pym line 2"):
        discover_tools(tmp_path)
    with pytest.raises(FileNotFoundError):
        discover_tools(tmp_path / "nope")
