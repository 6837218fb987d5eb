"""The commands of ``harness``, one module per command or command group; ``harness.cli.main`` wires them.

Each module imports only typer and the CLI helpers at start-up; what a command needs (xgrammar, torch,
polars, the sandbox) is imported when it runs.
"""

__all__: list[str] = []
