"""``harness tool run``: run one .pym tool in the sandbox."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli.errors import ExitCode, fail, make_app
from harness.cli.options import LimitsPreset, example
from harness.vocabulary import ErrorKind

app = make_app(help="Run sandboxed .pym tools.")

_FILES_HELP = (
    "A host directory read into the file-system tree /fs/<DIR name> (the current directory of the "
    "file-system tools); symbolic links are never followed (each one skipped is named on stderr). "
    "Without it the tools see an empty /fs/workspace."
)


@app.command("run", epilog=example(
    "harness tool run bundles/shellper/tools/ls.pym --args '{\"a\": true}' --files some/dir"))
def run(
    script: Annotated[Path, typer.Argument(metavar="SCRIPT", help="The .pym script to run.")],
    args: Annotated[str, typer.Option("--args", metavar="JSON", help="The call's arguments as a JSON object.")] = "{}",
    limits: Annotated[LimitsPreset, typer.Option("--limits", help="The sandbox's limits preset.")] = LimitsPreset.default,
    files: Annotated[
        Path | None, typer.Option("--files", metavar="DIR", exists=True, file_okay=False, dir_okay=True, help=_FILES_HELP)
    ] = None,
) -> None:
    """Run SCRIPT once with ARGS in a fresh sandbox session (any .pym tool, with or without files).

    Prints one JSON object {"output": ..., "is_error": bool, "error_kind": str|null, "mutations": [...]}
    (the mutations the call asked the host to apply, in order) and exits 1 when is_error. Bad input
    exits 2 with the cause named: --args that are not a JSON object, arguments the tool's schema refuses
    (tool:bad_arguments; the JSON line is printed first), a script that does not load, a --files
    directory that cannot be read or is too large.
    """
    import asyncio
    import json

    from harness.agents import ToolCall, ToolContext
    from harness.files import InputFileError, load_json
    from harness.sandbox import (
        FileSystemBridge,
        FileSystemState,
        PymTool,
        SandboxError,
        Workspace,
        load_script,
    )

    try:
        arguments = load_json(args, "--args")
    except InputFileError as e:
        fail(str(e))
    if not isinstance(arguments, dict):
        fail(f"--args must be a JSON object, got {type(arguments).__name__}")
    try:
        tool = PymTool(load_script(script), limits=limits.value)
    except SandboxError as e:
        fail(f"{script}: {e.error_kind}: {e}")

    def skipped(path: Path, why: str) -> None:
        typer.echo(f"--files: skipped {path} ({why}: links are not followed)", err=True)

    try:
        state = (
            FileSystemState.from_directory(files, on_skip=skipped) if files is not None else FileSystemState("workspace")
        )
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--files") from e
    recorder = _Recorder(FileSystemBridge(state))
    context = ToolContext(call_id="call_cli", workspace=Workspace(recorder.bridge, recorder))
    result = asyncio.run(tool.execute(ToolCall.create(tool.name, arguments), context))
    line = {"output": result.output, "is_error": result.is_error, "error_kind": result.error_kind,
            "mutations": recorder.mutations}
    typer.echo(json.dumps(line, ensure_ascii=False))
    if result.error_kind == ErrorKind.tool_bad_arguments:
        fail(f"--args: {result.output}", hint=f"{tool.name} takes: {json.dumps(tool.schema.parameters)}")
    raise typer.Exit(ExitCode.FAILED if result.is_error else ExitCode.OK)


class _Recorder:
    """Applies a call's mutations to the ``--files`` tree, as a run does, and keeps them to print."""

    def __init__(self, bridge: Any) -> None:
        self.bridge = bridge
        self.mutations: list[dict[str, Any]] = []

    def handle(self, tool_name: str, mutations: Sequence[Mapping[str, Any]]) -> None:
        self.bridge.handle(tool_name, mutations)
        self.mutations.extend(dict(m) for m in mutations)
