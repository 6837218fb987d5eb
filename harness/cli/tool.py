"""``harness tool run``: run one .pym tool in the sandbox."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Run sandboxed .pym tools.", no_args_is_help=True)


class Preset(StrEnum):
    """The sandbox's limits presets (``harness.sandbox.Limits``)."""

    strict = "strict"
    default = "default"
    permissive = "permissive"


_FILES_HELP = (
    "A host directory read into the file-system tree /fs/<DIR name> (the current directory of the "
    "file-system tools); symbolic links are never followed (each one skipped is named on stderr). "
    "Without it the tools see an empty /fs/workspace."
)


@app.command("run")
def run(
    script: Annotated[Path, typer.Argument(help="The .pym script to run.")],
    args: Annotated[str, typer.Option("--args", help="The call's arguments as a JSON object.")] = "{}",
    limits: Annotated[Preset, typer.Option("--limits", help="Limits preset.")] = Preset.default,
    files: Annotated[
        Path | None, typer.Option("--files", exists=True, file_okay=False, dir_okay=True, help=_FILES_HELP)
    ] = None,
) -> None:
    """Run SCRIPT once with ARGS in a fresh sandbox session.

    Prints one JSON object {"output": ..., "is_error": bool, "error_kind": str|null} and exits 1 when
    is_error. A script that does not load is reported the same way (error_kind tool:load_error). A
    --files directory that cannot be read or is too large is a usage error (exit 2).
    """
    import asyncio
    import json

    from harness.agents.tools import ToolContext
    from harness.agents.types import ToolCall
    from harness.sandbox import FileSystemState, PymTool, SandboxError, Workspace, load_script

    def report(output: object, is_error: bool, error_kind: str | None) -> None:
        line = json.dumps(
            {"output": output, "is_error": is_error, "error_kind": error_kind}, ensure_ascii=False
        )
        typer.echo(line)
        raise typer.Exit(1 if is_error else 0)

    try:
        arguments = json.loads(args)
    except json.JSONDecodeError as e:
        report(f"--args is not JSON: {e}", True, "tool:bad_arguments")
    except RecursionError:
        report("--args is nested too deeply to read", True, "tool:bad_arguments")
    if not isinstance(arguments, dict):
        report(f"--args must be a JSON object, got {type(arguments).__name__}", True, "tool:bad_arguments")
    try:
        tool = PymTool(load_script(script), limits=limits.value)
    except SandboxError as e:
        report(f"{e.kind}: {e}", True, e.error_kind)
    def skipped(path: Path, why: str) -> None:
        typer.echo(f"--files: skipped {path} ({why}: links are not followed)", err=True)

    try:
        state = (
            FileSystemState.from_directory(files, on_skip=skipped) if files is not None else FileSystemState("workspace")
        )
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--files") from e
    context = ToolContext(call_id="call_cli", workspace=Workspace.filesystem(state))
    result = asyncio.run(tool.execute(ToolCall.create(tool.name, arguments), context))
    report(result.output, result.is_error, result.error_kind)
