"""Stand-in for the CLI's error convention (issue 13 owns ``harness/cli/errors.py``; this branch takes
theirs when it lands): ``fail(message)`` prints one error line on stderr and exits 2 (bad input)."""

from __future__ import annotations

from enum import IntEnum
from typing import NoReturn

import typer


class ExitCode(IntEnum):
    """The exit codes of every ``harness`` command."""

    OK = 0
    FAILED = 1
    BAD_INPUT = 2
    INTERNAL = 3
    INTERRUPTED = 130


def fail(message: str, *, code: ExitCode = ExitCode.BAD_INPUT, hint: str | None = None) -> NoReturn:
    """Stop the command: ``error: MESSAGE`` on stderr, exit ``code`` (2: bad input)."""
    typer.echo(f"error: {message}", err=True)
    if hint:
        typer.echo(f"hint: {hint}", err=True)
    raise typer.Exit(code)


__all__ = ["ExitCode", "fail"]
