"""``harness bench sandbox``: the cost of one file-system tool call, end to end, per tool.

Each timed call is what the runner does per model call: ``PymTool.execute`` with a file-system
workspace of 20 files in 4 folders (arguments checked, fresh sandbox session, the tree handed to the
script as an input, the mutations applied to the host state). The calls cycle through all 18 tools in
an order that leaves the state as it found it, so every cycle sees the same tree.
The project's goal, for every tool: p50 <= 0.35 ms, p99 <= 1.5 ms (``GOAL``). The tools are the SHELLper
bundle's (``inputs.DEFAULT_TOOLS``, shipped with the package) unless another folder is given; a folder
of other tools is timed one call per tool in turn, with arguments read from each tool's schema.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from pathlib import Path
from typing import Any

from harness.agents import ToolCall, ToolContext
from harness.bench.inputs import DEFAULT_TOOLS
from harness.bench.records import BenchRecord
from harness.sandbox import PymTool, SandboxError, Workspace, discover_tools
from harness.sandbox.gorilla import FileSystemState
from harness.sandbox.runtime import Limits
from harness.stats import rounded_percentile

GOAL = {"tool_call_us_p50": 350, "tool_call_us_p99": 1500}
"""Per tool and over all calls."""

class SandboxBench(BenchRecord):
    """``harness bench sandbox``'s figures (its JSON line); microseconds unless the name says ms."""

    tool_call_us_p50: float | None
    """One tool call end to end, over every timed call: median."""
    tool_call_us_p90: float | None
    """90th percentile."""
    tool_call_us_p99: float | None
    """99th percentile."""
    tool_call_us_mean: float
    """Mean."""
    n: int
    """Timed calls (whole cycles)."""
    preset: str
    """The sandbox's limits preset."""
    tool: str
    """The tool timed, or all in turn."""
    files: int
    """Files in the tree."""
    error_results: int
    """Calls that answered an error (the cycle has one on purpose: ``rmdir`` of a full folder)."""
    per_tool_us_p50: dict[str, float | None]
    """Tool -> its median call."""
    per_tool_us_p99: dict[str, float | None]
    """Tool -> its 99th percentile call."""
    tools_over_goal: list[str]
    """Tools whose p50 or p99 misses the goal."""
    first_call_us: float
    """The first call of the process (the pool started)."""
    load_18_tools_ms: float
    """Loading the tools (type checks cached on disk)."""
    bare_feed_inline_us_p50: float | None
    """``pwd``'s feed run on the event loop's thread: median (None: the folder has no ``pwd``)."""
    bare_feed_pool_us_p50: float | None
    """The same feed through the pool's runner threads: median (what a free event loop costs)."""
    load_average_1m: float
    """The machine's load while it ran."""
    goal: dict[str, int]
    """The project's goals, per tool and over all calls."""
    goals_met: bool
    """p50 and p99 within the goal over all calls, and no tool over it."""


CYCLE: tuple[tuple[str, dict[str, Any]], ...] = (
    ("ls", {}),
    ("cat", {"file_name": "notes.txt"}),
    ("grep", {"file_name": "notes.txt", "pattern": "line 1"}),
    ("wc", {"file_name": "notes.txt", "mode": "w"}),
    ("tail", {"file_name": "notes.txt", "lines": 3}),
    ("sort", {"file_name": "todo.txt"}),
    ("diff", {"file_name1": "notes.txt", "file_name2": "todo.txt"}),
    ("pwd", {}),
    ("cd", {"folder": "docs"}),
    ("ls", {"a": True}),
    ("cd", {"folder": ".."}),
    ("mkdir", {"dir_name": "tmp"}),
    ("touch", {"file_name": "tmp.txt"}),
    ("echo", {"content": "scratch", "file_name": "tmp.txt"}),
    ("cp", {"source": "tmp.txt", "destination": "tmp"}),
    ("mv", {"source": "tmp.txt", "destination": "tmp2.txt"}),
    ("rm", {"file_name": "tmp2.txt"}),
    ("rmdir", {"dir_name": "tmp"}),  # not empty: an error result, state unchanged
    ("rm", {"file_name": "tmp"}),
    ("find", {"name": "report"}),
    ("du", {"human_readable": True}),
)


def bench_state() -> FileSystemState:
    """20 files in 4 folders, ~3 KB of text."""
    lines = "\n".join(f"line {i}: some text for the tools to chew on" for i in range(12))
    tree: dict[str, Any] = {
        "notes.txt": lines,
        "todo.txt": "\n".join(sorted(lines.splitlines(), reverse=True)),
        ".profile": "export X=1",
        "docs": {f"report_{i}.md": f"# Report {i}\n{lines[: 40 * (i + 1)]}" for i in range(6)},
        "src": {f"mod_{i}.py": f"def f{i}():\n    return {i}\n" for i in range(6)},
        "logs": {f"day_{i}.log": f"{i} ok\n{i} warn\n" for i in range(5)},
        "empty": {},
    }
    state = FileSystemState("bench", tree)
    assert _count_files(state.tree) == 20
    return state


def _count_files(tree: dict[str, Any]) -> int:
    return sum(_count_files(n) if isinstance(n, dict) else 1 for n in tree.values())


def example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments a tool's schema accepts, for a tool the Gorilla cycle does not know: each required
    parameter's default, else its first enum value, else a plain value of its type."""
    plain = {"string": "example", "integer": 1, "number": 1.0, "boolean": False, "array": [], "object": {}}
    properties = schema.get("properties", {})
    out: dict[str, Any] = {}
    for name in schema.get("required", []):
        spec = properties.get(name, {})
        if "default" in spec:
            out[name] = spec["default"]
        elif spec.get("enum"):
            out[name] = spec["enum"][0]
        else:
            kind = spec.get("type", "string")
            out[name] = plain.get(kind[0] if isinstance(kind, list) else kind, "example")
    return out


def bench_cycle(tools: dict[str, PymTool], only: str | None) -> tuple[list[tuple[str, dict[str, Any]]], bool]:
    """The calls timed in turn, and whether they are the Gorilla cycle (which leaves the tree as it found
    it). A folder of other tools is timed with one call per tool, arguments from its schema."""
    if only is not None and only not in tools:
        raise ValueError(f"no tool {only!r}; expected one of {', '.join(sorted(tools))}")
    gorilla = all(name in tools for name, _ in CYCLE)
    if gorilla:
        cycle = [c for c in CYCLE if only is None or c[0] == only]
        if cycle:
            return cycle, only is None
    names = [only] if only is not None else sorted(tools)
    return [(name, example_arguments(tools[name].schema.parameters)) for name in names], False


async def _run(n: int, preset: str, only: str | None, tools_dir: Path) -> SandboxBench:
    started = time.perf_counter()
    try:
        tools = {t.name: t for t in discover_tools(tools_dir, limits=preset)}
    except SandboxError as exc:
        raise ValueError(f"{tools_dir}: {exc}") from exc
    if not tools:
        raise ValueError(f"{tools_dir}: no .pym tools in this folder")
    load_ms = (time.perf_counter() - started) * 1e3
    cycle, keeps_state = bench_cycle(tools, only)
    state = bench_state()
    workspace = Workspace.filesystem(state)

    async def call(tool: PymTool, args: dict[str, Any]) -> tuple[float, bool]:
        t0 = time.perf_counter()
        result = await tool.execute(
            ToolCall.create(tool.name, args), ToolContext(call_id="bench", workspace=workspace)
        )
        return (time.perf_counter() - t0) * 1e6, result.is_error

    first_us, _ = await call(tools[cycle[0][0]], cycle[0][1])
    for name, args in cycle * 2:  # warm-up
        await call(tools[name], args)
    samples: list[float] = []
    per_tool: dict[str, list[float]] = {}
    errors = 0
    while len(samples) < n:  # whole cycles, so the state ends as it began (n is rounded up)
        for name, args in cycle:
            us, is_error = await call(tools[name], args)
            samples.append(us)
            per_tool.setdefault(name, []).append(us)
            errors += is_error
    if keeps_state and state != bench_state():
        raise RuntimeError("the benchmark cycle changed the file-system state: its calls are wrong")
    hop = await _runner_hop(tools["pwd"], max(50, n // 4)) if "pwd" in tools else (None, None)
    p50 = {k: rounded_percentile(v, 50, 1) for k, v in sorted(per_tool.items())}
    p99 = {k: rounded_percentile(v, 99, 1) for k, v in sorted(per_tool.items())}
    over = sorted(k for k in p50 if (p50[k] or 0) > GOAL["tool_call_us_p50"] or (p99[k] or 0) > GOAL["tool_call_us_p99"])
    all_p50, all_p99 = rounded_percentile(samples, 50, 1), rounded_percentile(samples, 99, 1)
    return SandboxBench(
        tool_call_us_p50=all_p50,
        tool_call_us_p90=rounded_percentile(samples, 90, 1),
        tool_call_us_p99=all_p99,
        tool_call_us_mean=round(statistics.fmean(samples), 1),
        n=len(samples),
        preset=preset,
        tool=only or (f"all (cycle of {len(tools)} tools)" if keeps_state else f"all {len(tools)} tools in turn"),
        files=_count_files(state.tree),
        error_results=errors,
        per_tool_us_p50=p50,
        per_tool_us_p99=p99,
        tools_over_goal=over,
        first_call_us=round(first_us, 1),
        load_18_tools_ms=round(load_ms, 1),
        bare_feed_inline_us_p50=hop[0],
        bare_feed_pool_us_p50=hop[1],
        load_average_1m=round(os.getloadavg()[0], 2),
        goal=GOAL,
        goals_met=(all_p50 or 0) <= GOAL["tool_call_us_p50"] and (all_p99 or 0) <= GOAL["tool_call_us_p99"] and not over,
    )


async def _runner_hop(tool: PymTool, n: int) -> tuple[float | None, float | None]:
    """The same feed (``pwd``: one small input, no tree) run on the event loop's thread and through
    the pool's runner threads: what keeping the loop free costs per call."""
    from harness.sandbox.runtime import Job, TreeOS, get_pool

    pool = get_pool()
    script = tool.script
    limits = tool.limits.to_monty()
    inputs = {"cwd": "/fs/bench"}

    def feed(job: Job) -> Any:
        return pool.feed(
            job,
            script.filename,
            script.code,
            limits=limits,
            inputs=inputs,
            external_lookup={},
            os_handler=TreeOS({}),
            print_callback=lambda stream, text: None,
        )

    loop = asyncio.get_running_loop()
    inline: list[float] = []
    pooled: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        feed(Job(loop, feed))
        inline.append((time.perf_counter() - t0) * 1e6)
        t0 = time.perf_counter()
        await pool.submit(loop, feed).future
        pooled.append((time.perf_counter() - t0) * 1e6)
    return rounded_percentile(inline, 50, 1), rounded_percentile(pooled, 50, 1)


def bench_sandbox(
    n: int = 1000, preset: str = "default", tool: str | None = None, tools_dir: str | Path | None = None
) -> SandboxBench:
    """Time ``n`` tool calls (see the module docstring) and return the figures."""
    Limits.preset(preset)  # fail early on a bad name
    folder = Path(tools_dir) if tools_dir is not None else DEFAULT_TOOLS
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a folder of .pym tools")
    return asyncio.run(_run(n, preset, tool, folder))
