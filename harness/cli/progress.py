"""Progress of ``harness run``: a rich bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import time
from typing import Any

import typer


class PlainProgress:
    """Progress as plain lines (stdout is not a terminal): at most one line every few seconds."""

    def __init__(self, total: int, done: int, every_s: float = 5.0) -> None:
        self.total, self.done, self.errors = total, done, 0
        self.every_s = every_s
        self.started = self.last = time.monotonic()

    def __call__(self, record: Any) -> None:
        self.done += 1
        self.errors += record.status == "error"
        now = time.monotonic()
        if now - self.last >= self.every_s or self.done == self.total:
            self.last = now
            typer.echo(f"[{now - self.started:6.1f}s] {self.done}/{self.total} samples, {self.errors} errors")

    def note(self, message: str) -> None:
        typer.echo(message, err=True)

    def stop(self) -> None:
        """Nothing to tear down."""


class RichProgress:
    def __init__(self, total: int, done: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("[bold]samples"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[errors]} errors"),
        )
        self.task = self.progress.add_task("run", total=total, completed=done, errors=0)
        self.errors = 0
        self.progress.start()

    def __call__(self, record: Any) -> None:
        self.errors += record.status == "error"
        self.progress.update(self.task, advance=1, errors=self.errors)

    def note(self, message: str) -> None:
        self.progress.console.print(message, markup=False, highlight=False)

    def stop(self) -> None:
        self.progress.stop()


def make_progress(total: int, done: int, tty: bool) -> PlainProgress | RichProgress:
    return RichProgress(total, done) if tty else PlainProgress(total, done)


__all__ = ["PlainProgress", "RichProgress", "make_progress"]
