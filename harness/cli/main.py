"""Entry point of the ``harness`` command.

Only typer and the command modules load at start-up; each command imports what it needs (xgrammar,
torch, llama.cpp, pydantic-monty, polars) when it runs, so ``harness --help`` stays fast.
"""

from __future__ import annotations

import signal

import typer

from harness import __version__
from harness.cli.commands import bench, compare, grammar, init, reporting, serve, suites, tool, vllm
from harness.cli.commands import run as run_cmd
from harness.cli.errors import EXIT_CODES_HELP, HarnessGroup, make_app
from harness.cli.options import example
from harness.vocabulary import STRATEGIES

# The order a newcomer meets the commands in: make a bundle, check it, run it, read and compare the
# results, then the tools for grammars, benchmarks, datasets and servers.
COMMAND_ORDER: tuple[str, ...] = (
    "init", "validate", "run", "score", "report", "compare", "merge",
    "fuzz", "grammar", "tool", "bench", "import", "suites", "vllm", "serve",
)


class RootGroup(HarnessGroup):
    """The root group, listing its commands in ``COMMAND_ORDER`` (any other after them)."""

    def list_commands(self, ctx: object) -> list[str]:  # type: ignore[override]
        names = list(self.commands)
        return [n for n in COMMAND_ORDER if n in names] + [n for n in names if n not in COMMAND_ORDER]


app = make_app(
    name="harness",
    help=(
        "Evaluate and benchmark grammar-constrained tool calling: FunctionGemma and Qwen call formats, "
        f"strategies {' / '.join(STRATEGIES)}, tools as sandboxed .pym scripts or Python classes. "
        "Start with 'harness init NAME', then 'harness run NAME/suite --engine oracle --report'."
    ),
    cls=RootGroup,
    epilog=EXIT_CODES_HELP,
)
app.add_typer(grammar.app, name="grammar")
app.add_typer(tool.app, name="tool")
app.add_typer(bench.app, name="bench")
app.add_typer(vllm.app, name="vllm")
app.command("validate", epilog=example("harness validate suites/shellper"))(suites.validate)
app.add_typer(suites.import_app, name="import")
app.add_typer(suites.suites_app, name="suites")
app.command("init", epilog=example("harness init mytools", "harness run mytools/suite --engine oracle --report"))(init.init)
app.command("report", epilog=example("harness report results/a results/b --out results/ab"))(reporting.report)
app.command("compare", epilog=example(
    "harness compare --timings info results/baselines/smoke results/x",
    "harness compare BASE NEW --policy gate.yaml --junit junit.xml --update-baseline",
    "harness compare results/a results/b --allow-setup-change   # e.g. another token bound",
))(compare.compare)
app.command("run", epilog=example(
    "harness run suites/shellper --limit 25 --report",
    "harness run suites/shellper --engine oracle --family function_gemma,qwen --strategy ebnf,json_schema",
    "harness run suites/smoke --engine openai --base-url http://127.0.0.1:8000/v1 --family qwen",
))(run_cmd.run)
app.command("score", epilog=example("harness score results/x"))(run_cmd.score)
app.command("merge", epilog=example(
    "harness run shellper --engine vllm --shard 1/2 --out results/s1   # on one machine",
    "harness run shellper --engine vllm --shard 2/2 --out results/s2   # on another",
    "harness merge results/s1 results/s2 --out results/all",
))(reporting.merge)
app.command("serve", epilog=example("harness serve --engine local --port 8000"))(serve.serve)
app.command("fuzz", epilog=example(
    "harness fuzz --tools bundles/shellper/tools --examples 1000",
    "harness fuzz --tools tools.json --family qwen --strategy ebnf --expected fuzz-baseline.json --junit fuzz.xml",
))(grammar.fuzz)


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
    app(prog_name="harness")


if __name__ == "__main__":
    main()
