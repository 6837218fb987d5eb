"""BFCL's own code run in-process, without the imports that pull model SDKs.

Some of BFCL's modules hold a pure-Python function the harness wants as BFCL wrote it, next to imports
it does not need that fail when the package is installed with ``--no-deps`` (as it must be: its
declared dependencies pin numpy and pull a dozen model SDKs). ``ast_checker.py`` imports
``bfcl_eval.constants.model_config`` (every model handler and its SDK) only to read one flag per model
name; ``model_handler/utils.py`` imports tree-sitter parsers and a module that creates folders inside
the package when imported.

``load_bfcl_module`` executes such a module's own source, in a fresh module object that is not
registered in ``sys.modules`` (nothing else sees it): each ``from M import a, b`` whose ``M`` is in
``replace`` binds ``a`` and ``b`` from the given mapping instead of importing ``M`` (a name it does not
give is an error naming it); every other statement runs as written. With ``only``, the module's
imports are left out and only the named top-level definitions run (for a function whose module's
other imports cannot run here; the names it uses come from ``provide``). Not for untrusted code: this
runs the installed package's own source, as an import would.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Collection, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.eval.bfcl_data import INSTALL_HINT, BfclDataError


def module_file(name: str) -> Path:
    """The source file of a module of the installed package, found without importing the module (its
    parent packages are imported: BFCL's ``__init__`` files are empty)."""
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        spec = None
    if spec is None or spec.origin is None:
        raise BfclDataError(f"BFCL's module {name} is not installed: {INSTALL_HINT}")
    return Path(spec.origin)


def _replaced(node: ast.ImportFrom, names: Mapping[str, Any], where: str) -> ast.stmt:
    """``from M import a, b as c`` -> ``a, c = __replaced__['M']['a'], __replaced__['M']['b']``."""
    targets, values = [], []
    for alias in node.names:
        if alias.name == "*" or alias.name not in names:
            raise BfclDataError(f"{where}: no replacement given for {alias.name!r} of {node.module}")
        targets.append(alias.asname or alias.name)
        values.append(f"__replaced__[{node.module!r}][{alias.name!r}]")
    statement = ast.parse(f"{', '.join(targets)}, = {', '.join(values)},").body[0]
    for child in ast.walk(statement):  # the import's place in the file, for tracebacks
        if isinstance(child, ast.stmt | ast.expr):
            child.lineno, child.end_lineno = node.lineno, node.end_lineno
    return statement


def _body(tree: ast.Module, replace: Mapping[str, Mapping[str, Any]], only: Collection[str] | None,
          where: str) -> list[ast.stmt]:
    body: list[ast.stmt] = []
    defined: set[str] = set()
    for node in tree.body:
        if only is not None:
            names = {node.name} if isinstance(node, ast.FunctionDef | ast.ClassDef) else {
                t.id for t in getattr(node, "targets", ()) if isinstance(t, ast.Name)}
            if names & set(only):
                body.append(node)
                defined |= names
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.module in replace:
            body.append(_replaced(node, replace[node.module], where))
        else:
            body.append(node)
    missing = sorted(set(only or ()) - defined)
    if missing:
        raise BfclDataError(f"{where}: defines no {', '.join(missing)} (another bfcl-eval version? {INSTALL_HINT})")
    return body


def load_bfcl_module(
    name: str,
    replace: Mapping[str, Mapping[str, Any]] = {},
    *,
    only: Collection[str] | None = None,
    provide: Mapping[str, Any] = {},
) -> ModuleType:
    """The module ``name`` of BFCL's package executed from its source with imports replaced (see the
    module doc). Raises BfclDataError when the package or a name is missing."""
    path = module_file(name)
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    tree.body = _body(tree, replace, only, str(path))
    ast.fix_missing_locations(tree)
    module = ModuleType(f"harness_copy_of_{name}")
    module.__file__ = str(path)
    module.__dict__.update(provide)
    module.__dict__["__replaced__"] = replace
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module


__all__ = ["load_bfcl_module", "module_file"]
