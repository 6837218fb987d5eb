"""The declarations of a ``.pym`` script, read with ``ast``: ``Input()`` inputs, ``@external``
functions, the description; the code with the declaration lines blanked; the type-check stubs.

Blanking keeps every line where it was (a declaration line becomes an empty line, nothing is
regenerated), so runtime and type errors name the ``.pym`` file's own lines.
"""

from __future__ import annotations

import ast
import copy
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.sandbox.errors import CheckError, ParseError
from harness.sandbox.pym.declare import DECLARATION_MODULES
from harness.sandbox.pym.schema import AnnotationError, annotation_schema
from harness.sandbox.validation import first_error

_MISSING: Any = object()
_INPUT_KEYWORDS = {"default", "description", "hidden"}

BUILTIN_STUBS = (
    "def open(file: Any, mode: str = 'r', encoding: str | None = None) -> Any: ...\n"
    "class FileNotFoundError(OSError): ...\n"
    "class FileExistsError(OSError): ...\n"
    "class IsADirectoryError(OSError): ...\n"
    "class NotADirectoryError(OSError): ...\n"
    "class PermissionError(OSError): ...\n"
    "class ImportError(Exception): ...\n"
    "class ModuleNotFoundError(ImportError): ...\n"
    "class UnboundLocalError(NameError): ...\n"
)
"""Builtins the sandbox has at run time but its type checker does not know (``open``, several
exception classes); every script's stubs declare them."""


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One ``Input()`` declaration."""

    name: str
    annotation: str
    lineno: int
    default: Any = _MISSING
    description: str | None = None
    hidden: bool = False
    model_schema: dict[str, Any] = field(default_factory=dict)
    validation_schema: dict[str, Any] = field(default_factory=dict)

    @property
    def has_default(self) -> bool:
        return self.default is not _MISSING

    @property
    def required(self) -> bool:
        """Required in the tool's schema: visible and without a default."""
        return not self.hidden and not self.has_default


@dataclass(frozen=True, slots=True)
class ExternalSpec:
    """One ``@external`` function declaration."""

    name: str
    stub: str
    lineno: int
    docstring: str | None = None


@dataclass(frozen=True, slots=True)
class Declarations:
    """What ``parse_declarations`` finds in one script."""

    description: str
    code: str
    """The source with the declaration lines blanked: what is fed to the sandbox."""
    stubs: str
    inputs: dict[str, InputSpec]
    externals: dict[str, ExternalSpec]


def parse_declarations(source: str, fname: str) -> Declarations:
    """The declarations of ``source`` and its blanked code. Raises ParseError or CheckError."""
    try:
        module = ast.parse(source, filename=fname)
    except SyntaxError as e:
        raise ParseError(
            f"{fname} line {e.lineno}: syntax error: {e.msg}", script=fname, line=e.lineno
        ) from e

    decl_names = _declaration_imports(module, fname)
    blank: list[tuple[int, int]] = []
    inputs: dict[str, InputSpec] = {}
    externals: dict[str, ExternalSpec] = {}
    stub_imports: list[str] = []
    accepted: set[int] = set()  # ids of Name nodes that are legitimate declaration uses
    declared: set[int] = set()  # ids of the statements that are blanked

    for stmt in module.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module in DECLARATION_MODULES:
            blank.append((stmt.lineno, stmt.end_lineno or stmt.lineno))
            declared.add(id(stmt))
            continue
        if isinstance(stmt, ast.Import | ast.ImportFrom) and getattr(stmt, "module", None) != "__future__":
            stub_imports.append(ast.unparse(stmt))
            continue
        call = _input_call(stmt, decl_names)
        if call is not None:
            spec = _input_spec(stmt, call, fname)
            if spec.name in inputs:
                raise CheckError(
                    f"{fname} line {stmt.lineno}: input {spec.name!r} declared twice",
                    script=fname,
                    line=stmt.lineno,
                )
            inputs[spec.name] = spec
            accepted.add(id(call.func))
            blank.append((stmt.lineno, stmt.end_lineno or stmt.lineno))
            declared.add(id(stmt))
            continue
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and _is_external(stmt, decl_names):
            ext = _external_spec(stmt, fname)
            externals[ext.name] = ext
            accepted.update(id(d) for d in stmt.decorator_list)
            first = min([d.lineno for d in stmt.decorator_list] + [stmt.lineno])
            blank.append((first, stmt.end_lineno or stmt.lineno))
            declared.add(id(stmt))

    _reject_stray_declarations(module, decl_names, accepted, fname)
    clash = set(inputs) & set(externals)
    if clash:
        raise CheckError(f"{fname}: {sorted(clash)[0]!r} is both an input and an external", script=fname)
    docstring = _module_docstring(module)
    if docstring is not None:  # the description: the sandbox need not compile it on every call (~15 us)
        blank.append((docstring.lineno, docstring.end_lineno or docstring.lineno))
        declared.add(id(docstring))
    code = _blank_lines(source, blank, module, fname, declared)
    description = inspect.cleandoc(ast.get_docstring(module, clean=False) or "")
    stubs = _build_stubs(stub_imports, inputs, externals)
    return Declarations(description=description, code=code, stubs=stubs, inputs=inputs, externals=externals)


def _module_docstring(module: ast.Module) -> ast.stmt | None:
    first = module.body[0] if module.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first
    return None


def _declaration_imports(module: ast.Module, fname: str) -> dict[str, str]:
    """Local name -> declaration ('Input'/'external') for names imported from a declaration module."""
    names: dict[str, str] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module in DECLARATION_MODULES:
            if node not in module.body:
                raise CheckError(
                    f"{fname} line {node.lineno}: import Input/external at module level",
                    script=fname,
                    line=node.lineno,
                )
            for alias in node.names:
                if alias.name not in ("Input", "external"):
                    raise CheckError(
                        f"{fname} line {node.lineno}: {node.module} provides only Input and external, "
                        f"not {alias.name!r}",
                        script=fname,
                        line=node.lineno,
                    )
                names[alias.asname or alias.name] = alias.name
    return names


def _input_call(stmt: ast.stmt, decl: Mapping[str, str]) -> ast.Call | None:
    value = stmt.value if isinstance(stmt, ast.AnnAssign | ast.Assign) else None
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and decl.get(value.func.id) == "Input"
    ):
        return value
    return None


def _input_spec(stmt: ast.stmt, call: ast.Call, fname: str) -> InputSpec:
    line = stmt.lineno
    where = f"{fname} line {line}"
    if not isinstance(stmt, ast.AnnAssign):
        raise CheckError(
            f'{where}: an input needs a type annotation: `name: str = Input("name")`', script=fname, line=line
        )
    if not isinstance(stmt.target, ast.Name):
        raise CheckError(f"{where}: an input must be assigned to a plain name", script=fname, line=line)
    target = stmt.target.id
    if (
        len(call.args) != 1
        or not isinstance(call.args[0], ast.Constant)
        or not isinstance(call.args[0].value, str)
    ):
        raise CheckError(
            f"{where}: Input() takes the input's name as one string argument", script=fname, line=line
        )
    name = call.args[0].value
    if name != target:
        raise CheckError(
            f"{where}: Input({name!r}) is assigned to {target!r}; the names must match",
            script=fname,
            line=line,
        )
    if name.startswith("_"):
        raise CheckError(f"{where}: input names may not start with '_'", script=fname, line=line)
    kwargs: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg not in _INPUT_KEYWORDS:
            raise CheckError(
                f"{where}: Input() has no argument {kw.arg!r} (use {', '.join(sorted(_INPUT_KEYWORDS))})",
                script=fname,
                line=line,
            )
        try:
            kwargs[kw.arg] = ast.literal_eval(kw.value)
        except ValueError as e:
            raise CheckError(
                f"{where}: Input({name!r}) {kw.arg}= must be a literal", script=fname, line=line
            ) from e
    try:
        model_schema, validation_schema, _optional = annotation_schema(stmt.annotation)
    except AnnotationError as e:
        raise CheckError(f"{where}: input {name!r}: {e}", script=fname, line=line) from e
    description = kwargs.get("description")
    if description is not None and not isinstance(description, str):
        raise CheckError(f"{where}: Input({name!r}) description= must be a string", script=fname, line=line)
    hidden = kwargs.get("hidden", False)
    if not isinstance(hidden, bool):
        raise CheckError(f"{where}: Input({name!r}) hidden= must be True or False", script=fname, line=line)
    default = kwargs.get("default", _MISSING)
    if default is not _MISSING:
        problem = first_error(validation_schema, default)
        if problem is not None:
            raise CheckError(f"{where}: the default of input {name!r} {problem}", script=fname, line=line)
    return InputSpec(
        name=name,
        annotation=ast.unparse(stmt.annotation),
        lineno=line,
        default=default,
        description=description,
        hidden=hidden,
        model_schema=model_schema,
        validation_schema=validation_schema,
    )


def _is_external(fn: ast.FunctionDef | ast.AsyncFunctionDef, decl: Mapping[str, str]) -> bool:
    return any(isinstance(d, ast.Name) and decl.get(d.id) == "external" for d in fn.decorator_list)


def _external_spec(fn: ast.FunctionDef | ast.AsyncFunctionDef, fname: str) -> ExternalSpec:
    line = fn.lineno
    if isinstance(fn, ast.AsyncFunctionDef):
        # The sandbox runs on pydantic-monty's sync pool: a call to an external returns its value. The
        # host may still implement it as a coroutine function (it runs on the caller's event loop).
        raise CheckError(
            f"{fname} line {line}: declare @external {fn.name!r} with `def`, not `async def`, and "
            "call it without await (the host may implement it as a coroutine)",
            script=fname,
            line=line,
        )
    if len(fn.decorator_list) != 1:
        raise CheckError(
            f"{fname} line {line}: @external {fn.name!r} takes no other decorator", script=fname, line=line
        )
    body = list(fn.body)
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    stub_body = all(
        (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is Ellipsis)
        or isinstance(s, ast.Pass)
        for s in body
    )
    if not stub_body:
        raise CheckError(
            f"{fname} line {line}: @external {fn.name!r} must have `...` as its body; the host implements it",
            script=fname,
            line=line,
        )
    for arg in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
        if arg.annotation is None:
            raise CheckError(
                f"{fname} line {line}: @external {fn.name!r}: parameter {arg.arg!r} needs a type annotation",
                script=fname,
                line=line,
            )
    if fn.returns is None:
        raise CheckError(
            f"{fname} line {line}: @external {fn.name!r} needs a return annotation", script=fname, line=line
        )
    stub_fn = copy.copy(fn)  # same signature, no decorator, body `...`
    stub_fn.decorator_list = []
    stub_fn.body = [ast.Expr(ast.Constant(Ellipsis))]
    stub = ast.unparse(ast.fix_missing_locations(stub_fn))
    return ExternalSpec(name=fn.name, stub=stub, lineno=line, docstring=ast.get_docstring(fn))


def _reject_stray_declarations(
    module: ast.Module, decl: Mapping[str, str], accepted: set[int], fname: str
) -> None:
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and node.id in decl and id(node) not in accepted:
            kind = decl[node.id]
            hint = (
                '`name: type = Input("name")` at module level'
                if kind == "Input"
                else "`@external` on a module-level function whose body is `...`"
            )
            raise CheckError(
                f"{fname} line {node.lineno}: {kind} may only be used as {hint}",
                script=fname,
                line=node.lineno,
            )


def _blank_lines(
    source: str, ranges: list[tuple[int, int]], module: ast.Module, fname: str, declared: set[int]
) -> str:
    if not ranges:
        return source
    lines = source.splitlines(keepends=True)
    blanked: set[int] = set()
    for start, end in ranges:
        blanked.update(range(start, end + 1))
    for (
        stmt
    ) in module.body:  # a declaration must not share a line with other code (`a: int = Input("a"); b = 1`)
        end = stmt.end_lineno or stmt.lineno
        if id(stmt) not in declared and blanked & set(range(stmt.lineno, end + 1)):
            raise CheckError(
                f"{fname} line {stmt.lineno}: put each declaration on lines of its own",
                script=fname,
                line=stmt.lineno,
            )
    for n in blanked:
        line = lines[n - 1]
        lines[n - 1] = "\n" if line.endswith("\n") else ""
    return "".join(lines)


def _build_stubs(
    imports: list[str], inputs: Mapping[str, InputSpec], externals: Mapping[str, ExternalSpec]
) -> str:
    parts = [
        "from typing import Any, Literal, Optional, Union\n",
        *[i + "\n" for i in imports],
        BUILTIN_STUBS,
    ]
    parts += [f"{spec.name}: {spec.annotation}\n" for spec in inputs.values()]
    parts += [ext.stub + "\n" for ext in externals.values()]
    return "".join(parts)
