"""A package's public names loaded on first use (PEP 562), written once for every package entry point.

A package whose modules pull heavy libraries (xgrammar, torch, llama.cpp, pydantic-monty, openai) keeps
its ``__init__`` cheap by naming, not importing, where each public name lives::

    __getattr__, __dir__ = lazy_exports(__name__, {
        "get_tokenizer": "tokenizers",            # harness.grammar.tokenizers.get_tokenizer
        "constrained_decode": "decode:decode",    # another name than the module's
    })

The first access imports the submodule and keeps the value in the package (later accesses are plain
attribute reads); ``from harness.grammar import get_tokenizer`` works as for an eager import. The
names are also listed under ``if TYPE_CHECKING:`` imports in the ``__init__``, for type checkers and
readers; ``tests/test_architecture.py`` reads the tables as imports of the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``. ``exports`` maps each public name to the
    submodule that defines it, relative to the package (``"compile"``, ``"local.engine"``), or to
    ``"submodule:attribute"`` when the package exports it under another name."""
    table = dict(exports)

    def __getattr__(name: str) -> Any:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = target.partition(":")
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute or name)
        setattr(sys.modules[package], name, value)  # resolved once: the next access is a plain read
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
