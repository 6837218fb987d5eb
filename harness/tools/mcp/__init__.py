"""MCP servers as a tool source (``source: mcp`` with an ``mcp:`` section in ``bundle.yaml``).

``connection``: one client session to one server, owned by one task; ``source``: the tools, a folder
and a server process per sample, the folder's tree as the state; ``folder``: seeding and reading that
folder; ``load``: the source from ``bundle.yaml`` (tools listed once). The MCP SDK is imported on first
use, never by importing this package.
"""
