"""A tiny MCP server for the tests of the MCP source's failure handling (a test fixture, not a shipped
server), written with the ``mcp`` SDK's MCPServer (FastMCP before 2.0) over stdio. Its tools misbehave on request: ``crash``
exits mid-call, ``hang`` never answers, ``garbage`` writes a line on stdout that is not JSON-RPC,
``fail`` answers ``isError``, ``big`` answers more than a bound allows. ``note`` writes a file in the
server's folder (the state), ``pid`` says which process answered. ``--http PORT``: served over
streamable HTTP instead of stdio."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("hostile")
WIRE = os.fstat(1).st_ino
"""The pipe to the client: the SDK's stdio server moves it off fd 1 (so prints cannot break the session),
so the garbage tool finds it by its inode."""


@server.tool()
def note(name: str, text: str) -> str:
    """Write text to a file of the working folder."""
    Path(name).write_text(text, encoding="utf-8")
    return f"wrote {name}"


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
def crash() -> str:
    """Exit mid-call."""
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "late"


@server.tool()
def garbage() -> str:
    """Write a line on stdout that is not JSON-RPC, then answer."""
    wire = next(fd for fd in range(3, 256) if _inode(fd) == WIRE)
    os.write(wire, b"this is not json\n")
    time.sleep(0.5)
    return "after garbage"


def _inode(fd: int) -> int | None:
    try:
        return os.fstat(fd).st_ino
    except OSError:
        return None


@server.tool()
def fail() -> str:
    """A tool's own failure (a result with isError)."""
    raise ToolError("the pump is broken")  # its text reaches the client (any other exception: hidden)


@server.tool()
def big(size: int) -> str:
    """``size`` characters."""
    return "x" * size


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:  # a server at a URL (streamable HTTP) on the port given
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
