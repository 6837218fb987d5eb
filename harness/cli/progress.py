"""Progress of ``harness run``: a rich bar on a terminal, plain lines otherwise.

Both show the same things: samples done of all, the current family/strategy lane, the running
validity (answers that parsed into valid calls) with failures counted by kind, the time left, and,
while a sample takes long (a model loading its prompt into the cache, a server answering), which
sample is running and for how long. Notes of the run (``note``) print above the bar.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any

import typer

SLOW_S = 15.0
"""A sample running this long gets a line of its own in plain mode."""
TOP_KINDS = 3


def duration(seconds: float) -> str:
    """``1h02m``, ``3m05s``, ``42s``."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class RunState:
    """What both displays show, updated as samples start and finish."""

    def __init__(self, total: int, done: int) -> None:
        self.total, self.done, self.resumed = total, done, done
        self.valid = 0
        self.kinds: Counter[str] = Counter()
        self.started_at = time.monotonic()
        self.running: dict[str, float] = {}
        """Sample id -> when it started."""
        self.lane = ""

    def started(self, key: Any) -> None:
        self.running[key.sample_id] = time.monotonic()
        self.lane = f"{key.family}/{key.strategy}"

    def finished(self, record: Any, failure: str | None) -> None:
        self.running.pop(record.sample_id, None)
        self.done += 1
        if failure is None:
            self.valid += 1
        else:
            self.kinds[failure] += 1

    @property
    def counted(self) -> int:
        """Samples finished by this invocation."""
        return self.done - self.resumed

    def validity(self) -> str:
        if not self.counted:
            return "valid -"
        return f"valid {self.valid}/{self.counted} ({100 * self.valid / self.counted:.0f}%)"

    def failures(self) -> str:
        if not self.kinds:
            return "no failures"
        top = self.kinds.most_common(TOP_KINDS)
        text = ", ".join(f"{kind} {n}" for kind, n in top)
        others = len(self.kinds) - len(top)
        return text + (f" (+{others} more kinds)" if others > 0 else "")

    def eta(self) -> str:
        remaining = self.total - self.done
        if not remaining:
            return "done"
        if not self.counted:
            return "ETA -"
        per_sample = (time.monotonic() - self.started_at) / self.counted
        return f"ETA {duration(per_sample * remaining)}"

    def slowest(self) -> tuple[str, float] | None:
        """The sample running longest and for how long (seconds), if any."""
        if not self.running:
            return None
        sample_id, since = min(self.running.items(), key=lambda kv: kv[1])
        return sample_id, time.monotonic() - since

    def summary(self) -> str:
        return " · ".join([f"{self.done}/{self.total} samples", f"lane {self.lane or '-'}", self.validity(),
                           self.failures(), self.eta()])


class PlainProgress:
    """Progress as plain lines (stdout is not a terminal): at most one line every few seconds, and a
    line for a sample that runs long."""

    def __init__(self, total: int, done: int, every_s: float = 5.0) -> None:
        self.state = RunState(total, done)
        self.every_s = every_s
        self.last = time.monotonic()

    def _line(self, text: str) -> None:
        self.last = time.monotonic()
        typer.echo(f"[{self.last - self.state.started_at:7.1f}s] {text}")

    def started(self, key: Any) -> None:
        self.state.started(key)

    def finished(self, record: Any, failure: str | None) -> None:
        self.state.finished(record, failure)
        if time.monotonic() - self.last >= self.every_s or self.state.done == self.state.total:
            self._line(self.state.summary())

    def tick(self) -> None:
        slowest = self.state.slowest()
        if slowest is not None and slowest[1] >= SLOW_S and time.monotonic() - self.last >= SLOW_S:
            sample_id, running = slowest
            self._line(f"{self.state.done}/{self.state.total} samples · running {sample_id} for {duration(running)} "
                       "(a model call: prompt prefill and generation) · " + self.state.eta())

    def note(self, message: str) -> None:
        typer.echo(message, err=True)

    def stop(self) -> None:
        """Nothing to tear down."""


class RichProgress:
    """A live bar: lane, samples, running validity, failures by kind, elapsed and time left, and the
    sample that is running (with how long it has been)."""

    def __init__(self, total: int, done: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        from rich.text import Text

        self.state = RunState(total, done)
        state = self.state

        class _Progress(Progress):
            def get_renderables(self) -> Any:
                yield self.make_tasks_table(self.tasks)
                slowest = state.slowest()
                if slowest is not None and slowest[1] >= 1.0:  # a quick sample would only flicker
                    yield Text(f"  running {slowest[0]} for {duration(slowest[1])}", style="dim")

        self.progress = _Progress(
            TextColumn("[bold]{task.fields[lane]}"), BarColumn(bar_width=20), MofNCompleteColumn(),
            TextColumn("{task.fields[validity]}"), TextColumn("[red]{task.fields[failures]}"),
            TimeElapsedColumn(), TextColumn("{task.fields[eta]}"),
        )
        self.task = self.progress.add_task("run", total=total, completed=done, **self._fields())
        self.progress.start()

    def _fields(self) -> dict[str, Any]:
        return {"lane": self.state.lane or "starting", "validity": self.state.validity(),
                "failures": self.state.failures(), "eta": self.state.eta()}

    def started(self, key: Any) -> None:
        self.state.started(key)
        self.progress.update(self.task, **self._fields())

    def finished(self, record: Any, failure: str | None) -> None:
        self.state.finished(record, failure)
        self.progress.update(self.task, advance=1, **self._fields())

    def tick(self) -> None:
        self.progress.update(self.task, **self._fields())

    def note(self, message: str) -> None:
        self.progress.console.print(message, markup=False, highlight=False)

    def stop(self) -> None:
        self.progress.stop()


def make_progress(total: int, done: int, tty: bool) -> PlainProgress | RichProgress:
    return RichProgress(total, done) if tty else PlainProgress(total, done)




class FuzzProgress:
    """Cells done of all, with the current note: a rich bar on a terminal, plain lines otherwise."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()
        self.bar: Any = None
        self.task: Any = None
        self.last_line = 0.0

    def __enter__(self) -> FuzzProgress:
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("fuzz"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                TextColumn("{task.description}"), console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("", total=self.total)
        return self

    def update(self, note: str, done: int) -> None:
        self.done += done
        if self.bar is not None:
            self.bar.update(self.task, advance=done, description=note)
        elif done and (time.monotonic() - self.last_line > 5 or self.done == self.total):
            self.last_line = time.monotonic()
            typer.echo(f"fuzz: {self.done}/{self.total} cells, {time.monotonic() - self.started:.0f}s ({note})", err=True)

    def __exit__(self, *_: object) -> None:
        if self.bar is not None:
            self.bar.stop()


__all__ = ["FuzzProgress", "PlainProgress", "RichProgress", "RunState", "duration", "make_progress"]
