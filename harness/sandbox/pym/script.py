"""Loading a ``.pym`` script: declarations found with ``ast``, lines blanked, stubs built, checked once.

A ``.pym`` file is Python that declares its interface at module level::

    \"\"\"What the tool does (the tool's description).\"\"\"
    from harness.sandbox import Input, external

    file_name: str = Input("file_name", description="...")
    lines: int = Input("lines", default=10)
    cwd: str = Input("cwd", hidden=True)          # supplied by the host, not in the schema

    @external
    def lookup(key: str) -> str: ...             # implemented by the host (sync or async)

    ...code...
    {"output": ..., "mutations": [...]}          # the last expression is the value

The declaration lines are blanked (replaced by empty lines, never regenerated), so the code that runs
keeps the file's line numbers and every error points at the ``.pym`` line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.agents import ToolSchema
from harness.files import InputFileError as FileError
from harness.files import read_text
from harness.sandbox.errors import ParseError, ScriptInputError
from harness.sandbox.pym.declarations import BUILTIN_STUBS, ExternalSpec, InputSpec, parse_declarations
from harness.sandbox.validation import SchemaCheck, compile_validator, first_error_of, first_problem
from harness.sandbox.values import lone_surrogate

__all__ = ["BUILTIN_STUBS", "ExternalSpec", "InputSpec", "Script", "load_script", "parse_script"]


@dataclass(frozen=True, slots=True)
class Script:
    """A loaded, checked ``.pym`` script. Immutable; run it as often as needed
    (``harness.sandbox.run_script``)."""

    path: Path
    name: str
    description: str
    code: str
    """The source with the declaration lines blanked: what is fed to the sandbox."""
    stubs: str
    inputs: Mapping[str, InputSpec]
    externals: Mapping[str, ExternalSpec]
    _validators: dict[str, SchemaCheck] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def filename(self) -> str:
        return self.path.name

    def tool_schema(self, name: str | None = None) -> ToolSchema:
        """The ToolSchema the model sees: visible inputs only, hidden ones left out."""
        properties: dict[str, Any] = {}
        required: list[str] = []
        for spec in self.inputs.values():
            if spec.hidden:
                continue
            prop = dict(spec.model_schema)
            if spec.description:
                prop["description"] = spec.description
            if spec.has_default and spec.default is not None:
                prop["default"] = spec.default
            properties[spec.name] = prop
            if spec.required:
                required.append(spec.name)
        params: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
        return ToolSchema(name=name or self.name, description=self.description, parameters=params)

    def validation_schema(self, *, include_hidden: bool) -> dict[str, Any]:
        """A strict JSON Schema for argument values: unknown names rejected, Optional accepts null."""
        props = {s.name: s.validation_schema for s in self.inputs.values() if include_hidden or not s.hidden}
        required = [s.name for s in self.inputs.values() if s.required]
        return {"type": "object", "properties": props, "required": required, "additionalProperties": False}

    def validator(self, *, include_hidden: bool) -> SchemaCheck:
        """The compiled validator of ``validation_schema`` (built once)."""
        key = "all" if include_hidden else "visible"
        found = self._validators.get(key)
        if found is None:
            found = self._validators[key] = compile_validator(
                self.validation_schema(include_hidden=include_hidden)
            )
        return found

    def _input_validator(self, name: str) -> SchemaCheck:
        key = "input:" + name
        found = self._validators.get(key)
        if found is None:
            found = self._validators[key] = compile_validator(self.inputs[name].validation_schema)
        return found

    def resolve_inputs(
        self,
        given: Mapping[str, Any] | None,
        host: Mapping[str, Any] | None = None,
        *,
        given_checked: bool = False,
    ) -> dict[str, Any]:
        """All inputs for a run: ``given`` (the arguments) over ``host`` (hidden values) over defaults.

        Raises ScriptInputError naming the input when one is unknown, missing or of the wrong type.
        ``given_checked``: the caller already validated ``given`` against ``validator(include_hidden=False)``
        (PymTool does, to report ``tool:bad_arguments``), so only the host's values are checked here.
        """
        given = dict(given or {})
        host = host or {}
        for key in given:
            if key not in self.inputs:
                raise ScriptInputError(
                    f"{self.filename}: unknown input {key!r} (declared: {', '.join(self.inputs) or 'none'})",
                    input_name=key,
                    script=self.filename,
                )
        values: dict[str, Any] = {}
        from_host: list[str] = []
        for spec in self.inputs.values():
            if spec.name in given:
                values[spec.name] = given[spec.name]
            elif spec.hidden and spec.name in host:
                values[spec.name] = host[spec.name]
                from_host.append(spec.name)
            elif spec.has_default:
                values[spec.name] = spec.default
            else:
                who = "the host (hidden input)" if spec.hidden else "the call"
                raise ScriptInputError(
                    f"{self.filename} line {spec.lineno}: missing input {spec.name!r}, which {who} must supply",
                    input_name=spec.name,
                    from_model=not spec.hidden,
                    script=self.filename,
                )
        if not given_checked:
            _check_types(self, values)
            where = lone_surrogate(given)
            if where is not None:
                raise ScriptInputError(
                    f"{self.filename}: input {where!r} is not valid text (it holds a lone surrogate)",
                    input_name=where.split(".")[0].split("[")[0],
                    script=self.filename,
                )
            return values
        for name in from_host:
            problem = first_error_of(self._input_validator(name), values[name])
            if problem is not None:
                raise ScriptInputError(
                    f"{self.filename} line {self.inputs[name].lineno}: hidden input {name!r} {problem}",
                    input_name=name,
                    from_model=False,
                    script=self.filename,
                )
        return values


def _check_types(script: Script, values: Mapping[str, Any]) -> None:
    problem = first_problem(script.validator(include_hidden=True), dict(values))
    if problem is None:
        return
    message, name = problem
    spec = script.inputs.get(name) if name else None
    where = f"{script.filename} line {spec.lineno}" if spec else script.filename
    raise ScriptInputError(
        f"{where}: {message}",
        input_name=name,
        from_model=not (spec and spec.hidden),
        script=script.filename,
    )


def load_script(path: str | Path, *, type_check: bool = True) -> Script:
    """Read, parse and check a ``.pym`` file. Raises ParseError or CheckError with the line."""
    path = Path(path)
    try:
        source = read_text(path)  # a regular file under the size bound: a FIFO or /dev/zero is refused, never read
    except FileError as e:
        raise ParseError(f"cannot read {path}: {e.reason}", script=path.name) from None
    script = parse_script(source, path)
    if type_check:
        from harness.sandbox.pym.typecheck import type_check_script

        type_check_script(script)
    return script


def parse_script(source: str, path: str | Path = "script.pym") -> Script:
    """The script in ``source``, declarations read, not type-checked. Raises ParseError or CheckError."""
    path = Path(path)
    found = parse_declarations(source, path.name)
    return Script(
        path=path,
        name=path.stem,
        description=found.description,
        code=found.code,
        stubs=found.stubs,
        inputs=found.inputs,
        externals=found.externals,
    )
