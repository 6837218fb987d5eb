"""What keeps ``harness fuzz`` inside its bounds: a time limit that interrupts pure-Python work (drawing
values, hypothesis-jsonschema's enum checks, shrinking), and the screen a tool's schema passes before
anything draws from it.

The time limit is a ``SIGALRM`` timer raising ``OverTime`` (a ``BaseException``, so the ``except
Exception`` around a parser or a Hypothesis search cannot swallow it). It works in a process's main
thread, which is where every cell runs (in the command's process, or in a worker process of its own);
elsewhere it does nothing and the cooperative deadline checks still hold.

The screen refuses, as a named problem (a ``schema_invalid`` cell), what would otherwise stop the run
with a traceback or reach outside it: ``parameters`` that are not an object schema, a ``$ref`` that is
not a pointer into the same schema (``http://``, ``file://``: never fetched, never read), and one that
points at nothing (a recursive one is drawn to a bounded depth: ``values.inline_refs``). And Hypothesis keeps its storage where it is told
(``hypothesis_home``), never in ``.hypothesis`` of whatever folder the command runs from.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class OverTime(BaseException):
    """The time limit of ``time_limit`` passed."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``OverTime`` in the block once ``seconds`` have passed (main thread only; see the module doc)."""
    if not math.isfinite(seconds) or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(_signum: int, _frame: Any) -> None:
        raise OverTime

    before = signal.signal(signal.SIGALRM, fire)
    previous, _ = signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
        if previous:  # an enclosing limit keeps its own clock (less what this block spent: good enough)
            signal.setitimer(signal.ITIMER_REAL, previous)


def _pointer(schema: Any, ref: str) -> Any:
    """The subschema ``ref`` (``#`` or ``#/a/b``) points at; KeyError when it points at nothing."""
    node = schema
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(ref)
    return node


def _refs(node: Any) -> list[str]:
    """Every ``$ref`` string in ``node`` (no recursion: a stack)."""
    found, stack = [], [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("$ref"), str):
                found.append(item["$ref"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def ref_problem(schema: Any) -> str | None:
    """What is wrong with ``schema``'s references (module doc), or None."""
    graph: dict[str, list[str]] = {}
    todo = ["#"]
    while todo:
        ref = todo.pop()
        if ref in graph:
            continue
        if not (ref == "#" or ref.startswith("#/")):
            return f"$ref {ref!r} is not a pointer into the tool's own schema ('#/...'): it is never fetched"
        try:
            graph[ref] = _refs(_pointer(schema, ref))
        except KeyError:
            return f"$ref {ref!r} points at nothing in the schema"
        todo.extend(graph[ref])
    return None  # a recursive one is fine: values are drawn to a bounded depth (values.inline_refs)


def parameters_problem(parameters: Any) -> str | None:
    """Why a tool's ``parameters`` cannot be fuzzed (module doc), or None."""
    if not isinstance(parameters, dict):
        return f"parameters must be a JSON schema object, not {type(parameters).__name__}"
    kind = parameters.get("type", "object")
    if kind != "object":
        return f"parameters must be an object schema (type 'object'), not type {kind!r}: a call's arguments are an object"
    return ref_problem(parameters)


def hypothesis_home(folder: Path) -> None:
    """Hypothesis' storage in ``folder``, in this process and the workers it spawns (they read the
    environment), instead of ``.hypothesis`` in whatever folder the command runs from."""
    import os

    from hypothesis.configuration import set_hypothesis_home_dir

    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(folder)
    set_hypothesis_home_dir(str(folder))


__all__ = ["OverTime", "hypothesis_home", "parameters_problem", "ref_problem", "time_limit"]
