"""One error format and one exit-code convention for every ``harness`` command.

Every command reports a problem on stderr as one line, optionally followed by a hint::

    harness run: error: suites/x/suite.yaml: kind: Input should be 'next_call' or 'episode'
    harness run: hint: harness validate suites/x lists every problem of a suite

and notes that do not stop the command as ``harness run: warning: ...``. A command raises
:class:`CommandError` (through :func:`fail`), or typer's ``BadParameter`` for a flag; the root group
(:class:`HarnessGroup`) prints either in this format and exits with the code. Exit codes
(:class:`ExitCode`, listed by ``harness --help``):

- ``0``: done;
- ``1``: done, and the verdict is "no": ``compare`` found a regression, ``grammar check`` rejected a
  call, ``validate`` found problems in a suite, ``tool run`` returned an error result;
- ``2``: bad input or usage: a flag, file, suite, bundle, engine or run directory the command cannot
  use. Nothing was run, or the run stopped before its first sample (what was saved stays saved);
- ``3``: the harness itself failed (a bug): the traceback follows the error line;
- ``130``: interrupted (Ctrl-C or SIGTERM): what was saved stays saved.

A run whose samples fail (a model timeout, a parse error) still exits 0: failures are results,
counted in its files and report, not errors of the command.

This module imports typer only, so ``harness --help`` stays fast.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from enum import IntEnum
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup


class ExitCode(IntEnum):
    """The exit codes of every ``harness`` command."""

    OK = 0
    """Done."""
    FAILED = 1
    """Done, and the verdict is "no" (a regression, a rejected call, a suite with problems)."""
    BAD_INPUT = 2
    """A flag, file, suite, bundle, engine or run directory the command cannot use (a run whose every
    sample ended in a ``model:`` error: its engine answered none)."""
    INTERNAL = 3
    """The harness failed (a bug); the traceback follows."""
    INTERRUPTED = 130
    """Ctrl-C or SIGTERM."""


EXIT_CODES_HELP = (
    "Exit codes (every command): 0 done; 1 done, verdict no (compare found a regression, grammar check "
    "rejected a call, validate found problems, tool run returned an error); 2 bad input or usage (nothing "
    "run, stopped before the first sample, or an engine that answered no sample); 3 a harness bug (traceback follows); 130 interrupted. "
    "Errors go to stderr as 'harness COMMAND: error: MESSAGE'."
)
"""The convention in one paragraph, for ``harness --help`` (a test checks it against ``ExitCode``)."""


class CommandError(Exception):
    """A problem a command reports and exits on: ``message`` names the file, line, field or flag."""

    def __init__(self, message: str, *, code: ExitCode = ExitCode.BAD_INPUT, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.hint = hint


def fail(message: str, *, code: ExitCode = ExitCode.BAD_INPUT, hint: str | None = None) -> NoReturn:
    """Stop the command: ``harness COMMAND: error: MESSAGE`` on stderr, exit ``code`` (2: bad input)."""
    raise CommandError(message, code=code, hint=hint)


def format_error(command: str, message: str, hint: str | None = None, kind: str = "error") -> str:
    """The lines a problem is reported as (no trailing newline)."""
    lines = [f"{command}: {kind}: {line}" if i == 0 else f"  {line}" for i, line in enumerate(message.splitlines() or [""])]
    if hint:
        lines.append(f"{command}: hint: {hint}")
    return "\n".join(lines)


def warn(message: str) -> None:
    """A note that does not stop the command: ``harness COMMAND: warning: MESSAGE`` on stderr."""
    typer.echo(format_error(_current_command(), message, kind="warning"), err=True)


def _current_command() -> str:
    """The running command's path (``harness run``), or ``harness`` outside a command."""
    ctx = _click_context()
    return ctx.command_path if ctx is not None else "harness"


def _click_context() -> Any:
    from typer._click.globals import get_current_context

    return get_current_context(silent=True)


def command_path(group: Any, prog: str, args: Sequence[str]) -> str:
    """``harness bench grammar`` for ``args`` ``["bench", "grammar", "--quick"]``: the subcommands named
    before the first word that is not one."""
    path, current = [prog], group
    for arg in args:
        commands = getattr(current, "commands", None)
        if not commands or arg not in commands:
            break
        path.append(arg)
        current = commands[arg]
    return " ".join(path)


class HarnessGroup(TyperGroup):
    """The root group: runs the command and reports every way it can end in the one format above."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        from typer._click import exceptions as click_exc

        argv = list(sys.argv[1:] if args is None else args)
        prog = prog_name or "harness"
        where = command_path(self, prog, argv)
        try:
            result = super().main(argv, prog, complete_var, standalone_mode=False, **extra)
        except CommandError as exc:
            typer.echo(format_error(where, exc.message, exc.hint), err=True)
            sys.exit(exc.code)
        except click_exc.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(ExitCode.BAD_INPUT)
        except click_exc.UsageError as exc:  # BadParameter, missing or unknown options, a bad choice
            used = exc.ctx.command_path if exc.ctx is not None else where
            message = exc.format_message().replace("Value error, ", "")  # typer's enum check says it so
            typer.echo(format_error(used, message, f"see '{used} --help'"), err=True)
            sys.exit(ExitCode.BAD_INPUT)
        except click_exc.ClickException as exc:  # a file option that cannot be opened, and the like
            typer.echo(format_error(where, exc.format_message()), err=True)
            sys.exit(ExitCode.BAD_INPUT)
        except (KeyboardInterrupt, typer.Abort):
            typer.echo(format_error(where, "interrupted", kind="error"), err=True)
            sys.exit(ExitCode.INTERRUPTED)
        except Exception as exc:  # a bug: say so, with the traceback, and a code of its own
            typer.echo(format_error(where, f"internal error: {type(exc).__name__}: {exc}"), err=True)
            traceback.print_exc()
            sys.exit(ExitCode.INTERNAL)
        code = result if isinstance(result, int) else ExitCode.OK  # typer.Exit(n) comes back as n
        if standalone_mode:
            sys.exit(code)
        return code


def make_app(help: str, **options: Any) -> typer.Typer:
    """A command group with the project's conventions: plain help (flags without ``<bool>``, choices as
    ``<a|b>``), no completion install commands, no rich error boxes (the root reports errors)."""
    return typer.Typer(
        help=help, no_args_is_help=True, rich_markup_mode=None, add_completion=False,
        pretty_exceptions_enable=False, **options,
    )


__all__ = [
    "EXIT_CODES_HELP",
    "CommandError",
    "ExitCode",
    "HarnessGroup",
    "command_path",
    "fail",
    "format_error",
    "make_app",
    "warn",
]
