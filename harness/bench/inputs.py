"""What the benchmarks measure with: tool schemas and gold calls, from explicit paths.

The defaults are the SHELLper bundle's tools and suite as they ship with the package
(``harness.packaged``): the benchmarks run from any folder, or are given ``--tools``/``--calls``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.agents import ToolCall, ToolSchema
from harness.files import load_json, read_json, read_json_lines
from harness.packaged import BUNDLES, SUITES

DEFAULT_TOOLS = BUNDLES / "shellper" / "tools"
"""The SHELLper bundle's 18 ``.pym`` tools (shipped with the package)."""
DEFAULT_SUITE = SUITES / "shellper"
"""The SHELLper suite, whose gold calls the grammar bench replays (shipped with the package)."""


def load_tool_schemas(path: str | Path | None = None) -> list[ToolSchema]:
    """Tools from an OpenAI-style JSON list (or ``{"tools": [...]}``) or from a folder of ``.pym``
    tools; default ``DEFAULT_TOOLS``. Raises FileNotFoundError or ValueError naming the file."""
    source = Path(path) if path is not None else DEFAULT_TOOLS
    if not source.exists():
        hint = " (the shipped tools are missing from this installation: pass --tools)" if path is None else ""
        raise FileNotFoundError(f"{source}: no tools there{hint}: a JSON list of OpenAI tools or a .pym folder")
    if source.is_dir():
        from harness.sandbox import SandboxError
        from harness.sandbox.pym import load_script

        scripts = sorted(source.glob("*.pym"))
        if not scripts:
            raise ValueError(f"{source}: no .pym tools in this folder")
        try:
            return [load_script(p, type_check=False).tool_schema() for p in scripts]
        except SandboxError as exc:
            raise ValueError(f"{source}: {exc}") from exc
    data = read_json(source)
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    if not isinstance(data, list) or not data:
        raise ValueError(f"{source}: expected a non-empty JSON list of OpenAI-style tools")
    tools = []
    for i, item in enumerate(data):
        try:
            tools.append(ToolSchema.from_openai(item))
        except (ValueError, TypeError, AttributeError) as exc:
            raise ValueError(f"{source}: tool {i}: {exc}") from exc
    return tools


@dataclass(frozen=True, slots=True)
class GoldCalls:
    """One gold answer: the calls a model should make (usually one)."""

    output_id: str
    calls: tuple[ToolCall, ...]


def _call(obj: Any, where: str) -> ToolCall:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise ValueError(f"{where}: a call needs a name: {str(obj)[:120]}")
    args = obj.get("arguments", {})
    if isinstance(args, str):
        args = load_json(args, f"{where}: arguments")
    if not isinstance(args, dict):
        raise ValueError(f"{where}: arguments must be an object")
    return ToolCall.create(obj["name"], args)


def _calls_of_line(obj: Any, where: str) -> list[list[ToolCall]]:
    """A CALLS.jsonl line: ``{"calls": [...]}``, one ``{"name", "arguments"}``, or a suite case."""
    if isinstance(obj, dict) and "calls" in obj:
        return [[_call(c, where) for c in obj["calls"]]]
    if isinstance(obj, dict) and "expected" in obj:
        return [[_call(c, where)] for c in [obj["expected"], *obj.get("expected_alternatives", [])]]
    if isinstance(obj, dict) and "ground_truth" in obj:
        return [[_call(c, where)] for turn in obj["ground_truth"] for c in turn]
    return [[_call(obj, where)]]


def load_gold(path: str | Path | None = None) -> tuple[list[GoldCalls], str]:
    """Gold answers from a CALLS.jsonl file or a suite folder (default ``DEFAULT_SUITE``), without
    duplicates; and where they came from."""
    src = Path(path) if path is not None else DEFAULT_SUITE
    if not src.exists():
        hint = " (the shipped suite is missing from this installation: pass --calls)" if path is None else ""
        raise FileNotFoundError(f"{src}: no gold calls there{hint}: a .jsonl of calls or a suite folder")
    lines: list[tuple[str, Any]] = []
    if src.is_dir():
        from harness.eval.data import load_suite

        suite = load_suite(src)
        for case in suite.cases:
            lines.append((case.id, json.loads(case.model_dump_json())))
    else:
        for n, obj in read_json_lines(src):
            lines.append((str(obj.get("id", f"line{n}")) if isinstance(obj, dict) else f"line{n}", obj))
    seen: set[str] = set()
    gold: list[GoldCalls] = []
    for oid, obj in lines:
        for k, calls in enumerate(_calls_of_line(obj, f"{src.name}:{oid}")):
            key = json.dumps([[c.name, c.arguments] for c in calls], sort_keys=True)
            if calls and key not in seen:
                seen.add(key)
                gold.append(GoldCalls(oid if k == 0 else f"{oid}#{k}", tuple(calls)))
    if not gold:
        raise ValueError(f"{src}: no gold calls")
    return gold, ("suites/shellper" if path is None else str(src))  # the shipped suite, named as in the repository


__all__ = ["DEFAULT_SUITE", "DEFAULT_TOOLS", "GoldCalls", "load_gold", "load_tool_schemas"]
