"""The names a ``.pym`` script imports to declare its interface: ``Input`` and ``external``.

The loader reads these declarations with ``ast`` and blanks their lines before the script runs, so
inside the sandbox neither name exists. They are real Python objects only so that editors and type
checkers resolve ``from harness.sandbox import Input, external`` in a ``.pym`` file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

DECLARATION_MODULES = frozenset({"harness.sandbox", "harness.sandbox.pym.declare", "harness.sandbox.declare", "grail"})
"""Modules a ``.pym`` file may import ``Input``/``external`` from (``harness.sandbox.declare``: this
module's name before it moved; ``grail`` for scripts written for it)."""


def Input(name: str, *, default: Any = None, description: str | None = None, hidden: bool = False) -> Any:
    """Declare an input: ``lines: int = Input("lines", default=10, description="...")``.

    ``hidden=True`` marks an input the host supplies (such as the current directory): it is not part
    of the tool's schema, and a model that passes it gets ``tool:bad_arguments``.
    """
    return default


def external(fn: F) -> F:
    """Declare a host function the script may call; the body must be ``...``."""
    return fn
