"""The command line's conventions: one error format, one exit-code convention, choices and an example
in every command's help, one spelling per option, and the CLI's choice lists equal to the registries."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, get_args

import pytest
import typer
from typer.testing import CliRunner

from harness.cli import errors, options
from harness.cli.errors import EXIT_CODES_HELP, CommandError, ExitCode, HarnessGroup, fail, make_app
from harness.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _registries() -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    from harness.agents.constraint import CONSTRAINED_STRATEGIES, STRATEGIES
    from harness.bench.grammar.cells import GRAMMAR_ENGINES
    from harness.engines.registry import ENGINE_NAMES, SERVED_ENGINE_NAMES, TARGET_NAMES
    from harness.grammar.decode import MaskPolicy
    from harness.grammar.families import FAMILIES
    from harness.sandbox.runtime.script_limits import PRESETS

    def values(enum: type[StrEnum]) -> tuple[str, ...]:
        return tuple(e.value for e in enum)

    return [
        (values(options.Engine), ENGINE_NAMES),
        (values(options.ServedEngine), SERVED_ENGINE_NAMES),
        (values(options.Target), TARGET_NAMES),
        (options.FAMILIES, FAMILIES),
        (values(options.Family), FAMILIES),
        (options.STRATEGIES, STRATEGIES),
        (values(options.Strategy), STRATEGIES),
        (options.CONSTRAINED, CONSTRAINED_STRATEGIES),
        (values(options.ConstrainedStrategy), CONSTRAINED_STRATEGIES),
        (options.GRAMMAR_ENGINES, GRAMMAR_ENGINES),
        (tuple(sorted(values(options.MaskPolicy))), tuple(sorted(get_args(MaskPolicy)))),
        (values(options.LimitsPreset), PRESETS),
    ]


def test_the_clis_choices_are_the_registries_in_their_order() -> None:
    for cli_side, registry in _registries():
        assert cli_side == registry


def _commands(group: object = None, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    command = group if group is not None else typer.main.get_command(app)
    found: list[tuple[str, ...]] = []
    for name, sub in getattr(command, "commands", {}).items():
        if getattr(sub, "commands", None):
            found += _commands(sub, (*path, name))
        else:
            found.append((*path, name))
    return found


COMMANDS = _commands()


def test_every_command_is_found() -> None:
    assert {"run", "score", "report", "compare", "validate", "serve"} <= {c[0] for c in COMMANDS}
    assert ("bench", "grammar") in COMMANDS and ("import", "bfcl") in COMMANDS and ("tool", "run") in COMMANDS


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_commands_help_has_an_example_and_plain_flags(command: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output
    assert f"harness {' '.join(command)}" in result.output.split("Example:")[1]
    assert "<bool>" not in result.output
    assert "╭" not in result.output  # no rich boxes: plain help


def _option_names() -> dict[str, set[tuple[str, ...]]]:
    root = typer.main.get_command(app)
    seen: dict[str, set[tuple[str, ...]]] = {}
    for command in COMMANDS:
        node = root
        for part in command:
            node = node.commands[part]  # type: ignore[attr-defined]
        for param in node.params:
            for opt in param.opts + param.secondary_opts:
                if opt.startswith("--"):
                    seen.setdefault(opt, set()).add(command)
    return seen


DIFFERENT_MEANINGS = {
    "--limits": "the sandbox's limits preset (--limit N: the first N cases)",
    "--tools": "a folder or file of tools (--tool NAME: the one tool bench sandbox times)",
}
"""Option names that differ by an s and mean different things."""


def test_one_spelling_per_option() -> None:
    names = _option_names()
    plural_twins = {n for n in names if n.endswith("s") and n[:-1] in names}
    assert plural_twins == set(DIFFERENT_MEANINGS)
    assert ("bench", "grammar") not in names.get("--engine", set())  # --engine is a model engine everywhere
    assert ("bench", "grammar") in names["--grammar-engine"]
    assert names["--strategy"] >= {("run",), ("bench", "grammar"), ("bench", "engine"), ("grammar", "show")}


def test_the_exit_codes_are_documented_in_help_and_the_errors_page() -> None:
    section = (ROOT / "docs" / "reference" / "errors.md").read_text(encoding="utf-8")
    top_help = runner.invoke(app, ["--help"]).output
    for code in ExitCode:
        assert re.search(rf"\b{code.value}\b", EXIT_CODES_HELP), code
        assert f"| `{code.value}` |" in section, code
    assert " ".join(EXIT_CODES_HELP.split()[:4]) in " ".join(top_help.split())
    assert "harness COMMAND: error: MESSAGE" in section


def test_the_top_help_names_every_strategy_and_lists_commands_in_a_newcomers_order() -> None:
    from harness.cli.main import COMMAND_ORDER
    from harness.vocabulary import STRATEGIES

    top_help = " ".join(runner.invoke(app, ["--help"]).output.split())
    assert all(f" {s} " in top_help.replace(" / ", " ").replace(",", " ") for s in STRATEGIES)
    assert "Python classes" in top_help
    commands = runner.invoke(app, ["--help"]).output.split("Commands:")[1].split("Exit codes")[0]
    listed = re.findall(r"^  ([a-z]+)\s", commands, re.M)
    assert listed == list(COMMAND_ORDER)  # every command, each once, init first and serve last


# -- the root group's handling, on a small app of its own ------------------------------------------------


class Pick(StrEnum):
    a = "a"


def _toy() -> typer.Typer:
    toy = make_app(help="toy", cls=HarnessGroup)

    @toy.command("go")
    def go(what: Annotated[str, typer.Option("--what")] = "ok", pick: Annotated[Pick, typer.Option("--pick")] = Pick.a) -> None:
        """Do something."""
        if what == "bad":
            fail("x.yaml:3: name: missing", hint="harness validate x")
        if what == "verdict":
            fail("2 regressions", code=ExitCode.FAILED)
        if what == "bug":
            raise ZeroDivisionError("division by zero")
        if what == "interrupt":
            raise KeyboardInterrupt
        if what == "warn":
            errors.warn("falling back")
        typer.echo("done")

    @toy.command("other")
    def other() -> None:
        """Nothing."""

    return toy


CASES = [
    (["go"], ExitCode.OK, "done", None),
    (["go", "--what", "bad"], ExitCode.BAD_INPUT, None,
     "toy go: error: x.yaml:3: name: missing\ntoy go: hint: harness validate x\n"),
    (["go", "--what", "verdict"], ExitCode.FAILED, None, "toy go: error: 2 regressions\n"),
    (["go", "--pick", "b"], ExitCode.BAD_INPUT, None, "toy go: error: Invalid value for '--pick': 'b' is not one of 'a'."),
    (["go", "--nope"], ExitCode.BAD_INPUT, None, "toy go: error: No such option: --nope"),
    (["go", "--what", "bug"], ExitCode.INTERNAL, None, "toy go: error: internal error: ZeroDivisionError: division by zero"),
    (["go", "--what", "interrupt"], ExitCode.INTERRUPTED, None, None),
    (["go", "--what", "warn"], ExitCode.OK, "done", "toy go: warning: falling back\n"),
]


@pytest.mark.parametrize(("args", "code", "stdout", "stderr"), CASES)
def test_the_root_group_reports_every_ending_one_way(args: list[str], code: int, stdout: str | None, stderr: str | None) -> None:
    result = runner.invoke(_toy(), args, prog_name="toy")
    assert result.exit_code == code, result.output
    if stdout is not None:
        assert result.stdout.strip() == stdout
    if stderr is not None:
        assert result.stderr.startswith(stderr)


def test_a_command_error_carries_code_and_hint() -> None:
    with pytest.raises(CommandError) as caught:
        fail("m", code=ExitCode.FAILED, hint="h")
    assert (caught.value.message, caught.value.code, caught.value.hint) == ("m", ExitCode.FAILED, "h")


REAL_ERRORS = [
    (["run", "no/such/suite", "--engine", "oracle"], "harness run: error: no/such/suite"),
    (["run", "suites/smoke", "--engine", "nope"], "harness run: error: Invalid value for '--engine'"),
    (["report", "no/such/run"], "harness report: error: no/such/run"),
    (["compare", "no/such/a", "no/such/b"], "harness compare: error: no/such/a"),
    (["score", "no/such/run"], "harness score: error: no/such/run"),
    (["bench", "grammar", "--strategy", "none"], "harness bench grammar: error: Invalid value for '--strategy': unknown 'none'"),
]


@pytest.mark.parametrize(("args", "prefix"), REAL_ERRORS)
def test_commands_report_bad_input_in_the_one_format(args: list[str], prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, args)
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    assert result.stderr.startswith(prefix), result.stderr
