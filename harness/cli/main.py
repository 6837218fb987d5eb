"""Entry point of the ``harness`` command.

Only typer and the command modules load at start-up; each command imports what it needs (xgrammar,
torch, llama.cpp, pydantic-monty, polars) when it runs, so ``harness --help`` stays fast.
"""

from __future__ import annotations

import signal

import typer

from harness import __version__
from harness.cli import bench, grammar, reporting, serve, suites, tool
from harness.cli import run as run_cmd

app = typer.Typer(
    name="harness",
    help=(
        "Evaluate and benchmark grammar-constrained tool calling: FunctionGemma and Qwen formats, "
        "strategies none / ebnf / structural_tag / json_schema, sandboxed .pym tools."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(grammar.app, name="grammar")
app.add_typer(tool.app, name="tool")
app.add_typer(bench.app, name="bench")
app.command("validate")(suites.validate)
app.add_typer(suites.import_app, name="import")
app.command("report")(reporting.report)
app.command("compare")(reporting.compare)
app.command("run")(run_cmd.run)
app.command("score")(run_cmd.score)
app.command("serve")(serve.serve)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"harness {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Evaluate and benchmark grammar-constrained tool calling."""


def _terminate(signum: int, _frame: object) -> None:
    """SIGTERM ends the command like Ctrl-C does: cleanup runs (servers the run started are stopped)."""
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    app()


if __name__ == "__main__":
    main()
