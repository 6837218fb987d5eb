"""``harness fuzz --call-server``: the drawn valid calls of an MCP bundle's tools sent to its server,
and the calls the server rejects reported (``harness.tools.mcp.probe``).

The calls are the fuzz's own draw (the same seed, the same values every cell checked): each is valid
by the tool's schema, so every grammar that passed its cell accepts it. Where the server rejects one,
the schema promises more than the server takes: a model held to the grammar can still write it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import typer

from harness.cli.errors import fail

SHOWN = 5
"""Rejections printed per run (all of them are in the file)."""


def mcp_source_of(tools_path: Path) -> Any:
    """The MCP source of the bundle at ``tools_path``; the command fails, naming the option, otherwise."""
    from harness.agents import BundleError, bundle_file
    from harness.bundles import load_bundle
    from harness.tools import load_source, source_name

    if not (tools_path.is_dir() and (tools_path / "bundle.yaml").is_file()) and tools_path.name != "bundle.yaml":
        fail(f"--call-server: {tools_path} is not a bundle (it needs a bundle whose source is mcp)")
    try:
        file = bundle_file(tools_path)
        config = load_bundle(file)
        if source_name(config) != "mcp":
            fail(f"--call-server: {file}: the bundle's tools are not an MCP server's (source: {source_name(config)})")
        return load_source(file, config)
    except BundleError as exc:
        fail(str(exc))


def call_server(tools_path: Path, tools: list[Any], options: Any, folder: Path) -> None:
    """Send each tool's drawn values to the server; write ``server_calls.jsonl`` in ``folder`` and say
    how many the server rejected, and the first few."""
    from harness.fuzz import draw_case
    from harness.tools import send_calls

    source = mcp_source_of(tools_path)
    calls = {tool.name: draw_case(tool, options).values for tool in tools}
    answers = send_calls(source, calls)
    lines = [json.dumps({"tool": a.tool, "arguments": a.arguments, "error_kind": a.error_kind, "output": a.output},
                        ensure_ascii=False) for a in answers]
    (folder / "server_calls.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    rejected = [a for a in answers if a.error_kind is not None]
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(Counter(a.error_kind for a in rejected).items()))
    typer.echo(f"server: {len(rejected)} of {len(answers)} drawn valid calls rejected by the server"
               f"{f' ({kinds})' if kinds else ''} -> {folder / 'server_calls.jsonl'}")
    for answer in rejected[:SHOWN]:
        typer.echo(f"  {answer.tool} {json.dumps(answer.arguments, ensure_ascii=False)[:120]}: "
                   f"{answer.error_kind}: {answer.output.splitlines()[0][:120] if answer.output else ''}")


__all__ = ["call_server", "mcp_source_of"]
