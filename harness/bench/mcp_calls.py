"""``harness bench sandbox --mcp BUNDLE``: one MCP server tool call end to end, beside the ``.pym``
sandbox's.

Each timed call is what a run does per model call of an MCP bundle (``McpSession.call``): the request
through the SDK's client over stdio to the server's process, its answer read back and its paths made
relative. The server runs over the sandbox benchmark's 20-file tree (``sandbox.bench_state``), started
before the clock: its start is timed apart (``first_call_ms``; a sample pays it once, on its first
call). The calls cycle through the filesystem server's reading and writing tools in an order that
leaves the tree as it found it; another server's tools are called in turn with arguments read from
their schemas.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from harness.bench.records import BenchRecord
from harness.bench.sandbox import bench_state, example_arguments
from harness.stats import rounded_percentile

FILESYSTEM_CYCLE: tuple[tuple[str, dict[str, Any]], ...] = (
    ("list_directory", {"path": "."}),
    ("read_text_file", {"path": "notes.txt"}),
    ("read_text_file", {"path": "notes.txt", "head": 3}),
    ("get_file_info", {"path": "todo.txt"}),
    ("search_files", {"path": ".", "pattern": "report"}),
    ("directory_tree", {"path": "docs"}),
    ("write_file", {"path": "scratch.txt", "content": "scratch"}),
    ("edit_file", {"path": "scratch.txt", "edits": [{"oldText": "scratch", "newText": "scratched"}]}),
    ("create_directory", {"path": "tmp"}),
    ("move_file", {"source": "scratch.txt", "destination": "tmp/scratch.txt"}),
    ("move_file", {"source": "tmp/scratch.txt", "destination": "scratch.txt"}),
    ("write_file", {"path": "scratch.txt", "content": "scratch"}),
)
"""The filesystem server's calls (its tree grows by ``scratch.txt`` and ``tmp/`` on the first cycle only)."""


class McpBench(BenchRecord):
    """The MCP server's figures (microseconds unless the name says ms)."""

    bundle: str
    """The bundle whose server was timed."""
    tool_call_us_p50: float | None
    """One tool call end to end, over every timed call: median."""
    tool_call_us_p99: float | None
    """99th percentile."""
    n: int
    """Timed calls."""
    error_results: int
    """Calls the server answered as errors."""
    first_call_ms: float
    """The session's first call: the server's start, ``initialize`` and one call."""
    per_tool_us_p50: dict[str, float | None]
    """Tool -> its median call."""


def _tree(node: dict[str, Any]) -> dict[str, Any]:
    """``bench_state``'s tree as Gorilla file-system nodes (what a case's ``initial_fs`` holds)."""
    return {name: {"type": "directory", "contents": _tree(sub)} if isinstance(sub, dict) else
            {"type": "file", "content": sub} for name, sub in node.items()}


async def _timed(bundle: Path, n: int) -> McpBench:
    from harness.bundles import load_bundle
    from harness.tools import SessionSetup, load_source

    file = bundle / "bundle.yaml" if bundle.is_dir() else bundle
    source: Any = load_source(file, load_bundle(file))
    names = {t.schema.name for t in source.tools}
    cycle = [c for c in FILESYSTEM_CYCLE if c[0] in names] if "read_text_file" in names else \
        [(t.schema.name, example_arguments(t.schema.parameters)) for t in source.tools]
    tree = {"root": {"bench": {"type": "directory", "contents": _tree(bench_state().tree)}}}
    session = await source.open(SessionSetup(entry="bench", tree=tree))
    try:
        started = time.perf_counter()
        await session.call(*cycle[0])
        first_ms = (time.perf_counter() - started) * 1000
        times: dict[str, list[float]] = {}
        errors = 0
        for i in range(n):
            name, arguments = cycle[i % len(cycle)]
            result = await session.call(name, arguments)
            errors += result.is_error
            times.setdefault(name, []).append(result.duration_us or 0.0)
    finally:
        await session.close()
    every = [us for values in times.values() for us in values]
    return McpBench(bundle=str(bundle), tool_call_us_p50=rounded_percentile(every, 50, 1),
                    tool_call_us_p99=rounded_percentile(every, 99, 1), n=len(every), error_results=errors,
                    first_call_ms=round(first_ms, 1),
                    per_tool_us_p50={k: rounded_percentile(v, 50, 1) for k, v in sorted(times.items())})


def bench_mcp(bundle: Path, n: int = 240) -> McpBench:
    """Time ``n`` calls of the MCP bundle's server (see the module doc); BundleError when it does not load."""
    return asyncio.run(_timed(bundle, n))


__all__ = ["McpBench", "bench_mcp"]
