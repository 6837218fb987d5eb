"""The ``.pym`` script format: the ``Input()``/``@external`` declarations a script imports
(``declare``), reading them with ``ast`` (``declarations``), JSON schemas from their annotations
(``schema``), the loaded ``Script`` (``script``) and the type check run once when it loads
(``typecheck``, which imports pydantic-monty: loaded on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports
from harness.sandbox.pym.declarations import BUILTIN_STUBS, ExternalSpec, InputSpec, parse_declarations
from harness.sandbox.pym.declare import DECLARATION_MODULES, Input, external
from harness.sandbox.pym.schema import AnnotationError
from harness.sandbox.pym.script import Script, load_script, parse_script

if TYPE_CHECKING:
    from harness.sandbox.pym.typecheck import CheckedSource, type_check_script

__getattr__, __dir__ = lazy_exports(__name__, {"CheckedSource": "typecheck", "type_check_script": "typecheck"})

__all__ = [
    "BUILTIN_STUBS",
    "DECLARATION_MODULES",
    "AnnotationError",
    "CheckedSource",
    "ExternalSpec",
    "Input",
    "InputSpec",
    "Script",
    "external",
    "load_script",
    "parse_declarations",
    "parse_script",
    "type_check_script",
]
